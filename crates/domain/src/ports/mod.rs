//! What the domain needs from the world. Adapters implement these; services use them.
//!
//! Each port's `# Errors` section is the contract every adapter keeps (the SQLite and
//! PostgreSQL stores alike): the shared contract tests in the `adapters` crate check it.
//!
//! - [`serving`] — what the three operations read and write on their request paths
//!   (served from memory by the adapters, but for durable token records).
//! - [`records`] — the store as operators change it: registrations, channels, wait
//!   times, ATMs, signing keys, token records, and what the store holds.
//! - Here: the store's one error, the clock, and ids.

mod records;
mod serving;

pub use records::*;
pub use serving::*;

use time::OffsetDateTime;

use crate::token::{OpaqueToken, SessionId, TokenId};

/// A store could not answer: unreachable, timed out, or failed. The cause is for the
/// log, never for the caller.
#[derive(Debug, thiserror::Error)]
#[error("the store is unavailable: {0}")]
pub struct StoreUnavailable(#[source] pub Box<dyn std::error::Error + Send + Sync>);

impl StoreUnavailable {
    /// Wraps a driver or I/O error.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(cause.into())
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
}
