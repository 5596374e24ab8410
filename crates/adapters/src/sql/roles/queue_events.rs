//! `QueueEventRecords` of every SQL store: the log of branch queue events, appended a
//! batch per transaction (`SqlDialect::begin_event_append`), each that stores an event
//! rewriting `queue_log`, whose trigger moves the change counter.

use async_trait::async_trait;
use domain::ports::{QueueEventRecords, ReceivedEvent, StoreUnavailable};
use domain::posted::EventTime;
use domain::queue::event::{CounterId, QueueEvent, TicketId};
use domain::system::SystemId;
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::{db, inserted};
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> QueueEventRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>>,
    i32: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    rows::QueueEventRow: for<'r> FromRow<'r, Row<D>>,
{
    /// One insert per event, each telling whether it stored a row, all in one
    /// transaction. The inserts go in id order (the first of an id repeated in the batch
    /// first): a writer then waits only for ids below those it holds, so two writers of
    /// overlapping batches take turns on the ids they share instead of deadlocking, and
    /// the one that waited finds the other's row, committed.
    async fn append(
        &self,
        system: &SystemId,
        events: &[QueueEvent],
        received_at: EventTime,
    ) -> Result<Vec<bool>, StoreUnavailable> {
        let mut in_id_order: Vec<usize> = (0..events.len()).collect();
        in_id_order.sort_by_key(|&index| (events[index].id.as_str(), index));
        let in_id_order = &in_id_order;
        self.retrying("INSERT queue_events", move || async move {
            let mut new = vec![false; events.len()];
            let mut transaction = self.dialect.begin_event_append().await?;
            for &index in in_id_order {
                let event = &events[index];
                let done = sqlx::query(self.sql.append_queue_event)
                    .bind(event.id.as_str())
                    .bind(rows::branch_number(event.branch)?)
                    .bind(event.kind.name())
                    .bind(event.at.unix_micros())
                    .bind(event.kind.ticket().map(TicketId::as_str))
                    .bind(event.kind.counter().map(CounterId::as_str))
                    .bind(system.as_str())
                    .bind(received_at.unix_micros())
                    .execute(&mut *transaction)
                    .await;
                new[index] = inserted::<D>(done)?;
            }
            // One rewrite of `queue_log` per append that stored anything: its trigger moves
            // the `queue_events` change counter (and notifies, on PostgreSQL), last, so
            // the row is held only for the commit.
            if new.contains(&true) {
                sqlx::query(self.sql.touch_queue_log)
                    .bind(received_at.unix_micros())
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
            }
            // Durable when it returns: each backend's commit is (SQLite's WAL with
            // `synchronous = FULL`, the servers' settings checked or set at connection).
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(new)
        })
        .await
    }

    async fn received_since(&self, since: EventTime) -> Result<Vec<ReceivedEvent>, StoreUnavailable> {
        let found: Vec<rows::QueueEventRow> = sqlx::query_as(self.sql.queue_events_received_since)
            .bind(since.unix_micros())
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT queue_events"))
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::received_event).collect()
    }

    /// Read in `at` order, then put in [`QueueEvent::order_key`]'s: the rank of a kind
    /// among events of the same instant is the domain's, not a column.
    async fn happened_since(&self, since: EventTime) -> Result<Vec<QueueEvent>, StoreUnavailable> {
        let found: Vec<rows::QueueEventRow> = sqlx::query_as(self.sql.queue_events_happened_since)
            .bind(since.unix_micros())
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT queue_events"))
            .await
            .map_err(unavailable::<D>)?;
        let mut events = found
            .into_iter()
            .map(|row| rows::received_event(row).map(|kept| kept.event))
            .collect::<Result<Vec<_>, _>>()?;
        events.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        Ok(events)
    }

    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable> {
        let done = self
            .retrying("DELETE queue_events", move || async move {
                sqlx::query(self.sql.forget_queue_events)
                    .bind(before.unix_micros())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?;
        Ok(done.rows_affected())
    }
}
