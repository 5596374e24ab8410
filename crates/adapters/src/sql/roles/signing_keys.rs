//! `SigningKeyRecords` and `KeyVault` of every SQL store: signing keys, rotated in the
//! dialect's transaction for it (`SqlDialect::begin_key_rotation`), resealed in place and
//! scrubbed the dialect's way.

use async_trait::async_trait;
use domain::ports::{SigningKeyRecords, StoreUnavailable};
use domain::token::SigningKey;
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::db;
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};
use crate::store::KeyVault;

#[async_trait]
impl<D: SqlDialect> SigningKeyRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    String: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    Vec<u8>: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    rows::SigningKeyRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
        let found: Vec<rows::SigningKeyRow> = sqlx::query_as(self.sql.published_keys)
            .bind(retired_after)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT signing_keys"))
            .await
            .map_err(unavailable::<D>)?;
        Ok(found.into_iter().map(rows::signing_key).collect())
    }

    async fn all(&self) -> Result<Vec<SigningKey>, StoreUnavailable> {
        let found: Vec<rows::SigningKeyRow> =
            sqlx::query_as(self.sql.all_keys).fetch_all(self.dialect.pool()).await.map_err(unavailable::<D>)?;
        Ok(found.into_iter().map(rows::signing_key).collect())
    }

    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
        self.change_keys(None, Some(key), now).await.map(drop)
    }

    async fn revoke(&self, kid: &str, now: i64, replacement: Option<SigningKey>) -> Result<bool, StoreUnavailable> {
        self.change_keys(Some(kid), replacement.as_ref(), now).await
    }
}

impl<D: SqlDialect> SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    String: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    Vec<u8>: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
{
    /// Revokes `revoking` and schedules `key`, in one transaction: `false`, and nothing
    /// changed, when `revoking` is not a key still standing.
    async fn change_keys(
        &self,
        revoking: Option<&str>,
        key: Option<&SigningKey>,
        now: i64,
    ) -> Result<bool, StoreUnavailable> {
        self.retrying("UPDATE signing_keys", move || async move {
            let mut transaction = self.dialect.begin_key_rotation().await?;
            if let Some(kid) = revoking {
                let revoked = sqlx::query(self.sql.revoke_key)
                    .bind(now)
                    .bind(kid)
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?
                    .rows_affected();
                if revoked == 0 {
                    return Ok(false);
                }
            }
            if let Some(key) = key {
                // Waiting keys are dropped; revoked ones stay, to be listed.
                sqlx::query(self.sql.drop_waiting_keys)
                    .bind(now)
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
                // The key signing at `now` (its retirement not yet reached: none, or the
                // activation of a waiting key just dropped) signs until the new one does.
                sqlx::query(self.sql.retire_current_key)
                    .bind(key.activates_at)
                    .bind(now)
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
                sqlx::query(self.sql.insert_key)
                    .bind(&key.kid)
                    .bind(&key.private_pkcs8)
                    .bind(&key.public_key)
                    .bind(key.created_at)
                    .bind(key.activates_at)
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
            }
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(true)
        })
        .await
    }
}

#[async_trait]
impl<D: SqlDialect> KeyVault for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> &'q [u8]: Encode<'q, Db<D>> + Type<Db<D>>,
{
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable> {
        let changed = self
            .retrying("UPDATE signing_keys", move || async move {
                sqlx::query(self.sql.reseal_key)
                    .bind(to)
                    .bind(kid)
                    .bind(from)
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?
            .rows_affected();
        Ok(changed == 1)
    }

    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        self.dialect.scrub().await
    }
}
