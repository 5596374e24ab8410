//! Request limits shared by every instance: GCRA (the generic cell rate algorithm, as
//! the per-instance limits count it, `api::rate_limit`) counted in Redis, by one Lua
//! script call per request, so a request costs one round trip however many limits it
//! is counted against.
//!
//! Each key holds its theoretical arrival time (TAT) in microseconds of Redis' own
//! clock (`TIME`), so instances whose clocks differ still count alike; it expires once
//! it is back to full. A request is admitted by a limit when its TAT is at most the
//! burst's tolerance ahead of now; the script counts it against the limits in order and
//! stops at the first that refuses it, whose wait it returns. Redis runs a script
//! atomically: no two instances ever read the same TAT.

use std::time::Duration;

use async_trait::async_trait;
use domain::ports::{LimitCheck, SharedLimits, SharedLimitsUnavailable};
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
}

impl RedisLimits {
    /// Limits counted in the Redis at `url` (`redis://host:port[/db]`, `rediss://` for
    /// TLS). Connects lazily, and again whenever the connection is lost, so a Redis that
    /// is down at start or later is found again without a restart.
    ///
    /// # Errors
    /// [`SharedLimitsUnavailable`] for a URL that is not a Redis URL.
    pub fn new(url: &str) -> Result<Self, SharedLimitsUnavailable> {
        let unavailable = |error: redis::RedisError| SharedLimitsUnavailable(error.to_string());
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
        Ok(Self { connection, script: Script::new(GCRA) })
    }
}

/// The microseconds between two requests at `per_second`.
fn interval_micros(per_second: u32) -> u64 {
    1_000_000 / u64::from(per_second.max(1))
}

#[async_trait]
impl SharedLimits for RedisLimits {
    async fn admit(&self, checks: &[LimitCheck]) -> Result<Option<(&'static str, Duration)>, SharedLimitsUnavailable> {
        let mut invocation = self.script.prepare_invoke();
        for check in checks {
            invocation
                .key(format!("{KEY_PREFIX}:{}:{}", check.limit, check.key))
                .arg(interval_micros(check.per_second))
                .arg(check.burst.max(1));
        }
        let mut connection = self.connection.clone();
        let answer = tokio::time::timeout(ANSWER_WITHIN, invocation.invoke_async::<(u64, u64)>(&mut connection)).await;
        match answer {
            Ok(Ok((0, _))) => Ok(None),
            Ok(Ok((refused_by, wait))) => {
                let limit = usize::try_from(refused_by).ok().and_then(|i| checks.get(i.checked_sub(1)?));
                Ok(Some((limit.map_or("unknown", |check| check.limit), Duration::from_micros(wait))))
            }
            Ok(Err(error)) => Err(SharedLimitsUnavailable(error.to_string())),
            Err(_) => Err(SharedLimitsUnavailable(format!("no answer within {} ms", ANSWER_WITHIN.as_millis()))),
        }
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
