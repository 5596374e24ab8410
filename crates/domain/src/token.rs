//! Pre-login access tokens: what they claim and what the bank keeps of them.

use std::fmt;

use smol_str::SmolStr;

use crate::client::{ChannelScope, ClientId};
use crate::dpop::KeyThumbprint;
use crate::input::Expected;

fn is_base64url(raw: &str) -> bool {
    raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Declares an opaque id newtype built by the id generator or parsed from the wire.
macro_rules! opaque_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash)]
        pub struct $name(SmolStr);

        impl $name {
            /// Wraps a value made by an [`crate::ports::IdGenerator`] or read from a
            /// token whose signature verified.
            pub fn new(value: String) -> Self {
                Self(SmolStr::from(value))
            }

            /// The value as it travels.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

opaque_id!(
    /// A token's unique id, its `jti` claim (RFC 7519 §4.1.7).
    #[derive(Debug)]
    TokenId
);
opaque_id!(
    /// A session id (`sid`): created by the first call of the session (authorize),
    /// returned as a header, bound into the token and resent on later calls.
    #[derive(Debug)]
    SessionId
);
opaque_id!(
    /// A signing key's id (`kid`): the RFC 7638 thumbprint of its public key, 43
    /// base64url characters, as `keys list` prints it.
    #[derive(Debug)]
    KeyId
);

impl KeyId {
    /// The longest key id read from an operator: every one this service makes is 43.
    pub const MAX_LEN: usize = 128;

    /// Reads a key id an operator typed: 1 to [`Self::MAX_LEN`] base64url characters.
    /// Anything else names no key of this service, so it is never looked up.
    pub fn parse(raw: &str) -> Option<Self> {
        ((1..=Self::MAX_LEN).contains(&raw.len()) && is_base64url(raw)).then(|| Self(SmolStr::new(raw)))
    }
}

opaque_id!(
    /// A random handle on a token's server-side record: no user information, and no use
    /// for authorization by itself. Kept out of `Debug` output and logs all the same.
    OpaqueToken
);

impl fmt::Debug for OpaqueToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OpaqueToken(..)")
    }
}

impl OpaqueToken {
    /// The longest opaque token read from outside: every one this service has issued is
    /// far shorter (55 characters), and no longer value could be one.
    pub const MAX_LEN: usize = 128;

    /// Reads an opaque token given by a caller or an operator: 1 to
    /// [`Self::MAX_LEN`] base64url characters, the only shape this service issues.
    /// Anything else is no token of this service, so it is never looked up: a store
    /// cannot hold some values (PostgreSQL text refuses a NUL byte) and would report
    /// an error for what is simply an unknown token.
    pub fn parse(raw: &str) -> Option<Self> {
        ((1..=Self::MAX_LEN).contains(&raw.len()) && is_base64url(raw)).then(|| Self(SmolStr::new(raw)))
    }
}

impl SessionId {
    /// Parses a `sid` header: 16 to 128 base64url characters.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        if (16..=128).contains(&raw.len()) && is_base64url(raw) {
            Ok(Self(SmolStr::new(raw)))
        } else {
            Err(Expected::SessionId)
        }
    }
}

/// The scopes this service grants. The spec: "always assigns the scope visitor";
/// other scopes are not shown, so none exist here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Pre-login access to public branch and ATM information.
    Visitor,
}

impl Scope {
    /// Parses a requested `scope` parameter (space-separated, RFC 6749 §3.3); every
    /// value must be `visitor`.
    pub fn parse_request(raw: &str) -> Result<Self, Expected> {
        let mut values = raw.split(' ').peekable();
        if values.peek().is_some() && values.all(|value| value == "visitor") {
            Ok(Self::Visitor)
        } else {
            Err(Expected::Scope)
        }
    }

    /// The scope as it is written in tokens and responses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visitor => "visitor",
        }
    }
}

/// A PKCE `code_challenge` made with method S256 (RFC 7636 §4.2): the base64url
/// SHA-256 of the verifier, 43 characters without padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChallenge(String);

