//! Request limits (GCRA, from the `governor` crate), in the layers that keep one caller
//! from taking what an app's other users share:
//!
//! - issuing tokens: per caller address, under a per-client-id ceiling;
//! - the bearer operations: per session (the token's `sid`), per caller address, under
//!   a per-client-id ceiling.
//!
//! The narrowest limit is checked first, so a request refused there takes nothing from
//! the limits others share. The caller's address is the peer's, or the one a trusted
//! proxy reports ([`super::caller`]); IPv6 callers are counted per /64, the block one
//! subscriber is usually given.

use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

use domain::client::ClientId;
use domain::token::{AccessClaims, SessionId};
use governor::clock::Clock as _;
use governor::{DefaultKeyedRateLimiter, Quota};

use super::errors::Failure;
use crate::settings::{Rate, RateLimits};

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

/// Every limit the service applies.
pub struct Limits {
    issue_per_caller: RateLimit<IpAddr>,
    issue_per_client: RateLimit<ClientId>,
    per_session: RateLimit<SessionId>,
    per_caller: RateLimit<IpAddr>,
    per_client: RateLimit<ClientId>,
}

impl Limits {
    /// The limits of `settings`.
    pub fn new(settings: &RateLimits) -> Self {
        Self {
            issue_per_caller: RateLimit::new(settings.issue_per_caller),
            issue_per_client: RateLimit::new(settings.issue_per_client),
            per_session: RateLimit::new(settings.per_session),
            per_caller: RateLimit::new(settings.per_caller),
            per_client: RateLimit::new(settings.per_client),
        }
    }

    /// Counts a token request of `client` from `caller`.
    ///
    /// # Errors
    /// A 429 [`Failure`] with `Retry-After` when the caller or the client is over its rate.
    pub fn issue(&self, caller: IpAddr, client: &ClientId) -> Result<(), Failure> {
        self.issue_per_caller.check(&caller_key(caller)).map_err(Failure::too_many_requests)?;
        self.issue_per_client.check(client).map_err(Failure::too_many_requests)
    }

    /// Counts a bearer request made with `claims` from `caller`.
    ///
    /// # Errors
    /// A 429 [`Failure`] with `Retry-After` when the session, the caller or the client is
    /// over its rate.
    pub fn bearer(&self, caller: IpAddr, claims: &AccessClaims) -> Result<(), Failure> {
        self.per_session.check(&claims.session).map_err(Failure::too_many_requests)?;
        self.per_caller.check(&caller_key(caller)).map_err(Failure::too_many_requests)?;
        self.per_client.check(&claims.client_id).map_err(Failure::too_many_requests)
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

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

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

    #[test]
    fn a_request_refused_for_its_session_takes_nothing_from_the_shared_limits() {
        let limits = Limits::new(&RateLimits {
            issue_per_caller: rate(1, 1),
            issue_per_client: rate(1, 1),
            per_session: rate(1, 1),
            per_caller: rate(1, 2),
            per_client: rate(1, 2),
        });
        let caller: IpAddr = "192.0.2.1".parse().unwrap();
        let flooder = domain::testing::claims("app", "flooder", 0, 60);
        let user = domain::testing::claims("app", "user", 0, 60);
        assert!(limits.bearer(caller, &flooder).is_ok());
        for _ in 0..5 {
            assert_eq!(limits.bearer(caller, &flooder).unwrap_err().status, 429);
        }
        assert!(limits.bearer(caller, &user).is_ok(), "the shared limits still had room");
    }
}
