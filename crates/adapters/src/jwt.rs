//! Access tokens as Ed25519-signed JWTs (RFC 7519, RFC 8037), and the JWKS that
//! publishes their keys (RFC 7517).
//!
//! EdDSA because docs/contract.md asks for an asymmetric algorithm and aws-lc-rs signs
//! Ed25519 fastest of those it offers (shared/DEPENDENCIES.md). The algorithm is
//! pinned: `none`, HMAC and every other `alg` are refused before any key is looked at.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use aws_lc_rs::hmac;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::client::{BusinessCode, ChannelId, ChannelScope, ClientId, CountryCode};
use domain::dpop::KeyThumbprint;
use domain::ports::{
    Clock, KeyGenerationFailed, KeyGenerator, ProofNonces, SigningFailed, TokenRejected, TokenSigner, TokenVerifier,
};
use domain::token::{AccessClaims, Scope, SessionId, SigningKey, TokenId};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use quick_cache::sync::Cache;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Leeway on `exp` and `nbf` (docs/contract.md: at most one second; jsonwebtoken's default
/// of 60 s would keep expired tokens alive a minute). It is applied to the current time
/// with its fraction of a second: a token is refused from exactly `exp` + 1 s. Compared
/// in whole seconds, as jsonwebtoken does, it was accepted until `exp` + 1.99 s.
const LEEWAY_MILLIS: i128 = 1000;

/// RFC 9068 §2.1: the media type of JWT access tokens.
const ACCESS_TOKEN_TYPE: &str = "at+jwt";

/// Tokens remembered as verified, per key set. An entry is a token of about 700 bytes
/// and its claims, so the cache stays under about 10 MB; a token evicted from it is
/// simply verified again.
const VERIFIED_TOKENS: usize = 10_000;

/// Claims as they are signed: RFC 9068 §2.2's (`iss`, `exp`, `aud`, `sub`, `client_id`,
/// `iat`, `jti`; `sub` is the client, as RFC 9068 §2.2 says for tokens of a client acting
/// for itself), `nbf`, `scope` and `sid`, and the channel the token was issued for.
#[derive(Serialize)]
struct ClaimsOut<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    client_id: &'a str,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: &'a str,
    scope: &'a str,
    sid: &'a str,
    #[serde(rename = "businessCode")]
    business_code: &'a str,
    #[serde(rename = "countryCode")]
    country_code: &'a str,
    #[serde(rename = "channelId")]
    channel_id: &'a str,
    /// RFC 9449 §6.1: the key a bound token is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    cnf: Option<Confirmation<&'a str>>,
}

/// The confirmation claim (RFC 7800 §3.1) of a bound token: its key's thumbprint.
#[derive(Serialize, Deserialize)]
struct Confirmation<T> {
    jkt: T,
}

