//! Tokens bound to a key the app holds (DPoP, RFC 9449): the client's policy, the key's
//! thumbprint a bound token carries, what a proof claims, and why one is refused.

use std::fmt;

use smol_str::SmolStr;

use crate::input::Expected;

/// Whether a client's tokens must be bound to a key of the app's (RFC 9449).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum DpopPolicy {
    /// A token is bound when the token request carries a proof, else a bearer token.
    #[default]
    Optional,
    /// Only bound tokens: a token request without a proof is refused, and so is any of
    /// the client's tokens presented without one.
    Required,
}

impl DpopPolicy {
    /// Parses `optional` or `required`.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        match raw {
            "optional" => Ok(Self::Optional),
            "required" => Ok(Self::Required),
            _ => Err(Expected::DpopPolicy),
        }
    }

    /// The policy as operators write it and the store keeps it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// The RFC 7638 SHA-256 thumbprint of a public key, base64url without padding: the
/// `cnf.jkt` claim of a token bound to that key (RFC 9449 §6.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyThumbprint(SmolStr);

impl KeyThumbprint {
    /// The 43 base64url characters of a SHA-256 digest; anything else is no thumbprint.
    pub fn parse(raw: &str) -> Option<Self> {
        (raw.len() == 43 && raw.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
            .then(|| Self(SmolStr::new(raw)))
    }

    /// The thumbprint as it travels.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for KeyThumbprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A proof whose header, key and signature the verifier accepted, with the claims the
/// check compares against the request. Its `jti` is at most [`ProofClaims::MAX_JTI`]
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofClaims {
    /// The thumbprint of the key in its header, which signed it.
    pub key: KeyThumbprint,
    /// Its unique id.
    pub jti: String,
    /// The method it was made for.
    pub htm: String,
    /// The URL it was made for, as the app wrote it.
    pub htu: String,
    /// When it was made, seconds since the Unix epoch.
    pub iat: i64,
    /// The server's nonce it carries, if any.
    pub nonce: Option<String>,
    /// The base64url SHA-256 of the access token it is sent with, if any.
    pub ath: Option<String>,
}

impl ProofClaims {
    /// The longest `jti` accepted: a UUID or 128 random bits fit many times over, and
    /// the replay cache holds each one for the proof's window.
    pub const MAX_JTI: usize = 128;
}

/// Why a DPoP proof was refused. Unlike a refused token, the caller is told which check
/// failed (RFC 9449 §5 and §7.1 expect it): the key and its proof are the caller's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofRefusal {
    /// Not a compact JWS with a JSON header and claims, or a claim of the wrong type.
    #[error("the DPoP proof is not a well-formed JWT: {0}")]
    Malformed(&'static str),
    /// Sent twice, or a request needing one sent none.
    #[error("exactly one DPoP header must be sent")]
    Count,
    /// `typ` is not `dpop+jwt`.
    #[error("the DPoP proof's typ must be dpop+jwt")]
    Type,
    /// `alg` is none, symmetric, or one not supported.
    #[error("the DPoP proof's alg is not one of ES256, EdDSA, Ed25519")]
    Algorithm,
    /// No `jwk`, or one that is not a P-256 or Ed25519 public key matching `alg`.
    #[error("the DPoP proof's jwk is not a P-256 or Ed25519 public key for its alg")]
    Key,
    /// The `jwk` carries private key members.
    #[error("the DPoP proof's jwk holds a private key")]
    PrivateKey,
    /// The signature does not verify with the `jwk`.
    #[error("the DPoP proof's signature does not verify with its jwk")]
    Signature,
    /// A required claim is missing.
    #[error("the DPoP proof has no {0} claim")]
    Missing(&'static str),
    /// `htm` is not the request's method.
    #[error("the DPoP proof's htm is not this request's method")]
    Method,
    /// `htu` is not this resource's URL.
    #[error("the DPoP proof's htu is not this resource's URL")]
    Uri,
    /// `iat` is older than the proof window.
    #[error("the DPoP proof is too old (iat)")]
    TooOld,
    /// `iat` is further ahead than the clock skew allowed.
    #[error("the DPoP proof is dated in the future (iat)")]
    TooNew,
    /// Its `jti` was seen before within the window.
    #[error("the DPoP proof was used before (jti)")]
    Replayed,
    /// `ath` is not the hash of the access token it came with.
    #[error("the DPoP proof's ath is not the hash of this access token")]
    TokenHash,
    /// The key is not the one the access token is bound to.
    #[error("the DPoP proof's key is not the one the access token is bound to")]
    OtherKey,
    /// Nonces are required and it carries none, or one that is stale or not the
    /// server's (RFC 9449 §8): the app retries with `fresh`.
    #[error("the DPoP proof must carry a nonce the server issued recently")]
    UseNonce {
        /// A nonce to retry with, for the `DPoP-Nonce` header.
        fresh: String,
    },
}

impl ProofRefusal {
    /// The OAuth error code: `use_dpop_nonce` when a nonce is wanted, else
    /// `invalid_dpop_proof`.
    pub fn error_code(&self) -> &'static str {
        match self {
            Self::UseNonce { .. } => "use_dpop_nonce",
            _ => "invalid_dpop_proof",
        }
    }

    /// A nonce to send back (the `DPoP-Nonce` header), when one is wanted.
    pub fn fresh_nonce(&self) -> Option<&str> {
        match self {
            Self::UseNonce { fresh } => Some(fresh),
            _ => None,
        }
    }

    /// A short name of the check that failed, for the log and the refusals metric.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "dpop malformed",
            Self::Count => "dpop header count",
            Self::Type => "dpop typ",
            Self::Algorithm => "dpop alg",
            Self::Key => "dpop jwk",
            Self::PrivateKey => "dpop private jwk",
            Self::Signature => "dpop signature",
            Self::Missing(_) => "dpop missing claim",
            Self::Method => "dpop htm",
            Self::Uri => "dpop htu",
            Self::TooOld => "dpop too old",
            Self::TooNew => "dpop too new",
            Self::Replayed => "dpop replayed",
            Self::TokenHash => "dpop ath",
            Self::OtherKey => "dpop other key",
            Self::UseNonce { .. } => "dpop nonce",
        }
    }
}

