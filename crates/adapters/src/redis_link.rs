//! What the request limits ([`crate::redis_limits`]) and the DPoP replay cache
//! ([`crate::dpop`]) share of Redis: one lazily made connection that answers within a
//! few round trips or not at all, made again and asked once more when Redis dropped it,
//! the rule for when Redis cannot answer (the instance decides alone, says so once, and
//! asks Redis again a second later, or sooner when the probe hears it back), and the
//! probe ([`RedisProbe`]) that asks Redis even while no request does.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::io::tcp::TcpSettings;
use redis::{FromRedisValue, IntoConnectionInfo as _, RedisResult};

/// How long a request waits for Redis before the instance decides alone: a few round
/// trips on a LAN, a small part of any request's budget.
pub const ANSWER_WITHIN: Duration = Duration::from_millis(50);

/// After Redis failed, how long the instance decides alone before asking it again:
/// while it is down, requests do not each wait out their timeout. The probe ends it
/// sooner when Redis answers it.
const SHARED_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long a probe waits for Redis: as long as a new connection may take to be made
/// (the connection's own timeout), since no request waits on it. A request's 50 ms is
/// too short for a connection made on a busy machine, and a probe that failed on it would
/// make the instance decide alone for a second for nothing.
pub const PROBE_WITHIN: Duration = Duration::from_millis(200);

/// How often each [`RedisProbe`] asks Redis: an instance that decided alone hears Redis is
/// back, and writes what it decided, within about this long of its return (issue 42's
/// replays, tried 1 s after it, must all be refused); a few commands a second for
/// Redis.
pub const PROBE_EVERY: Duration = Duration::from_millis(250);

/// A connection to the Redis at one URL.
pub struct RedisLink {
    connection: ConnectionManager,
    /// The connection was found dropped and made again since [`Self::take_reconnected`]
    /// last asked: Redis may have restarted and forgotten what it held.
    reconnected: AtomicBool,
}

impl RedisLink {
    /// The Redis at `url` (`redis://host:port[/db]`, `rediss://` for TLS). Connects
    /// lazily, and again whenever the connection is lost, so a Redis that is down at
    /// start or later is found again without a restart.
    ///
    /// # Errors
    /// The reason, for a URL that is not a Redis URL.
    pub fn new(url: &str) -> Result<Self, String> {
        let unavailable = |error: redis::RedisError| error.to_string();
        // Every call is one small request and its answer: Nagle would hold it back.
        let info =
            url.into_connection_info().map_err(unavailable)?.set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = redis::Client::open(info).map_err(unavailable)?;
        // One attempt per reconnection, no back-off of the manager's own: a reconnection
        // that waited out its back-off while Redis came back made the asks after its
        // return fail until it ended (up to a second and a half). The asks and the probe
        // are the retries.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(PROBE_WITHIN))
            // The longest any ask waits: each ask's own budget is kept by `within`.
            .set_response_timeout(Some(PROBE_WITHIN))
            .set_number_of_retries(0);
        let connection = ConnectionManager::new_lazy_with_config(client, config).map_err(unavailable)?;
        Ok(Self { connection, reconnected: AtomicBool::new(false) })
    }

    /// `ask`'s answer on the connection, or why there was none within
    /// [`ANSWER_WITHIN`]. When the connection was found dropped (Redis restarted, a
    /// proxy or failover closed it), the manager makes a new one and `ask` is sent once
    /// more on it, within the same time: the first ask after Redis returns is answered,
    /// not failed. So `ask` may run twice: a command whose first sending Redis carried
    /// out must answer the second alike (a proof's mark is checked against this ask's
    /// own, [`crate::dpop`]).
    ///
    /// # Errors
    /// The reason, when Redis failed or did not answer in time.
    pub async fn ask<T, F, Fut>(&self, operation: &'static str, ask: F) -> Result<T, String>
    where
        F: FnMut(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.ask_within(ANSWER_WITHIN, operation, ask).await
    }

    /// [`Self::ask`], waiting `budget` for the answer: a probe, which no request waits on,
    /// gives Redis as long as a new connection may take ([`PROBE_WITHIN`]).
    ///
    /// # Errors
    /// The reason, when Redis failed or did not answer in time.
    pub async fn ask_within<T, F, Fut>(
        &self,
        budget: Duration,
        operation: &'static str,
        mut ask: F,
    ) -> Result<T, String>
    where
        F: FnMut(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        within(budget, operation, async {
            match ask(self.connection.clone()).await {
                // The errors on which the manager starts a new connection.
                Err(error) if error.is_io_error() || error.is_unrecoverable_error() => {
                    self.reconnected.store(true, Ordering::Relaxed);
                    ask(self.connection.clone()).await
                }
                answer => answer,
            }
        })
        .await
    }

    /// Runs `command` as [`Self::ask`] does.
    ///
    /// # Errors
    /// The reason, when Redis failed or did not answer in time.
    pub async fn query<T: FromRedisValue>(&self, operation: &'static str, command: &redis::Cmd) -> Result<T, String> {
        self.ask(operation, |mut connection| async move { command.query_async::<T>(&mut connection).await }).await
    }

    /// Runs `command` for a probe ([`PROBE_WITHIN`]).
    ///
    /// # Errors
    /// The reason, when Redis failed or did not answer in time.
    pub async fn probe<T: FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, String> {
        self.ask_within(PROBE_WITHIN, "probe", |mut connection| async move {
            command.query_async::<T>(&mut connection).await
        })
        .await
    }

    /// Whether the connection was dropped and made again since this was last asked.
    pub fn take_reconnected(&self) -> bool {
        self.reconnected.swap(false, Ordering::Relaxed)
    }
}

/// `answer`, or why there was none within `budget`.
///
/// # Errors
/// The reason, when Redis failed or did not answer in time.
async fn within<T>(
    budget: Duration,
    operation: &'static str,
    answer: impl Future<Output = RedisResult<T>>,
) -> Result<T, String> {
    // A CLIENT span under a traced request (OpenTelemetry's database conventions);
    // disabled, at no cost, when traces are off.
    let span = tracing::trace_span!(
        "redis",
        otel.name = operation,
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = operation,
    );
    match tokio::time::timeout(budget, tracing::Instrument::instrument(answer, span)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("no answer within {} ms", budget.as_millis())),
    }
}

