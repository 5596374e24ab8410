//! One log line a second per cause, with the count, instead of one line per request.
//!
//! During an outage every request fails the same way (6,600 ERROR lines per instance in
//! 20 s of a database failover, in the finding); a flood of refused tokens is the same
//! INFO line thousands of times. An operator needs what happened and how often. So the
//! first request of a cause in a second is logged whole (with its `uuid`, which the
//! caller may quote); the others of that second are counted, and one line says how many,
//! with the last of their details, once the second is over. A background thread writes
//! that line when no request of the cause comes to close the second.
//!
//! Written here rather than taken from a crate: the causes are this service's own
//! (`Note`), known before any text is formatted, and the first line must stay whole;
//! tracing's ecosystem offers sampling and rate limits that drop lines, not this.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long a cause's lines are gathered into one.
pub const WINDOW: Duration = Duration::from_secs(1);

/// What a line is about: requests that fail or are refused for the same reason are one
/// cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// The service could not answer (an ERROR): what failed.
    Failed(&'static str),
    /// Credentials refused (an INFO): the operation and the reason.
    Refused(&'static str, &'static str),
}

/// How many more requests of a cause there were in a second after the first, and the
/// details of the last of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// What they were about.
    pub cause: Cause,
    /// How many, after the one logged whole.
    pub more: u64,
    /// The last one's detail (a store error's text, say).
    pub last: String,
}

#[derive(Debug)]
struct Window {
    opened: Instant,
    more: u64,
    last: String,
}

/// The open second of each cause.
#[derive(Debug, Default)]
pub struct Summaries {
    windows: HashMap<Cause, Window>,
}

impl Summaries {
    /// Counts one request of `cause` at `now`; `true` when it opens a second and is to
    /// be logged whole (then also the summary of the second it closes, if one is due).
    pub fn record(&mut self, cause: Cause, detail: &str, now: Instant) -> (bool, Option<Summary>) {
        match self.windows.get_mut(&cause) {
            Some(window) if now.duration_since(window.opened) < WINDOW => {
                window.more += 1;
                detail.clone_into(&mut window.last);
                (false, None)
            }
            Some(window) => {
                let closed = std::mem::replace(window, Window { opened: now, more: 0, last: String::new() });
                (true, (closed.more > 0).then_some(Summary { cause, more: closed.more, last: closed.last }))
            }
            None => {
                self.windows.insert(cause, Window { opened: now, more: 0, last: String::new() });
                (true, None)
            }
        }
    }

    /// The summaries of the seconds over at `now`, which are closed: the next request of
    /// their cause is logged whole again.
    pub fn due(&mut self, now: Instant) -> Vec<Summary> {
        let mut due = Vec::new();
        self.windows.retain(|cause, window| {
            if now.duration_since(window.opened) < WINDOW {
                return true;
            }
            if window.more > 0 {
                due.push(Summary { cause: *cause, more: window.more, last: std::mem::take(&mut window.last) });
            }
            false
        });
        due
    }
}

/// The summaries of one service, written by `write` (the first of each second at once,
/// the count at the end of the second). A thread writes the summaries a second ends
/// without a request of the cause to close it; it stops once the summaries are dropped.
pub struct LogSummaries {
    summaries: Arc<Mutex<Summaries>>,
    write: fn(&Summary),
}

impl LogSummaries {
    /// Summaries written by `write`, with their thread.
    pub fn start(write: fn(&Summary)) -> Self {
        let summaries = Arc::new(Mutex::new(Summaries::default()));
        let held: Weak<Mutex<Summaries>> = Arc::downgrade(&summaries);
        let spawned = std::thread::Builder::new().name("log-summary".into()).spawn(move || {
            loop {
                std::thread::sleep(WINDOW / 4);
                let Some(summaries) = held.upgrade() else { return };
                let due = summaries.lock().map(|mut summaries| summaries.due(Instant::now())).unwrap_or_default();
                due.iter().for_each(write);
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "no thread for log summaries: a summary is written only when its cause comes again");
        }
        Self { summaries, write }
    }

    /// Records one line of `cause` with `detail`; `true` when it is the first of its
    /// second, to be logged whole. Writes the summary of the second this one closes.
    pub fn record(&self, cause: Cause, detail: &str) -> bool {
        let Ok((whole, closed)) =
            self.summaries.lock().map(|mut summaries| summaries.record(cause, detail, Instant::now()))
        else {
            return true;
        };
        if let Some(summary) = closed {
            (self.write)(&summary);
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOWN: Cause = Cause::Failed("token issuance failed");

    #[test]
    fn the_first_of_a_second_is_whole_and_the_rest_are_one_count_when_the_second_is_over() {
        let mut summaries = Summaries::default();
        let start = Instant::now();
        assert_eq!(summaries.record(DOWN, "a", start), (true, None));
        for i in 1..=500u64 {
            let at = start + Duration::from_millis(i);
            assert_eq!(summaries.record(DOWN, &format!("cause {i}"), at), (false, None));
        }
        assert!(summaries.due(start + Duration::from_millis(999)).is_empty(), "the second is not over");
        let due = summaries.due(start + WINDOW);
        assert_eq!(due, [Summary { cause: DOWN, more: 500, last: "cause 500".into() }]);
        assert_eq!(summaries.record(DOWN, "b", start + WINDOW), (true, None), "whole again after the summary");
    }

    #[test]
    fn causes_are_counted_apart_and_a_request_that_closes_a_second_carries_its_summary() {
        let mut summaries = Summaries::default();
        let start = Instant::now();
        let refused = Cause::Refused("bearer", "expired");
        assert!(summaries.record(DOWN, "a", start).0);
        assert!(summaries.record(refused, "", start).0, "another cause has its own second");
        assert!(!summaries.record(DOWN, "b", start + Duration::from_millis(10)).0);
        let (whole, closed) = summaries.record(DOWN, "c", start + Duration::from_millis(1500));
        assert!(whole);
        assert_eq!(closed, Some(Summary { cause: DOWN, more: 1, last: "b".into() }));
        assert!(summaries.due(start + Duration::from_millis(1500)).is_empty(), "a lone request needs no summary");
    }
}
