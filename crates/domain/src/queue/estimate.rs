//! The wait of a customer who takes a ticket now, from what the branch's queue shows
//! (docs/adr/0045-live-wait-estimates.md says why this way).
//!
//! The new ticket is called when the people ahead of it have been called or have given
//! up and a counter comes free. The estimator plays that out in [`FUTURES`] futures and
//! answers their median:
//! - an open counter comes free after the rest of its current service, drawn from the
//!   branch's own services that lasted longer than this one has so far (a counter 9
//!   minutes into a service that usually takes 4 is near an unusual end, or far from it:
//!   the branch's history says which); a free counter calls at once;
//! - afterwards each service is drawn from the branch's latest ones;
//! - a counter closed for less than
//!   [`LONGEST_BREAK_MINUTES`](super::state::LONGEST_BREAK_MINUTES) may be on a break: it
//!   comes back in a share of the futures (the branch's share of closures that were
//!   breaks, given how long this one has lasted), after the rest of a break drawn from
//!   the branch's own;
//! - between two calls, each person ahead gives up at the branch's learned rate;
//! - the new ticket is called at the first counter free once fewer than half a person
//!   is expected ahead of it.
//!
//! The median, because it is the figure whose absolute error is least; futures, because
//! the first of several busy counters comes free sooner than the soonest expected one.
//! What the queue system does not say (counters that have not opened today, people
//! arriving behind) does not change this ticket's wait, or is not known. Every draw comes
//! from a fixed sequence: the same queue gives the same estimate on every instance.

use super::state::{BranchQueue, QueueNow};
use crate::posted::EventTime;

/// How many futures the estimator plays out. Against 256 on `bench/queue-days
/// --branches 6 --days 5 --seed 2` (6,056 tickets), 64 give the same MAE to the
/// hundredth and estimates 1.2 s apart on average, 3.7 s at the 90th percentile.
pub const FUTURES: usize = 64;
/// Past a day's wait the future is not played further: no wait longer is served
/// ([`crate::branch::WaitTime::MAX_MINUTES`]).
const LONGEST_WAIT_MINUTES: f64 = crate::branch::WaitTime::MAX_MINUTES as f64;
/// Calls played out at most in one future: a queue longer than this is answered as a
/// day's wait, whatever its systems post, in bounded time.
const LONGEST_PLAY: usize = 10_000;
/// Durations that lasted longer than the current one, below which its rest is the
/// mean-based figure ([`Durations::residual`]) instead of a draw.
const LONGER_TO_DRAW_FROM: usize = 3;
/// The weight, in durations, of the prior in [`Durations::residual`].
const RESIDUAL_PRIOR_WEIGHT: f64 = 2.0;

/// Durations a branch has taught (its services, its breaks), in minutes.
#[derive(Debug, Clone, PartialEq)]
pub struct Durations {
    sorted: Vec<f64>,
    mean: f64,
    draw_from: usize,
}

impl Durations {
    /// `samples` with mean `mean`, drawn from once there are `draw_from` of them (until
    /// then every duration is the mean).
    pub fn new(mut samples: Vec<f64>, mean: f64, draw_from: usize) -> Self {
        samples.sort_by(f64::total_cmp);
        Self { sorted: samples, mean, draw_from }
    }

