//! Why an input value was refused.
//!
//! Parse errors carry *what was expected* rather than a sentence, so the HTTP layer can
//! say it in the caller's language while the error `code` stays the same.

/// The shape an input value must have; carried by every parse error of this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Expected {
    /// Exactly five ASCII digits (spec: Branch.branchId).
    #[error("exactly 5 digits")]
    FiveDigits,
    /// A whole number of minutes within [`crate::branch::WaitTime::MAX_MINUTES`].
    #[error("a whole number of minutes from 0 to 1440")]
    Minutes,
    /// Two upper-case letters, ISO 3166-1 alpha-2.
    #[error("an ISO 3166-1 alpha-2 country code (two upper-case letters)")]
    CountryCode,
    /// 1 to 16 letters or digits.
    #[error("1 to 16 letters or digits")]
    BusinessCode,
    /// 1 to 32 letters, digits, `-` or `_`.
    #[error("1 to 32 letters, digits, '-' or '_'")]
    ChannelId,
    /// 1 to 64 letters, digits, `.`, `-` or `_`.
    #[error("1 to 64 letters, digits, '.', '-' or '_'")]
    ClientId,
    /// An absolute `https` URI, or `http` on a loopback host (RFC 8252 §7.3).
    #[error("an absolute https URI (http only for loopback hosts)")]
    RedirectUri,
    /// 16 to 128 base64url characters, as issued in the `sid` header.
    #[error("a session id as issued by /v1/authorize")]
    SessionId,
    /// Space-separated scopes, each `visitor` (the only scope this service grants).
    #[error("the scope 'visitor'")]
    Scope,
    /// A UUID (RFC 9562), as the per-request `uuid` header.
    #[error("a UUID")]
    Uuid,
    /// 43 base64url characters: a SHA-256 digest, RFC 7636 §4.2.
    #[error("43 base64url characters (RFC 7636 S256)")]
    CodeChallenge,
}
