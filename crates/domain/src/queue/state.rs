//! A branch's queue as its events tell it, applied in `at` order: who waits, which
//! counters are open and whom they serve, and what the branch has taught about its
//! service times and its customers' patience.
//!
//! Events that do not fit what came before are applied as far as they make sense and
//! never refused here (the queue system saw something; the service did not):
//! - a ticket called that was never issued (or whose issue comes later in `at` order) is
//!   served, with no wait to learn from; its issue, when it comes, is ignored;
//! - a counter that calls is open, whatever was said of it before;
//! - a call on a counter still serving ends that service then;
//! - a ticket issued while it waits or is served, a service ended or a ticket cancelled
//!   that is not in service or waiting, and a counter opened or closed twice, change
//!   nothing;
//! - a closed counter finishes the service it is giving and calls nobody else.

use std::collections::VecDeque;

use super::event::{CounterId, QueueEvent, QueueEventKind, TicketId};
use crate::posted::EventTime;

/// How long a queue stays live without an event, in minutes: the default of the
/// `waittimes` setting, and what an offline replay uses.
pub const LIVE_WINDOW_MINUTES: f64 = 15.0;
/// How many of the latest services a branch's service time is learned from: about a
/// busy day's worth at one branch, so the figure follows the day without jumping.
pub const SERVICE_SAMPLES: usize = 200;
/// The service time assumed before a branch has taught its own, in minutes, and how many
/// services' weight it carries: a teller's transaction takes minutes, and five real
/// services outweigh the guess.
pub const PRIOR_SERVICE_MINUTES: f64 = 5.0;
/// The weight of [`PRIOR_SERVICE_MINUTES`], in services.
pub const PRIOR_SERVICE_WEIGHT: f64 = 5.0;
/// A service longer than this (minutes) is a counter left open, not a service: it is not
/// learned from.
pub const LONGEST_SERVICE_MINUTES: f64 = 120.0;
/// A counter closed for longer than this (minutes) is closed for the day, not on a break.
pub const LONGEST_BREAK_MINUTES: f64 = 180.0;
/// How many of the latest breaks a branch's break length is learned from.
pub const BREAK_SAMPLES: usize = 50;
/// Waiting-minutes with no one giving up that a branch starts from, so that the first
/// cancellation of the day does not read as everyone leaving.
pub const PRIOR_PATIENCE_MINUTES: f64 = 120.0;

/// A ticket in the queue.
#[derive(Debug, Clone, PartialEq)]
struct Waiting {
    ticket: TicketId,
    issued: EventTime,
}

/// A counter and the ticket it serves.
#[derive(Debug, Clone, PartialEq)]
struct Counter {
    id: CounterId,
    open: bool,
    serving: Option<(TicketId, EventTime)>,
    /// When it last closed, while it stays closed.
    closed_at: Option<EventTime>,
}

/// What applying one event showed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Applied {
    /// A waiting ticket was called: how long it waited, in minutes.
    pub waited: Option<f64>,
    /// A service ended (by its end or by its counter's next call): how long, in minutes.
    pub served: Option<f64>,
    /// The event changed nothing (see the module's rules).
    pub ignored: bool,
}

/// The queue of one branch.
#[derive(Debug, Clone, Default)]
pub struct BranchQueue {
    waiting: Vec<Waiting>,
    counters: Vec<Counter>,
    services: VecDeque<f64>,
    service_sum: f64,
    waited_minutes: f64,
    cancellations: u32,
    breaks: VecDeque<f64>,
    /// Closures whose end is known: the counter opened again, or stayed closed past
    /// [`LONGEST_BREAK_MINUTES`].
    closures_ended: u32,
    /// Of those, the ones that were breaks (the counter opened again within it).
    closures_returned: u32,
    last_at: Option<EventTime>,
}

/// What the estimator reads of a queue at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueNow {
    /// People waiting.
    pub waiting: usize,
    /// For each open counter, how long (minutes) it has served its current ticket, or
    /// `None` if it is free.
    pub open_counters: Vec<Option<f64>>,
    /// For each counter closed within [`LONGEST_BREAK_MINUTES`], how long it has been
    /// closed (minutes): it may be on a break.
    pub closed_counters: Vec<f64>,
}

