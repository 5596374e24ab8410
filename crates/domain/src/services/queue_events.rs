//! Queue events posted by branch queue systems (`POST /api/v1/branches/queue-events`):
//! each read and dated, the valid ones written durably in one step, every one accounted
//! for.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::ports::{Clock, QueueEventRecords, StoreUnavailable};
use crate::posted::EventTime;
use crate::queue::event::QueueEvent;
use crate::queue::live::LiveQueues;
use crate::services::posts::{PostEventsError, RejectedEvent, event_now, read_each};
use crate::system::SystemId;

/// What became of a post's events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostedEvents {
    /// Valid events stored now, durable.
    pub accepted: usize,
    /// Valid events whose id was stored already (sent again): nothing changed.
    pub duplicates: usize,
    /// Events refused, in order: nothing of them was stored.
    pub rejected: Vec<RejectedEvent>,
    /// The absolute errors (minutes) of the estimates told at the issue of the tickets
    /// these events called: for the accuracy histogram, counted by the instance that
    /// accepted the call alone.
    pub estimate_errors: Vec<f64>,
}

/// The queue systems' operation.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait QueueEventIntake: Send + Sync {
    /// Reads and stores `events` (1 to [`MOST_EVENTS`](crate::services::posts::MOST_EVENTS) JSON values) posted by `system`.
    ///
    /// # Errors
    /// [`PostEventsError`]: nothing was stored.
    async fn post(&self, system: &SystemId, events: &[Value]) -> Result<PostedEvents, PostEventsError>;
}

/// Stores posted events in the event log, then applies them to this instance's live
/// queues at once (the other instances read them from the log, [`LiveQueueFeed`]).
pub struct QueueEventService {
    records: Arc<dyn QueueEventRecords>,
    live: Arc<LiveQueues>,
    clock: Arc<dyn Clock>,
}

impl QueueEventService {
    /// Events into `records` and `live`, dated against `clock`.
    pub fn new(records: Arc<dyn QueueEventRecords>, live: Arc<LiveQueues>, clock: Arc<dyn Clock>) -> Self {
        Self { records, live, clock }
    }
}

#[async_trait]
impl QueueEventIntake for QueueEventService {
    async fn post(&self, system: &SystemId, events: &[Value]) -> Result<PostedEvents, PostEventsError> {
        let now = event_now(self.clock.as_ref());
        let (valid, rejected) = read_each(events, |value| {
            QueueEvent::from_json(value).and_then(|event| event.check_age(now).map(|()| event))
        });
        let valid: Vec<QueueEvent> = valid.into_iter().map(|(_, event)| event).collect();
        if valid.is_empty() {
            return Ok(PostedEvents { rejected, ..PostedEvents::default() });
        }
        let new = self.records.append(system, &valid, now).await?;
        let stored: Vec<QueueEvent> =
            valid.into_iter().zip(&new).filter(|(_, new)| **new).map(|(event, _)| event).collect();
        let estimate_errors = self.live.apply(&stored, now);
        Ok(PostedEvents { accepted: stored.len(), duplicates: new.len() - stored.len(), rejected, estimate_errors })
    }
}

/// How far back each poll of the log reads before the newest receipt it has seen:
/// a write committed late (its receipt time is taken before its commit), or stamped by
/// an instance whose clock runs behind, is still found. Events held already are skipped.
pub const POLL_OVERLAP_MINUTES: f64 = 5.0 / 60.0;

/// Keeps an instance's live queues in step with the event log: loads the last day at
/// start, then reads what other instances accepted.
pub struct LiveQueueFeed {
    records: Arc<dyn QueueEventRecords>,
    live: Arc<LiveQueues>,
    clock: Arc<dyn Clock>,
    newest_receipt: std::sync::Mutex<Option<EventTime>>,
}

impl LiveQueueFeed {
    /// Feeds `live` from `records`.
    pub fn new(records: Arc<dyn QueueEventRecords>, live: Arc<LiveQueues>, clock: Arc<dyn Clock>) -> Self {
        Self { records, live, clock, newest_receipt: std::sync::Mutex::new(None) }
    }

