//! The bank's own systems (branch queue systems, ATM monitoring): OAuth clients of the
//! service that authenticate with a key of theirs (RFC 7523 `private_key_jwt`) and write
//! what only they know.

use std::fmt;

use smol_str::SmolStr;

use crate::client::ClientStatus;
use crate::input::Expected;

/// A system's id, its OAuth `client_id`: 1 to 64 of `[A-Za-z0-9._-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SystemId(SmolStr);

impl SystemId {
    /// Parses an id; anything outside 1 to 64 of `[A-Za-z0-9._-]` is refused.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        let valid =
            !raw.is_empty() && raw.len() <= 64 && raw.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if valid { Ok(Self(SmolStr::new(raw))) } else { Err(Expected::SystemId) }
    }

    /// The id as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SystemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a system's token lets it do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SystemScope {
    /// `queue:write`: post a branch's queue events.
    QueueWrite,
    /// `atm:write`: post the ATMs' state events (issue 45).
    AtmWrite,
}

impl SystemScope {
    /// Every scope, in the order a scope string lists them.
    pub const ALL: [Self; 2] = [Self::QueueWrite, Self::AtmWrite];

    /// Its name in a scope string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueWrite => "queue:write",
            Self::AtmWrite => "atm:write",
        }
    }
}

/// A non-empty set of [`SystemScope`]s.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SystemScopes(Vec<SystemScope>);

impl SystemScopes {
    /// Parses a space-separated scope string (RFC 6749 §3.3): every name known, at least
    /// one; repeats are one.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        let mut scopes = Vec::new();
        for name in raw.split(' ').filter(|name| !name.is_empty()) {
            let scope = SystemScope::ALL.into_iter().find(|s| s.as_str() == name).ok_or(Expected::SystemScope)?;
            scopes.push(scope);
        }
        scopes.sort();
        scopes.dedup();
        if scopes.is_empty() { Err(Expected::SystemScope) } else { Ok(Self(scopes)) }
    }

    /// Whether `scope` is in the set.
    pub fn contains(&self, scope: SystemScope) -> bool {
        self.0.contains(&scope)
    }

    /// Whether every scope of `self` is in `other`.
    pub fn is_within(&self, other: &Self) -> bool {
        self.0.iter().all(|scope| other.0.contains(scope))
    }

    /// The scopes.
    pub fn iter(&self) -> impl Iterator<Item = SystemScope> + '_ {
        self.0.iter().copied()
    }
}

impl fmt::Display for SystemScopes {
    /// The scope string: names separated by one space.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, scope) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(" ")?;
            }
            f.write_str(scope.as_str())?;
        }
        Ok(())
    }
}

/// A system's public keys: a JWKS (RFC 7517) whose every key is a public signing key of
/// an algorithm the service verifies. The adapter that reads JWKS files checks that
/// (`adapters::jwt::system_keys`); the domain keeps the document as read, and its count.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PublicKeySet {
    json: String,
    keys: usize,
}

impl PublicKeySet {
    /// A key set already checked by the adapter that read it: `json` the JWKS document,
    /// `keys` how many keys it holds.
    pub fn checked(json: String, keys: usize) -> Self {
        Self { json, keys }
    }

    /// The JWKS document.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys
    }

    /// Whether it holds none (never, for a checked set).
    pub fn is_empty(&self) -> bool {
        self.keys == 0
    }
}

/// A system registered by the bank's operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemRegistration {
    /// Its id (`client_id`).
    pub id: SystemId,
    /// The public keys its assertions are verified with.
    pub keys: PublicKeySet,
    /// The scopes it may be given.
    pub scopes: SystemScopes,
    /// Whether it may obtain tokens and use them.
    pub status: ClientStatus,
}

/// What `systems update` changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemChanges {
    /// New keys.
    pub keys: Option<PublicKeySet>,
    /// New scopes.
    pub scopes: Option<SystemScopes>,
}

/// An assertion's `jti` (RFC 7523 §3): any text of 1 to 255 bytes. Remembered until the
/// assertion expires, so that each is used once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AssertionId(SmolStr);

impl AssertionId {
    /// The longest `jti` kept, in bytes.
    pub const LONGEST: usize = 255;

