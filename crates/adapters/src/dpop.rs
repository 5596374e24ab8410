//! DPoP proofs (RFC 9449 §4) read and verified, and the proofs seen, in this process
//! and in Redis.
//!
//! A proof is verified here, not by jsonwebtoken: its `Jwk` drops private members
//! without a word (a proof carrying one must be refused, RFC 9449 §4.3 step 7), its
//! `alg` is an enum that cannot say an algorithm is unknown rather than malformed, and
//! its `DecodingKey::from_jwk` checks neither the curve nor the lengths of the
//! coordinates. The signature is aws-lc-rs's, as for the access tokens.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::signature::UnparsedPublicKey;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::dpop::{KeyThumbprint, ProofClaims, ProofRefusal};
use domain::ports::{ProofReplays, ProofVerifier};
use serde::Deserialize;
use serde_json::Value;

use redis::Script;

use crate::jwk::{self, JwkProblem, PublicJwk};
use crate::redis_link::{PROBE_WITHIN, RedisHealth, RedisLink, RedisNews, RedisProbe};

/// RFC 9449 §4.2: the `typ` of a proof.
const PROOF_TYPE: &str = "dpop+jwt";

/// The longest proof read: a P-256 proof with a nonce and `ath` is about 700 bytes.
const MAX_PROOF_LEN: usize = 4096;

/// The header of a proof.
#[derive(Deserialize)]
struct ProofHeader {
    #[serde(default)]
    typ: Option<String>,
    alg: String,
    #[serde(default)]
    jwk: Option<serde_json::Map<String, Value>>,
    /// Whether `crit` is there, whatever its value (`null` too).
    #[serde(default, deserialize_with = "present")]
    crit: bool,
}

/// `true` for a member that is there, whatever it holds.
fn present<'de, D: serde::Deserializer<'de>>(member: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(member).map(|_| true)
}

/// The claims of a proof, as sent: each checked for its presence and type afterwards.
#[derive(Deserialize)]
struct ProofBody {
    #[serde(default)]
    jti: Option<Value>,
    #[serde(default)]
    htm: Option<Value>,
    #[serde(default)]
    htu: Option<Value>,
    #[serde(default)]
    iat: Option<Value>,
    #[serde(default)]
    nonce: Option<Value>,
    #[serde(default)]
    ath: Option<Value>,
}

/// Verifies DPoP proofs signed with ES256 (P-256) or Ed25519 (`alg` `EdDSA` or `Ed25519`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DpopProofs;

impl ProofVerifier for DpopProofs {
    fn verify(&self, proof: &str) -> Result<ProofClaims, ProofRefusal> {
        if proof.len() > MAX_PROOF_LEN {
            return Err(ProofRefusal::Malformed("longer than any proof"));
        }
        let mut parts = proof.split('.');
        let (Some(header), Some(body), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ProofRefusal::Malformed("not three base64url parts separated by dots"));
        };
        let header: ProofHeader = decode_json(header, "the header is not base64url JSON")?;
        if !header.typ.as_deref().is_some_and(|typ| typ.eq_ignore_ascii_case(PROOF_TYPE)) {
            return Err(ProofRefusal::Type);
        }
        if header.crit {
            return Err(ProofRefusal::Malformed("crit names extensions this service does not understand"));
        }
        let jwk = header.jwk.ok_or(ProofRefusal::Key)?;
        if jwk::PRIVATE_MEMBERS.iter().any(|member| jwk.contains_key(*member)) {
            return Err(ProofRefusal::PrivateKey);
        }
        let key = proof_key(&header.alg, &jwk)?;
        let signature =
            URL_SAFE_NO_PAD.decode(signature).map_err(|_| ProofRefusal::Malformed("the signature is not base64url"))?;
        let signed = &proof[..header_and_body_len(proof)];
        UnparsedPublicKey::new(key.algorithm, &key.public_key)
            .verify(signed.as_bytes(), &signature)
            .map_err(|_| ProofRefusal::Signature)?;
        let body: ProofBody = decode_json(body, "the claims are not base64url JSON")?;
        claims(body, key.thumbprint)
    }

    fn token_hash(&self, access_token: &str) -> String {
        URL_SAFE_NO_PAD.encode(digest(&SHA256, access_token.as_bytes()))
    }
}

/// The length of `header.body`, the signed part of a compact JWS.
fn header_and_body_len(proof: &str) -> usize {
    proof.rfind('.').unwrap_or_default()
}

