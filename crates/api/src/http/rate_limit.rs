//! Per-client request limits (GCRA, from the `governor` crate).

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::Clock as _;
use governor::{DefaultKeyedRateLimiter, Quota};

/// `Retry-After` is whole seconds: round up, and never 0 (that would invite a retry
/// that is refused again).
fn whole_seconds(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

/// A limit of `per_second` sustained requests with bursts of `burst`, per client id.
pub struct ClientRateLimit {
    limiter: DefaultKeyedRateLimiter<String>,
}

impl ClientRateLimit {
    /// A limit of `per_second` requests a second, with bursts up to `burst`.
    pub fn new(per_second: NonZeroU32, burst: NonZeroU32) -> Self {
        Self { limiter: DefaultKeyedRateLimiter::keyed(Quota::per_second(per_second).allow_burst(burst)) }
    }

    /// Counts a request of `client`; `Err(seconds)` to wait before the next one is
    /// allowed (at least 1, for `Retry-After`).
    pub fn check(&self, client: &str) -> Result<(), u64> {
        self.limiter.check_key(&client.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.limiter.clock().now());
            whole_seconds(wait)
        })
    }

    /// Forgets clients whose state is back to full, so the map does not grow forever.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(per_second: u32, burst: u32) -> ClientRateLimit {
        ClientRateLimit::new(NonZeroU32::new(per_second).unwrap(), NonZeroU32::new(burst).unwrap())
    }

    #[test]
    fn a_client_gets_its_burst_then_waits_at_least_a_second() {
        let limit = limit(1, 3);
        for _ in 0..3 {
            assert_eq!(limit.check("app"), Ok(()));
        }
        assert_eq!(limit.check("app"), Err(1));
    }

    #[test]
    fn clients_are_limited_separately() {
        let limit = limit(1, 1);
        assert_eq!(limit.check("one"), Ok(()));
        assert!(limit.check("one").is_err());
        assert_eq!(limit.check("two"), Ok(()));
    }
}