/// Claims as they are read back; `iss`, `aud`, `exp` and `nbf` are checked by jsonwebtoken.
/// `client_id` must equal `sub` (RFC 9068: both name the client here).
#[derive(Deserialize)]
struct ClaimsIn {
    sub: String,
    client_id: String,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: String,
    scope: String,
    sid: String,
    #[serde(rename = "businessCode")]
    business_code: String,
    #[serde(rename = "countryCode")]
    country_code: String,
    #[serde(rename = "channelId")]
    channel_id: String,
    #[serde(default)]
    cnf: Option<Confirmation<String>>,
}

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
struct CurrentKey {
    kid: String,
    pair: Ed25519KeyPair,
    /// Makes the DPoP nonces handed out while this key signs.
    nonces: hmac::Key,
    encoded_header: String,
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
struct VerifyingKey {
    key: DecodingKey,
    /// When it started signing (or will): a token it signed is issued from then on.
    activates_at: i64,
    /// When it stopped signing, once decided: a token it signed is issued before then.
    retired_at: Option<i64>,
}

/// The keys loaded from the store, swapped whole when they change.
struct KeySet {
    /// The keys that sign now or will: which one signs is decided at each signature,
    /// by the clock, so every instance switches to a next key at its activation
    /// without a reload.
    signers: Vec<CurrentKey>,
    verifying: HashMap<String, VerifyingKey>,
    /// The nonce secrets of every loaded key: a nonce made with any of them is
    /// accepted, so one handed out by an instance that has already switched to a next
    /// key is accepted by one that has not.
    nonce_secrets: Vec<hmac::Key>,
    document: String,
    /// Tokens whose signature, algorithm, key, issuer and audience these keys verified,
    /// keyed by the whole token: a byte changed is a different key, and a new key set
    /// starts empty, so a token of a withdrawn key is never accepted from here. The time
    /// claims are checked again on every hit; revocation is the caller's (`BearerCheck`).
    verified: Cache<String, AccessClaims>,
}

impl KeySet {
    fn new(document: String) -> Self {
        Self {
            signers: Vec::new(),
            verifying: HashMap::new(),
            nonce_secrets: Vec::new(),
            document,
            verified: Cache::new(VERIFIED_TOKENS),
        }
    }

    fn signer_at(&self, now: i64) -> Option<&CurrentKey> {
        self.signers.iter().find(|signer| signer.signs_at(now))
    }
}

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
        // `exp` and `nbf` must be there (below), and are checked by `time_claims_hold`
        // on every path, the remembered one too.
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
        let now = self.clock.unix_now();
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
        self.keys.store(Arc::new(set));
        Ok(())
    }

    /// The id of the key that signs new tokens now, if one is loaded.
    pub fn current_kid(&self) -> Option<String> {
        self.keys.load().signer_at(self.clock.unix_now()).map(|current| current.kid.clone())
    }
}

impl TokenSigner for JwtTokens {
    fn sign(&self, claims: &AccessClaims) -> Result<String, SigningFailed> {
        let keys = self.keys.load();
        let current = keys
            .signer_at(self.clock.unix_now())
            .ok_or_else(|| SigningFailed("no key signs now among those loaded".into()))?;
        let out = ClaimsOut {
            iss: &self.issuer,
            aud: &self.audience,
            sub: claims.client_id.as_str(),
            client_id: claims.client_id.as_str(),
            iat: claims.issued_at,
            nbf: claims.not_before,
            exp: claims.expires_at,
            jti: claims.token_id.as_str(),
            scope: claims.granted.as_str(),
            sid: claims.session.as_str(),
            business_code: claims.scope.business.as_str(),
            country_code: claims.scope.country.as_str(),
            channel_id: claims.scope.channel.as_str(),
            cnf: claims.bound_to.as_ref().map(|key| Confirmation { jkt: key.as_str() }),
        };
        // RFC 7515 §7.1: BASE64URL(header) '.' BASE64URL(payload) '.' BASE64URL(signature).
        let payload = serde_json::to_vec(&out).map_err(|e| SigningFailed(e.to_string()))?;
        let mut token = String::with_capacity(current.encoded_header.len() + payload.len() * 4 / 3 + 92);
        token.push_str(&current.encoded_header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(payload, &mut token);
        let signature = current.pair.sign(token.as_bytes());
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut token);
        Ok(token)
    }
}

/// DPoP nonces (RFC 9449 §8) are valid in the minute they are handed out and the next:
/// from one to two minutes. A proof made with one cannot be made ahead of that time.
const NONCE_STEP_SECONDS: i64 = 60;

/// The bytes of a nonce's tag kept: 128 bits, as a random nonce would have.
const NONCE_TAG_BYTES: usize = 16;

