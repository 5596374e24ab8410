//! Request limits shared by every instance: GCRA (the generic cell rate algorithm, as
//! the per-instance limits count it, [`crate::local_limits`]) counted in Redis, by one
//! Lua script call per request, so a request costs one round trip however many limits
//! it is counted against.
//!
//! Each key holds its theoretical arrival time (TAT) in microseconds of Redis' own
//! clock (`TIME`), so instances whose clocks differ still count alike; it expires once
//! it is back to full. A request is admitted by a limit when its TAT is at most the
//! burst's tolerance ahead of now; the script counts it against the limits in order and
//! stops at the first that refuses it, whose wait it returns. Redis runs a script
//! atomically: no two instances ever read the same TAT.
//!
//! When Redis cannot be reached the instance counts alone ([`SharedOrLocal`]), as
//! without it (never refusing everything, never admitting everything), says so in the
//! log, and tries Redis again a second later.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use domain::limits::{Admission, LimitCheck, LimitError, LimitExceeded, RateLimits};
use domain::ports::RequestLimiter;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::io::tcp::TcpSettings;
use redis::{IntoConnectionInfo as _, Script};

/// KEYS: one per limit, narrowest first. ARGV: for each key, its emission interval
/// (microseconds between requests at the sustained rate) and its burst. Returns
/// `{0, 0}` when every limit admits the request, else `{i, wait}`: the 1-based index of
/// the limit that refused it and the microseconds until it would admit one.
const GCRA: &str = r"
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = interval * (tonumber(ARGV[2 * i]) - 1)
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  if tat - now > tolerance then
    return {i, tat - now - tolerance}
  end
  local next_tat = tat + interval
  redis.call('SET', key, next_tat, 'PX', math.ceil((next_tat - now) / 1000) + 1)
end
return {0, 0}
";

/// Every key the service writes starts with this.
const KEY_PREFIX: &str = "branch-atm:limit";

/// How long a request waits for Redis before its limits are counted by the instance
/// alone: a few round trips on a LAN, a small part of any request's budget.
const ANSWER_WITHIN: Duration = Duration::from_millis(50);

/// The limits, counted in the Redis at one URL.
pub struct RedisLimits {
    connection: ConnectionManager,
    script: Script,
    rates: RateLimits,
}

impl RedisLimits {
    /// The limits at `rates`, counted in the Redis at `url` (`redis://host:port[/db]`,
    /// `rediss://` for TLS). Connects lazily, and again whenever the connection is lost,
    /// so a Redis that is down at start or later is found again without a restart.
    ///
    /// # Errors
    /// [`LimitError::Unavailable`] for a URL that is not a Redis URL.
    pub fn new(url: &str, rates: &RateLimits) -> Result<Self, LimitError> {
        let unavailable = |error: redis::RedisError| LimitError::Unavailable(error.to_string());
        // Every check is one small request and its answer: Nagle would hold it back.
        let info =
            url.into_connection_info().map_err(unavailable)?.set_tcp_settings(TcpSettings::default().set_nodelay(true));
        let client = redis::Client::open(info).map_err(unavailable)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(ANSWER_WITHIN * 4))
            .set_response_timeout(Some(ANSWER_WITHIN))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let connection = ConnectionManager::new_lazy_with_config(client, config).map_err(unavailable)?;
        Ok(Self { connection, script: Script::new(GCRA), rates: *rates })
    }

    /// Counts a request against `checks` in Redis.
    async fn count(&self, checks: &[LimitCheck<'_>]) -> Result<(), LimitError> {
        let mut invocation = self.script.prepare_invoke();
        for check in checks {
            let rate = self.rates.of(check.limit());
            invocation
                .key(format!("{KEY_PREFIX}:{}:{}", check.limit().name(), key_of(check)))
                .arg(interval_micros(rate.per_second.get()))
                .arg(rate.burst.get());
        }
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(ANSWER_WITHIN, invocation.invoke_async::<(u64, u64)>(&mut connection)).await;
        match answer {
            Ok(Ok((0, _))) => Ok(()),
            Ok(Ok((refused_by, wait))) => {
                let check = usize::try_from(refused_by).ok().and_then(|i| checks.get(i.checked_sub(1)?));
                let limit = check.ok_or_else(|| LimitError::Unavailable(format!("no limit {refused_by} was asked")))?;
                Err(LimitExceeded { limit: limit.limit(), wait: Duration::from_micros(wait) }.into())
            }
            Ok(Err(error)) => Err(LimitError::Unavailable(error.to_string())),
            Err(_) => Err(LimitError::Unavailable(format!("no answer within {} ms", ANSWER_WITHIN.as_millis()))),
        }
    }
}

/// Whose count `check` takes, as its Redis key ends.
fn key_of(check: &LimitCheck<'_>) -> String {
    match check {
        LimitCheck::IssuePerCaller(caller) | LimitCheck::PerCaller(caller) => caller.to_string(),
        LimitCheck::IssuePerClient(client) | LimitCheck::PerClient(client) => client.as_str().to_owned(),
        LimitCheck::PerSession(session) => session.as_str().to_owned(),
    }
}

/// The microseconds between two requests at `per_second`.
fn interval_micros(per_second: u32) -> u64 {
    1_000_000 / u64::from(per_second.max(1))
}

impl RequestLimiter for RedisLimits {
    fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Admission<'a> {
        Admission::Pending(Box::pin(self.count(checks)))
    }
}

/// After Redis failed, how long the instance counts alone before asking it again: while
/// it is down, requests do not each wait out their timeout.
const SHARED_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The limits counted in Redis, and by this instance alone while Redis cannot answer.
pub struct SharedOrLocal {
    shared: RedisLimits,
    local: Arc<dyn RequestLimiter>,
    started: Instant,
    /// Milliseconds after `started` until which Redis is not asked (0: ask).
    shared_down_until: AtomicU64,
}

impl SharedOrLocal {
    /// Counts in `shared`, and in `local` while `shared` cannot answer.
    pub fn new(shared: RedisLimits, local: Arc<dyn RequestLimiter>) -> Self {
        Self { shared, local, started: Instant::now(), shared_down_until: AtomicU64::new(0) }
    }

    fn elapsed_ms(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64).max(1)
    }

    /// Redis's answer, or the local one when Redis fails (and then for a second).
    async fn count<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Result<(), LimitError> {
        match self.shared.count(checks).await {
            Err(LimitError::Unavailable(error)) => {
                let until = self.elapsed_ms() + SHARED_RETRY_AFTER.as_millis() as u64;
                if self.shared_down_until.swap(until, Ordering::Relaxed) == 0 {
                    tracing::warn!(%error, "the shared request limits are unavailable: this instance limits on its own");
                }
                self.local.admit(checks).await
            }
            answer => {
                if self.shared_down_until.swap(0, Ordering::Relaxed) != 0 {
                    tracing::info!("the shared request limits answer again: limits hold across instances");
                }
                answer
            }
        }
    }
}

impl RequestLimiter for SharedOrLocal {
    fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Admission<'a> {
        let down_until = self.shared_down_until.load(Ordering::Relaxed);
        if down_until != 0 && self.elapsed_ms() < down_until {
            return self.local.admit(checks);
        }
        Admission::Pending(Box::pin(self.count(checks)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_time_between_two_requests_at_the_sustained_rate() {
        assert_eq!(interval_micros(1), 1_000_000);
        assert_eq!(interval_micros(1_000), 1_000);
    }
}
