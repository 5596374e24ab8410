//! Signing keys: made (Ed25519, named by their RFC 7638 thumbprint) and loaded from the
//! store into the ring the signer, the verifier and the nonces read, with the JWKS that
//! publishes them.

use std::collections::HashMap;

use aws_lc_rs::hmac;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::ports::{KeyGenerationFailed, KeyGenerator};
use domain::token::{AccessClaims, SigningKey};
use jsonwebtoken::{Algorithm, DecodingKey, Header};
use quick_cache::sync::Cache;

use super::ACCESS_TOKEN_TYPE;
use super::nonces::nonce_secret;

/// Tokens remembered as verified, per key set. An entry is a token of about 700 bytes
/// and its claims, so the cache stays under about 10 MB; a token evicted from it is
/// simply verified again.
const VERIFIED_TOKENS: usize = 10_000;

/// Why a stored signing key could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("signing key: {0}")]
pub struct KeyError(String);

/// Makes Ed25519 signing keys, each named by its RFC 7638 thumbprint.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ed25519Keys;

impl KeyGenerator for Ed25519Keys {
    fn generate(&self, now: i64) -> Result<SigningKey, KeyGenerationFailed> {
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|e| KeyGenerationFailed(e.to_string()))?;
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).map_err(|e| KeyGenerationFailed(e.to_string()))?;
        let public_key = pair.public_key().as_ref().to_vec();
        Ok(SigningKey {
            kid: thumbprint(&public_key),
            private_pkcs8: pkcs8.as_ref().to_vec(),
            public_key,
            created_at: now,
            activates_at: now,
            retired_at: None,
            revoked_at: None,
        })
    }
}

/// RFC 7638 JWK thumbprint of an Ed25519 public key (members in lexicographic order).
fn thumbprint(public_key: &[u8]) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, URL_SAFE_NO_PAD.encode(public_key));
    URL_SAFE_NO_PAD.encode(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, canonical.as_bytes()))
}

/// The key that signs new tokens, parsed once, with its JWS header already encoded.
///
/// Signing is the one JWS step done here rather than in jsonwebtoken: its `encode`
/// parses the PKCS#8 key again on every call, and for Ed25519 that parse derives the
/// public key, a scalar multiplication as costly as the signature itself. Verification,
/// where the security checks are, stays with jsonwebtoken.
pub(super) struct CurrentKey {
    pub(super) kid: String,
    pub(super) pair: Ed25519KeyPair,
    /// Makes the DPoP nonces handed out while this key signs.
    pub(super) nonces: hmac::Key,
    pub(super) encoded_header: String,
    /// When it signs from.
    activates_at: i64,
    /// When it stops signing, once decided.
    retired_at: Option<i64>,
}

impl CurrentKey {
    fn signs_at(&self, now: i64) -> bool {
        self.activates_at <= now && self.retired_at.is_none_or(|retired| now < retired)
    }
}

/// A published key, as the verifier checks tokens against it.
pub(super) struct VerifyingKey {
    pub(super) key: DecodingKey,
    /// When it started signing (or will): a token it signed is issued from then on.
    pub(super) activates_at: i64,
    /// When it stopped signing, once decided: a token it signed is issued before then.
    pub(super) retired_at: Option<i64>,
}

/// The keys loaded from the store, swapped whole when they change.
pub(super) struct KeySet {
    /// The keys that sign now or will: which one signs is decided at each signature,
    /// by the clock, so every instance switches to a next key at its activation
    /// without a reload.
    pub(super) signers: Vec<CurrentKey>,
    pub(super) verifying: HashMap<String, VerifyingKey>,
    /// The nonce secrets of every loaded key: a nonce made with any of them is
    /// accepted, so one handed out by an instance that has already switched to a next
    /// key is accepted by one that has not.
    pub(super) nonce_secrets: Vec<hmac::Key>,
    pub(super) document: String,
    /// Tokens whose signature, algorithm, key, issuer and audience these keys verified,
    /// keyed by the whole token: a byte changed is a different key, and a new key set
    /// starts empty, so a token of a withdrawn key is never accepted from here. The time
    /// claims are checked again on every hit; revocation is the caller's (`BearerCheck`).
    pub(super) verified: Cache<String, AccessClaims>,
}

impl KeySet {
    pub(super) fn new(document: String) -> Self {
        Self {
            signers: Vec::new(),
            verifying: HashMap::new(),
            nonce_secrets: Vec::new(),
            document,
            verified: Cache::new(VERIFIED_TOKENS),
        }
    }

    /// The keys `stored`, loaded at `now`: each signs within its activation window
    /// (next keys from their activation, by the clock), all verify and are published.
    ///
    /// # Errors
    /// [`KeyError`] if a stored key is unusable.
    pub(super) fn load(stored: &[SigningKey], now: i64) -> Result<Self, KeyError> {
        let mut set = KeySet::new(String::new());
        let mut published = Vec::with_capacity(stored.len());
        for key in stored {
            let pair = Ed25519KeyPair::from_pkcs8(&key.private_pkcs8)
                .map_err(|e| KeyError(format!("key {} does not load: {e}", key.kid)))?;
            if key.retired_at.is_none_or(|retired| now < retired) {
                let mut header = Header::new(Algorithm::EdDSA);
                header.kid = Some(key.kid.clone());
                header.typ = Some(ACCESS_TOKEN_TYPE.to_owned());
                let header = serde_json::to_vec(&header).map_err(|e| KeyError(e.to_string()))?;
                set.signers.push(CurrentKey {
                    kid: key.kid.clone(),
                    pair,
                    nonces: nonce_secret(&key.private_pkcs8),
                    encoded_header: URL_SAFE_NO_PAD.encode(header),
                    activates_at: key.activates_at,
                    retired_at: key.retired_at,
                });
            }
            let verifying = VerifyingKey {
                key: DecodingKey::from_ed_der(&key.public_key),
                activates_at: key.activates_at,
                retired_at: key.retired_at,
            };
            set.verifying.insert(key.kid.clone(), verifying);
            set.nonce_secrets.push(nonce_secret(&key.private_pkcs8));
            published.push(serde_json::json!({
                "kty": "OKP",
                "crv": "Ed25519",
                "alg": "EdDSA",
                "use": "sig",
                "kid": key.kid,
                "x": URL_SAFE_NO_PAD.encode(&key.public_key),
            }));
        }
        set.document = serde_json::json!({ "keys": published }).to_string();
        Ok(set)
    }

    pub(super) fn signer_at(&self, now: i64) -> Option<&CurrentKey> {
        self.signers.iter().find(|signer| signer.signs_at(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kid_is_the_rfc7638_thumbprint() {
        // RFC 8037 Appendix A.3: the thumbprint of its example Ed25519 key.
        let x = URL_SAFE_NO_PAD.decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo").unwrap();
        assert_eq!(thumbprint(&x), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }
}
