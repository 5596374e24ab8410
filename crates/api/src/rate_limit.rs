//! Request limits (GCRA, from the `governor` crate), in the layers that keep one caller
//! from taking what an app's other users share:
//!
//! - issuing tokens: per caller address, under a per-client-id ceiling;
//! - the bearer operations: per session (the token's `sid`), per caller address, under
//!   a per-client-id ceiling.
//!
//! The narrowest limit is checked first, so a request refused there takes nothing from
//! the limits others share. The caller's address is the peer's, or the one a trusted
//! proxy reports ([`crate::caller`]); IPv6 callers are counted per /64, the block one
//! subscriber is usually given.
//!
//! With shared limits ([`SharedLimits`], Redis) every instance counts in one place, so
//! the limits hold across instances. When they cannot be reached the instance counts
//! alone, as without them (never refusing everything, never admitting everything), says
//! so in the log, and tries the shared limits again a second later.

use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use domain::client::ClientId;
use domain::ports::{LimitCheck, SharedLimits};
use domain::token::{AccessClaims, SessionId};
use governor::clock::Clock as _;
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::errors::LimitExceeded;

/// A sustained rate with bursts above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests a second, sustained.
    pub per_second: NonZeroU32,
    /// Requests allowed at once above that.
    pub burst: NonZeroU32,
}

impl Rate {
    /// A rate no test or benchmark reaches.
    pub const UNLIMITED: Self = Self { per_second: NonZeroU32::MAX, burst: NonZeroU32::MAX };
}

/// Every request limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Token requests per caller address.
    pub issue_per_caller: Rate,
    /// Token requests per client id.
    pub issue_per_client: Rate,
    /// Bearer requests per session.
    pub per_session: Rate,
    /// Bearer requests per caller address.
    pub per_caller: Rate,
    /// Bearer requests per client id.
    pub per_client: Rate,
}

impl RateLimits {
    /// No limit reached by tests.
    pub fn unlimited() -> Self {
        let open = Rate::UNLIMITED;
        Self { issue_per_caller: open, issue_per_client: open, per_session: open, per_caller: open, per_client: open }
    }
}

/// `Retry-After` is whole seconds: round up, and never 0 (that would invite a retry
/// that is refused again).
fn whole_seconds(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

/// A limit of a sustained rate with bursts, per key.
pub struct RateLimit<K: Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
}

impl<K: Hash + Eq + Clone> RateLimit<K> {
    /// A limit of `rate.per_second` requests a second per key, with bursts up to `rate.burst`.
    pub fn new(rate: Rate) -> Self {
        Self { limiter: DefaultKeyedRateLimiter::keyed(Quota::per_second(rate.per_second).allow_burst(rate.burst)) }
    }

    /// Counts a request of `key`; `Err(seconds)` to wait before the next one is allowed
    /// (at least 1, for `Retry-After`).
    pub fn check(&self, key: &K) -> Result<(), u64> {
        self.limiter
            .check_key(key)
            .map_err(|not_until| whole_seconds(not_until.wait_time_from(self.limiter.clock().now())))
    }

    /// Forgets keys whose state is back to full, so the table does not grow forever.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// The key a caller's address is counted under: an IPv4 address (also when written as
/// IPv4-mapped IPv6), or an IPv6 address's /64.
pub fn caller_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
        },
    }
}

/// After the shared limits failed, how long the instance counts alone before trying
/// them again: while they are down, requests do not each wait out their timeout.
const SHARED_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Every limit the service applies.
pub struct Limits {
    rates: RateLimits,
    issue_per_caller: RateLimit<IpAddr>,
    issue_per_client: RateLimit<ClientId>,
    per_session: RateLimit<SessionId>,
    per_caller: RateLimit<IpAddr>,
    per_client: RateLimit<ClientId>,
    shared: Option<Arc<dyn SharedLimits>>,
    started: Instant,
    /// Milliseconds after `started` until which the shared limits are not asked (0: ask).
    shared_down_until: AtomicU64,
}

impl Limits {
    /// The limits of `settings`, counted by this instance alone, or in `shared` when
    /// given (and by this instance alone while `shared` cannot be reached).
    pub fn new(settings: &RateLimits, shared: Option<Arc<dyn SharedLimits>>) -> Self {
        Self {
            rates: *settings,
            issue_per_caller: RateLimit::new(settings.issue_per_caller),
            issue_per_client: RateLimit::new(settings.issue_per_client),
            per_session: RateLimit::new(settings.per_session),
            per_caller: RateLimit::new(settings.per_caller),
            per_client: RateLimit::new(settings.per_client),
            shared,
            started: Instant::now(),
            shared_down_until: AtomicU64::new(0),
        }
    }

    /// Counts a token request of `client` from `caller`.
    ///
    /// # Errors
    /// [`LimitExceeded`] when the caller or the client is over its rate.
    pub async fn issue(&self, caller: IpAddr, client: &ClientId) -> Result<(), LimitExceeded> {
        let caller = caller_key(caller);
        let shared = self.shared_checks(|| {
            vec![
                check("issue-caller", caller.to_string(), self.rates.issue_per_caller),
                check("issue-client", client.as_str().to_owned(), self.rates.issue_per_client),
            ]
        });
        if let Some(answer) = self.ask_shared(shared).await {
            return answer;
        }
        self.issue_per_caller.check(&caller).map_err(|wait| refused("issue-caller", wait))?;
        self.issue_per_client.check(client).map_err(|wait| refused("issue-client", wait))
    }

