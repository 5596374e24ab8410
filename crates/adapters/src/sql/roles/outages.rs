//! `OutageRecords` of every SQL store: planned outages.

use async_trait::async_trait;
use domain::outage::{OutageId, PlannedOutage};
use domain::ports::{OutageRecords, StoreUnavailable};
use sqlx::{Encode, Executor, FromRow, Type};

use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> OutageRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    rows::OutageRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn schedule(&self, outage: &PlannedOutage, now: i64) -> Result<(), StoreUnavailable> {
        self.retrying("INSERT outages", move || async move {
            sqlx::query(self.sql.insert_outage)
                .bind(outage.id.as_str())
                .bind(outage.starts_at)
                .bind(outage.duration.seconds())
                .bind(i64::from(outage.partial))
                .bind(outage.explanation.as_str())
                .bind(now)
                .execute(self.dialect.pool())
                .await
                .map_err(unavailable::<D>)
        })
        .await?;
        Ok(())
    }

    async fn not_over(&self, now: i64) -> Result<Vec<PlannedOutage>, StoreUnavailable> {
        let found: Vec<rows::OutageRow> = sqlx::query_as(self.sql.outages_not_over)
            .bind(now)
            .fetch_all(self.dialect.pool())
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::outage).collect()
    }

    async fn cancel(&self, id: &OutageId) -> Result<bool, StoreUnavailable> {
        let done = self
            .retrying("DELETE outages", move || async move {
                sqlx::query(self.sql.cancel_outage)
                    .bind(id.as_str())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?;
        Ok(done.rows_affected() > 0)
    }
}
