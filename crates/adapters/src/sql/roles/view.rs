//! `ViewSource` of every SQL store: the change counters the in-memory view polls, the ATM
//! set in one snapshot (`SqlDialect::begin_atm_read`), and the dialect's change notices.

use async_trait::async_trait;
use domain::ports::StoreUnavailable;
use sqlx::{Executor, FromRow};
use tracing::Instrument as _;

use super::db;
use crate::rows;
use crate::sql::{Connection, Db, Row, SqlDialect, SqlStore, unavailable};
use crate::store::{AtmSet, ChangeFeed, Revisions, ViewSource};

#[async_trait]
impl<D: SqlDialect> ViewSource for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    (String, i64): for<'r> FromRow<'r, Row<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmClosureRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable> {
        let rows: Vec<(String, i64)> = sqlx::query_as(self.sql.revisions)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT changes"))
            .await
            .map_err(unavailable::<D>)?;
        Ok(Revisions::from_topics(rows))
    }

    async fn atms(&self) -> Result<AtmSet, StoreUnavailable> {
        // One snapshot for both reads, so the set and its date belong together.
        async {
            let mut transaction = self.dialect.begin_atm_read().await?;
            let set = self.read_atm_set(&mut transaction).await?;
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(set)
        }
        .instrument(db::<D>("SELECT atms"))
        .await
    }

    async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
        self.dialect.subscribe().await
    }
}
