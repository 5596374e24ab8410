//! `AtmStateRecords` of every SQL store: each apply in one transaction, in turn with the
//! others (`SqlDialect::begin_state_apply`); each that changed a state rewrites
//! `atm_state_log`, whose trigger moves the change counter.

use async_trait::async_trait;
use domain::atm_feed::state_changes;
use domain::atm_state::{AtmId, AtmState, AtmStateEvent};
use domain::ports::{AtmStateRecords, StateOutcome, StoreUnavailable};
use domain::posted::EventTime;
use domain::system::SystemId;
use sqlx::{Encode, Executor, FromRow, Type};
use tracing::Instrument as _;

use super::{db, inserted};
use crate::rows;
use crate::sql::{Connection, Db, Row, RowsAffected as _, SqlDialect, SqlStore, unavailable};

#[async_trait]
impl<D: SqlDialect> AtmStateRecords for SqlStore<D>
where
    for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
    for<'q> &'q str: Encode<'q, Db<D>> + Type<Db<D>>,
    for<'q> Option<&'q str>: Encode<'q, Db<D>>,
    i64: for<'q> Encode<'q, Db<D>> + Type<Db<D>>,
    Option<i64>: for<'q> Encode<'q, Db<D>>,
    rows::AtmStateRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmRow: for<'r> FromRow<'r, Row<D>>,
    rows::AtmClosureRow: for<'r> FromRow<'r, Row<D>>,
    (i64,): for<'r> FromRow<'r, Row<D>>,
    for<'q> Option<&'q str>: Type<Db<D>>,
{
    /// Events by ATM and then in the order they apply: each ATM's state is read once, and
    /// written once, after its last event.
    async fn apply(
        &self,
        system: &SystemId,
        events: &[AtmStateEvent],
        received_at: EventTime,
        fresh_minutes: f64,
    ) -> Result<Vec<StateOutcome>, StoreUnavailable> {
        let mut in_order: Vec<usize> = (0..events.len()).collect();
        in_order
            .sort_by(|&a, &b| (&events[a].atm, events[a].order_key()).cmp(&(&events[b].atm, events[b].order_key())));
        let in_order = &in_order;
        self.retrying("UPSERT atm_states", move || async move {
            let mut outcomes = vec![StateOutcome::Duplicate; events.len()];
            let mut transaction = self.dialect.begin_state_apply().await?;
            let mut changed = Vec::new();
            for run in in_order.chunk_by(|&a, &b| events[a].atm == events[b].atm) {
                let atm = &events[run[0]].atm;
                let stored: Option<rows::AtmStateRow> = sqlx::query_as(self.sql.atm_state)
                    .bind(atm.as_str())
                    .fetch_optional(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
                let before = stored.map(rows::atm_state).transpose()?.map(|(_, state)| state);
                let mut state = before.clone();
                for &index in run {
                    let event = &events[index];
                    let recorded = sqlx::query(self.sql.record_state_event)
                        .bind(event.id.as_str())
                        .bind(atm.as_str())
                        .bind(event.at.unix_micros())
                        .bind(system.as_str())
                        .bind(received_at.unix_micros())
                        .execute(&mut *transaction)
                        .await;
                    if !inserted::<D>(recorded)? {
                        continue;
                    }
                    outcomes[index] = match AtmState::after(state.as_ref(), event, fresh_minutes) {
                        Some(after) => {
                            state = Some(after);
                            StateOutcome::Applied
                        }
                        None => StateOutcome::Superseded,
                    };
                }
                if let Some(state) = state.filter(|state| Some(state) != before.as_ref()) {
                    sqlx::query(self.sql.put_atm_state)
                        .bind(atm.as_str())
                        .bind(state.state.name())
                        .bind(i64::from(state.unavailable.0))
                        .bind(state.reason.as_ref().map(|reason| reason.as_str()))
                        .bind(state.expected_back_at.map(EventTime::unix_micros))
                        .bind(state.since.unix_micros())
                        .bind(state.heard.0.unix_micros())
                        .bind(state.heard.1.as_str())
                        .execute(&mut *transaction)
                        .await
                        .map_err(unavailable::<D>)?;
                    changed.push((atm, state));
                }
            }
            if !changed.is_empty() {
                sqlx::query(self.sql.touch_atm_state_log)
                    .bind(received_at.unix_micros())
                    .execute(&mut *transaction)
                    .await
                    .map_err(unavailable::<D>)?;
                let closures = self.read_atm_set_closures(&mut transaction).await?;
                let changes = state_changes(&changed, &closures, received_at);
                self.append_changes(&mut transaction, &changes, received_at.unix_micros().div_euclid(1_000_000))
                    .await?;
            }
            transaction.commit().await.map_err(unavailable::<D>)?;
            Ok(outcomes)
        })
        .await
    }

    async fn all(&self) -> Result<Vec<(AtmId, AtmState)>, StoreUnavailable> {
        let found: Vec<rows::AtmStateRow> = sqlx::query_as(self.sql.atm_states)
            .fetch_all(self.dialect.pool())
            .instrument(db::<D>("SELECT atm_states"))
            .await
            .map_err(unavailable::<D>)?;
        found.into_iter().map(rows::atm_state).collect()
    }

    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable> {
        let done = self
            .retrying("DELETE atm_state_events", move || async move {
                sqlx::query(self.sql.forget_state_events)
                    .bind(before.unix_micros())
                    .execute(self.dialect.pool())
                    .await
                    .map_err(unavailable::<D>)
            })
            .await?;
        Ok(done.rows_affected())
    }
}