    /// Reads the events received since the last poll (the last day's at the first), and
    /// applies them; every [`LiveQueues::refresh`] is the caller's.
    ///
    /// # Errors
    /// The store's failure; the next poll reads the same span again.
    pub async fn poll(&self) -> Result<usize, StoreUnavailable> {
        let now = event_now(self.clock.as_ref());
        let newest = *self.newest_receipt.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (events, newest) = match newest {
            None => {
                let events = self.records.happened_since(now.plus_minutes(-crate::posted::OLDEST_MINUTES)).await?;
                (events, Some(now.plus_minutes(-POLL_OVERLAP_MINUTES)))
            }
            Some(newest) => {
                let received = self.records.received_since(newest.plus_minutes(-POLL_OVERLAP_MINUTES)).await?;
                let latest = received.iter().map(|r| r.received_at).max().map_or(newest, |at| at.max(newest));
                (received.into_iter().map(|r| r.event).collect(), Some(latest))
            }
        };
        self.live.apply(&events, now);
        *self.newest_receipt.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = newest;
        Ok(events.len())
    }

    /// Re-estimates every live branch now.
    pub fn refresh(&self) {
        self.live.refresh(event_now(self.clock.as_ref()));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ports::MockQueueEventRecords;
    use crate::testing::ManualClock;

    fn event(id: &str, at: &str) -> Value {
        json!({"eventId": id, "branchId": "00001", "type": "TicketIssued", "at": at, "ticket": "A1"})
    }

    #[tokio::test]
    async fn valid_events_are_stored_in_one_step_and_each_is_accounted_for() {
        let mut records = MockQueueEventRecords::new();
        records
            .expect_append()
            .withf(|system, events, _| system.as_str() == "queue-1" && events.len() == 2)
            .times(1)
            .returning(|_, _, _| Ok(vec![true, false]));
        let service = QueueEventService::new(
            Arc::new(records),
            Arc::new(LiveQueues::new(15.0)),
            Arc::new(ManualClock::at(time::macros::datetime!(2026-11-28 12:00 UTC))),
        );
        let posted = service
            .post(
                &SystemId::parse("queue-1").unwrap(),
                &[
                    event("e1", "2026-11-28T11:59:00Z"),
                    json!({"eventId": "e2"}),
                    event("e3", "2026-11-28T11:58:00.5Z"),
                    event("e4", "2026-11-27T11:59:59Z"),
                    event("e5", "2026-11-28T12:00:06Z"),
                ],
            )
            .await
            .unwrap();
        assert_eq!((posted.accepted, posted.duplicates), (1, 1));
        let refused: Vec<(usize, &str, &str)> =
            posted.rejected.iter().map(|r| (r.index, r.refusal.code, r.refusal.field)).collect();
        assert_eq!(refused, [(1, "missingField", "branchId"), (3, "tooOld", "at"), (4, "aheadOfClock", "at")]);
        assert!(posted.estimate_errors.is_empty(), "no call yet");
    }

    #[tokio::test]
    async fn a_post_with_no_valid_event_writes_nothing_and_a_store_failure_stores_nothing() {
        let records = MockQueueEventRecords::new();
        let service = QueueEventService::new(
            Arc::new(records),
            Arc::new(LiveQueues::new(15.0)),
            Arc::new(ManualClock::at(time::macros::datetime!(2026-11-28 12:00 UTC))),
        );
        let posted = service.post(&SystemId::parse("q").unwrap(), &[json!(1)]).await.unwrap();
        assert_eq!((posted.accepted, posted.rejected.len()), (0, 1));
        let mut failing = MockQueueEventRecords::new();
        failing.expect_append().returning(|_, _, _| Err(StoreUnavailable::new("down")));
        let service = QueueEventService::new(
            Arc::new(failing),
            Arc::new(LiveQueues::new(15.0)),
            Arc::new(ManualClock::at(time::macros::datetime!(2026-11-28 12:00 UTC))),
        );
        let result = service.post(&SystemId::parse("q").unwrap(), &[event("e1", "2026-11-28T11:59:00Z")]).await;
        assert!(matches!(result, Err(PostEventsError::Unavailable(_))));
    }
}
