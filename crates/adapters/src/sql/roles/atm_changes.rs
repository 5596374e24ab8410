//! `AtmChangeRecords` of every SQL store, and the append every writer of changes calls in
//! its own transaction: numbered under `atm_change_log`'s row, taken last (`FOR UPDATE`
//! on a server; SQLite's writer holds the database), so that numbers become visible in
//! the order they were given (docs/adr/0049-atm-change-feed.md).

use async_trait::async_trait;
use domain::atm_closure::day_start;
use domain::atm_feed::{AtmChange, ChangeLog};
use domain::ports::{AtmChangeRecords, StoreUnavailable};
use domain::posted::EventTime;
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::db;
use crate::rows;
use crate::sql::{Connection, Db, Row, SqlDialect, SqlStore, many_rows, unavailable};

impl<D: SqlDialect> SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
{
    /// Appends `changes` to the feed in `transaction`, written at `now` (seconds): the
    /// log's row locked, each numbered after its head, the head moved past them.
    pub(super) async fn append_changes(
        &self,
        transaction: &mut sqlx::Transaction<'static, Db<D>>,
        changes: &[AtmChange],
        now: i64,
    ) -> Result<(), StoreUnavailable> {
        if changes.is_empty() {
            return Ok(());
        }
        let (head,): (i64,) =
            sqlx::query_as(self.sql.lock_change_log).fetch_one(&mut **transaction).await.map_err(unavailable::<D>)?;
        let numbered: Vec<(i64, &AtmChange)> = (head + 1..).zip(changes).collect();
        let seq = head + numbered.len() as i64;
        many_rows::write_in_chunks::<Db<D>, _>(&mut **transaction, &numbered, |chunk| {
            many_rows::insert_changes(chunk, now)
        })
        .await
        .map_err(unavailable::<D>)?;
        sqlx::query(self.sql.advance_change_log)
            .bind(seq)
            .execute(&mut **transaction)
            .await
            .map_err(unavailable::<D>)?;
        Ok(())
    }

    /// The records of the identification `atm`, read in `transaction`.
    pub(super) async fn atms_with_id(
        &self,
        transaction: &mut sqlx::Transaction<'static, Db<D>>,
        atm: &str,
    ) -> Result<Vec<domain::atm_catalog::StoredAtm>, StoreUnavailable>
    where
        rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    {
        let found: Vec<rows::AtmRow> = sqlx::query_as(self.sql.atms_with_id)
            .bind(atm)
            .fetch_all(&mut **transaction)
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::atm).collect()
    }
}

/// Changes forgotten per statement (by number), so that none holds the table long.
const FORGET_PER_STATEMENT: i64 = 10_000;

#[async_trait]
impl<D: SqlDialect> AtmChangeRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    (String,): for<'r> FromRow<'r, Row<D>>,
    (String, i64, i64): for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmChangeRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmClosureRow: for<'r> FromRow<'r, Row<D>>,
{
    async fn since(&self, after: i64, limit: usize) -> Result<ChangeLog, StoreUnavailable> {
        async {
            // One snapshot (SQLite's reads, a server's repeatable read): the head and floor
            // belong with the changes read.
            let mut transaction = self.dialect.begin_atm_read().await?;
            let (store, head, floor): (String, i64, i64) = sqlx::query_as(self.sql.change_log_state)
                .fetch_one(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            let found: Vec<rows::AtmChangeRow> = sqlx::query_as(self.sql.changes_since)
                .bind(after)
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            transaction.rollback().await.map_err(unavailable::<D>)?;
            let changes = found.into_iter().map(rows::atm_change).collect::<Result<_, _>>()?;
            Ok(ChangeLog { store, head, floor, changes })
        }
        .instrument(db::<D>("SELECT atm_changes"))
        .await
    }

    async fn feed_closures_due(&self, now: i64) -> Result<u64, StoreUnavailable> {
        self.retrying("INSERT atm_changes", move || async move {
            // Looked for first without a lock: the view asks at each reload of a set with a
            // closed ATM, and must not wait on an import for nothing.
            let due: Vec<(String,)> = sqlx::query_as(self.sql.closures_due)
                .bind(now)
                .fetch_all(self.dialect.pool())
                .await
                .map_err(unavailable::<D>)?;
            if due.is_empty() {
                return Ok(0);
            }
            let mut transaction = self.dialect.begin_atm_edit().await?;
            let due: Vec<(String,)> = sqlx::query_as(self.sql.closures_due)
                .bind(now)
                .fetch_all(&mut *transaction)
                .await
                .map_err(unavailable::<D>)?;
            if due.is_empty() {
                transaction.rollback().await.map_err(unavailable::<D>)?;
                return Ok(0);
            }
            let closures = self.read_atm_set_closures(&mut transaction).await?;
            let mut changes = Vec::new();
            for (atm,) in &due {
                let starts_at = closures.iter().find(|c| c.atm.as_str() == atm).map_or(now, |c| day_start(c.closes_on));
                let at = EventTime::from_unix_micros(starts_at.saturating_mul(1_000_000));
                for record in self.atms_with_id(&mut transaction, atm).await? {
                    changes.push(AtmChange::removed(&(record.brand, record.identification), at));
                }
                sqlx::query(self.sql.set_closure_removal_fed)
                    .bind(1_i64)
                    .bind(atm.as_str())
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
            }
            self.append_changes(&mut transaction, &changes, now).await?;
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(due.len() as u64)
        })
        .await
    }

    async fn forget_before(&self, before: i64) -> Result<u64, StoreUnavailable> {
        let last: Option<(i64,)> = sqlx::query_as(self.sql.last_change_before)
            .bind(before)
            .fetch_optional(self.dialect.pool())
            .await
            .map_err(unavailable::<D>)?;
        let Some((last,)) = last else { return Ok(0) };
        let (_, _, floor): (String, i64, i64) =
            sqlx::query_as(self.sql.change_log_state).fetch_one(self.dialect.pool()).await.map_err(unavailable::<D>)?;
        // The floor first: a cursor below it is refused before its changes go.
        self.retrying("UPDATE atm_change_log", move || async move {
            sqlx::query(self.sql.raise_change_floor)
                .bind(last)
                .bind(last)
                .execute(self.dialect.pool())
                .await
                .map_err(unavailable::<D>)
        })
        .await?;
        // Then in steps, each its own short statement (and run again alone if it loses a
        // conflict): a day of state changes is hundreds of thousands of rows, and appends
        // go on meanwhile.
        let mut forgotten = 0;
        let mut upto = floor.min(last);
        loop {
            upto = upto.saturating_add(FORGET_PER_STATEMENT).min(last);
            let done = self
                .retrying("DELETE atm_changes", move || async move {
                    sqlx::query(self.sql.forget_changes)
                        .bind(upto)
                        .execute(self.dialect.pool())
                        .await
                        .map_err(unavailable::<D>)
                })
                .await?;
            use crate::sql::RowsAffected as _;
            forgotten += done.rows_affected();
            if upto >= last {
                return Ok(forgotten);
            }
        }
    }
}
