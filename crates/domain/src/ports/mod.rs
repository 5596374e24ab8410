//! What the domain needs from the world. Adapters implement these; services use them.
//!
//! Each port's `# Errors` section is the contract every adapter keeps (the SQLite and
//! PostgreSQL stores alike): the shared contract tests in the `adapters` crate check it.
//!
//! - `serving.rs` — what the three operations read and write on their request paths
//!   (served from memory by the adapters, but for durable token records).
//! - `records.rs` — the store as operators change it: registrations, channels, wait
//!   times, ATMs, signing keys, token records, and what the store holds.
//! - Here: the store's one error (unavailable, or refusing the data), the clock, and ids.

mod records;
mod serving;

pub use records::*;
pub use serving::*;

use time::OffsetDateTime;

use crate::outage::OutageId;
use crate::token::{OpaqueToken, SessionId, TokenId};

/// A store could not answer: unreachable, timed out, or failed; or it refused the data
/// it was given ([`StoreUnavailable::refused`]). The cause is for the log, never for the
/// caller.
///
/// One type for both, so that every port keeps its one error; [`Self::failure`] tells
/// them apart, and the message says which, so an operator never reads a refused record
/// as an outage.
#[derive(Debug, thiserror::Error)]
pub struct StoreUnavailable(#[source] pub Box<dyn std::error::Error + Send + Sync>, StoreFailure);

/// What kind of failure a [`StoreUnavailable`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreFailure {
    /// The store did not answer as it should: unreachable, timed out, failed. Trying
    /// again later may work.
    Unavailable,
    /// The store answered, and refused the data it was given (a value it cannot hold, a
    /// constraint it keeps). The same data will be refused again.
    RefusedData,
}

impl StoreUnavailable {
    /// Wraps a driver or I/O error: the store is unavailable.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(cause.into(), StoreFailure::Unavailable)
    }

    /// Wraps a driver's refusal of the data it was given: the store is available, the
    /// data is wrong for it.
    pub fn refused(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(cause.into(), StoreFailure::RefusedData)
    }

    /// Whether the store was unavailable or refused the data.
    pub fn failure(&self) -> StoreFailure {
        self.1
    }
}

impl std::fmt::Display for StoreUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            StoreFailure::Unavailable => write!(f, "the store is unavailable: {}", self.0),
            StoreFailure::RefusedData => write!(f, "the store refused the data: {}", self.0),
        }
    }
}

/// The time: one clock for the whole service (issuer and verifier, the in-memory view,
/// retention, operators' commands), so a test can move it.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> OffsetDateTime;

    /// Now, in whole seconds since the Unix epoch (how the store keeps times).
    fn unix_now(&self) -> i64 {
        self.now().unix_timestamp()
    }
}

/// Makes unguessable ids from a CSPRNG.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait IdGenerator: Send + Sync {
    /// A fresh token id (`jti`).
    fn token_id(&self) -> TokenId;
    /// A fresh session id (`sid`).
    fn session_id(&self) -> SessionId;
    /// A fresh opaque token: at least 128 bits of CSPRNG output, base64url.
    fn opaque_token(&self) -> OpaqueToken;
    /// A fresh id for a planned outage: short enough to type (`outages cancel ID`).
    fn outage_id(&self) -> OutageId;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_refused_the_data_says_so_and_is_not_called_unavailable() {
        let refused = StoreUnavailable::refused("invalid byte sequence for encoding \"UTF8\": 0x00");
        assert_eq!(refused.failure(), StoreFailure::RefusedData);
        assert_eq!(
            refused.to_string(),
            "the store refused the data: invalid byte sequence for encoding \"UTF8\": 0x00"
        );
        let gone = StoreUnavailable::new("connection refused");
        assert_eq!(gone.failure(), StoreFailure::Unavailable);
        assert_eq!(gone.to_string(), "the store is unavailable: connection refused");
    }
}
