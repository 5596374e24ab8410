//! `AtmClosureRecords` of every SQL store: a closure is written in the ATM set's
//! transaction (`SqlDialect::begin_atm_edit`), after the set is found to hold its ATM, so
//! an import runs wholly before or after it and is judged against it.

use async_trait::async_trait;
use domain::atm_closure::AtmClosure;
use domain::atm_state::AtmId;
use domain::ports::{AtmClosureRecords, StoreUnavailable};
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::db;
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> AtmClosureRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (i32,): for<'r> FromRow<'r, Row<D>>,
{
    async fn announce(&self, closure: &AtmClosure) -> Result<bool, StoreUnavailable> {
        async {
            let mut transaction = self.dialect.begin_atm_edit().await?;
            let found: Option<(i32,)> = sqlx::query_as(self.sql.atm_in_set)
                .bind(closure.atm.as_str())
                .fetch_optional(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            if found.is_none() {
                transaction.rollback().await.map_err(unavailable::<D>)?;
                return Ok(false);
            }
            let (atm, closes_on, explanation, short_notice, announced_at) = rows::atm_closure_row(closure);
            sqlx::query(self.sql.put_atm_closure)
                .bind(atm.as_str())
                .bind(closes_on)
                .bind(explanation.as_str())
                .bind(short_notice.as_deref())
                .bind(announced_at)
                .execute(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(true)
        }
        .instrument(db::<D>("UPSERT atm_closures"))
        .await
    }

    async fn cancel(&self, atm: &AtmId) -> Result<bool, StoreUnavailable> {
        let done = sqlx::query(self.sql.cancel_atm_closure)
            .bind(atm.as_str())
            .execute(self.dialect.pool())
            .instrument(db::<D>("DELETE atm_closures"))
            .await
            .map_err(unavailable::<D>)?;
        Ok(done.rows_affected() > 0)
    }
}
