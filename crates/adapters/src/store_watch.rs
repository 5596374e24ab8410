//! Whether the store answers, found out within a bounded time.
//!
//! A load balancer's readiness probe must be answered quickly, also when the store is
//! stuck: a SQLite reader whose WAL-index locks another process holds spins for up to
//! ten seconds inside one call, whatever its busy timeout. So a readiness check never
//! waits on the store for longer than `PROBE_DEADLINE`, and never starts a second
//! probe beside one still running: checks share the probe in flight, and a recent
//! probe's outcome is reused. Nothing is probed while nobody asks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use domain::ports::{HealthSignals, ServingHealth};
use domain::status::HealthFacts;
use tokio::sync::watch;

use crate::redis_link::RedisNews;
use crate::store::StoreLifecycle;
use crate::view::StoreView;

/// How long a probe's outcome is reused: load balancers probe every second or so, and
/// several of them (or several instances' worth of checks) need not each reach the store.
const PROBE_REUSE: Duration = Duration::from_millis(200);

/// How long a check waits for a probe. The fault issue asks for readiness to answer
/// within one second, always.
const PROBE_DEADLINE: Duration = Duration::from_millis(500);

/// How long a probe may run before the store counts as not answering. Until then a
/// check that could not wait for it answers with the last probe's outcome: a probe that
/// is merely slow (a machine saturated for a moment) is not an outage, and load
/// balancers must not take every instance out for it; one that runs this long is a
/// stuck store (held locks, a server that stopped answering), seen within a second.
const PROBE_STUCK_AFTER: Duration = Duration::from_millis(650);

/// A probe's outcome.
#[derive(Debug, Clone, Copy)]
struct Probe {
    at: Instant,
    answered: bool,
}

/// What a check answers when the probe it waited for has not ended: the last outcome
/// while the probe is young, not answering once it has run [`PROBE_STUCK_AFTER`].
fn verdict_while_probing(last: Option<Probe>, running_for: Duration) -> bool {
    running_for < PROBE_STUCK_AFTER && last.is_some_and(|probe| probe.answered)
}

/// Readiness as the store and the in-memory view see it: the view vouches for its data
/// (it heard from the store within its staleness bound) and the store answers a probe.
pub struct StoreHealth {
    watch: Arc<StoreWatch>,
    view: Arc<StoreView>,
}

impl StoreHealth {
    /// Health of the service answering from `view` over the store `watch` probes.
    pub fn new(watch: Arc<StoreWatch>, view: Arc<StoreView>) -> Self {
        Self { watch, view }
    }
}

#[async_trait]
impl ServingHealth for StoreHealth {
    async fn can_serve(&self) -> bool {
        self.view.is_current() && self.watch.answers().await
    }

    fn can_serve_reads(&self) -> bool {
        self.view.is_current()
    }
}

/// What the published status is derived from ([`domain::status`]): the store's probe
/// (readiness's, so a status refresh costs no extra query while checks come), the age
/// of the data the view holds, the token writer's last outcome, and, with Redis, whether
/// the checks shared across instances (request limits, DPoP proofs' single use) answer.
pub struct ServiceSignals {
    watch: Arc<StoreWatch>,
    view: Arc<StoreView>,
    redis: Option<Arc<RedisNews>>,
}

impl ServiceSignals {
    /// Signals of the service answering from `view` over the store `watch` probes;
    /// `redis` is what was last heard of the Redis the checks shared across instances
    /// are made in (none without Redis).
    pub fn new(watch: Arc<StoreWatch>, view: Arc<StoreView>, redis: Option<Arc<RedisNews>>) -> Self {
        Self { watch, view, redis }
    }
}

#[async_trait]
impl HealthSignals for ServiceSignals {
    async fn observe(&self) -> HealthFacts {
        HealthFacts {
            store_answers: self.watch.answers().await,
            data_age: self.view.age(),
            token_writes_failing: self.view.token_writes_failing(),
            shared_checks_lost: self.redis.as_ref().is_some_and(|redis| redis.is_lost()),
        }
    }
}

