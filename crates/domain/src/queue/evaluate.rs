//! Replaying past events through the estimator, to measure how far its estimates were
//! from the waits that followed, beside three references on the same tickets.
//!
//! Each ticket is estimated just before its `TicketIssued` applies, as the live service
//! would have answered at that moment (the same [`BranchQueue`] and estimator), and
//! compared with its wait from issue to call. Tickets never called, and tickets issued
//! while their branch's queue was not live (no estimate would have been served), are
//! left out. The references:
//! - **QL with the truth**: people ahead over open counters times the branch's mean
//!   service time over the whole replay (known only in hindsight), zero while a counter
//!   is free for the ticket (Ibrahim and Whitt's queue-length predictor);
//! - **LES**: the wait of the last ticket called at the branch before this one was issued
//!   (their last-to-enter-service predictor);
//! - **the day's mean**: the branch's mean wait that UTC day, in hindsight: the best a
//!   daily import could hold.

use std::collections::HashMap;

use super::estimate::estimate;
use super::event::{QueueEvent, QueueEventKind, TicketId};
use super::state::BranchQueue;
use crate::branch::BranchId;
use crate::posted::EventTime;

/// One ticket's estimates and its actual wait, in minutes.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketOutcome {
    /// The branch.
    pub branch: BranchId,
    /// The ticket.
    pub ticket: TicketId,
    /// When it was issued.
    pub issued_at: EventTime,
    /// The estimator's estimate just before the issue applied.
    pub estimate: f64,
    /// Its wait from issue to call.
    pub actual: f64,
    /// The queue-length reference with the branch's true mean service time.
    pub queue_length: f64,
    /// The last-to-enter-service reference.
    pub last_to_enter: f64,
    /// The branch's mean wait that day.
    pub day_mean: f64,
}

/// How far a set of estimates was from the waits, in minutes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    /// Tickets compared.
    pub tickets: usize,
    /// Mean absolute error.
    pub mean_absolute: f64,
    /// 90th percentile of the absolute error (nearest rank).
    pub p90_absolute: f64,
    /// Mean of estimate minus wait: positive when the estimates run long.
    pub bias: f64,
}

impl Accuracy {
    /// The accuracy of `(estimate, actual)` pairs; all zero for none.
    pub fn of(pairs: impl IntoIterator<Item = (f64, f64)>) -> Self {
        let mut errors = Vec::new();
        let mut signed = 0.0;
        for (estimate, actual) in pairs {
            errors.push((estimate - actual).abs());
            signed += estimate - actual;
        }
        if errors.is_empty() {
            return Self { tickets: 0, mean_absolute: 0.0, p90_absolute: 0.0, bias: 0.0 };
        }
        let tickets = errors.len();
        let mean_absolute = errors.iter().sum::<f64>() / tickets as f64;
        errors.sort_by(f64::total_cmp);
        let rank = (0.9 * tickets as f64).ceil() as usize;
        let p90_absolute = errors[rank.clamp(1, tickets) - 1];
        Self { tickets, mean_absolute, p90_absolute, bias: signed / tickets as f64 }
    }
}

/// A ticket issued and not yet called.
struct Pending {
    issued_at: EventTime,
    estimate: Option<f64>,
    ahead: usize,
    open: usize,
    free: usize,
    last_to_enter: f64,
}

/// What a replay found.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// Every ticket estimated and called, in the order they were called.
    pub tickets: Vec<TicketOutcome>,
    /// Events whose id had been seen before, left out.
    pub duplicates: usize,
}

