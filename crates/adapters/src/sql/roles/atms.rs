//! `AtmRecords` of every SQL store: the ATM set, written in the dialect's transaction for
//! it (`SqlDialect::begin_atm_edit`) and its way of writing and deleting many rows, and
//! dated in the same transaction.

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::atm_closure::AtmClosure;
use domain::atm_feed::set_changes;
use domain::ports::{AtmRecords, AtmSetEdit, EditPlan, StoreUnavailable};
use sqlx::{Encode, Executor, FromRow, Type};

use crate::rows;
use crate::sql::{Connection, Db, Replan, Row, SqlDialect, SqlStore, unavailable};
use crate::store::{AtmSet, ViewSource};

impl<D: SqlDialect> SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmClosureRow: for<'r> FromRow<'r, Row<D>>,
{
    /// The ATM set, its date and its closures, read in `transaction` (a writer's, holding
    /// the set's lock, or a reader's snapshot).
    pub(super) async fn read_atm_set(
        &self,
        transaction: &mut sqlx::Transaction<'static, Db<D>>,
    ) -> Result<AtmSet, StoreUnavailable> {
        let (last_updated,): (i64,) =
            sqlx::query_as(self.sql.atm_set_date).fetch_one(&mut **transaction).await.map_err(unavailable::<D>)?;
        let found: Vec<rows::AtmRow> =
            sqlx::query_as(self.sql.atms_in_order).fetch_all(&mut **transaction).await.map_err(unavailable::<D>)?;
        let atms = found.into_iter().map(rows::atm).collect::<Result<_, _>>()?;
        let closures = self.read_atm_set_closures(transaction).await?;
        let (feed_head,): (i64,) =
            sqlx::query_as(self.sql.feed_head).fetch_one(&mut **transaction).await.map_err(unavailable::<D>)?;
        Ok(AtmSet { atms, last_updated, closures, feed_head })
    }

    /// Every closure announced, read in `transaction`.
    pub(super) async fn read_atm_set_closures(
        &self,
        transaction: &mut sqlx::Transaction<'static, Db<D>>,
    ) -> Result<Vec<AtmClosure>, StoreUnavailable> {
        let closures: Vec<rows::AtmClosureRow> =
            sqlx::query_as(self.sql.atm_closures).fetch_all(&mut **transaction).await.map_err(unavailable::<D>)?;
        closures.into_iter().map(rows::atm_closure).collect()
    }
}

#[async_trait]
impl<D: SqlDialect> AtmRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmClosureRow: for<'r> FromRow<'r, Row<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>> + Type<Db<D>>,
    Self: ViewSource,
{
    async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable> {
        self.retrying("REPLACE atms", move || async move {
            let mut transaction = self.dialect.begin_atm_edit().await?;
            sqlx::query(self.sql.delete_every_atm).execute(&mut *transaction).await.map_err(unavailable::<D>)?;
            D::write_atms(&mut transaction, atms).await?;
            sqlx::query(self.sql.date_atm_set).bind(now).execute(&mut *transaction).await.map_err(unavailable::<D>)?;
            // A whole new set is no change of the old one: every cursor starts again, a
            // cursor at the head too.
            let (head,): (i64,) = sqlx::query_as(self.sql.lock_change_log)
                .fetch_one(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            sqlx::query(self.sql.restart_change_log)
                .bind(head + 1)
                .bind(head + 1)
                .execute(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            transaction.commit().await.map_err(unavailable::<D>)
        })
        .await
    }

    async fn current(&self) -> Result<AtmSet, StoreUnavailable> {
        ViewSource::atms(self).await
    }

    #[tracing::instrument(skip_all)]
    async fn edit<'a>(&self, plan: &mut EditPlan<'a, AtmSet, AtmSetEdit>, now: i64) -> Result<(), StoreUnavailable> {
        let plan = &Replan::new(plan);
        self.retrying("EDIT atms", move || async move {
            let mut transaction = self.dialect.begin_atm_edit().await?;
            // Read in the transaction that holds the set's lock: what the last writer
            // committed, and nothing can change it until this one ends.
            let stored = self.read_atm_set(&mut transaction).await?;
            let AtmSetEdit::Apply { upserts, removals } = plan.plan(&stored) else {
                return transaction.rollback().await.map_err(unavailable::<D>);
            };
            for atm in stored.closures_left_without_atm(&upserts, &removals) {
                sqlx::query(self.sql.cancel_atm_closure)
                    .bind(atm.as_str())
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
            }
            D::delete_atms(&mut transaction, &removals).await?;
            D::write_atms(&mut transaction, &upserts).await?;
            sqlx::query(self.sql.date_atm_set).bind(now).execute(&mut *transaction).await.map_err(unavailable::<D>)?;
            let changes = set_changes(&stored.closures, &upserts, &removals, now);
            self.append_changes(&mut transaction, &changes, now).await?;
            transaction.commit().await.map_err(unavailable::<D>)
        })
        .await
    }
}