/// The secret a signing key's nonces are made with: an HMAC of the private key under a
/// label of this use (HKDF's extract step, RFC 5869 §2.2), so that a nonce says nothing
/// of the key, and every instance that loads the key makes and accepts the same
/// nonces, with no store between them.
fn nonce_secret(private_pkcs8: &[u8]) -> hmac::Key {
    let label = hmac::Key::new(hmac::HMAC_SHA256, b"branch-atm DPoP nonce v1");
    hmac::Key::new(hmac::HMAC_SHA256, hmac::sign(&label, private_pkcs8).as_ref())
}

/// The nonce of time step `step` under `secret`: the step and the first
/// [`NONCE_TAG_BYTES`] of its HMAC, base64url (32 characters).
fn nonce_of(secret: &hmac::Key, step: i64) -> String {
    let step = step.to_be_bytes();
    let mut nonce = step.to_vec();
    nonce.extend_from_slice(&hmac::sign(secret, &step).as_ref()[..NONCE_TAG_BYTES]);
    URL_SAFE_NO_PAD.encode(nonce)
}

impl ProofNonces for JwtTokens {
    fn issue(&self) -> Option<String> {
        let now = self.clock.unix_now();
        let keys = self.keys.load();
        Some(nonce_of(&keys.signer_at(now)?.nonces, now.div_euclid(NONCE_STEP_SECONDS)))
    }

    fn accepts(&self, nonce: &str) -> bool {
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(nonce) else { return false };
        let Some((step, tag)) = bytes.split_first_chunk::<8>() else { return false };
        let current = self.clock.unix_now().div_euclid(NONCE_STEP_SECONDS);
        let step_number = i64::from_be_bytes(*step);
        if tag.len() != NONCE_TAG_BYTES || !(current - 1..=current).contains(&step_number) {
            return false;
        }
        self.keys.load().nonce_secrets.iter().any(|secret| {
            let expected = hmac::sign(secret, step);
            aws_lc_rs::constant_time::verify_slices_are_equal(&expected.as_ref()[..NONCE_TAG_BYTES], tag).is_ok()
        })
    }
}

fn rejection(kind: &ErrorKind) -> TokenRejected {
    TokenRejected::Invalid(match kind {
        ErrorKind::InvalidSignature => "bad signature",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::InvalidAlgorithm => "algorithm not allowed",
        ErrorKind::MissingRequiredClaim(_) => "missing claim",
        _ => "malformed token",
    })
}

/// Whether `now` lies within the token's `nbf` and `exp`, and is not before its `iat`,
/// widened by the leeway: from `nbf` − 1 s (and `iat` − 1 s) up to, not including,
/// `exp` + 1 s. Milliseconds, in `i128` so that no claim a token may carry overflows.
///
/// `iat` is checked because the lifetime check (`exp` − `iat`) bounds a token's life
/// only from its `iat`: a token dated a year ahead, forged with a leaked key, would
/// otherwise live a year. No token this service signs is dated ahead of the clock.
fn time_claims_hold(claims: &AccessClaims, now: OffsetDateTime) -> Result<(), TokenRejected> {
    let now = now.unix_timestamp_nanos() / 1_000_000;
    if now >= i128::from(claims.expires_at) * 1000 + LEEWAY_MILLIS {
        return Err(TokenRejected::Expired);
    }
    if now < i128::from(claims.not_before) * 1000 - LEEWAY_MILLIS {
        return Err(TokenRejected::Invalid("not yet valid"));
    }
    if now < i128::from(claims.issued_at) * 1000 - LEEWAY_MILLIS {
        return Err(TokenRejected::Invalid("issued in the future"));
    }
    Ok(())
}

impl TokenVerifier for JwtTokens {
    fn verify(&self, token: &str) -> Result<AccessClaims, TokenRejected> {
        let keys = self.keys.load();
        // One Ed25519 verification costs tens of microseconds, more than the rest of a
        // request; an app calls with the same token for its whole session.
        if let Some(claims) = keys.verified.get(token) {
            time_claims_hold(&claims, self.clock.now())?;
            return Ok(claims);
        }
        let claims = self.verify_signed(&keys, token)?;
        keys.verified.insert(token.to_owned(), claims.clone());
        Ok(claims)
    }