    /// A `jti` of 1 to [`AssertionId::LONGEST`] bytes, with no control character.
    pub fn parse(raw: &str) -> Option<Self> {
        (!raw.is_empty() && raw.len() <= Self::LONGEST && !raw.chars().any(char::is_control))
            .then(|| Self(SmolStr::new(raw)))
    }

    /// The `jti` as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The claims of a client assertion (RFC 7523 §3), once its signature verified: each as
/// sent, checked by the token service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionClaims {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// `aud`, one or several.
    pub audiences: Vec<String>,
    /// `exp`, Unix seconds.
    pub expires_at: i64,
    /// `nbf`, when sent.
    pub not_before: Option<i64>,
    /// `iat`, when sent.
    pub issued_at: Option<i64>,
    /// `jti`.
    pub jti: String,
}

/// Why a client assertion was refused before its claims were looked at. Told to the
/// system in `error_description`: the key and the assertion are its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AssertionRefusal {
    /// Not a compact JWS with a JSON header and claims of the right types.
    #[error("the client assertion is malformed: {0}")]
    Malformed(&'static str),
    /// Its `alg` is not ES256 or EdDSA.
    #[error("the client assertion's alg is not ES256 or EdDSA")]
    Algorithm,
    /// No key of the system's has its `kid` (or, without one, its algorithm).
    #[error("no key of this system matches the client assertion's kid and alg")]
    UnknownKey,
    /// The signature does not verify with the system's key.
    #[error("the client assertion's signature does not verify")]
    Signature,
    /// A claim RFC 7523 requires is missing.
    #[error("the client assertion has no {0}")]
    Missing(&'static str),
}

/// The claims of a system's access token (RFC 9068): whom it was issued to, what it may
/// do, for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemAccessClaims {
    /// The system (`sub` and `client_id`).
    pub system: SystemId,
    /// What it may do (`scope`).
    pub scopes: SystemScopes,
    /// Its unique id (`jti`).
    pub token_id: crate::token::TokenId,
    /// Issued at, Unix seconds (`iat`, `nbf`).
    pub issued_at: i64,
    /// Expires at, Unix seconds (`exp`).
    pub expires_at: i64,
}

/// The longest a system's access token lives, in seconds: 15 minutes (issue 44 asks at
/// most 900 s). A system asks again with a new assertion; a disabled one is refused at
/// every use anyway.
pub const SYSTEM_TOKEN_SECONDS: i64 = 900;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_system_id_has_the_client_ids_shape() {
        assert_eq!(SystemId::parse("queue.branch-7_a").unwrap().as_str(), "queue.branch-7_a");
        assert_eq!(SystemId::parse(""), Err(Expected::SystemId));
        assert_eq!(SystemId::parse(&"a".repeat(65)), Err(Expected::SystemId));
        assert_eq!(SystemId::parse("queue system"), Err(Expected::SystemId));
    }

    #[test]
    fn scopes_are_known_names_with_repeats_as_one() {
        let scopes = SystemScopes::parse(" queue:write  queue:write").unwrap();
        assert_eq!(scopes.to_string(), "queue:write");
        assert!(scopes.contains(SystemScope::QueueWrite));
        assert!(scopes.is_within(&SystemScopes::parse("queue:write").unwrap()));
        assert_eq!(SystemScopes::parse(""), Err(Expected::SystemScope));
        assert_eq!(SystemScopes::parse("queue:write visitor"), Err(Expected::SystemScope));
        let both = SystemScopes::parse("atm:write queue:write atm:write").unwrap();
        assert_eq!(both.to_string(), "queue:write atm:write", "in the order of SystemScope::ALL");
        assert!(!SystemScopes::parse("atm:write").unwrap().contains(SystemScope::QueueWrite));
    }

    #[test]
    fn an_assertion_id_is_bounded_and_has_no_control_character() {
        assert!(AssertionId::parse("6f1c-…").is_some());
        assert!(AssertionId::parse("").is_none());
        assert!(AssertionId::parse(&"j".repeat(256)).is_none());
        assert!(AssertionId::parse("a\nb").is_none());
    }
}