/// Probes the store for readiness checks.
pub struct StoreWatch {
    store: Arc<dyn StoreLifecycle>,
    /// Where probes run: the runtime that made the watch, which lives as long as the
    /// service, not the HTTP worker whose check happened to start a probe.
    runtime: tokio::runtime::Handle,
    latest: watch::Sender<Option<Probe>>,
    probing: AtomicBool,
    /// When the probe in flight started.
    probe_started: std::sync::Mutex<Instant>,
    /// Whether the store answered the probe before the latest, for logging changes only.
    answered: AtomicBool,
}

impl StoreWatch {
    /// A watch over `store`, which the caller has just used (so it starts out answering).
    /// Call it within the tokio runtime that probes should run on.
    pub fn new(store: Arc<dyn StoreLifecycle>) -> Arc<Self> {
        Arc::new(Self {
            store,
            runtime: tokio::runtime::Handle::current(),
            latest: watch::Sender::new(None),
            probing: AtomicBool::new(false),
            probe_started: std::sync::Mutex::new(Instant::now()),
            answered: AtomicBool::new(true),
        })
    }

    /// Whether the store answers: a probe at most `PROBE_REUSE` old says so, or the
    /// probe this call starts (or joins) says so within `PROBE_DEADLINE`.
    pub async fn answers(self: &Arc<Self>) -> bool {
        let mut latest = self.latest.subscribe();
        let last = *latest.borrow_and_update();
        if let Some(probe) = last
            && probe.at.elapsed() < PROBE_REUSE
        {
            return probe.answered;
        }
        self.start_probe();
        let running_for = self.probe_started.lock().map_or(Duration::ZERO, |started| started.elapsed());
        // Wait for the probe, but never past the moment it would count as stuck.
        let wait = PROBE_DEADLINE.min(PROBE_STUCK_AFTER.saturating_sub(running_for));
        match tokio::time::timeout(wait, latest.changed()).await {
            Ok(Ok(())) => latest.borrow().is_some_and(|probe| probe.answered),
            _ => {
                let running_for = self.probe_started.lock().map_or(PROBE_STUCK_AFTER, |started| started.elapsed());
                let answered = verdict_while_probing(last, running_for);
                if !answered {
                    self.note(false, "the store did not answer a probe in time");
                }
                answered
            }
        }
    }

    /// Starts a probe unless one is running; it runs to its end even if every check
    /// waiting on it gave up, so a stuck store holds one probe, not one per check.
    fn start_probe(self: &Arc<Self>) {
        if self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(mut started) = self.probe_started.lock() {
            *started = Instant::now();
        }
        let probe = Probing(Arc::clone(self));
        self.runtime.spawn(async move {
            let watch = &probe.0;
            let outcome = watch.store.ping().await;
            match &outcome {
                Ok(()) => watch.note(true, ""),
                Err(error) => {
                    crate::token_writer::store_error("readiness_probe");
                    watch.note(false, &error.to_string());
                }
            }
            watch.latest.send_replace(Some(Probe { at: Instant::now(), answered: outcome.is_ok() }));
        });
    }

    fn note(&self, answered: bool, why: &str) {
        match (self.answered.swap(answered, Ordering::AcqRel), answered) {
            (false, true) => tracing::info!("the store answers again"),
            (true, false) => tracing::warn!(error = why, "the store does not answer"),
            _ => {}
        }
    }
}

/// A probe in progress. However it ends (done, panicked, or dropped with its runtime),
/// the next check may start another: readiness never waits on a probe that is gone.
struct Probing(Arc<StoreWatch>);

impl Drop for Probing {
    fn drop(&mut self) {
        self.0.probing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(answered: bool) -> Option<Probe> {
        Some(Probe { at: Instant::now(), answered })
    }

    #[test]
    fn a_slow_probe_keeps_the_last_outcome_and_a_stuck_one_is_not_answering() {
        assert!(verdict_while_probing(probe(true), Duration::from_millis(500)), "slow, after a good probe");
        assert!(!verdict_while_probing(probe(true), PROBE_STUCK_AFTER), "stuck");
        assert!(!verdict_while_probing(probe(false), Duration::from_millis(100)), "after a failed probe");
        assert!(!verdict_while_probing(None, Duration::from_millis(100)), "never probed");
    }
}
