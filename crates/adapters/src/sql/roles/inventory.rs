//! `StoreInventory` of every SQL store: whether each table holds anything.

use async_trait::async_trait;
use domain::ports::{StoreInventory, StoreUnavailable};
use domain::store_contents::StoreContents;
use sqlx::{Executor, FromRow};

use crate::sql::{Connection, Db, Row, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> StoreInventory for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    (bool, bool, bool, bool, bool): for<'r> FromRow<'r, Row<D>>,
{
    async fn contents(&self) -> Result<StoreContents, StoreUnavailable> {
        let (clients, supported_channels, wait_times, atms, token_records): (bool, bool, bool, bool, bool) =
            sqlx::query_as(self.sql.contents).fetch_one(self.dialect.pool()).await.map_err(unavailable::<D>)?;
        Ok(StoreContents { clients, supported_channels, wait_times, atms, token_records })
    }
}