    fn key_set_document(&self) -> String {
        self.keys.load().document.clone()
    }
}

impl JwtTokens {
    /// The full check: header, pinned algorithm, key, signature, registered claims, the
    /// time claims against the clock, and what no token this service signed looks like:
    /// issued after its key's retirement (a forger holding a retired key) or before its
    /// activation (one holding a next key), or living longer than tokens are issued for.
    fn verify_signed(&self, keys: &KeySet, token: &str) -> Result<AccessClaims, TokenRejected> {
        let kid = access_token_kid(token)?;
        let key =
            kid.as_ref().and_then(|kid| keys.verifying.get(kid)).ok_or(TokenRejected::Invalid("unknown key id"))?;
        let claims = jsonwebtoken::decode::<ClaimsIn>(token, &key.key, &self.validation)
            .map_err(|e| rejection(e.kind()))?
            .claims;
        let malformed = |_| TokenRejected::Invalid("malformed claims");
        if claims.client_id != claims.sub {
            return Err(TokenRejected::Invalid("client_id differs from sub"));
        }
        let verified = AccessClaims {
            client_id: ClientId::parse(&claims.sub).map_err(malformed)?,
            scope: ChannelScope {
                country: CountryCode::parse(&claims.country_code).map_err(malformed)?,
                business: BusinessCode::parse(&claims.business_code).map_err(malformed)?,
                channel: ChannelId::parse(&claims.channel_id).map_err(malformed)?,
            },
            session: SessionId::new(claims.sid),
            token_id: TokenId::new(claims.jti),
            granted: Scope::parse_request(&claims.scope).map_err(malformed)?,
            issued_at: claims.iat,
            not_before: claims.nbf,
            expires_at: claims.exp,
            bound_to: claims
                .cnf
                .map(|cnf| KeyThumbprint::parse(&cnf.jkt).ok_or(TokenRejected::Invalid("malformed claims")))
                .transpose()?,
        };
        // First, so that an expired token is refused as expired, whatever else it is.
        time_claims_hold(&verified, self.clock.now())?;
        // `iat` is whole seconds: a token signed in the second the key retired, before
        // that moment, carries that second.
        if key.retired_at.is_some_and(|retired| claims.iat > retired) {
            return Err(TokenRejected::Invalid("issued after its key's retirement"));
        }
        // A key is published before it signs (`keys rotate`): until its activation it
        // has signed nothing here.
        if claims.iat < key.activates_at {
            return Err(TokenRejected::Invalid("issued before its key's activation"));
        }
        if claims.exp.saturating_sub(claims.iat) > self.lifetime {
            return Err(TokenRejected::Invalid("lives longer than tokens are issued for"));
        }
        Ok(verified)
    }
}

/// The JOSE header members the verifier reads.
#[derive(Deserialize)]
struct JoseHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    crit: Option<serde::de::IgnoredAny>,
}

/// The key id of a token whose header is that of an access token this service signs:
/// `alg` EdDSA (pinned: `none`, HMAC and every other `alg` are refused before any key is
/// looked at); `typ` `at+jwt` or `application/at+jwt` (RFC 9068 §4; media types compare
/// case-insensitively); no `crit` (RFC 7515 §4.1.11: it names extensions the verifier
/// must understand, and this one understands none).
fn access_token_kid(token: &str) -> Result<Option<String>, TokenRejected> {
    let malformed = || TokenRejected::Invalid("malformed token");
    let encoded = token.split('.').next().unwrap_or_default();
    let json = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| malformed())?;
    let header: JoseHeader = serde_json::from_slice(&json).map_err(|_| malformed())?;
    if header.alg != "EdDSA" {
        return Err(TokenRejected::Invalid("algorithm not allowed"));
    }
    if header.crit.is_some() {
        return Err(TokenRejected::Invalid("critical header extension not understood"));
    }
    let typ = header.typ.as_deref().unwrap_or_default();
    let subtype = match (typ.get(..12), typ.get(12..)) {
        (Some(prefix), Some(rest)) if prefix.eq_ignore_ascii_case("application/") => rest,
        _ => typ,
    };
    if !subtype.eq_ignore_ascii_case(ACCESS_TOKEN_TYPE) {
        return Err(TokenRejected::Invalid("not an access token (typ)"));
    }
    Ok(header.kid)
}