fn decode_json<T: for<'de> Deserialize<'de>>(part: &str, malformed: &'static str) -> Result<T, ProofRefusal> {
    let json = URL_SAFE_NO_PAD.decode(part).map_err(|_| ProofRefusal::Malformed(malformed))?;
    serde_json::from_slice(&json).map_err(|_| ProofRefusal::Malformed(malformed))
}

/// The public key of a proof's `jwk` for `alg` ([`crate::jwk::read`]).
fn proof_key(alg: &str, jwk: &serde_json::Map<String, Value>) -> Result<PublicJwk, ProofRefusal> {
    jwk::read(alg, jwk).map_err(|problem| match problem {
        JwkProblem::Algorithm => ProofRefusal::Algorithm,
        JwkProblem::Key => ProofRefusal::Key,
    })
}

/// The claims a proof must carry, each of its type: `jti`, `htm` and `htu` strings,
/// `iat` a number (its whole seconds); `nonce` and `ath` strings when sent.
fn claims(body: ProofBody, key: KeyThumbprint) -> Result<ProofClaims, ProofRefusal> {
    fn text(value: Option<Value>, name: &'static str) -> Result<Option<String>, ProofRefusal> {
        match value {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(ProofRefusal::Malformed(match name {
                "jti" => "jti is not a string",
                "htm" => "htm is not a string",
                "htu" => "htu is not a string",
                "nonce" => "nonce is not a string",
                _ => "ath is not a string",
            })),
        }
    }
    let jti = text(body.jti, "jti")?.filter(|jti| !jti.is_empty()).ok_or(ProofRefusal::Missing("jti"))?;
    if jti.len() > ProofClaims::MAX_JTI {
        return Err(ProofRefusal::Malformed("jti is longer than 128 bytes"));
    }
    let htm = text(body.htm, "htm")?.ok_or(ProofRefusal::Missing("htm"))?;
    let htu = text(body.htu, "htu")?.ok_or(ProofRefusal::Missing("htu"))?;
    let iat = match body.iat {
        None => return Err(ProofRefusal::Missing("iat")),
        Some(Value::Number(number)) => number
            .as_i64()
            .or_else(|| number.as_f64().filter(|seconds| seconds.is_finite()).map(|seconds| seconds.floor() as i64))
            .ok_or(ProofRefusal::Malformed("iat is not a number of seconds"))?,
        Some(_) => return Err(ProofRefusal::Malformed("iat is not a number of seconds")),
    };
    Ok(ProofClaims { key, jti, htm, htu, iat, nonce: text(body.nonce, "nonce")?, ath: text(body.ath, "ath")? })
}

/// A proof's replay key, as remembered: the first 16 bytes of its SHA-256, so that an
/// entry is the same size whatever the `jti` sent.
fn fingerprint(key: &str) -> u128 {
    let hash = digest(&SHA256, key.as_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&hash.as_ref()[..16]);
    u128::from_le_bytes(first)
}

/// The proofs this process has seen, in two generations: a proof is looked for in both,
/// recorded in the newer, and forgotten when the older is dropped, once the newer is a
/// window old. So each is remembered between one and two windows, and memory is the
/// proofs of at most two windows, with no sweep.
pub struct LocalReplays {
    window: Duration,
    generations: Mutex<Generations>,
}

struct Generations {
    started: Instant,
    newer: HashSet<u128>,
    older: HashSet<u128>,
}

impl LocalReplays {
    /// Proofs remembered for at least `window`.
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            generations: Mutex::new(Generations {
                started: Instant::now(),
                newer: HashSet::new(),
                older: HashSet::new(),
            }),
        }
    }

    fn first_use_now(&self, key: &str) -> bool {
        let fingerprint = fingerprint(key);
        let mut generations = self.generations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if generations.started.elapsed() >= self.window {
            let newer = std::mem::take(&mut generations.newer);
            generations.older = newer;
            generations.started = Instant::now();
        }
        if generations.older.contains(&fingerprint) {
            return false;
        }
        generations.newer.insert(fingerprint)
    }

    /// Every proof remembered now, with the longest it may still need remembering: a
    /// window for one seen since the generations last turned, what is left of the
    /// window since then for an older one.
    fn held(&self) -> Vec<(u128, Duration)> {
        let generations = self.generations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let older_for = self.window.saturating_sub(generations.started.elapsed());
        let older = generations.older.iter().filter(|_| !older_for.is_zero()).map(|proof| (*proof, older_for));
        generations.newer.iter().map(|proof| (*proof, self.window)).chain(older).collect()
    }
}