impl BranchQueue {
    /// An empty queue with nothing learned.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies `event`, which must not come before the last one applied in
    /// [`QueueEvent::order_key`] order (the caller replays from its log when one does).
    pub fn apply(&mut self, event: &QueueEvent) -> Applied {
        let at = event.at;
        if let Some(last) = self.last_at {
            self.waited_minutes += self.waiting.len() as f64 * at.minutes_since(last).max(0.0);
        }
        self.last_at = Some(self.last_at.map_or(at, |last| last.max(at)));
        self.end_long_closures(at);
        let mut applied = Applied::default();
        match &event.kind {
            QueueEventKind::TicketIssued { ticket } => {
                let known = self.waiting.iter().any(|w| w.ticket == *ticket)
                    || self.counters.iter().any(|c| c.serving.as_ref().is_some_and(|(t, _)| t == ticket));
                if known {
                    applied.ignored = true;
                } else {
                    self.waiting.push(Waiting { ticket: ticket.clone(), issued: at });
                }
            }
            QueueEventKind::TicketCalled { ticket, counter } => {
                if let Some(place) = self.waiting.iter().position(|w| w.ticket == *ticket) {
                    applied.waited = Some(at.minutes_since(self.waiting.remove(place).issued).max(0.0));
                }
                for other in &mut self.counters {
                    if other.id != *counter && other.serving.as_ref().is_some_and(|(t, _)| t == ticket) {
                        other.serving = None;
                    }
                }
                let counter = self.open(counter, at);
                let ended = counter.serving.replace((ticket.clone(), at));
                applied.served = ended.map(|(_, since)| at.minutes_since(since).max(0.0));
            }
            QueueEventKind::ServiceEnded { ticket } => {
                let serving = self.counters.iter_mut().find(|c| c.serving.as_ref().is_some_and(|(t, _)| t == ticket));
                match serving.and_then(|c| c.serving.take()) {
                    Some((_, since)) => applied.served = Some(at.minutes_since(since).max(0.0)),
                    None => applied.ignored = true,
                }
            }
            QueueEventKind::TicketCancelled { ticket } => match self.waiting.iter().position(|w| w.ticket == *ticket) {
                Some(place) => {
                    self.waiting.remove(place);
                    self.cancellations += 1;
                }
                None => applied.ignored = true,
            },
            QueueEventKind::CounterOpened { counter } => {
                applied.ignored = self.counter(counter).open;
                self.open(counter, at);
            }
            QueueEventKind::CounterClosed { counter } => {
                let counter = self.counter(counter);
                applied.ignored = !counter.open;
                if counter.open {
                    counter.open = false;
                    counter.closed_at = Some(at);
                }
            }
        }
        if let Some(minutes) = applied.served {
            self.learn_service(minutes);
        }
        applied
    }

    fn counter(&mut self, id: &CounterId) -> &mut Counter {
        let place = self.counter_place(id);
        &mut self.counters[place]
    }

    fn counter_place(&mut self, id: &CounterId) -> usize {
        match self.counters.iter().position(|c| c.id == *id) {
            Some(place) => place,
            None => {
                self.counters.push(Counter { id: id.clone(), open: false, serving: None, closed_at: None });
                self.counters.len() - 1
            }
        }
    }

    /// Opens `id` at `at`, learning the break it ends, if it was one.
    fn open(&mut self, id: &CounterId, at: EventTime) -> &mut Counter {
        let place = self.counter_place(id);
        if let Some(closed_at) = self.counters[place].closed_at.take() {
            let closed_for = at.minutes_since(closed_at).max(0.0);
            self.closures_ended += 1;
            if closed_for <= LONGEST_BREAK_MINUTES {
                self.closures_returned += 1;
                if self.breaks.len() == BREAK_SAMPLES {
                    self.breaks.pop_front();
                }
                self.breaks.push_back(closed_for);
            }
        }
        let counter = &mut self.counters[place];
        counter.open = true;
        counter
    }