    /// Counts a bearer request made with `claims` from `caller`.
    ///
    /// # Errors
    /// [`LimitExceeded`] when the session, the caller or the client is
    /// over its rate.
    pub async fn bearer(&self, caller: IpAddr, claims: &AccessClaims) -> Result<(), LimitExceeded> {
        let caller = caller_key(caller);
        let shared = self.shared_checks(|| {
            vec![
                check("session", claims.session.as_str().to_owned(), self.rates.per_session),
                check("caller", caller.to_string(), self.rates.per_caller),
                check("client", claims.client_id.as_str().to_owned(), self.rates.per_client),
            ]
        });
        if let Some(answer) = self.ask_shared(shared).await {
            return answer;
        }
        self.per_session.check(&claims.session).map_err(|wait| refused("session", wait))?;
        self.per_caller.check(&caller).map_err(|wait| refused("caller", wait))?;
        self.per_client.check(&claims.client_id).map_err(|wait| refused("client", wait))
    }

    /// The shared limits and what to ask them, when there are some and they are not
    /// known to be down.
    fn shared_checks(&self, checks: impl FnOnce() -> Vec<LimitCheck>) -> Option<(&dyn SharedLimits, Vec<LimitCheck>)> {
        let shared = self.shared.as_deref()?;
        let down_until = self.shared_down_until.load(Ordering::Relaxed);
        if down_until != 0 && self.elapsed_ms() < down_until {
            return None;
        }
        Some((shared, checks()))
    }

    /// The shared limits' answer, or `None` when the instance is to count alone.
    async fn ask_shared(
        &self,
        shared: Option<(&dyn SharedLimits, Vec<LimitCheck>)>,
    ) -> Option<Result<(), LimitExceeded>> {
        let (limits, checks) = shared?;
        match limits.admit(&checks).await {
            Ok(None) => {
                if self.shared_down_until.swap(0, Ordering::Relaxed) != 0 {
                    tracing::info!("the shared request limits answer again: limits hold across instances");
                }
                Some(Ok(()))
            }
            Ok(Some((limit, wait))) => Some(Err(refused(limit, whole_seconds(wait)))),
            Err(error) => {
                let until = self.elapsed_ms() + SHARED_RETRY_AFTER.as_millis() as u64;
                if self.shared_down_until.swap(until, Ordering::Relaxed) == 0 {
                    tracing::warn!(%error, "the shared request limits are unavailable: this instance limits on its own");
                }
                None
            }
        }
    }

    fn elapsed_ms(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64).max(1)
    }

    /// Forgets every key whose state is back to full.
    pub fn forget_idle(&self) {
        self.issue_per_caller.forget_idle();
        self.issue_per_client.forget_idle();
        self.per_session.forget_idle();
        self.per_caller.forget_idle();
        self.per_client.forget_idle();
    }
}

/// A refusal by `limit`, to retry after `wait_seconds`.
fn refused(limit: &'static str, wait_seconds: u64) -> LimitExceeded {
    LimitExceeded { limit, retry_after: wait_seconds }
}

/// What the shared limits are asked for one limit.
fn check(limit: &'static str, key: String, rate: Rate) -> LimitCheck {
    LimitCheck { limit, key, per_second: rate.per_second.get(), burst: rate.burst.get() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_second: u32, burst: u32) -> Rate {
        Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
    }

    #[test]
    fn a_key_gets_its_burst_then_waits_at_least_a_second() {
        let limit = RateLimit::new(rate(1, 3));
        for _ in 0..3 {
            assert_eq!(limit.check(&"app"), Ok(()));
        }
        assert_eq!(limit.check(&"app"), Err(1));
    }

    #[test]
    fn keys_are_limited_separately() {
        let limit = RateLimit::new(rate(1, 1));
        assert_eq!(limit.check(&"one"), Ok(()));
        assert!(limit.check(&"one").is_err());
        assert_eq!(limit.check(&"two"), Ok(()));
    }

    #[test]
    fn an_ipv6_caller_is_counted_by_its_64_and_a_mapped_ipv4_caller_as_ipv4() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(caller_key(one), caller_key(same_64));
        assert_ne!(caller_key(one), caller_key(other_64));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(caller_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    #[tokio::test]
    async fn a_request_refused_for_its_session_takes_nothing_from_the_shared_limits() {
        let limits = Limits::new(
            &RateLimits {
                issue_per_caller: rate(1, 1),
                issue_per_client: rate(1, 1),
                per_session: rate(1, 1),
                per_caller: rate(1, 2),
                per_client: rate(1, 2),
            },
            None,
        );
        let caller: IpAddr = "192.0.2.1".parse().unwrap();
        let flooder = domain::testing::claims("app", "flooder", 0, 60);
        let user = domain::testing::claims("app", "user", 0, 60);
        assert!(limits.bearer(caller, &flooder).await.is_ok());
        for _ in 0..5 {
            assert_eq!(limits.bearer(caller, &flooder).await.unwrap_err().limit, "session");
        }
        assert!(limits.bearer(caller, &user).await.is_ok(), "the shared limits still had room");
    }
}