#[async_trait::async_trait]
impl ProofReplays for LocalReplays {
    async fn first_use(&self, key: &str) -> bool {
        self.first_use_now(key)
    }
}

/// Every key the service writes for proofs starts with this.
const KEY_PREFIX: &str = "branch-atm:dpop";

/// KEYS\[1\]: a proof's key. ARGV\[1\]: this ask's mark; ARGV\[2\]: how long to remember
/// the proof, in milliseconds. 1 when the proof is new, or was marked by this very ask
/// (sent a second time when Redis dropped the connection before answering the first,
/// [`RedisLink::ask`]): a plain `SET … NX` would call the proof used, by itself; else 0.
const FIRST_USE: &str = r"
local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if held == ARGV[1] then
  return 1
end
return 0
";

/// How many proofs one round trip writes when an instance catches Redis up.
const WRITE_BATCH: usize = 1_000;

/// The proofs every instance has seen, in Redis: one script call per proof, which
/// Redis answers for all instances at once. While Redis cannot answer, the instance's
/// own [`LocalReplays`] stands in (as the limits do), says so in the log, and Redis is
/// asked again a second later, or as soon as the probe ([`RedisProbe`]) hears it back.
///
/// Every proof is remembered here too, and Redis is caught up with them all when it
/// may lack some: once it answers after this instance decided alone (the proofs it
/// accepted then are refused on every instance from then on), and when it no longer
/// holds this instance's mark (a Redis restarted without its data, or another one
/// failed over to, forgot every proof).
pub struct SharedReplays {
    link: RedisLink,
    health: RedisHealth,
    local: LocalReplays,
    script: Script,
    ttl_ms: u64,
    /// What this instance's asks mark a proof with: its own random high half, a count.
    marks: AtomicU64,
    instance: u64,
    /// The key whose presence says Redis holds what this instance remembers.
    held_key: String,
    /// This instance decided alone since Redis was last caught up.
    unsynced: AtomicBool,
}

impl SharedReplays {
    /// Proofs remembered for `window` in the Redis at `url`, and in this process while
    /// it cannot answer; what Redis answers goes to `news` (the published status's).
    ///
    /// # Errors
    /// The reason, for a URL that is not a Redis URL.
    pub fn new(url: &str, window: Duration, news: Arc<RedisNews>) -> Result<Self, String> {
        let instance: u64 = rand::random();
        Ok(Self {
            link: RedisLink::new(url)?,
            health: RedisHealth::new("the shared DPoP replay cache", "proofs are accepted once across instances", news),
            local: LocalReplays::new(window),
            script: Script::new(FIRST_USE),
            ttl_ms: millis(window),
            marks: AtomicU64::new(0),
            instance,
            held_key: format!("{KEY_PREFIX}:held:{instance:016x}"),
            // Nothing written yet: the first probe writes the mark.
            unsynced: AtomicBool::new(true),
        })
    }

    async fn ask(&self, key: &str) -> Result<bool, String> {
        // The fingerprint, not the `jti` sent: every key the same 32 characters.
        let key = format!("{KEY_PREFIX}:{:032x}", fingerprint(key));
        let mark = format!("{:016x}{:x}", self.instance, self.marks.fetch_add(1, Ordering::Relaxed));
        let mut invocation = self.script.prepare_invoke();
        invocation.key(key).arg(mark).arg(self.ttl_ms);
        let invocation = &invocation;
        let first: u8 = self
            .link
            .ask("EVALSHA", |mut connection| async move { invocation.invoke_async(&mut connection).await })
            .await?;
        Ok(first == 1)
    }

    /// Writes every proof this instance remembers to Redis (those it has already are
    /// left as they are), then this instance's mark: how many were sent.
    async fn catch_up(&self) -> Result<usize, String> {
        let held = self.local.held();
        for batch in held.chunks(WRITE_BATCH) {
            let mut pipe = redis::pipe();
            for (proof, remembered_for) in batch {
                pipe.cmd("SET")
                    .arg(format!("{KEY_PREFIX}:{proof:032x}"))
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(*remembered_for))
                    .ignore();
            }
            let pipe = &pipe;
            self.link
                .ask_within(PROBE_WITHIN, "SET", |mut connection| async move {
                    pipe.query_async::<()>(&mut connection).await
                })
                .await?;
        }
        let mut mark = redis::cmd("SET");
        mark.arg(&self.held_key).arg(1).arg("PX").arg(self.ttl_ms);
        self.link.query::<()>("SET", &mark).await?;
        Ok(held.len())
    }
}