    /// The mean, in minutes.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    fn longer_than(&self, elapsed: f64) -> &[f64] {
        &self.sorted[self.sorted.partition_point(|s| *s <= elapsed)..]
    }

    /// The expected rest of a duration that has lasted `elapsed` minutes: the mean excess
    /// over `elapsed` of those that lasted longer, drawn towards
    /// `max(mean − elapsed, mean / 4)` while few did.
    pub fn residual(&self, elapsed: f64) -> f64 {
        let longer = self.longer_than(elapsed);
        let excess: f64 = longer.iter().map(|s| s - elapsed).sum();
        let prior = (self.mean - elapsed).max(self.mean / 4.0);
        (excess + prior * RESIDUAL_PRIOR_WEIGHT) / (longer.len() as f64 + RESIDUAL_PRIOR_WEIGHT)
    }

    /// The share of durations that lasted longer than `elapsed`.
    fn share_longer(&self, elapsed: f64) -> f64 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        self.longer_than(elapsed).len() as f64 / self.sorted.len() as f64
    }

    /// A duration drawn at quantile `u` (in 0..1), or the mean while few are known.
    fn draw(&self, u: f64) -> f64 {
        if self.sorted.len() < self.draw_from {
            return self.mean;
        }
        pick(&self.sorted, u)
    }

    /// The rest of a duration that has lasted `elapsed`, drawn at quantile `u` of those
    /// that lasted longer, or [`Durations::residual`] while few did.
    fn draw_rest(&self, elapsed: f64, u: f64) -> f64 {
        let longer = self.longer_than(elapsed);
        if self.sorted.len() < self.draw_from || longer.len() < LONGER_TO_DRAW_FROM {
            return self.residual(elapsed);
        }
        pick(longer, u) - elapsed
    }
}

fn pick(sorted: &[f64], u: f64) -> f64 {
    sorted[((u * sorted.len() as f64) as usize).min(sorted.len() - 1)]
}

/// Everything a branch has taught that the estimator uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    /// Its latest services; drawn from once 20 are known.
    pub services: Durations,
    /// Its latest breaks; drawn from once 3 are known.
    pub breaks: Durations,
    /// The share of its closures that were breaks.
    pub returns_after_closing: f64,
    /// How often a waiting customer gives up, per minute.
    pub give_up_per_minute: f64,
}

/// Services a branch must have taught before its own are drawn from.
const SERVICES_TO_DRAW_FROM: usize = 20;
/// Breaks a branch must have taught before a closed counter is expected back.
const BREAKS_TO_DRAW_FROM: usize = 3;

impl Learned {
    /// What `queue` has taught.
    pub fn of(queue: &BranchQueue) -> Self {
        let breaks: Vec<f64> = queue.breaks().collect();
        let mean_break = if breaks.is_empty() { 0.0 } else { breaks.iter().sum::<f64>() / breaks.len() as f64 };
        Self {
            services: Durations::new(queue.services().collect(), queue.mean_service(), SERVICES_TO_DRAW_FROM),
            breaks: Durations::new(breaks, mean_break, BREAKS_TO_DRAW_FROM),
            returns_after_closing: queue.returns_after_closing(),
            give_up_per_minute: queue.give_up_rate(),
        }
    }

    /// Services alone: every service `samples`, no breaks, no one giving up; for tests.
    pub fn services_only(samples: Vec<f64>, mean: f64) -> Self {
        Self {
            services: Durations::new(samples, mean, SERVICES_TO_DRAW_FROM),
            breaks: Durations::new(vec![], 0.0, BREAKS_TO_DRAW_FROM),
            returns_after_closing: 0.0,
            give_up_per_minute: 0.0,
        }
    }

    /// The chance that a counter closed for `closed_for` minutes comes back: the share of
    /// closures that are breaks, weighed by the share of breaks that last longer.
    fn comes_back(&self, closed_for: f64) -> f64 {
        if self.breaks.sorted.len() < BREAKS_TO_DRAW_FROM {
            return 0.0;
        }
        let still_on_break = self.returns_after_closing * self.breaks.share_longer(closed_for);
        still_on_break / (still_on_break + (1.0 - self.returns_after_closing)).max(f64::MIN_POSITIVE)
    }
}

/// The `n`th of a sequence spread evenly over 0..1 from `start` (Weyl's, with the golden
/// ratio): the draws of one future, fixed, so every instance and every replay gives the
/// same estimate.
fn spread(start: f64, n: usize) -> f64 {
    const STEP: f64 = 0.618_033_988_749_894_9;
    (start + n as f64 * STEP).fract()
}