    /// Ends the closures that have lasted past [`LONGEST_BREAK_MINUTES`] by `at`: the
    /// counters are closed for the day.
    fn end_long_closures(&mut self, at: EventTime) {
        for counter in &mut self.counters {
            if counter.closed_at.is_some_and(|closed_at| at.minutes_since(closed_at) > LONGEST_BREAK_MINUTES) {
                counter.closed_at = None;
                self.closures_ended += 1;
            }
        }
    }

    fn learn_service(&mut self, minutes: f64) {
        if minutes > LONGEST_SERVICE_MINUTES {
            return;
        }
        if self.services.len() == SERVICE_SAMPLES
            && let Some(oldest) = self.services.pop_front()
        {
            self.service_sum -= oldest;
        }
        self.services.push_back(minutes);
        self.service_sum += minutes;
    }

    /// Whether the queue is live at `now`: a counter open, and an event within `window`
    /// minutes. Otherwise the branch's imported estimate is served.
    pub fn is_live(&self, now: EventTime, window_minutes: f64) -> bool {
        self.counters.iter().any(|c| c.open)
            && self.last_at.is_some_and(|last| now.minutes_since(last) <= window_minutes)
    }

    /// When the latest event applied happened.
    pub fn last_event(&self) -> Option<EventTime> {
        self.last_at
    }

    /// The queue at `now`: people waiting, and each open counter's service so far.
    pub fn now(&self, now: EventTime) -> QueueNow {
        QueueNow {
            waiting: self.waiting.len(),
            open_counters: self
                .counters
                .iter()
                .filter(|c| c.open)
                .map(|c| c.serving.as_ref().map(|(_, since)| now.minutes_since(*since).max(0.0)))
                .collect(),
            closed_counters: self
                .counters
                .iter()
                .filter_map(|c| c.closed_at.map(|closed_at| now.minutes_since(closed_at).max(0.0)))
                .filter(|closed_for| *closed_for <= LONGEST_BREAK_MINUTES)
                .collect(),
        }
    }

    /// The latest services learned, in minutes, oldest first.
    pub fn services(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.services.iter().copied()
    }

