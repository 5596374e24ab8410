//! `SystemRecords` of every SQL store: the bank's systems, and the assertions they used.

use async_trait::async_trait;
use domain::client::ClientStatus;
use domain::ports::{StoreUnavailable, SystemRecords};
use domain::system::{AssertionId, PublicKeySet, SystemChanges, SystemId, SystemRegistration};
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::{db, inserted};
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> SystemRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>>,
    String: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    Option<String>: for<'q> Encode<'q, Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    Option<i64>: for<'q> Encode<'q, Db<D>>,
    rows::SystemRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn insert(&self, system: &SystemRegistration, now: i64) -> Result<bool, StoreUnavailable> {
        self.retrying("INSERT systems", move || async move {
            let done = sqlx::query(self.sql.insert_system)
                .bind(system.id.as_str())
                .bind(system.keys.json())
                .bind(rows::key_count(&system.keys)?)
                .bind(system.scopes.to_string())
                .bind(rows::status_text(system.status))
                .bind(now)
                .execute(self.dialect.pool())
                .await;
            inserted::<D>(done)
        })
        .await
    }

    async fn all(&self) -> Result<Vec<SystemRegistration>, StoreUnavailable> {
        let found: Vec<rows::SystemRow> = sqlx::query_as(self.sql.systems)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT systems"))
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::system).collect()
    }

    /// Read on every call: a status changed by another instance counts at once.
    async fn find(&self, id: &SystemId) -> Result<Option<SystemRegistration>, StoreUnavailable> {
        let found: Option<rows::SystemRow> = sqlx::query_as(self.sql.find_system)
            .bind(id.as_str())
            .fetch_optional(self.dialect.pool())
            .instrument(db::<D>("SELECT systems"))
            .await
            .map_err(unavailable::<D>)?;
        found.map(rows::system).transpose()
    }

    async fn set_status(&self, id: &SystemId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        let found = self
            .retrying("UPDATE systems", move || async move {
                sqlx::query(self.sql.set_system_status)
                    .bind(rows::status_text(status))
                    .bind(id.as_str())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?
            .rows_affected();
        Ok(found == 1)
    }

    async fn change(&self, id: &SystemId, changes: &SystemChanges) -> Result<bool, StoreUnavailable> {
        // The document and its count change together, or neither does.
        let key_count = changes.keys.as_ref().map(rows::key_count).transpose()?;
        let found = self
            .retrying("UPDATE systems", move || async move {
                sqlx::query(self.sql.change_system)
                    .bind(changes.keys.as_ref().map(PublicKeySet::json))
                    .bind(key_count)
                    .bind(changes.scopes.as_ref().map(ToString::to_string))
                    .bind(id.as_str())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?
            .rows_affected();
        Ok(found == 1)
    }

    /// The key (system, jti) decides: of two uses at once, from any instances, the
    /// database inserts one row and the other finds it (a skipped insert, or on MariaDB
    /// the duplicate's error).
    async fn use_assertion(
        &self,
        system: &SystemId,
        jti: &AssertionId,
        expires_at: i64,
    ) -> Result<bool, StoreUnavailable> {
        self.retrying("INSERT system_assertions", move || async move {
            let done = sqlx::query(self.sql.use_assertion)
                .bind(system.as_str())
                .bind(jti.as_str())
                .bind(expires_at)
                .execute(self.dialect.pool())
                .await;
            inserted::<D>(done)
        })
        .await
    }

    async fn forget_assertions(&self, now: i64) -> Result<u64, StoreUnavailable> {
        let done = self
            .retrying("DELETE system_assertions", move || async move {
                sqlx::query(self.sql.forget_assertions)
                    .bind(now)
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?;
        Ok(done.rows_affected())
    }
}
