//! The branches' queues held live in an instance: every event of the last day, applied
//! in `at` order whatever order they arrive in, and each live branch's estimate, ready
//! for the wait-time operation to read.
//!
//! Events come from this instance's own posts at once, and from the store's log for
//! those other instances accepted ([`LiveQueues::apply`] either way: an event already
//! held is skipped). An event older than the last one applied to its branch makes the
//! branch's queue be played again from its log, so the state is the one `at` order
//! gives. [`LiveQueues::refresh`] re-estimates every branch (a busy counter's service
//! grows longer with the clock alone) and forgets what is a day old.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use super::estimate::estimate;
use super::event::{QueueEvent, QueueEventKind, TicketId};
use super::state::BranchQueue;
use crate::branch::{BranchId, WaitTime};
use crate::posted::{EventId, EventTime, OLDEST_MINUTES};

/// One branch's events and the queue they make.
#[derive(Default)]
struct BranchLog {
    /// Every event held, in [`QueueEvent::order_key`] order.
    events: Vec<QueueEvent>,
    ids: HashSet<EventId>,
    queue: BranchQueue,
    /// The estimate given when each waiting ticket was issued (and when), to score it
    /// at its call.
    told_at_issue: HashMap<TicketId, (f64, EventTime)>,
}

impl BranchLog {
    /// Adds `events` (in [`QueueEvent::order_key`] order) not held yet; whether any was
    /// new. Applied one by one when none comes before the latest held; else inserted in
    /// place and the queue played again once.
    fn add(&mut self, events: Vec<&QueueEvent>, window: f64, errors: &mut Vec<f64>) -> bool {
        let new: Vec<QueueEvent> =
            events.into_iter().filter(|event| self.ids.insert(event.id.clone())).cloned().collect();
        let Some(first) = new.first() else {
            return false;
        };
        if self.events.last().is_none_or(|last| last.order_key() <= first.order_key()) {
            for event in new {
                self.apply(&event, window, errors);
                self.events.push(event);
            }
        } else {
            // Late: not scored (their tickets' estimates were told against another queue).
            for event in &new {
                if let Some(ticket) = event.kind.ticket() {
                    self.told_at_issue.remove(ticket);
                }
            }
            self.events.extend(new);
            self.events.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
            self.replay();
        }
        true
    }

    /// Applies `event` to the queue: a ticket's issue records the estimate it was given,
    /// its call scores that estimate against the wait (into `errors`, in minutes).
    fn apply(&mut self, event: &QueueEvent, window: f64, errors: &mut Vec<f64>) {
        if let QueueEventKind::TicketIssued { ticket } = &event.kind
            && self.queue.is_live(event.at, window)
            && let Some(told) = estimate(&self.queue, event.at)
        {
            self.told_at_issue.insert(ticket.clone(), (told, event.at));
        }
        let applied = self.queue.apply(event);
        match &event.kind {
            QueueEventKind::TicketCalled { ticket, .. } | QueueEventKind::TicketCancelled { ticket } => {
                if let (Some((told, _)), Some(waited)) = (self.told_at_issue.remove(ticket), applied.waited) {
                    errors.push((told - waited).abs());
                }
            }
            _ => {}
        }
    }

    /// Plays the queue again from the log, telling and scoring nothing: a replay tells
    /// no customer anything.
    fn replay(&mut self) {
        self.queue = BranchQueue::new();
        for event in &self.events {
            self.queue.apply(event);
        }
    }
}

/// Every branch's live queue in this instance.
pub struct LiveQueues {
    window_minutes: f64,
    branches: Mutex<HashMap<BranchId, BranchLog>>,
    estimates: RwLock<HashMap<BranchId, WaitTime>>,
    /// Whether any branch has an estimate: the wait-time operation's fast path.
    any: AtomicBool,
}

impl LiveQueues {
    /// Queues live while a counter is open and an event came within `window_minutes`.
    pub fn new(window_minutes: f64) -> Self {
        Self {
            window_minutes,
            branches: Mutex::new(HashMap::new()),
            estimates: RwLock::new(HashMap::new()),
            any: AtomicBool::new(false),
        }
    }

    /// Adds `events` (any order, any branch; those held already are skipped) and
    /// re-estimates their branches at `now`. The absolute errors, in minutes, of the
    /// estimates given at the issue of the tickets these events called.
    pub fn apply(&self, events: &[QueueEvent], now: EventTime) -> Vec<f64> {
        let mut errors = Vec::new();
        if events.is_empty() {
            return errors;
        }
        let mut by_branch: HashMap<BranchId, Vec<&QueueEvent>> = HashMap::new();
        for event in events {
            by_branch.entry(event.branch).or_default().push(event);
        }
        let mut branches = self.branches.lock().unwrap_or_else(PoisonError::into_inner);
        let mut touched = Vec::new();
        for (branch, mut events) in by_branch {
            events.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
            if branches.entry(branch).or_default().add(events, self.window_minutes, &mut errors) {
                touched.push(branch);
            }
        }
        let fresh: Vec<(BranchId, Option<WaitTime>)> =
            touched.into_iter().map(|branch| (branch, self.estimate_of(&branches[&branch], now))).collect();
        drop(branches);
        self.publish(fresh, false);
        errors
    }