/// When a ticket taken now is called in one future, whose draws start at `start`.
fn one_future(now: &QueueNow, learned: &Learned, start: f64) -> Option<f64> {
    let mut draws = 0;
    let mut next = || {
        draws += 1;
        spread(start, draws)
    };
    let mut free_at: Vec<f64> = now
        .open_counters
        .iter()
        .map(|busy| busy.map_or(0.0, |elapsed| learned.services.draw_rest(elapsed, next())))
        .collect();
    for closed_for in &now.closed_counters {
        if next() < learned.comes_back(*closed_for) {
            free_at.push(learned.breaks.draw_rest(*closed_for, next()));
        }
    }
    if free_at.is_empty() {
        return None;
    }
    let mut ahead = now.waiting as f64;
    let mut clock = 0.0;
    for _ in 0..=LONGEST_PLAY {
        let (first, at) = free_at.iter().copied().enumerate().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((0, clock));
        ahead *= (-learned.give_up_per_minute * (at - clock)).exp();
        if ahead < 0.5 {
            return Some(at);
        }
        if at > LONGEST_WAIT_MINUTES {
            break;
        }
        ahead -= 1.0;
        clock = at;
        free_at[first] = at + learned.services.draw(next()).max(f64::MIN_POSITIVE);
    }
    Some(clock.max(LONGEST_WAIT_MINUTES))
}

/// The estimated wait in minutes, from ticket to call, of a ticket taken when the queue
/// is `now`; `None` when no counter is open (the queue is not live).
pub fn wait_of_a_new_ticket(now: &QueueNow, learned: &Learned) -> Option<f64> {
    if now.open_counters.is_empty() {
        return None;
    }
    let mut futures: Vec<f64> =
        (0..FUTURES).filter_map(|n| one_future(now, learned, (n as f64 + 0.5) / FUTURES as f64)).collect();
    futures.sort_by(f64::total_cmp);
    let middle = futures.len() / 2;
    Some((futures[middle.saturating_sub(1)] + futures[middle]) / 2.0)
}