impl CodeChallenge {
    /// Parses a challenge; the caller has already checked that the method is `S256`.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        if raw.len() == 43 && is_base64url(raw) { Ok(Self(raw.to_owned())) } else { Err(Expected::CodeChallenge) }
    }

    /// The challenge as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What an access token asserts, apart from the issuer and audience, which belong to the
/// deployment and are added and checked by the signing adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessClaims {
    /// The client the token was issued to (`sub`).
    pub client_id: ClientId,
    /// The country, business and channel it was issued for.
    pub scope: ChannelScope,
    /// The session it belongs to (`sid`).
    pub session: SessionId,
    /// Its unique id (`jti`).
    pub token_id: TokenId,
    /// The granted scope.
    pub granted: Scope,
    /// Issued at, seconds since the Unix epoch (`iat`).
    pub issued_at: i64,
    /// Not valid before, seconds since the Unix epoch (`nbf`).
    pub not_before: i64,
    /// Expires at, seconds since the Unix epoch (`exp`).
    pub expires_at: i64,
    /// The key the token is bound to (`cnf.jkt`, RFC 9449 §6.1), if it is bound: it is
    /// accepted only with a proof made by that key.
    pub bound_to: Option<KeyThumbprint>,
}

/// The server-side record of an issued token, found by its opaque token or `jti`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The token's `jti`.
    pub token_id: TokenId,
    /// The opaque handle given to the client with the token.
    pub opaque_token: OpaqueToken,
    /// Whom it was issued to.
    pub client_id: ClientId,
    /// The session it opened.
    pub session: SessionId,
    /// Issued at, seconds since the Unix epoch.
    pub issued_at: i64,
    /// Expires at, seconds since the Unix epoch.
    pub expires_at: i64,
    /// The PKCE challenge sent with the request, if any.
    pub code_challenge: Option<CodeChallenge>,
}

/// An issued token's record with its revocation state, as operators look it up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// The record as issued.
    pub token: IssuedToken,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// A key that signs access tokens, as kept in the store. The domain holds its bytes
/// without reading them: the signing adapter parses and uses them.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKey {
    /// Key id, published as `kid` (the signing adapter derives it from the public key).
    pub kid: String,
    /// The private key, PKCS#8 v2. Never in `Debug` output or logs.
    pub private_pkcs8: Vec<u8>,
    /// The raw public key, as published in the JWKS.
    pub public_key: Vec<u8>,
    /// When it was made, seconds since the Unix epoch.
    pub created_at: i64,
    /// When it starts signing: published from the moment it is stored, so verifiers
    /// holding a cached key set know it before it signs (a *next* key until then).
    pub activates_at: i64,
    /// When it stops signing (the next key's activation), once that is decided.
    pub retired_at: Option<i64>,
    /// When an operator withdrew it (`keys revoke`): from then on it is neither published
    /// nor trusted, and every token it signed is refused.
    pub revoked_at: Option<i64>,
}

/// Where a signing key is in its life at some moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// Published, not signing yet.
    Next,
    /// Signing new tokens.
    Current,
    /// No longer signing; published while tokens it signed may live.
    Retired,
    /// Withdrawn by an operator: neither published nor trusted.
    Revoked,
}

impl SigningKey {
    /// Its state at `now`.
    pub fn state_at(&self, now: i64) -> KeyState {
        if self.revoked_at.is_some_and(|revoked| revoked <= now) {
            KeyState::Revoked
        } else if now < self.activates_at {
            KeyState::Next
        } else if self.retired_at.is_some_and(|retired| retired <= now) {
            KeyState::Retired
        } else {
            KeyState::Current
        }
    }

    /// Whether it signs new tokens at `now`.
    pub fn signs_at(&self, now: i64) -> bool {
        self.state_at(now) == KeyState::Current
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .field("activates_at", &self.activates_at)
            .field("retired_at", &self.retired_at)
            .finish_non_exhaustive()
    }
}