    /// Re-estimates every branch at `now`, and forgets events a day old (and branches
    /// left with none).
    pub fn refresh(&self, now: EventTime) {
        let oldest = now.plus_minutes(-OLDEST_MINUTES);
        let mut branches = self.branches.lock().unwrap_or_else(PoisonError::into_inner);
        branches.retain(|_, log| {
            let stale = log.events.partition_point(|event| event.at < oldest);
            if stale > 0 {
                for event in log.events.drain(..stale) {
                    log.ids.remove(&event.id);
                }
                log.told_at_issue.retain(|_, (_, issued)| *issued >= oldest);
                log.replay();
            }
            !log.events.is_empty()
        });
        let fresh: Vec<(BranchId, Option<WaitTime>)> =
            branches.iter().map(|(branch, log)| (*branch, self.estimate_of(log, now))).collect();
        drop(branches);
        self.publish(fresh, true);
    }

    fn estimate_of(&self, log: &BranchLog, now: EventTime) -> Option<WaitTime> {
        if !log.queue.is_live(now, self.window_minutes) {
            return None;
        }
        let minutes = estimate(&log.queue, now)?;
        let whole = minutes.round().clamp(0.0, f64::from(WaitTime::MAX_MINUTES));
        WaitTime::from_minutes(whole as u32).ok()
    }

    /// Publishes `fresh` estimates (`None`: not live); `whole` replaces every estimate.
    fn publish(&self, fresh: Vec<(BranchId, Option<WaitTime>)>, whole: bool) {
        let mut estimates = self.estimates.write().unwrap_or_else(PoisonError::into_inner);
        if whole {
            estimates.clear();
        }
        for (branch, wait) in fresh {
            match wait {
                Some(wait) => estimates.insert(branch, wait),
                None => estimates.remove(&branch),
            };
        }
        self.any.store(!estimates.is_empty(), Ordering::Release);
    }

    /// The live estimate of `branch`, if its queue is live.
    pub fn wait(&self, branch: BranchId) -> Option<WaitTime> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.estimates.read().unwrap_or_else(PoisonError::into_inner).get(&branch).copied()
    }

    /// Whether no branch is live: the wait-time operation reads imported figures alone.
    pub fn none_live(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::state::tests::events;

    fn start() -> EventTime {
        EventTime::from_unix_micros(1_795_000_000_000_000)
    }

    fn day() -> Vec<QueueEvent> {
        events(&[
            (0.0, "CounterOpened", "", "1"),
            (1.0, "TicketIssued", "A1", ""),
            (1.0, "TicketCalled", "A1", "1"),
            (2.0, "TicketIssued", "A2", ""),
            (3.0, "TicketIssued", "A3", ""),
            (5.0, "ServiceEnded", "A1", ""),
            (5.0, "TicketCalled", "A2", "1"),
        ])
    }

    #[test]
    fn events_in_any_order_and_sent_twice_give_the_queue_at_order_gives() {
        let in_order = LiveQueues::new(15.0);
        in_order.apply(&day(), start().plus_minutes(6.0));
        let shuffled = LiveQueues::new(15.0);
        let mut events = day();
        events.reverse();
        for event in &events {
            shuffled.apply(std::slice::from_ref(event), start().plus_minutes(6.0));
        }
        shuffled.apply(&day(), start().plus_minutes(6.0));
        let branch = BranchId::parse("00001").unwrap();
        assert!(in_order.wait(branch).is_some());
        assert_eq!(in_order.wait(branch), shuffled.wait(branch));
    }

    #[test]
    fn a_branch_leaves_the_live_ones_when_its_events_stop_or_its_counters_close() {
        let live = LiveQueues::new(15.0);
        let branch = BranchId::parse("00001").unwrap();
        assert!(live.none_live());
        live.apply(&day(), start().plus_minutes(6.0));
        assert!(!live.none_live());
        live.refresh(start().plus_minutes(21.0));
        assert_eq!(live.wait(branch), None, "no event for more than 15 minutes");
        assert!(live.none_live());
        let closed = events(&[(0.0, "CounterOpened", "", "1"), (1.0, "CounterClosed", "", "1")]);
        let live = LiveQueues::new(15.0);
        live.apply(&closed, start().plus_minutes(2.0));
        assert_eq!(live.wait(branch), None, "no counter open");
    }

    #[test]
    fn the_estimate_told_at_a_tickets_issue_is_scored_at_its_call() {
        let live = LiveQueues::new(15.0);
        let errors = live.apply(&day(), start().plus_minutes(6.0));
        // A1 was told 0 (a free counter) and waited 0; A2 was told 4 (the prior's
        // 5-minute service, 1 minute in) and waited 3.
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].abs() < 1e-9 && (errors[1] - 1.0).abs() < 1e-9, "{errors:?}");
        let again = live.apply(&day(), start().plus_minutes(6.0));
        assert!(again.is_empty(), "events held already are not scored twice");
    }

    #[test]
    fn events_a_day_old_are_forgotten() {
        let live = LiveQueues::new(15.0);
        live.apply(&day(), start().plus_minutes(6.0));
        live.refresh(start().plus_minutes(24.0 * 60.0 + 10.0));
        assert!(live.branches.lock().unwrap().is_empty());
    }
}
