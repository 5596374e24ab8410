//! `TokenArchive` of every SQL store: issued-token records, written many at once and
//! purged the dialect's way (`SqlDialect::record_tokens`, `purge_expired_tokens`), revoked
//! in its transaction for revocations (`begin_revocation`).

use async_trait::async_trait;
use domain::client::ClientId;
use domain::ports::{StoreUnavailable, TokenArchive};
use domain::token::{IssuedToken, OpaqueToken, TokenId, TokenRecord};
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::db;
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> TokenArchive for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (String,): for<'r> FromRow<'r, Row<D>>,
    rows::TokenRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        self.retrying("INSERT token_records", move || async move { self.dialect.record_tokens(tokens).await }).await
    }

    async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
        let found: Option<rows::TokenRow> = sqlx::query_as(self.sql.find_token)
            .bind(opaque.as_str())
            .fetch_optional(self.dialect.pool())
            .instrument(db::<D>("SELECT token_records"))
            .await
            .map_err(unavailable::<D>)?;
        found.map(rows::token).transpose()
    }

    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
        self.retrying("UPDATE token_records", move || async move {
            let mut transaction = self.dialect.begin_revocation().await?;
            let changed = sqlx::query(self.sql.revoke_token)
                .bind(now)
                .bind(token_id.as_str())
                .execute(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?
                .rows_affected();
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(changed == 1)
        })
        .await
    }

    async fn revoke_live_of(&self, client_id: &ClientId, now: i64) -> Result<u64, StoreUnavailable> {
        self.retrying("UPDATE token_records", move || async move {
            let mut transaction = self.dialect.begin_revocation().await?;
            let revoked = sqlx::query(self.sql.revoke_live_of)
                .bind(now)
                .bind(client_id.as_str())
                .bind(now)
                .execute(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?
                .rows_affected();
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(revoked)
        })
        .await
    }

    async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
        let found: Vec<(String,)> = sqlx::query_as(self.sql.revoked_live)
            .bind(now)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT token_records"))
            .await
            .map_err(unavailable::<D>)?;
        Ok(found.into_iter().map(|(jti,)| TokenId::new(jti)).collect())
    }

    async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
        let found: Vec<rows::TokenRow> = sqlx::query_as(self.sql.live_tokens)
            .bind(now)
            .fetch_all(self.dialect.pool())
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::token).collect()
    }

    async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable> {
        // Batches that commit on their own: the dialect runs each again if it loses.
        self.dialect.purge_expired_tokens(before).await
    }
}
