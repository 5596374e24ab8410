//! `WaitTimeRecords` of every SQL store: branch wait times, written in the dialect's
//! transaction for them (`SqlDialect::begin_wait_time_edit`) and its way of writing many
//! rows (`write_wait_times`).

use async_trait::async_trait;
use domain::branch::WaitTimeEstimate;
use domain::ports::{EditPlan, StoreUnavailable, WaitTimeRecords};
use sqlx::{Executor, FromRow};
use tracing::Instrument as _;

use super::db;
use crate::rows;
use crate::sql::{Connection, Db, Replan, Row, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> WaitTimeRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    rows::WaitTimeRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable> {
        self.retrying("UPSERT wait_times", move || async move {
            let mut transaction = self.dialect.begin_wait_time_edit().await?;
            D::write_wait_times(&mut transaction, estimates).await?;
            transaction.commit().await.map_err(unavailable::<D>)
        })
        .await
    }

    async fn all(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable> {
        let found: Vec<rows::WaitTimeRow> = sqlx::query_as(self.sql.wait_times)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT wait_times"))
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::wait_time).collect()
    }

    #[tracing::instrument(skip_all)]
    async fn edit<'a>(
        &self,
        plan: &mut EditPlan<'a, Vec<WaitTimeEstimate>, Vec<WaitTimeEstimate>>,
    ) -> Result<(), StoreUnavailable> {
        let plan = &Replan::new(plan);
        self.retrying("EDIT wait_times", move || async move {
            let mut transaction = self.dialect.begin_wait_time_edit().await?;
            let found: Vec<rows::WaitTimeRow> =
                sqlx::query_as(self.sql.wait_times).fetch_all(&mut *transaction).await.map_err(unavailable::<D>)?;
            let stored = found.into_iter().map(rows::wait_time).collect::<Result<Vec<_>, _>>()?;
            let writes = plan.plan(&stored);
            if writes.is_empty() {
                return transaction.rollback().await.map_err(unavailable::<D>);
            }
            D::write_wait_times(&mut transaction, &writes).await?;
            transaction.commit().await.map_err(unavailable::<D>)
        })
        .await
    }
}