impl crate::view::KeyRing for JwtTokens {
    fn install(&self, keys: &[SigningKey]) -> Result<(), String> {
        JwtTokens::install(self, keys).map_err(|error| error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::SystemClock;
    use std::sync::Mutex;

    fn now() -> i64 {
        OffsetDateTime::now_utc().unix_timestamp()
    }

    fn key_at(now: i64) -> Result<SigningKey, KeyGenerationFailed> {
        Ed25519Keys.generate(now)
    }

    /// A clock the test sets.
    struct SetClock(Mutex<OffsetDateTime>);

    impl SetClock {
        fn at(unix_millis: i64) -> Arc<Self> {
            let clock = Arc::new(Self(Mutex::new(OffsetDateTime::UNIX_EPOCH)));
            clock.set(unix_millis);
            clock
        }

        fn set(&self, unix_millis: i64) {
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
    const LIFETIME: Duration = Duration::from_secs(1800);

    fn claims(issued_at: i64, lifetime: i64) -> AccessClaims {
        domain::testing::claims("demo-app", "sid-123", issued_at, lifetime)
    }

    fn tokens_with(keys: &[SigningKey]) -> JwtTokens {
        tokens_on(keys, Arc::new(SystemClock))
    }

    fn tokens_on(keys: &[SigningKey], clock: Arc<dyn Clock>) -> JwtTokens {
        let tokens = JwtTokens::new("https://bank.example/api", "https://bank.example/api", LIFETIME, clock);
        tokens.install(keys).unwrap();
        tokens
    }

    /// `token` with its header replaced by `header` and signed again with `key`.
    fn resigned_with_header(token: &str, header: &serde_json::Value, key: &SigningKey) -> String {
        let payload = token.split('.').nth(1).unwrap();
        let input = format!("{}.{payload}", URL_SAFE_NO_PAD.encode(header.to_string()));
        let signature = Ed25519KeyPair::from_pkcs8(&key.private_pkcs8).unwrap().sign(input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }

    #[test]
    fn a_nonce_is_accepted_for_one_to_two_minutes_by_every_instance_holding_the_keys() {
        let start = 1_800_000_000_000; // on a minute boundary
        let key = key_at(start / 1000).unwrap();
        let (clock, other_clock) = (SetClock::at(start), SetClock::at(start));
        let (here, there) =
            (tokens_on(std::slice::from_ref(&key), clock.clone()), tokens_on(&[key], other_clock.clone()));
        let nonce = here.issue().unwrap();
        assert_eq!(nonce.len(), 32);
        assert!(here.accepts(&nonce) && there.accepts(&nonce), "another instance on the same keys accepts it");
        clock.set(start + 119_000);
        assert!(here.accepts(&nonce), "still in the next minute");
        clock.set(start + 120_000);
        assert!(!here.accepts(&nonce), "not two minutes on");
        clock.set(start + 60_000);
        let other = tokens_on(&[key_at(start / 1000).unwrap()], clock.clone());
        assert!(here.accepts(&nonce) && !other.accepts(&nonce), "nor by an instance on other keys");
        for made_up in ["", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", &nonce[..31], "not base64url!"] {
            assert!(!there.accepts(made_up), "{made_up:?}");
        }
    }

    #[test]
    fn only_an_access_token_type_without_critical_extensions_is_accepted() {
        let key = key_at(now()).unwrap();
        let tokens = tokens_with(std::slice::from_ref(&key));
        let token = tokens.sign(&claims(now(), 60)).unwrap();
        let header = |extra: serde_json::Value| {
            let mut header = serde_json::json!({"alg": "EdDSA", "kid": key.kid});
            header.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            header
        };
        let accepted = [serde_json::json!({"typ": "at+jwt"}), serde_json::json!({"typ": "Application/AT+JWT"})];
        for extra in accepted {
            let resigned = resigned_with_header(&token, &header(extra.clone()), &key);
            assert!(tokens.verify(&resigned).is_ok(), "{extra}");
        }
        let refused = [
            serde_json::json!({}),
            serde_json::json!({"typ": "JWT"}),
            serde_json::json!({"typ": "at+jwt", "crit": ["exp"]}),
            serde_json::json!({"typ": "at+jwt", "crit": ["b64"], "b64": false}),
            serde_json::json!({"typ": "at+jwt", "crit": []}),
        ];
        for extra in refused {
            let resigned = resigned_with_header(&token, &header(extra.clone()), &key);
            assert!(tokens.verify(&resigned).is_err(), "{extra} must be refused (RFC 9068 §4, RFC 7515 §4.1.11)");
        }
    }

    #[test]
    fn a_signed_token_verifies_back_to_its_claims() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let issued = claims(now(), 60);
        let token = tokens.sign(&issued).unwrap();
        assert_eq!(tokens.verify(&token).unwrap(), issued);
    }

    #[test]
    fn an_expired_token_is_rejected() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let token = tokens.sign(&claims(now() - 120, 60)).unwrap();
        assert_eq!(tokens.verify(&token), Err(TokenRejected::Expired));
    }

    #[test]
    fn a_token_from_another_issuer_is_rejected() {
        let key = key_at(now()).unwrap();
        let elsewhere =
            JwtTokens::new("https://evil.example/api", "https://bank.example/api", LIFETIME, Arc::new(SystemClock));
        elsewhere.install(std::slice::from_ref(&key)).unwrap();
        let token = elsewhere.sign(&claims(now(), 60)).unwrap();
        assert_eq!(tokens_with(&[key]).verify(&token), Err(TokenRejected::Invalid("wrong issuer")));
    }

    #[test]
    fn a_token_signed_by_an_unpublished_key_is_rejected() {
        let signer = tokens_with(&[key_at(now()).unwrap()]);
        let verifier = tokens_with(&[key_at(now()).unwrap()]);
        let token = signer.sign(&claims(now(), 60)).unwrap();
        assert_eq!(verifier.verify(&token), Err(TokenRejected::Invalid("unknown key id")));
    }

    #[test]
    fn after_rotation_the_new_key_signs_and_old_tokens_still_verify() {
        let old = key_at(now() - 10).unwrap();
        let before = tokens_with(std::slice::from_ref(&old));
        let old_token = before.sign(&claims(now() - 5, 60)).unwrap();

        let new = key_at(now()).unwrap();
        let retired = SigningKey { retired_at: Some(now()), ..old.clone() };
        let after = tokens_with(&[new.clone(), retired]);

        assert_eq!(after.current_kid(), Some(new.kid.clone()));
        assert!(after.verify(&old_token).is_ok());
        let document: serde_json::Value = serde_json::from_str(&after.key_set_document()).unwrap();
        assert_eq!(document["keys"].as_array().unwrap().len(), 2);
    }

    /// The finding: a key's holder kept minting tokens that verified after `rotate --now`
    /// (`iat` after the key's retirement) and tokens living for days (`exp` far past the
    /// lifetime). No token this service signs looks like either.
    #[test]
    fn a_token_issued_after_its_keys_retirement_or_living_longer_than_the_lifetime_is_refused() {
        let retired_at = now() - 100;
        let old = SigningKey { retired_at: Some(retired_at), ..key_at(now() - 1000).unwrap() };
        let forger = tokens_with(&[SigningKey { retired_at: None, ..old.clone() }]);
        let verifier = tokens_with(&[key_at(now()).unwrap(), old]);

        let before = forger.sign(&claims(retired_at - 1, 600)).unwrap();
        assert!(verifier.verify(&before).is_ok(), "signed while it was the signing key");
        let same_second = forger.sign(&claims(retired_at, 600)).unwrap();
        assert!(verifier.verify(&same_second).is_ok(), "signed in the second it retired, before the moment");
        let after = forger.sign(&claims(retired_at + 1, 600)).unwrap();
        assert_eq!(verifier.verify(&after), Err(TokenRejected::Invalid("issued after its key's retirement")));

        let current = tokens_with(&[key_at(now()).unwrap()]);
        let longest = current.sign(&claims(now(), 1800)).unwrap();
        assert!(current.verify(&longest).is_ok(), "exactly the configured lifetime");
        let longer = current.sign(&claims(now(), 1801)).unwrap();
        assert_eq!(current.verify(&longer), Err(TokenRejected::Invalid("lives longer than tokens are issued for")));
    }

    /// The finding: with the signing key (what a leaked key gives), a token dated a year
    /// ahead (`iat` now + 1 year, `nbf` now, `exp` `iat` + 1,800 s) passed the lifetime
    /// check and verified for a year; a next key, published before it signs, verified
    /// tokens dated before its activation, which it cannot have signed.
    #[test]
    fn a_token_dated_ahead_of_now_or_before_its_keys_activation_is_refused() {
        const YEAR: i64 = 365 * 86_400;
        let clock = SetClock::at(EXP * 1000);
        let key = key_at(EXP - 600).unwrap();
        let tokens = tokens_on(std::slice::from_ref(&key), clock.clone());
        let year_ahead = AccessClaims { not_before: EXP, ..claims(EXP + YEAR, 1800) };
        let forged = tokens.sign(&year_ahead).unwrap();
        assert_eq!(tokens.verify(&forged), Err(TokenRejected::Invalid("issued in the future")));
        clock.set((EXP + YEAR) * 1000);
        assert!(tokens.verify(&forged).is_ok(), "at its iat a token of the key's own is what it says");

        // Within the leeway, as for nbf: a signer's clock up to one second ahead.
        clock.set(EXP * 1000);
        let one_second_ahead = tokens.sign(&claims(EXP + 1, 60)).unwrap();
        assert!(tokens.verify(&one_second_ahead).is_ok(), "iat − 1 s is within the leeway");
        let two_seconds_ahead = tokens.sign(&AccessClaims { not_before: EXP, ..claims(EXP + 2, 60) }).unwrap();
        assert_eq!(tokens.verify(&two_seconds_ahead), Err(TokenRejected::Invalid("issued in the future")));
        // Remembered, then the clock set back (a verifier restarted with another clock).
        clock.set((EXP + 2) * 1000);
        assert!(tokens.verify(&two_seconds_ahead).is_ok());
        clock.set(EXP * 1000);
        assert_eq!(tokens.verify(&two_seconds_ahead), Err(TokenRejected::Invalid("issued in the future")));

        let next = SigningKey { activates_at: EXP + 300, ..key_at(EXP).unwrap() };
        let verifier = tokens_on(&[next.clone(), key], clock.clone());
        let holder = tokens_on(&[SigningKey { activates_at: EXP - 600, ..next.clone() }], clock.clone());
        let early = holder.sign(&claims(EXP, 60)).unwrap();
        assert_eq!(verifier.verify(&early), Err(TokenRejected::Invalid("issued before its key's activation")));
        clock.set((EXP + 300) * 1000);
        let on_time = holder.sign(&claims(EXP + 300, 60)).unwrap();
        assert!(verifier.verify(&on_time).is_ok(), "signed from its activation");
    }

    #[test]
    fn a_next_key_is_published_at_once_and_signs_from_its_activation_without_a_reload() {
        const NOW: i64 = 1_800_000_000;
        let clock = SetClock::at(NOW * 1000);
        let current = SigningKey { retired_at: Some(NOW + 300), ..key_at(NOW - 600).unwrap() };
        let next = SigningKey { activates_at: NOW + 300, ..key_at(NOW).unwrap() };
        let tokens = tokens_on(&[next.clone(), current.clone()], clock.clone());
        let document: serde_json::Value = serde_json::from_str(&tokens.key_set_document()).unwrap();
        assert_eq!(document["keys"].as_array().unwrap().len(), 2, "the next key is published before it signs");
        assert_eq!(tokens.current_kid(), Some(current.kid.clone()));
        let before = tokens.sign(&claims(NOW, 60)).unwrap();
        clock.set(NOW * 1000 + 300_000);
        assert_eq!(tokens.current_kid(), Some(next.kid.clone()), "at its activation, by the clock");
        let after = tokens.sign(&claims(NOW + 300, 60)).unwrap();
        assert_ne!(before.split('.').next(), after.split('.').next(), "another kid in the header");
    }

    const EXP: i64 = 1_800_000_000;

    #[test]
    fn a_token_is_accepted_until_its_exp_plus_one_second_and_refused_from_then_on() {
        let key = key_at(EXP - 600).unwrap();
        let clock = SetClock::at(EXP * 1000 + 999);
        let remembering = tokens_on(std::slice::from_ref(&key), clock.clone());
        let token = remembering.sign(&claims(EXP - 60, 60)).unwrap();
        assert!(remembering.verify(&token).is_ok(), "exp + 0.999 s is within the leeway");

        clock.set(EXP * 1000 + 1000);
        assert_eq!(remembering.verify(&token), Err(TokenRejected::Expired), "remembered, at exp + 1 s");
        let first_sight = tokens_on(&[key], clock);
        assert_eq!(first_sight.verify(&token), Err(TokenRejected::Expired), "verified afresh, at exp + 1 s");
    }

    #[test]
    fn a_token_is_refused_until_one_second_before_its_nbf() {
        let key = key_at(EXP - 600).unwrap();
        let clock = SetClock::at(EXP * 1000 - 1001);
        let tokens = tokens_on(&[key], clock.clone());
        let token = tokens.sign(&claims(EXP, 60)).unwrap();
        assert_eq!(tokens.verify(&token), Err(TokenRejected::Invalid("not yet valid")));
        clock.set(EXP * 1000 - 1000);
        assert!(tokens.verify(&token).is_ok(), "nbf − 1 s is within the leeway");
    }

    #[test]
    fn a_remembered_token_is_refused_once_its_key_is_withdrawn() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let token = tokens.sign(&claims(now(), 60)).unwrap();
        assert!(tokens.verify(&token).is_ok());
        tokens.install(&[key_at(now()).unwrap()]).unwrap();
        assert_eq!(tokens.verify(&token), Err(TokenRejected::Invalid("unknown key id")));
    }

    #[test]
    fn a_token_one_byte_off_a_remembered_one_is_refused() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let token = tokens.sign(&claims(now(), 60)).unwrap();
        assert!(tokens.verify(&token).is_ok());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let flipped = if signature.starts_with('A') { 'B' } else { 'A' };
        let tampered = format!("{signed}.{flipped}{}", &signature[1..]);
        assert_eq!(tokens.verify(&tampered), Err(TokenRejected::Invalid("bad signature")));
        assert!(tokens.verify(&token).is_ok(), "the genuine token is still accepted");
    }

    #[test]
    fn the_kid_is_the_rfc7638_thumbprint() {
        // RFC 8037 Appendix A.3: the thumbprint of its example Ed25519 key.
        let x = URL_SAFE_NO_PAD.decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo").unwrap();
        assert_eq!(thumbprint(&x), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }
}
