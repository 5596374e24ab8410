//! Whether the store answers, known without waiting on it.
//!
//! A load balancer's readiness probe must be answered at once, also when the store is
//! stuck: a SQLite reader whose WAL-index locks are held by another process spins for up
//! to ten seconds inside one call, whatever its busy timeout. So readiness never asks
//! the store itself; one background task probes it a few times a second, never more
//! than one probe at a time, and readiness reads the outcome.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::store::Store;

/// How often the store is probed: a change is seen within this plus one probe.
const PROBE_INTERVAL: Duration = Duration::from_millis(200);

/// A probe not answered within this counts as a store that does not answer. With the
/// interval above, a stuck store is reported within 700 ms, inside the fault issue's
/// bound of one second.
const PROBE_DEADLINE: Duration = Duration::from_millis(500);

/// How old the last good probe may be: if the probing task itself stops, readiness
/// fails rather than reporting an old success forever.
const FRESHNESS: Duration = Duration::from_secs(1);

/// The outcome of the latest probe of the store.
pub struct StoreWatch {
    started: Instant,
    /// Milliseconds after `started` of the last probe the store answered.
    answered_at: AtomicU64,
    /// Whether the latest probe failed or is overdue.
    failing: AtomicBool,
}

impl StoreWatch {
    /// Starts probing `store` on the current tokio runtime, until the process ends. The
    /// caller has just used the store (the service loads its view first), so it starts
    /// out as answering.
    pub fn spawn(store: Arc<dyn Store>) -> Arc<Self> {
        let watch =
            Arc::new(Self { started: Instant::now(), answered_at: AtomicU64::new(0), failing: AtomicBool::new(false) });
        tokio::spawn(Arc::clone(&watch).probe_forever(store));
        watch
    }

    /// Whether the store answered the latest probe, and that probe is recent.
    pub fn answers(&self) -> bool {
        let answered = Duration::from_millis(self.answered_at.load(Ordering::Acquire));
        !self.failing.load(Ordering::Acquire) && self.started.elapsed().saturating_sub(answered) <= FRESHNESS
    }

    async fn probe_forever(self: Arc<Self>, store: Arc<dyn Store>) {
        loop {
            let mut probe = pin!(store.ping());
            let outcome = match tokio::time::timeout(PROBE_DEADLINE, &mut probe).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    self.note(false, "the store did not answer within the probe's deadline");
                    // Keep waiting on this probe rather than starting another beside it: a
                    // stuck store would otherwise collect one stuck probe per interval.
                    probe.await
                }
            };
            match outcome {
                Ok(()) => self.note(true, ""),
                Err(error) => self.note(false, &error.to_string()),
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    fn note(&self, answered: bool, why: &str) {
        if answered {
            self.answered_at.store(self.started.elapsed().as_millis() as u64, Ordering::Release);
        }
        let was_failing = self.failing.swap(!answered, Ordering::AcqRel);
        match (was_failing, answered) {
            (true, true) => tracing::info!("the store answers"),
            (false, false) => tracing::warn!(error = why, "the store does not answer"),
            _ => {}
        }
    }
}
