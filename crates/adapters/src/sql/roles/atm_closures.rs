//! `AtmClosureRecords` of every SQL store: a closure is written in the ATM set's
//! transaction (`SqlDialect::begin_atm_edit`), after the set is found to hold its ATM, so
//! an import runs wholly before or after it and is judged against it. Each write appends
//! the ATM's `state` change to the feed, and `upserted` for its records when a closed ATM
//! reopens.

use async_trait::async_trait;
use domain::atm_closure::AtmClosure;
use domain::atm_feed::AtmChange;
use domain::atm_state::{AtmId, AtmState};
use domain::ports::{AtmClosureRecords, StoreUnavailable};
use domain::posted::EventTime;
use sqlx::{Encode, Executor, FromRow, Type};

use crate::rows;
use crate::sql::{Connection, Db, Row, SqlDialect, SqlStore, unavailable};

impl<D: SqlDialect> SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmStateRow: for<'r> FromRow<'r, Row<D>>,
{
    /// Appends, at `now`, `atm`'s state change (with `closure`, if one stands), after the
    /// `upserted` changes of its records when `reopened`, in `transaction`.
    async fn feed_closure_change(
        &self,
        transaction: &mut sqlx::Transaction<'static, Db<D>>,
        atm: &AtmId,
        closure: Option<&AtmClosure>,
        reopened: bool,
        now: i64,
    ) -> Result<(), StoreUnavailable> {
        let at = EventTime::from_unix_micros(now.saturating_mul(1_000_000));
        let mut changes = Vec::new();
        if reopened {
            for record in self.atms_with_id(transaction, atm.as_str()).await? {
                changes.push(AtmChange::upserted(&record, at));
            }
        }
        let stored: Option<rows::AtmStateRow> = sqlx::query_as(self.sql.atm_state)
            .bind(atm.as_str())
            .fetch_optional(&mut **transaction)
            .await
            .map_err(unavailable::<D>)?;
        let state: Option<AtmState> = stored.map(rows::atm_state).transpose()?.map(|(_, state)| state);
        changes.push(AtmChange::state(atm, state.as_ref(), closure, at));
        self.append_changes(transaction, &changes, now).await
    }

    /// Begins a closure's write: the set's lock, then the states' (so a state apply at
    /// the same time feeds this closure, and this feeds its state), and the closure of
    /// `atm` as it stands, `(closes_on, removal_fed)`.
    async fn begin_closure_write(
        &self,
        atm: &AtmId,
    ) -> Result<(sqlx::Transaction<'static, Db<D>>, Option<(i64, bool)>), StoreUnavailable>
    where
        (i64, i64): for<'r> FromRow<'r, Row<D>>,
    {
        let mut transaction = self.dialect.begin_atm_edit().await?;
        sqlx::query(self.sql.lock_atm_state_log).execute(&mut *transaction).await.map_err(unavailable::<D>)?;
        let standing: Option<(i64, i64)> = sqlx::query_as(self.sql.closure_standing)
            .bind(atm.as_str())
            .fetch_optional(&mut *transaction)
            .await
            .map_err(unavailable::<D>)?;
        Ok((transaction, standing.map(|(closes_on, fed)| (closes_on, fed != 0))))
    }
}

#[async_trait]
impl<D: SqlDialect> AtmClosureRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (i32,): for<'r> FromRow<'r, Row<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    (i64, i64): for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmStateRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn announce(&self, closure: &AtmClosure) -> Result<bool, StoreUnavailable> {
        self.retrying("UPSERT atm_closures", move || async move {
            let (mut transaction, standing) = self.begin_closure_write(&closure.atm).await?;
            let found: Option<(i32,)> = sqlx::query_as(self.sql.atm_in_set)
                .bind(closure.atm.as_str())
                .fetch_optional(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            if found.is_none() {
                transaction.rollback().await.map_err(unavailable::<D>)?;
                return Ok(false);
            }
            let now = closure.announced_at;
            // A closed ATM given a date to come is open again (its removal fed or not yet:
            // a snapshot may have left it out since its date).
            let reopened = standing.is_some_and(|(closes_on, _)| closes_on <= now) && !closure.in_effect(now);
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
            if reopened {
                sqlx::query(self.sql.set_closure_removal_fed)
                    .bind(0_i64)
                    .bind(atm.as_str())
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
            }
            self.feed_closure_change(&mut transaction, &closure.atm, Some(closure), reopened, now).await?;
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(true)
        })
        .await
    }

    async fn cancel(&self, atm: &AtmId, now: i64) -> Result<bool, StoreUnavailable> {
        self.retrying("DELETE atm_closures", move || async move {
            let (mut transaction, standing) = self.begin_closure_write(atm).await?;
            let Some((closes_on, _)) = standing else {
                transaction.rollback().await.map_err(unavailable::<D>)?;
                return Ok(false);
            };
            let reopened = closes_on <= now;
            sqlx::query(self.sql.cancel_atm_closure)
                .bind(atm.as_str())
                .execute(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            self.feed_closure_change(&mut transaction, atm, None, reopened, now).await?;
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(true)
        })
        .await
    }
}