/// `duration` in whole milliseconds, at least one (Redis refuses `PX 0`).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[async_trait::async_trait]
impl ProofReplays for SharedReplays {
    async fn first_use(&self, key: &str) -> bool {
        // Recorded here too, so that a proof seen while Redis answered is still known
        // to this instance if Redis stops answering within its window, and so that
        // Redis can be caught up with it.
        let first_here = self.local.first_use_now(key);
        if !self.health.ask_shared() {
            self.unsynced.store(true, Ordering::Relaxed);
            return first_here;
        }
        let asked = self.health.asking();
        match self.ask(key).await {
            Ok(first) => {
                self.health.answered(asked);
                first && first_here
            }
            Err(error) => {
                self.unsynced.store(true, Ordering::Relaxed);
                self.health.failed(asked, &error);
                first_here
            }
        }
    }
}

#[async_trait::async_trait]
impl RedisProbe for SharedReplays {
    async fn probe(&self) {
        let asked = self.health.asking();
        // Whether Redis still holds this instance's mark, its time renewed if it does.
        let mut mark = redis::cmd("SET");
        mark.arg(&self.held_key).arg(1).arg("XX").arg("PX").arg(self.ttl_ms);
        let kept = match self.link.probe::<Option<String>>(&mark).await {
            Ok(kept) => kept.is_some(),
            Err(error) => {
                self.unsynced.store(true, Ordering::Relaxed);
                self.health.failed(asked, &error);
                return;
            }
        };
        // Requests ask Redis again from here on; what was decided alone before is in
        // the local cache, which is read after.
        self.health.answered(asked);
        let behind = self.unsynced.swap(false, Ordering::Relaxed) | self.link.take_reconnected() | !kept;
        if !behind {
            return;
        }
        let asked = self.health.asking();
        match self.catch_up().await {
            Ok(written) => tracing::debug!(written, "the shared DPoP replay cache holds this instance's proofs"),
            Err(error) => {
                self.unsynced.store(true, Ordering::Relaxed);
                self.health.failed(asked, &error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
    use serde_json::json;

    use super::*;

    /// A P-256 key, its JWK, and proofs signed with it.
    struct P256 {
        pair: EcdsaKeyPair,
        jwk: Value,
    }

    impl P256 {
        fn new() -> Self {
            let rng = SystemRandom::new();
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
            let point = pair.public_key().as_ref().to_vec();
            let jwk = json!({"kty": "EC", "crv": "P-256",
                "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..])});
            Self { pair, jwk }
        }

        fn header(&self) -> Value {
            json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk})
        }

        fn signed(&self, header: &Value, claims: &Value) -> String {
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims.to_string())
            );
            let signature = self.pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
        }
    }

    fn claims() -> Value {
        json!({"jti": "a-b-c", "htm": "GET", "htu": "https://api.example.mx/api/v1/atms", "iat": 1_800_000_000})
    }

    fn refusal(proof: &str) -> ProofRefusal {
        DpopProofs.verify(proof).unwrap_err()
    }

    #[test]
    fn a_proof_gives_its_claims_and_the_rfc_7638_thumbprint_of_its_key() {
        let key = P256::new();
        let verified = DpopProofs.verify(&key.signed(&key.header(), &claims())).unwrap();
        let members = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            key.jwk["x"].as_str().unwrap(),
            key.jwk["y"].as_str().unwrap()
        );
        assert_eq!(verified.key.as_str(), URL_SAFE_NO_PAD.encode(digest(&SHA256, members.as_bytes())));
        assert_eq!((verified.jti.as_str(), verified.htm.as_str(), verified.iat), ("a-b-c", "GET", 1_800_000_000));
        let mut float = claims();
        float["iat"] = json!(1_800_000_000.7);
        assert_eq!(DpopProofs.verify(&key.signed(&key.header(), &float)).unwrap().iat, 1_800_000_000, "whole seconds");
    }

    #[test]
    fn the_thumbprint_of_rfc_9449s_example_key_is_the_rfcs() {
        // RFC 9449 §4.1 (Figure 4) and §6.1: this key's thumbprint.
        let jwk = json!({"kty": "EC", "crv": "P-256",
            "x": "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs", "y": "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"});
        let key = proof_key("ES256", jwk.as_object().unwrap()).unwrap();
        assert_eq!(key.thumbprint.as_str(), "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I");
    }

    #[test]
    fn every_malformed_or_misdeclared_proof_is_refused_for_its_own_reason() {
        let key = P256::new();
        let with_header = |change: &dyn Fn(&mut Value)| {
            let mut header = key.header();
            change(&mut header);
            key.signed(&header, &claims())
        };
        let with_claims = |change: &dyn Fn(&mut Value)| {
            let mut body = claims();
            change(&mut body);
            key.signed(&key.header(), &body)
        };
        let crit = ProofRefusal::Malformed("crit names extensions this service does not understand");
        let cases: Vec<(&str, String, ProofRefusal)> = vec![
            ("two parts", "a.b".into(), ProofRefusal::Malformed("not three base64url parts separated by dots")),
            ("too long", "a".repeat(MAX_PROOF_LEN + 1), ProofRefusal::Malformed("longer than any proof")),
            ("no typ", with_header(&|h| drop(h.as_object_mut().unwrap().remove("typ"))), ProofRefusal::Type),
            ("crit", with_header(&|h| h["crit"] = json!(["exp"])), crit.clone()),
            ("crit null", with_header(&|h| h["crit"] = Value::Null), crit),
            ("no jwk", with_header(&|h| drop(h.as_object_mut().unwrap().remove("jwk"))), ProofRefusal::Key),
            ("RS256", with_header(&|h| h["alg"] = json!("RS256")), ProofRefusal::Algorithm),
            ("Ed25519 alg on a P-256 key", with_header(&|h| h["alg"] = json!("Ed25519")), ProofRefusal::Key),
            ("P-384", with_header(&|h| h["jwk"]["crv"] = json!("P-384")), ProofRefusal::Key),
            ("short x", with_header(&|h| h["jwk"]["x"] = json!(URL_SAFE_NO_PAD.encode([1u8; 31]))), ProofRefusal::Key),
            (
                "padded y",
                with_header(&|h| h["jwk"]["y"] = json!(format!("{}=", h["jwk"]["y"].as_str().unwrap()))),
                ProofRefusal::Key,
            ),
            ("p", with_header(&|h| h["jwk"]["p"] = json!("AQAB")), ProofRefusal::PrivateKey),
            ("k", with_header(&|h| h["jwk"]["k"] = json!("AQAB")), ProofRefusal::PrivateKey),
            ("no htm", with_claims(&|c| drop(c.as_object_mut().unwrap().remove("htm"))), ProofRefusal::Missing("htm")),
            ("no htu", with_claims(&|c| drop(c.as_object_mut().unwrap().remove("htu"))), ProofRefusal::Missing("htu")),
            ("no iat", with_claims(&|c| drop(c.as_object_mut().unwrap().remove("iat"))), ProofRefusal::Missing("iat")),
            ("empty jti", with_claims(&|c| c["jti"] = json!("")), ProofRefusal::Missing("jti")),
            (
                "long jti",
                with_claims(&|c| c["jti"] = json!("j".repeat(129))),
                ProofRefusal::Malformed("jti is longer than 128 bytes"),
            ),
            ("numeric htm", with_claims(&|c| c["htm"] = json!(1)), ProofRefusal::Malformed("htm is not a string")),
            (
                "iat as text",
                with_claims(&|c| c["iat"] = json!("1800000000")),
                ProofRefusal::Malformed("iat is not a number of seconds"),
            ),
        ];
        for (case, proof, expected) in cases {
            assert_eq!(refusal(&proof), expected, "{case}");
        }
    }

    #[test]
    fn an_ed25519_proof_verifies_under_both_names_and_a_small_order_key_is_refused() {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let x = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let signed = |alg: &str, x: &str, sign: &dyn Fn(&[u8]) -> Vec<u8>| {
            let header = json!({"typ": "dpop+jwt", "alg": alg, "jwk": {"kty": "OKP", "crv": "Ed25519", "x": x}});
            let input = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header.to_string()),
                URL_SAFE_NO_PAD.encode(claims().to_string())
            );
            format!("{input}.{}", URL_SAFE_NO_PAD.encode(sign(input.as_bytes())))
        };
        let by_pair = |input: &[u8]| pair.sign(input).as_ref().to_vec();
        for alg in ["EdDSA", "Ed25519"] {
            assert!(DpopProofs.verify(&signed(alg, &x, &by_pair)).is_ok(), "{alg}");
        }
        // The identity point as the key, R the identity and S = 0: under a cofactorless
        // check, a signature of every message.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let forged = |_: &[u8]| {
            let mut signature = identity.to_vec();
            signature.extend([0u8; 32]);
            signature
        };
        assert_eq!(refusal(&signed("EdDSA", &URL_SAFE_NO_PAD.encode(identity), &forged)), ProofRefusal::Key);
        let real: [u8; 32] = pair.public_key().as_ref().try_into().unwrap();
        assert!(crate::jwk::small_order(&[0u8; 32]) && !crate::jwk::small_order(&real));
    }

    #[test]
    fn a_signature_of_other_bytes_is_refused() {
        let key = P256::new();
        let proof = key.signed(&key.header(), &claims());
        let (input, _) = proof.rsplit_once('.').unwrap();
        let other = key.signed(&key.header(), &json!({"jti": "x", "htm": "GET", "htu": "h", "iat": 1}));
        let signature = other.rsplit_once('.').unwrap().1;
        assert_eq!(refusal(&format!("{input}.{signature}")), ProofRefusal::Signature);
    }

    #[test]
    fn a_proof_is_new_once_within_its_window() {
        let replays = LocalReplays::new(Duration::from_secs(60));
        assert!(replays.first_use_now("key:jti-1"));
        assert!(!replays.first_use_now("key:jti-1"));
        assert!(replays.first_use_now("key:jti-2"));
        assert!(replays.first_use_now("other-key:jti-1"), "a jti is another proof's under another key");
    }

    #[test]
    fn a_proof_is_remembered_for_a_whole_window_and_then_forgotten() {
        let replays = LocalReplays::new(Duration::from_millis(50));
        assert!(replays.first_use_now("key:jti-1"));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!replays.first_use_now("key:jti-1"), "still known one generation later");
        std::thread::sleep(Duration::from_millis(60));
        // Forgotten after its second generation: a proof that old is refused by its iat.
        assert!(replays.first_use_now("key:jti-2"));
        std::thread::sleep(Duration::from_millis(60));
        assert!(replays.first_use_now("key:jti-1"));
    }

    /// A proof's mark set by an ask whose answer was lost with the connection: the ask
    /// sent again on the new one ([`RedisLink::ask`]) is still the proof's first use, and
    /// any other ask is not. Against the Redis `TEST_REDIS_URL` names.
    #[tokio::test]
    async fn a_proof_asked_again_with_its_own_mark_is_still_its_first_use() {
        let Ok(url) = std::env::var("TEST_REDIS_URL") else {
            assert!(std::env::var("CI").is_err(), "CI must run the Redis tests: set TEST_REDIS_URL");
            eprintln!("SKIPPED: the proofs' script needs Redis: set TEST_REDIS_URL=redis://host:port");
            return;
        };
        let link = RedisLink::new(&url).unwrap();
        let script = Script::new(FIRST_USE);
        let key = format!("{KEY_PREFIX}:test:{}", uuid::Uuid::new_v4().simple());
        let (script, key, link) = (&script, &key, &link);
        let ask = |mark: &'static str| async move {
            let mut invocation = script.prepare_invoke();
            invocation.key(key).arg(mark).arg(60_000);
            let invocation = &invocation;
            link.ask("EVALSHA", |mut connection| async move { invocation.invoke_async::<u8>(&mut connection).await })
                .await
        };
        assert_eq!(ask("one-ask").await, Ok(1), "first use");
        assert_eq!(ask("one-ask").await, Ok(1), "the same ask, sent again");
        assert_eq!(ask("another-ask").await, Ok(0), "a replay");
    }

    #[tokio::test]
    async fn proofs_are_still_used_once_here_while_redis_is_lost_and_the_loss_is_told() {
        // Nothing listens on port 1: Redis cannot answer.
        let news = Arc::new(RedisNews::new());
        let replays = SharedReplays::new("redis://127.0.0.1:1", Duration::from_secs(60), Arc::clone(&news)).unwrap();
        assert!(!news.is_lost(), "not known lost before it is asked");
        assert!(replays.first_use("key:jti-1").await);
        assert!(news.is_lost(), "the published status is told");
        assert!(!replays.first_use("key:jti-1").await, "a replay is still refused by this instance");
    }
}