/// The estimate for a ticket taken at `now` at this branch, if a counter is open.
pub fn estimate(queue: &BranchQueue, now: EventTime) -> Option<f64> {
    wait_of_a_new_ticket(&queue.now(now), &Learned::of(queue))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(minutes: f64) -> Learned {
        Learned::services_only(vec![minutes; 50], minutes)
    }

    fn queue(waiting: usize, open_counters: Vec<Option<f64>>) -> QueueNow {
        QueueNow { waiting, open_counters, closed_counters: vec![] }
    }

    #[test]
    fn with_no_counter_open_there_is_no_estimate() {
        assert_eq!(wait_of_a_new_ticket(&queue(3, vec![]), &flat(4.0)), None);
    }

    #[test]
    fn a_free_counter_and_nobody_ahead_is_no_wait() {
        assert_eq!(wait_of_a_new_ticket(&queue(0, vec![None, Some(1.0)]), &flat(4.0)), Some(0.0));
    }

    #[test]
    fn with_every_counter_busy_the_wait_counts_the_people_ahead_and_the_services_left() {
        // Two counters 1 and 3 minutes into 4-minute services: free at 3 and 1. Three
        // ahead are called at 1, 3 and 5; the new ticket at 7.
        let wait = wait_of_a_new_ticket(&queue(3, vec![Some(1.0), Some(3.0)]), &flat(4.0)).unwrap();
        assert!((wait - 7.0).abs() < 1e-9, "{wait}");
    }

    #[test]
    fn the_first_of_several_busy_counters_comes_free_sooner_than_the_soonest_expected() {
        // Services of 1 or 9 minutes, mean 5: each of three busy counters is expected
        // free in 5 minutes, but in most futures one of them ends within a minute.
        let mixed: Vec<f64> = (0..60).map(|n| if n % 2 == 0 { 1.0 } else { 9.0 }).collect();
        let learned = Learned::services_only(mixed, 5.0);
        let wait = wait_of_a_new_ticket(&queue(0, vec![Some(0.0); 3]), &learned).unwrap();
        assert_eq!(wait, 1.0);
    }

    #[test]
    fn people_who_give_up_shorten_the_wait() {
        let patient = wait_of_a_new_ticket(&queue(10, vec![Some(0.0)]), &flat(4.0)).unwrap();
        let leaving = Learned { give_up_per_minute: 0.05, ..flat(4.0) };
        let leaving = wait_of_a_new_ticket(&queue(10, vec![Some(0.0)]), &leaving).unwrap();
        assert!((patient - 44.0).abs() < 1e-9, "{patient}");
        assert!(leaving < 0.75 * patient, "{leaving} against {patient}");
    }

    #[test]
    fn a_counter_on_a_break_is_expected_back_once_the_branch_has_shown_its_breaks() {
        let mut now = queue(10, vec![Some(0.0)]);
        now.closed_counters = vec![10.0];
        let alone = wait_of_a_new_ticket(&now, &flat(4.0)).unwrap();
        assert!((alone - 44.0).abs() < 1e-9, "no break seen yet: the closed counter stays closed");
        let breaks =
            Learned { breaks: Durations::new(vec![30.0; 10], 30.0, 3), returns_after_closing: 0.9, ..flat(4.0) };
        let with_return = wait_of_a_new_ticket(&now, &breaks).unwrap();
        // Back 20 minutes from now: by then 5 of the 10 ahead are called, the other 5
        // share two counters.
        assert!(with_return < 36.0, "{with_return}");
        now.closed_counters = vec![200.0];
        assert!((wait_of_a_new_ticket(&now, &breaks).unwrap() - 44.0).abs() < 1e-9, "closed for the day");
    }

    #[test]
    fn a_duration_already_long_is_expected_to_end_as_the_longer_ones_did() {
        let times = Durations::new(vec![2.0, 2.0, 2.0, 2.0, 10.0, 12.0], 5.0, 20);
        // Past 3 minutes only the 10 and 12 remain: 8 minutes on average, drawn towards
        // max(5 − 3, 5 / 4) = 2 with the weight of two: (7 + 9 + 4) / 4 = 5.
        assert!((times.residual(3.0) - 5.0).abs() < 1e-9);
        assert!((times.residual(0.0) - (30.0 + 10.0) / 8.0).abs() < 1e-9);
        // Beyond every one seen, the prior alone: a quarter of the mean.
        assert!((times.residual(30.0) - 1.25).abs() < 1e-9);
    }

    #[test]
    fn the_same_queue_gives_the_same_estimate() {
        let varied: Vec<f64> = (1..=80).map(|n| f64::from(n) / 10.0).collect();
        let learned = Learned::services_only(varied, 4.05);
        let now = queue(7, vec![Some(2.0), None, Some(6.5)]);
        assert_eq!(wait_of_a_new_ticket(&now, &learned), wait_of_a_new_ticket(&now, &learned.clone()));
    }

    #[test]
    fn a_long_queue_is_played_out_without_end_or_overflow() {
        let wait = wait_of_a_new_ticket(&queue(1_000, vec![Some(0.0); 6]), &flat(4.0)).unwrap();
        assert!((wait - 1_000.0 / 6.0 * 4.0).abs() < 8.0, "{wait}");
        let endless = wait_of_a_new_ticket(&queue(usize::MAX, vec![Some(0.0)]), &flat(0.001)).unwrap();
        assert_eq!(endless, LONGEST_WAIT_MINUTES, "answered as a day's wait in bounded time");
        let no_time = Learned::services_only(vec![], 0.0);
        assert_eq!(wait_of_a_new_ticket(&queue(5, vec![None]), &no_time).map(|w| w < 1e-6), Some(true));
    }
}
