//! Why an input value was refused.
//!
//! Parse errors carry *what was expected* rather than a sentence: the api crate's text
//! table says it, in the caller's language, and the error `code` stays the same.

/// The shape an input value must have; carried by every parse error of this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Exactly five ASCII digits (spec: Branch.branchId).
    FiveDigits,
    /// A whole number of minutes within [`crate::branch::WaitTime::MAX_MINUTES`].
    Minutes,
    /// Two upper-case letters, ISO 3166-1 alpha-2.
    CountryCode,
    /// 1 to 16 letters or digits.
    BusinessCode,
    /// 1 to 32 letters, digits, `-` or `_`.
    ChannelId,
    /// 1 to 64 letters, digits, `.`, `-` or `_`.
    ClientId,
    /// An absolute `https` URI, or `http` on a loopback host (RFC 8252 §7.3).
    RedirectUri,
    /// A web origin as browsers send it: `https://host[:port]`, or `http` on a loopback host.
    Origin,
    /// 16 to 128 base64url characters, as issued in the `sid` header.
    SessionId,
    /// Space-separated scopes, each `visitor` (the only scope this service grants).
    Scope,
    /// A UUID (RFC 9562), as the per-request `uuid` header.
    Uuid,
    /// 43 base64url characters: a SHA-256 digest, RFC 7636 §4.2.
    CodeChallenge,
    /// `optional` or `required`: a client's DPoP policy.
    DpopPolicy,
    /// 1 to 64 letters, digits, `.`, `-` or `_`: a bank system's id.
    SystemId,
    /// Space-separated scopes of a bank system, each `queue:write` or `atm:write`.
    SystemScope,
    /// 1 to 35 characters, none hidden: an ATM's OBIE `Identification`.
    AtmId,
    /// A `next` the ATMs' change feed gave.
    FeedCursor,
}
