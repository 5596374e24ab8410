//! The wait of a customer who takes a ticket now, from what the branch's queue shows
//! (docs/adr/0045-live-wait-estimates.md says why this way).
//!
//! The new ticket is called when the people ahead of it have been called or have given
//! up and a counter comes free. The estimator plays that forward on expected values:
//! - each open counter comes free first after its *residual* service: what services that
//!   lasted longer than this one has so far took beyond that point, learned from the
//!   branch's own recent services (a counter 9 minutes into a service that usually takes
//!   4 is likely near an unusual end, or far from it: the branch's history says which);
//!   a free counter calls at once;
//! - afterwards a counter comes free every mean service time;
//! - between two calls, each person ahead gives up at the branch's learned rate;
//! - the new ticket is called at the first counter free once fewer than half a person
//!   is expected ahead of it.
//!
//! Closed counters call no one, so only open ones count. What the queue system does not
//! say (counters that will open, people who will arrive behind) does not change this
//! ticket's wait, or is not known.

use super::event::EventTime;
use super::state::{BranchQueue, QueueNow};

/// Services that lasted longer than a counter's current one, below which the residual
/// leans on the mean instead (weight of the prior in services).
const RESIDUAL_PRIOR_WEIGHT: f64 = 2.0;

/// What a branch has taught about its service times.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceTimes {
    sorted: Vec<f64>,
    mean: f64,
}

impl ServiceTimes {
    /// The branch's latest services, and their mean drawn towards the prior.
    pub fn of(queue: &BranchQueue) -> Self {
        let mut sorted: Vec<f64> = queue.services().collect();
        sorted.sort_by(f64::total_cmp);
        Self { sorted, mean: queue.mean_service() }
    }

    /// Service times `samples` (minutes) with mean `mean`: for tests and what-ifs.
    pub fn from_samples(mut samples: Vec<f64>, mean: f64) -> Self {
        samples.sort_by(f64::total_cmp);
        Self { sorted: samples, mean }
    }

    /// The mean service time, in minutes.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The expected rest of a service that has lasted `elapsed` minutes: the mean excess
    /// over `elapsed` of the services that lasted longer, drawn towards
    /// `max(mean − elapsed, mean / 4)` while few did.
    pub fn residual(&self, elapsed: f64) -> f64 {
        let longer = &self.sorted[self.sorted.partition_point(|s| *s <= elapsed)..];
        let excess: f64 = longer.iter().map(|s| s - elapsed).sum();
        let prior = (self.mean - elapsed).max(self.mean / 4.0);
        (excess + prior * RESIDUAL_PRIOR_WEIGHT) / (longer.len() as f64 + RESIDUAL_PRIOR_WEIGHT)
    }
}

/// The expected wait in minutes, from ticket to call, of a ticket taken when the queue is
/// `now`; `None` when no counter is open (nobody will be called).
pub fn wait_of_a_new_ticket(now: &QueueNow, services: &ServiceTimes, give_up_per_minute: f64) -> Option<f64> {
    let mut free_at: Vec<f64> =
        now.open_counters.iter().map(|busy| busy.map_or(0.0, |elapsed| services.residual(elapsed))).collect();
    if free_at.is_empty() {
        return None;
    }
    let mut ahead = now.waiting as f64;
    let mut clock = 0.0;
    loop {
        let (first, at) = free_at.iter().copied().enumerate().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((0, clock));
        ahead *= (-give_up_per_minute * (at - clock)).exp();
        if ahead < 0.5 {
            return Some(at);
        }
        ahead -= 1.0;
        clock = at;
        free_at[first] = at + services.mean().max(f64::MIN_POSITIVE);
    }
}

/// The estimate for a ticket taken at `now` at this branch, if a counter is open.
pub fn estimate(queue: &BranchQueue, now: EventTime) -> Option<f64> {
    wait_of_a_new_ticket(&queue.now(now), &ServiceTimes::of(queue), queue.give_up_rate())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(minutes: f64) -> ServiceTimes {
        ServiceTimes::from_samples(vec![minutes; 50], minutes)
    }

    fn queue(waiting: usize, open_counters: Vec<Option<f64>>) -> QueueNow {
        QueueNow { waiting, open_counters }
    }

    #[test]
    fn with_no_counter_open_there_is_no_estimate() {
        assert_eq!(wait_of_a_new_ticket(&queue(3, vec![]), &flat(4.0), 0.0), None);
    }

    #[test]
    fn a_free_counter_and_nobody_ahead_is_no_wait() {
        assert_eq!(wait_of_a_new_ticket(&queue(0, vec![None, Some(1.0)]), &flat(4.0), 0.0), Some(0.0));
    }

    #[test]
    fn with_every_counter_busy_the_wait_counts_the_people_ahead_and_the_services_left() {
        // Two counters 1 and 3 minutes into 4-minute services: free at 3 and 1. Three
        // ahead are called at 1, 3 and 5; the new ticket at 7.
        let wait = wait_of_a_new_ticket(&queue(3, vec![Some(1.0), Some(3.0)]), &flat(4.0), 0.0).unwrap();
        assert!((wait - 7.0).abs() < 1e-9, "{wait}");
    }

    #[test]
    fn people_who_give_up_shorten_the_wait() {
        let patient = wait_of_a_new_ticket(&queue(10, vec![Some(0.0)]), &flat(4.0), 0.0).unwrap();
        let leaving = wait_of_a_new_ticket(&queue(10, vec![Some(0.0)]), &flat(4.0), 0.05).unwrap();
        assert!((patient - 44.0).abs() < 1e-9, "{patient}");
        assert!(leaving < 0.75 * patient, "{leaving} against {patient}");
    }

    #[test]
    fn a_service_already_long_is_expected_to_end_as_the_longer_ones_did() {
        let times = ServiceTimes::from_samples(vec![2.0, 2.0, 2.0, 2.0, 10.0, 12.0], 5.0);
        // Past 3 minutes only the 10 and 12 remain: 8 minutes on average, drawn towards
        // max(5 − 3, 5 / 4) = 2 with the weight of two services: (7 + 9 + 4) / 4 = 5.
        assert!((times.residual(3.0) - 5.0).abs() < 1e-9);
        assert!((times.residual(0.0) - (30.0 + 10.0) / 8.0).abs() < 1e-9);
        // Beyond every service seen, the prior alone: a quarter of the mean.
        assert!((times.residual(30.0) - 1.25).abs() < 1e-9);
    }

    #[test]
    fn a_long_queue_is_played_out_without_end_or_overflow() {
        let wait = wait_of_a_new_ticket(&queue(100_000, vec![Some(0.0); 6]), &flat(4.0), 0.0).unwrap();
        assert!((wait - 100_000.0 / 6.0 * 4.0).abs() < 8.0, "{wait}");
        let no_time = ServiceTimes::from_samples(vec![], 0.0);
        assert_eq!(wait_of_a_new_ticket(&queue(5, vec![None]), &no_time, 0.0).map(|w| w < 1e-6), Some(true));
    }
}
