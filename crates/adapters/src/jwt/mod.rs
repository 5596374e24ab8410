//! Access tokens as Ed25519-signed JWTs (RFC 7519, RFC 8037), the JWKS that publishes
//! their keys (RFC 7517), and the DPoP nonces made from those keys (RFC 9449 §8), for
//! one issuer and audience: [`JwtTokens`], with one file per role.
//!
//! EdDSA because docs/contract.md asks for an asymmetric algorithm and aws-lc-rs signs
//! Ed25519 fastest of those it offers. The algorithm is pinned: `none`, HMAC and every
//! other `alg` are refused before any key is looked at.
//!
//! # Layout
//! - `keys` — key generation, and the key ring loaded from the store: which key signs
//!   when, the verifying keys, the published JWKS.
//! - `signer` — [`TokenSigner`](domain::ports::TokenSigner): claims out, one signature.
//! - `verifier` — [`TokenVerifier`](domain::ports::TokenVerifier): the header, the pinned
//!   algorithm, the claims and their times, tokens remembered as verified.
//! - `nonces` — [`ProofNonces`](domain::ports::ProofNonces): nonces from the keys' secrets.

mod keys;
mod nonces;
mod signer;
mod verifier;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use domain::ports::Clock;
use domain::token::SigningKey;
use jsonwebtoken::{Algorithm, Validation};

use keys::KeySet;
pub use keys::{Ed25519Keys, KeyError};

/// RFC 9068 §2.1: the media type of JWT access tokens.
const ACCESS_TOKEN_TYPE: &str = "at+jwt";

/// Signs and verifies access tokens for one issuer and audience.
pub struct JwtTokens {
    issuer: String,
    audience: String,
    validation: Validation,
    /// The configured token lifetime, in seconds: no token issued here lives longer.
    lifetime: i64,
    keys: ArcSwap<KeySet>,
    clock: Arc<dyn Clock>,
}

impl JwtTokens {
    /// Tokens issued by `issuer` for `audience`, living `lifetime` (a token claiming to
    /// live longer is refused), with no keys loaded yet, whose time claims are checked
    /// against `clock`.
    pub fn new(issuer: &str, audience: &str, lifetime: Duration, clock: Arc<dyn Clock>) -> Self {
        let mut validation = Validation::new(Algorithm::EdDSA);
        // `exp` and `nbf` must be there (below), and are checked by the verifier's
        // `time_claims_hold` on every path, the remembered one too.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
        Self {
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            validation,
            lifetime: i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX),
            keys: ArcSwap::from_pointee(KeySet::new(r#"{"keys":[]}"#.to_owned())),
            clock,
        }
    }

    /// Replaces the loaded keys: each signs within its activation window (next keys
    /// from their activation, by the clock), all verify and are published.
    ///
    /// # Errors
    /// [`KeyError`] if a stored key is unusable; the previous keys stay loaded.
    pub fn install(&self, stored: &[SigningKey]) -> Result<(), KeyError> {
        let set = KeySet::load(stored, self.clock.unix_now())?;
        self.keys.store(Arc::new(set));
        Ok(())
    }

    /// The id of the key that signs new tokens now, if one is loaded.
    pub fn current_kid(&self) -> Option<String> {
        self.keys.load().signer_at(self.clock.unix_now()).map(|current| current.kid.clone())
    }
}

impl crate::view::KeyRing for JwtTokens {
    fn install(&self, keys: &[SigningKey]) -> Result<(), String> {
        JwtTokens::install(self, keys).map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod testing {
    //! What the tests of every role share: keys, a clock the test sets, tokens on them.

    pub use std::sync::{Arc, Mutex};
    pub use std::time::Duration;

    pub use aws_lc_rs::signature::Ed25519KeyPair;
    pub use base64::Engine as _;
    pub use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    pub use domain::ports::{Clock, KeyGenerationFailed, KeyGenerator as _, TokenSigner as _, TokenVerifier as _};
    pub use domain::token::{AccessClaims, SigningKey};
    pub use time::OffsetDateTime;

    pub use super::{Ed25519Keys, JwtTokens};
    pub use crate::system::SystemClock;

    pub fn now() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    pub fn key_at(now: i64) -> Result<SigningKey, KeyGenerationFailed> {
        Ed25519Keys.generate(now)
    }

    /// A clock the test sets.
    pub struct SetClock(Mutex<OffsetDateTime>);

    impl SetClock {
        pub fn at(unix_millis: i64) -> Arc<Self> {
            let clock = Arc::new(Self(Mutex::new(OffsetDateTime::UNIX_EPOCH)));
            clock.set(unix_millis);
            clock
        }

        pub fn set(&self, unix_millis: i64) {
            *self.0.lock().unwrap() =
                OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_millis) * 1_000_000).unwrap();
        }
    }

    impl Clock for SetClock {
        fn now(&self) -> OffsetDateTime {
            *self.0.lock().unwrap()
        }
    }

    /// The token lifetime the verifiers under test are configured with.
    pub const LIFETIME: Duration = Duration::from_secs(1800);

    pub fn claims(issued_at: i64, lifetime: i64) -> AccessClaims {
        domain::testing::claims("demo-app", "sid-123", issued_at, lifetime)
    }

    pub fn tokens_with(keys: &[SigningKey]) -> JwtTokens {
        tokens_on(keys, Arc::new(SystemClock))
    }

    pub fn tokens_on(keys: &[SigningKey], clock: Arc<dyn Clock>) -> JwtTokens {
        let tokens = JwtTokens::new("https://bank.example/api", "https://bank.example/api", LIFETIME, clock);
        tokens.install(keys).unwrap();
        tokens
    }

    /// `token` with its header replaced by `header` and signed again with `key`.
    pub fn resigned_with_header(token: &str, header: &serde_json::Value, key: &SigningKey) -> String {
        let payload = token.split('.').nth(1).unwrap();
        let input = format!("{}.{payload}", URL_SAFE_NO_PAD.encode(header.to_string()));
        let signature = Ed25519KeyPair::from_pkcs8(&key.private_pkcs8).unwrap().sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}
