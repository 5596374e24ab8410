//! Which request limits a request counts against, in the layers that keep one caller
//! from taking what an app's other users share:
//!
//! - issuing tokens (and revoking them): per caller address, under a per-client-id
//!   ceiling;
//! - the bearer operations: per session (the token's `sid`), per caller address, under
//!   a per-client-id ceiling; counted by the domain's bearer check
//!   (`domain::services::bearer`), once the token is known and before a DPoP proof's
//!   signature is verified, with the caller's key made here ([`caller_key`]).
//!
//! The narrowest limit is checked first, so a request refused there takes nothing from
//! the limits others share. The caller's address is the peer's, or the one a trusted
//! proxy reports ([`crate::caller`]); IPv6 callers are counted per /64, the block one
//! subscriber is usually given. Counting is the [`RequestLimiter`]'s (in this instance,
//! or in Redis across instances: `adapters::local_limits`, `adapters::redis_limits`);
//! one that cannot count lets the request through, never refusing everything.

use std::net::{IpAddr, Ipv6Addr};

use actix_web::HttpRequest;
use domain::client::ClientId;
use domain::limits::{Admission, LimitCheck, LimitError, LimitExceeded};
use domain::ports::RequestLimiter;

use crate::state::AppState;

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

/// Counts a token request (or a revocation) of `client` from the caller of `request`.
///
/// # Errors
/// [`LimitExceeded`] when the caller or the client is over its rate.
pub async fn token_request(state: &AppState, request: &HttpRequest, client: &ClientId) -> Result<(), LimitExceeded> {
    let caller = caller_key(state.proxies.caller(request));
    let checks = [LimitCheck::IssuePerCaller(caller), LimitCheck::IssuePerClient(client)];
    admitted(state.limits.as_ref(), &checks).await
}

/// Counts a bank system's token request against its caller address's rate of token
/// requests (the system is not known until its assertion verifies).
///
/// # Errors
/// [`LimitExceeded`] over the rate.
pub async fn system_token_request(state: &AppState, request: &HttpRequest) -> Result<(), LimitExceeded> {
    let caller = caller_key(state.proxies.caller(request));
    admitted(state.limits.as_ref(), &[LimitCheck::IssuePerCaller(caller)]).await
}

/// The limiter's answer: a refusal over a limit, or the request through (also when the
/// limiter could not count it).
async fn admitted(limiter: &dyn RequestLimiter, checks: &[LimitCheck<'_>]) -> Result<(), LimitExceeded> {
    let answer: Admission<'_> = limiter.admit(checks);
    match tracing::Instrument::instrument(answer, tracing::trace_span!("rate limits")).await {
        Err(LimitError::Exceeded(over)) => Err(over),
        Ok(()) | Err(LimitError::Unavailable(_)) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