/// Replays `events` (any order: they are sorted as every instance sorts them, and a
/// repeated id is dropped) with `live_window` minutes as the liveness rule.
pub fn replay(mut events: Vec<QueueEvent>, live_window: f64) -> Replay {
    events.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let before = events.len();
    let mut seen = std::collections::HashSet::with_capacity(events.len());
    events.retain(|event| seen.insert(event.id.clone()));
    let duplicates = before - events.len();

    let mut queues: HashMap<BranchId, BranchQueue> = HashMap::new();
    let mut pending: HashMap<(BranchId, TicketId), Pending> = HashMap::new();
    let mut last_wait: HashMap<BranchId, f64> = HashMap::new();
    let mut service: HashMap<BranchId, (f64, usize)> = HashMap::new();
    // (branch, ticket, pending, actual) of every ticket called, before the hindsight
    // references are known.
    let mut called = Vec::new();
    for event in &events {
        let queue = queues.entry(event.branch).or_default();
        if let QueueEventKind::TicketIssued { ticket } = &event.kind {
            let live = queue.is_live(event.at, live_window);
            let now = queue.now(event.at);
            let open = now.open_counters.len();
            pending.insert(
                (event.branch, ticket.clone()),
                Pending {
                    issued_at: event.at,
                    estimate: live.then(|| estimate(queue, event.at)).flatten(),
                    ahead: now.waiting,
                    open,
                    free: now.open_counters.iter().filter(|busy| busy.is_none()).count(),
                    last_to_enter: last_wait.get(&event.branch).copied().unwrap_or(0.0),
                },
            );
        }
        let applied = queue.apply(event);
        if let Some(minutes) = applied.served {
            let (sum, count) = service.entry(event.branch).or_default();
            *sum += minutes;
            *count += 1;
        }
        match &event.kind {
            QueueEventKind::TicketIssued { ticket } if applied.ignored => {
                pending.remove(&(event.branch, ticket.clone()));
            }
            QueueEventKind::TicketCalled { ticket, .. } => {
                if let Some(waited) = applied.waited {
                    last_wait.insert(event.branch, waited);
                    if let Some(issue) = pending.remove(&(event.branch, ticket.clone())) {
                        called.push((event.branch, ticket.clone(), issue, waited));
                    }
                }
            }
            QueueEventKind::TicketCancelled { ticket } => {
                pending.remove(&(event.branch, ticket.clone()));
            }
            _ => {}
        }
    }

    let mut days: HashMap<(BranchId, i64), (f64, usize)> = HashMap::new();
    for (branch, _, issue, waited) in &called {
        let (sum, count) = days.entry((*branch, issue.issued_at.utc_day())).or_default();
        *sum += waited;
        *count += 1;
    }
    let tickets = called
        .into_iter()
        .filter_map(|(branch, ticket, issue, actual)| {
            let estimate = issue.estimate?;
            let mean_service = service.get(&branch).map_or(0.0, |(sum, count)| sum / (*count).max(1) as f64);
            let queue_length = if issue.ahead < issue.free || issue.open == 0 {
                0.0
            } else {
                (issue.ahead - issue.free + 1) as f64 * mean_service / issue.open as f64
            };
            let (sum, count) = days.get(&(branch, issue.issued_at.utc_day())).copied().unwrap_or((0.0, 1));
            Some(TicketOutcome {
                branch,
                ticket,
                issued_at: issue.issued_at,
                estimate,
                actual,
                queue_length,
                last_to_enter: issue.last_to_enter,
                day_mean: sum / count.max(1) as f64,
            })
        })
        .collect();
    Replay { tickets, duplicates }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::state::tests::events;

    #[test]
    fn each_called_ticket_is_scored_against_what_was_known_at_its_issue() {
        let mut list = events(&[
            (0.0, "CounterOpened", "", "1"),
            (1.0, "TicketIssued", "A1", ""),
            (1.0, "TicketCalled", "A1", "1"),
            (2.0, "TicketIssued", "A2", ""),
            (5.0, "ServiceEnded", "A1", ""),
            (5.0, "TicketCalled", "A2", "1"),
            (6.0, "TicketIssued", "A3", ""),
            (7.0, "TicketCancelled", "A3", ""),
            (8.0, "TicketIssued", "A4", ""),
        ]);
        list.push(list[1].clone());
        list.reverse();
        let replay = replay(list, 15.0);
        assert_eq!(replay.duplicates, 1);
        let tickets: Vec<_> = replay.tickets.iter().map(|t| t.ticket.as_str()).collect();
        assert_eq!(tickets, ["A1", "A2"], "A3 gave up and A4 was never called");
        let (a1, a2) = (&replay.tickets[0], &replay.tickets[1]);
        assert_eq!((a1.estimate, a1.actual, a1.queue_length), (0.0, 0.0, 0.0), "a free counter");
        assert_eq!(a2.actual, 3.0);
        // A2 found counter 1 one minute into a service; the branch had taught nothing, so
        // the prior's 5 minutes: max(5 − 1, 1.25) = 4.
        assert!((a2.estimate - 4.0).abs() < 1e-9, "{}", a2.estimate);
        assert_eq!(a2.queue_length, 4.0, "one busy counter, the replay's one 4-minute service");
        assert_eq!(a2.last_to_enter, 0.0);
        assert_eq!(a2.day_mean, 1.5);
    }

    #[test]
    fn a_ticket_issued_while_no_counter_is_open_is_not_scored() {
        let list = events(&[(0.0, "TicketIssued", "A1", ""), (1.0, "TicketCalled", "A1", "1")]);
        assert!(replay(list, 15.0).tickets.is_empty());
    }

    #[test]
    fn accuracy_is_the_mean_the_ninetieth_percentile_and_the_bias_of_the_errors() {
        let pairs = (1..=10).map(|n| (f64::from(n), 0.0));
        let accuracy = Accuracy::of(pairs);
        assert_eq!(accuracy.tickets, 10);
        assert_eq!((accuracy.mean_absolute, accuracy.p90_absolute, accuracy.bias), (5.5, 9.0, 5.5));
        assert_eq!(Accuracy::of([(1.0, 3.0)]).bias, -2.0);
        assert_eq!(Accuracy::of([]).tickets, 0);
    }
}