/// The algorithms a proof may be signed with, as metadata and challenges list them:
/// ECDSA on P-256, and Ed25519 under both its names, `EdDSA` (RFC 8037) and the fully
/// specified `Ed25519` (RFC 9864), which current libraries write (panva's `dpop` 2).
pub const PROOF_ALGORITHMS: [&str; 3] = ["ES256", "EdDSA", "Ed25519"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_optional_or_required() {
        assert_eq!(DpopPolicy::parse("required"), Ok(DpopPolicy::Required));
        assert_eq!(DpopPolicy::parse("optional"), Ok(DpopPolicy::Optional));
        assert_eq!(DpopPolicy::default(), DpopPolicy::Optional);
        for raw in ["", "Required", "yes"] {
            assert_eq!(DpopPolicy::parse(raw), Err(Expected::DpopPolicy), "{raw:?}");
        }
    }

    #[test]
    fn a_thumbprint_is_43_base64url_characters() {
        assert!(KeyThumbprint::parse("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I").is_some());
        for raw in ["", "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4", "0ZcOCORZNYy+DWpqq30jZyJGHTN0d2HglBV3uiguA4I"] {
            assert!(KeyThumbprint::parse(raw).is_none(), "{raw:?}");
        }
    }

    #[test]
    fn only_a_missing_nonce_asks_for_one() {
        let wanted = ProofRefusal::UseNonce { fresh: "n".into() };
        assert_eq!(wanted.error_code(), "use_dpop_nonce");
        assert_eq!(wanted.fresh_nonce(), Some("n"));
        assert_eq!(ProofRefusal::Replayed.error_code(), "invalid_dpop_proof");
        assert_eq!(ProofRefusal::Replayed.fresh_nonce(), None);
    }
}