/// What was last heard of one Redis from all its uses (the request limits and the DPoP
/// replay cache), for the published status: lost while the latest ask that failed
/// began after the latest ask that was answered. Times are when the asks began, so an
/// answer to an ask sent before a failure does not clear it, and the first answer to one
/// sent after does, whichever use sent it: the status hears Redis is back from the
/// limits' next request even when no DPoP proof comes. Each use keeps its own back-off
/// and log lines ([`RedisHealth`]): one use's trouble does not make the other decide
/// alone.
pub struct RedisNews {
    started: Instant,
    /// When the latest ask that failed began, in µs after `started` (0: none).
    failed: AtomicU64,
    /// When the latest ask that was answered began, in µs after `started` (0: none).
    answered: AtomicU64,
}

impl Default for RedisNews {
    fn default() -> Self {
        Self::new()
    }
}

impl RedisNews {
    /// Nothing heard yet: not lost.
    pub fn new() -> Self {
        Self { started: Instant::now(), failed: AtomicU64::new(0), answered: AtomicU64::new(0) }
    }

    fn now_us(&self) -> u64 {
        (self.started.elapsed().as_micros() as u64).max(1)
    }

    /// Whether the latest news of Redis is a failure.
    pub fn is_lost(&self) -> bool {
        self.failed.load(Ordering::Relaxed) > self.answered.load(Ordering::Relaxed)
    }
}

/// When an ask of Redis began ([`RedisHealth::asking`]).
#[derive(Debug, Clone, Copy)]
pub struct Asked(u64);

/// Whether Redis is asked, for one use of it: after a failure the instance decides
/// alone for a second, saying so once in the log, and once more when Redis answers
/// again. What each ask found goes to the news of Redis all uses share.
pub struct RedisHealth {
    what: &'static str,
    holds: &'static str,
    news: Arc<RedisNews>,
    /// Microseconds after the news's start until which Redis is not asked (0: ask).
    down_until: AtomicU64,
}

impl RedisHealth {
    /// The health of `what` (`the shared request limits`), which, while Redis answers,
    /// `holds` (`limits hold across instances`); its asks' outcomes go to `news`.
    pub fn new(what: &'static str, holds: &'static str, news: Arc<RedisNews>) -> Self {
        Self { what, holds, news, down_until: AtomicU64::new(0) }
    }

    /// Whether to ask Redis now.
    pub fn ask_shared(&self) -> bool {
        let down_until = self.down_until.load(Ordering::Relaxed);
        down_until == 0 || self.news.now_us() >= down_until
    }

    /// An ask begins.
    pub fn asking(&self) -> Asked {
        Asked(self.news.now_us())
    }

    /// Redis could not answer the ask begun at `asked`: decide alone for a while.
    pub fn failed(&self, asked: Asked, error: &str) {
        self.news.failed.fetch_max(asked.0, Ordering::Relaxed);
        let until = self.news.now_us() + SHARED_RETRY_AFTER.as_micros() as u64;
        if self.down_until.swap(until, Ordering::Relaxed) == 0 {
            tracing::warn!(%error, "{} is unavailable: this instance decides on its own", self.what);
        }
    }

    /// Redis answered the ask begun at `asked`.
    pub fn answered(&self, asked: Asked) {
        self.news.answered.fetch_max(asked.0, Ordering::Relaxed);
        if self.down_until.swap(0, Ordering::Relaxed) != 0 {
            tracing::info!("{} answers again: {}", self.what, self.holds);
        }
    }
}

/// A use of Redis, asked every [`PROBE_EVERY`] on its own connection for as long as the
/// service runs: an instance no request reaches still hears Redis go and come back (the
/// published status), its connections are made again before a request needs them, and
/// what it decided alone is written to Redis soon after Redis returns.
#[async_trait]
pub trait RedisProbe: Send + Sync {
    /// Asks Redis something light and tells the use's health what it heard; a use that
    /// decided alone while Redis could not answer catches up here once it answers.
    async fn probe(&self);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause() {
        // Asks begun apart (the news is kept to the microsecond).
        std::thread::sleep(Duration::from_millis(2));
    }

    #[test]
    fn the_latest_ask_decides_the_news_and_each_use_keeps_its_own_back_off() {
        let news = Arc::new(RedisNews::new());
        let limits = RedisHealth::new("the limits", "they hold", Arc::clone(&news));
        let proofs = RedisHealth::new("the proofs", "they hold", Arc::clone(&news));
        assert!(!news.is_lost(), "nothing heard: not lost");
        let early = limits.asking();
        pause();
        proofs.failed(proofs.asking(), "connection refused");
        assert!(news.is_lost());
        limits.answered(early);
        assert!(news.is_lost(), "an answer to an ask begun before the failure is older news");
        assert!(!proofs.ask_shared(), "the failing use decides alone for a second");
        assert!(limits.ask_shared(), "the other goes on asking: one use's trouble is not the other's");
        pause();
        limits.answered(limits.asking());
        assert!(!news.is_lost(), "an answer to an ask begun after it says Redis is back");
        assert!(!proofs.ask_shared(), "the failing use still waits out its own second");
    }
}
