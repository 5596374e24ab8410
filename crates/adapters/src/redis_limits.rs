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
//! log, and tries Redis again a second later, or as soon as the probe hears it back.
//! What it counted alone stays its own: Redis's counts start again from what they held.

use std::sync::Arc;
use std::time::Duration;

use domain::limits::{Admission, LimitCheck, LimitError, LimitExceeded, RateLimits};
use domain::ports::RequestLimiter;
use redis::Script;

use crate::redis_link::{RedisHealth, RedisLink, RedisNews, RedisProbe};

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

/// The limits, counted in the Redis at one URL.
pub struct RedisLimits {
    link: RedisLink,
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
        Ok(Self {
            link: RedisLink::new(url).map_err(LimitError::Unavailable)?,
            script: Script::new(GCRA),
            rates: *rates,
        })
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
        let invocation = &invocation;
        let answer = self
            .link
            .ask(
                "EVALSHA",
                |mut connection| async move { invocation.invoke_async::<(u64, u64)>(&mut connection).await },
            )
            .await;
        match answer {
            Ok((0, _)) => Ok(()),
            Ok((refused_by, wait)) => {
                let check = usize::try_from(refused_by).ok().and_then(|i| checks.get(i.checked_sub(1)?));
                let limit = check.ok_or_else(|| LimitError::Unavailable(format!("no limit {refused_by} was asked")))?;
                Err(LimitExceeded { limit: limit.limit(), wait: Duration::from_micros(wait) }.into())
            }
            Err(error) => Err(LimitError::Unavailable(error)),
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

/// The limits counted in Redis, and by this instance alone while Redis cannot answer.
pub struct SharedOrLocal {
    shared: RedisLimits,
    local: Arc<dyn RequestLimiter>,
    health: RedisHealth,
}

impl SharedOrLocal {
    /// Counts in `shared`, and in `local` while `shared` cannot answer; what Redis
    /// answers goes to `news` (the published status's).
    pub fn new(shared: RedisLimits, local: Arc<dyn RequestLimiter>, news: Arc<RedisNews>) -> Self {
        let health = RedisHealth::new("the shared request limits", "limits hold across instances", news);
        Self { shared, local, health }
    }

    /// Redis's answer, or the local one when Redis fails (and then for a second).
    async fn count<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Result<(), LimitError> {
        let asked = self.health.asking();
        match self.shared.count(checks).await {
            Err(LimitError::Unavailable(error)) => {
                self.health.failed(asked, &error);
                self.local.admit(checks).await
            }
            answer => {
                self.health.answered(asked);
                answer
            }
        }
    }
}

#[async_trait::async_trait]
impl RedisProbe for SharedOrLocal {
    async fn probe(&self) {
        let asked = self.health.asking();
        match self.shared.link.probe::<String>(&redis::cmd("PING")).await {
            Ok(_) => self.health.answered(asked),
            Err(error) => self.health.failed(asked, &error),
        }
    }
}

impl RequestLimiter for SharedOrLocal {
    fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Admission<'a> {
        if !self.health.ask_shared() {
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