    /// The latest breaks learned (minutes a counter was closed before it opened again),
    /// oldest first.
    pub fn breaks(&self) -> impl ExactSizeIterator<Item = f64> + '_ {
        self.breaks.iter().copied()
    }

    /// The share of a branch's closures that were breaks, drawn towards none while few
    /// have ended (a counter that closes is not assumed to come back until the branch
    /// has shown that its counters do).
    pub fn returns_after_closing(&self) -> f64 {
        f64::from(self.closures_returned) / (f64::from(self.closures_ended) + 2.0)
    }

    /// The mean service time learned, drawn towards [`PRIOR_SERVICE_MINUTES`] while the
    /// branch has taught few.
    pub fn mean_service(&self) -> f64 {
        (self.service_sum + PRIOR_SERVICE_MINUTES * PRIOR_SERVICE_WEIGHT)
            / (self.services.len() as f64 + PRIOR_SERVICE_WEIGHT)
    }

    /// How often a waiting customer gives up, per minute waited: cancellations over the
    /// minutes people spent waiting (the rate of an exponential patience).
    pub fn give_up_rate(&self) -> f64 {
        f64::from(self.cancellations) / (self.waited_minutes + PRIOR_PATIENCE_MINUTES)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// Events of branch 00001 from `(minute, type, ticket, counter)`.
    pub(crate) fn events(list: &[(f64, &str, &str, &str)]) -> Vec<QueueEvent> {
        list.iter()
            .enumerate()
            .map(|(n, (minute, kind, ticket, counter))| {
                let at = EventTime::from_unix_micros(1_795_000_000_000_000).plus_minutes(*minute);
                let mut event = json!({"eventId": format!("e{n}"), "branchId": "00001", "type": kind,
                    "at": at.to_string()});
                if !ticket.is_empty() {
                    event["ticket"] = json!(ticket);
                }
                if !counter.is_empty() {
                    event["counter"] = json!(counter);
                }
                QueueEvent::from_json(&event).unwrap()
            })
            .collect()
    }

    fn replay(list: &[(f64, &str, &str, &str)]) -> (BranchQueue, Vec<Applied>) {
        let mut queue = BranchQueue::new();
        let applied = events(list).iter().map(|e| queue.apply(e)).collect();
        (queue, applied)
    }

    #[test]
    fn a_day_in_order_gives_waits_services_and_the_queue_left() {
        let (queue, applied) = replay(&[
            (0.0, "CounterOpened", "", "1"),
            (1.0, "TicketIssued", "A1", ""),
            (2.0, "TicketIssued", "A2", ""),
            (3.0, "TicketCalled", "A1", "1"),
            (7.0, "ServiceEnded", "A1", ""),
            (8.0, "TicketCalled", "A2", "1"),
            (9.0, "TicketIssued", "A3", ""),
        ]);
        assert_eq!(applied[3].waited, Some(2.0));
        assert_eq!(applied[4].served, Some(4.0));
        assert_eq!(applied[5].waited, Some(6.0));
        let start = EventTime::from_unix_micros(1_795_000_000_000_000);
        assert_eq!(
            queue.now(start.plus_minutes(10.0)),
            QueueNow { waiting: 1, open_counters: vec![Some(2.0)], closed_counters: vec![] }
        );
        assert!(queue.is_live(start.plus_minutes(24.0), 15.0));
        assert!(!queue.is_live(start.plus_minutes(24.5), 15.0), "no event for more than 15 minutes");
    }

    #[test]
    fn a_call_for_an_unknown_ticket_serves_it_and_its_late_issue_is_ignored() {
        let (queue, applied) = replay(&[
            (0.0, "TicketCalled", "A9", "2"),
            (1.0, "TicketIssued", "A9", ""),
            (2.0, "CounterClosed", "", "2"),
            (3.0, "CounterClosed", "", "2"),
        ]);
        assert_eq!(applied[0].waited, None, "no wait to learn from");
        assert!(applied[1].ignored, "the ticket is being served");
        assert!(!applied[2].ignored);
        assert!(applied[3].ignored, "closed twice");
        let now = queue.now(EventTime::from_unix_micros(1_795_000_000_000_000).plus_minutes(4.0));
        assert_eq!(
            now,
            QueueNow { waiting: 0, open_counters: vec![], closed_counters: vec![2.0] },
            "the closed counter calls no one"
        );
    }

    #[test]
    fn a_call_on_a_busy_counter_ends_its_service_and_a_stray_end_changes_nothing() {
        let (queue, applied) = replay(&[
            (0.0, "TicketIssued", "A1", ""),
            (0.0, "TicketIssued", "A2", ""),
            (1.0, "TicketCalled", "A1", "1"),
            (4.0, "TicketCalled", "A2", "1"),
            (5.0, "ServiceEnded", "A1", ""),
            (5.0, "TicketCancelled", "A1", ""),
        ]);
        assert_eq!(applied[3].served, Some(3.0));
        assert!(applied[4].ignored && applied[5].ignored);
        assert_eq!(queue.services().collect::<Vec<_>>(), [3.0]);
    }

    #[test]
    fn the_service_time_moves_from_the_prior_to_what_the_branch_shows() {
        let mut list = vec![(0.0, "CounterOpened", "", "1")];
        let tickets: Vec<String> = (0..40).map(|n| format!("T{n}")).collect();
        for (n, ticket) in tickets.iter().enumerate() {
            list.push((n as f64 * 2.0, "TicketCalled", ticket, "1"));
        }
        let (queue, _) = replay(&list);
        assert!((queue.mean_service() - (39.0 * 2.0 + 25.0) / 44.0).abs() < 1e-9);
        let (fresh, _) = replay(&[]);
        assert_eq!(fresh.mean_service(), PRIOR_SERVICE_MINUTES);
    }

    #[test]
    fn giving_up_is_counted_against_the_minutes_people_waited() {
        let (queue, _) = replay(&[
            (0.0, "TicketIssued", "A1", ""),
            (0.0, "TicketIssued", "A2", ""),
            (30.0, "TicketCancelled", "A1", ""),
            (60.0, "TicketCancelled", "A2", ""),
        ]);
        // 2 people × 30 min + 1 × 30 min = 90 waiting-minutes, plus the prior's 120.
        assert!((queue.give_up_rate() - 2.0 / 210.0).abs() < 1e-9);
    }
}