/// What a successful authorize call hands back.
#[derive(Debug, Clone)]
pub struct TokenGrant {
    /// The signed access token (a JWS).
    pub access_token: String,
    /// Its lifetime in seconds.
    pub expires_in: u32,
    /// The granted scope.
    pub scope: Scope,
    /// The opaque handle on the token's server-side record.
    pub opaque_token: OpaqueToken,
    /// The session the call opened.
    pub session: SessionId,
    /// Whether the token is bound to the key of the request's DPoP proof (its
    /// `token_type` is then `DPoP`, else `Bearer`).
    pub bound: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opaque_token_from_outside_is_base64url_of_at_most_128_characters() {
        for raw in ["0193a5c6d7e8AbC-_x", "A", &"A".repeat(128)] {
            assert_eq!(OpaqueToken::parse(raw).map(|token| token.as_str().to_owned()), Some(raw.to_owned()));
        }
        for raw in ["", "nul\0inside", "caf\u{e9}", "with space", "a.b.c", "plus+slash/", &"A".repeat(129)] {
            assert!(OpaqueToken::parse(raw).is_none(), "{raw:?}");
        }
    }

    #[test]
    fn only_the_visitor_scope_can_be_requested() {
        assert_eq!(Scope::parse_request("visitor"), Ok(Scope::Visitor));
        assert_eq!(Scope::parse_request("visitor visitor"), Ok(Scope::Visitor));
        for raw in ["", "admin", "visitor admin", "visitor  visitor", "Visitor"] {
            assert_eq!(Scope::parse_request(raw), Err(Expected::Scope), "{raw:?}");
        }
    }

    #[test]
    fn a_code_challenge_is_43_base64url_characters() {
        let valid = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(CodeChallenge::parse(valid).is_ok());
        assert!(CodeChallenge::parse(&valid[1..]).is_err());
        assert!(CodeChallenge::parse(&valid.replace('-', "+")).is_err());
    }

    #[test]
    fn a_signing_keys_private_part_never_shows_in_debug_output() {
        let key = SigningKey {
            kid: "kid-1".into(),
            private_pkcs8: b"very-private".to_vec(),
            public_key: vec![1, 2, 3],
            created_at: 0,
            activates_at: 0,
            retired_at: None,
            revoked_at: None,
        };
        let shown = format!("{key:?}");
        assert!(shown.contains("kid-1") && !shown.contains("private") && !shown.contains("118"), "{shown}");
    }

    #[test]
    fn a_key_is_next_until_it_activates_current_until_it_retires_then_retired() {
        let key = SigningKey {
            kid: "k".into(),
            private_pkcs8: vec![],
            public_key: vec![],
            created_at: 0,
            activates_at: 100,
            retired_at: Some(200),
            revoked_at: None,
        };
        let states: Vec<KeyState> = [99, 100, 199, 200].into_iter().map(|now| key.state_at(now)).collect();
        assert_eq!(states, [KeyState::Next, KeyState::Current, KeyState::Current, KeyState::Retired]);
        assert!(key.signs_at(150) && !key.signs_at(200));
        let withdrawn = SigningKey { revoked_at: Some(150), ..key };
        assert_eq!((withdrawn.state_at(149), withdrawn.state_at(150)), (KeyState::Current, KeyState::Revoked));
        assert!(!withdrawn.signs_at(160), "a revoked key never signs");
    }

    #[test]
    fn an_opaque_token_never_shows_in_debug_output() {
        let token = OpaqueToken::new("secret-handle".into());
        assert!(!format!("{token:?}").contains("secret"));
    }

    #[test]
    fn session_ids_are_base64url_of_sensible_length() {
        assert!(SessionId::parse("AAAAAAAAAAAAAAAAAAAAAA").is_ok());
        assert!(SessionId::parse("short").is_err());
        assert!(SessionId::parse("AAAAAAAAAAAAAAAA AAAAA").is_err());
    }
}
