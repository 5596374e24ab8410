//! What the request limits ([`crate::redis_limits`]) and the DPoP replay cache
//! ([`crate::dpop`]) share of Redis: one lazily made connection that answers within a
//! few round trips or not at all, and the rule for when Redis cannot answer (the
//! instance decides alone, says so once, and asks Redis again a second later).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::io::tcp::TcpSettings;
use redis::{FromRedisValue, IntoConnectionInfo as _};

/// How long a request waits for Redis before the instance decides alone: a few round
/// trips on a LAN, a small part of any request's budget.
pub const ANSWER_WITHIN: Duration = Duration::from_millis(50);

/// After Redis failed, how long the instance decides alone before asking it again:
/// while it is down, requests do not each wait out their timeout.
const SHARED_RETRY_AFTER: Duration = Duration::from_secs(1);

/// A connection to the Redis at one URL.
#[derive(Clone)]
pub struct RedisLink {
    connection: ConnectionManager,
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
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(ANSWER_WITHIN * 4))
            .set_response_timeout(Some(ANSWER_WITHIN))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection = ConnectionManager::new_lazy_with_config(client, config).map_err(unavailable)?;
        Ok(Self { connection })
    }

    /// The connection, for a script or a pipeline.
    pub fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// Runs `command`, or says why there was no answer within [`ANSWER_WITHIN`].
    ///
    /// # Errors
    /// The reason, when Redis failed or did not answer in time.
    pub async fn query<T: FromRedisValue>(&self, operation: &'static str, command: &redis::Cmd) -> Result<T, String> {
        let mut connection = self.connection.clone();
        within(operation, command.query_async::<T>(&mut connection)).await
    }
}

/// `answer`, or why there was none within [`ANSWER_WITHIN`].
///
/// # Errors
/// The reason, when Redis failed or did not answer in time.
pub async fn within<T>(
    operation: &'static str,
    answer: impl Future<Output = redis::RedisResult<T>>,
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
    match tokio::time::timeout(ANSWER_WITHIN, tracing::Instrument::instrument(answer, span)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("no answer within {} ms", ANSWER_WITHIN.as_millis())),
    }
}

/// Whether Redis is asked, for every use of it (the request limits and the DPoP replay
/// cache share one): after a failure of either the instance decides alone for a second,
/// saying so once in the log, and once more when Redis answers either again. One Redis
/// is up or down for both, so the published status hears of it from whichever asked
/// last, and hears it is back from the limits' next request even when no DPoP proof
/// comes.
pub struct RedisHealth {
    started: Instant,
    /// Milliseconds after `started` until which Redis is not asked (0: ask).
    down_until: AtomicU64,
}

impl Default for RedisHealth {
    fn default() -> Self {
        Self::new()
    }
}

impl RedisHealth {
    /// A Redis not yet asked: counted as answering.
    pub fn new() -> Self {
        Self { started: Instant::now(), down_until: AtomicU64::new(0) }
    }

    fn elapsed_ms(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64).max(1)
    }

    /// Whether to ask Redis now.
    pub fn ask_shared(&self) -> bool {
        let down_until = self.down_until.load(Ordering::Relaxed);
        down_until == 0 || self.elapsed_ms() >= down_until
    }

    /// Whether Redis failed last time it was asked and has not answered since.
    pub fn is_down(&self) -> bool {
        self.down_until.load(Ordering::Relaxed) != 0
    }

    /// Redis could not answer: decide alone for a while.
    pub fn failed(&self, error: &str) {
        let until = self.elapsed_ms() + SHARED_RETRY_AFTER.as_millis() as u64;
        if self.down_until.swap(until, Ordering::Relaxed) == 0 {
            tracing::warn!(
                %error,
                "Redis is unavailable: this instance applies the request limits and DPoP proofs' single use on \
                 its own"
            );
        }
    }

    /// Redis answered.
    pub fn answered(&self) {
        if self.down_until.swap(0, Ordering::Relaxed) != 0 {
            tracing::info!("Redis answers again: request limits and DPoP proofs' single use hold across instances");
        }
    }
}
