//! The bank's systems' keys and assertions: a JWKS file of public keys read and checked
//! ([`read_key_set`]), and client assertions (RFC 7523 §2.2) verified with them
//! ([`ClientAssertions`]). ES256 (P-256) and EdDSA (Ed25519) only, as for DPoP proofs;
//! keys are read by [`crate::jwk`], signatures verified by aws-lc-rs.

use aws_lc_rs::signature::UnparsedPublicKey;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::ports::AssertionVerifier;
use domain::system::{AssertionClaims, AssertionRefusal, PublicKeySet};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::jwk::{self, PublicJwk};

/// The most keys a system's set may hold: a current key and the next, with room to
/// spare for a rotation overlapping another.
pub const MOST_KEYS: usize = 10;
/// The longest JWKS file read.
pub const LONGEST_KEY_SET: usize = 64 * 1024;
/// The longest assertion read: an ES256 assertion is about 600 bytes.
const LONGEST_ASSERTION: usize = 4096;

/// Why a JWKS file is not a system's public key set, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeySetRefusal {
    /// Not a JSON object with a `keys` array.
    #[error("not a JWKS: expected a JSON object with a \"keys\" array ({0})")]
    NotAKeySet(String),
    /// A key holds private key material.
    #[error("key {index} holds the private member {member:?}: give the system's public keys only")]
    PrivateMember {
        /// The key's place in `keys`, from 0.
        index: usize,
        /// The member.
        member: &'static str,
    },
    /// A key is not an ES256 or EdDSA public signing key.
    #[error("key {index} is not usable: {why}")]
    Unusable {
        /// The key's place in `keys`, from 0.
        index: usize,
        /// Why.
        why: &'static str,
    },
    /// Two keys share a `kid`.
    #[error("key {index} repeats the kid of an earlier key")]
    RepeatedKid {
        /// The key's place in `keys`, from 0.
        index: usize,
    },
    /// No key, or more than [`MOST_KEYS`].
    #[error("a system's JWKS holds 1 to {MOST_KEYS} keys; this one holds {0}")]
    Count(usize),
}

/// Reads a JWKS of a system's public keys: every key a public ES256 (EC P-256) or EdDSA
/// (OKP Ed25519) key for signatures (`use`, `alg` and `key_ops`, when given, agree),
/// with a distinct `kid` when it has one; no private member anywhere.
///
/// # Errors
/// [`KeySetRefusal`] naming the first key at fault.
pub fn read_key_set(json: &str) -> Result<PublicKeySet, KeySetRefusal> {
    let document: Value = serde_json::from_str(json).map_err(|e| KeySetRefusal::NotAKeySet(e.to_string()))?;
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| KeySetRefusal::NotAKeySet("no \"keys\" array".to_owned()))?;
    if keys.is_empty() || keys.len() > MOST_KEYS {
        return Err(KeySetRefusal::Count(keys.len()));
    }
    let mut kids = Vec::new();
    for (index, key) in keys.iter().enumerate() {
        let unusable = |why| KeySetRefusal::Unusable { index, why };
        let key = key.as_object().ok_or(unusable("a key is a JSON object"))?;
        if let Some(member) = jwk::PRIVATE_MEMBERS.iter().find(|member| key.contains_key(**member)) {
            return Err(KeySetRefusal::PrivateMember { index, member });
        }
        let alg = jwk::algorithm_of(key).ok_or(unusable("kty and crv must be EC P-256 or OKP Ed25519"))?;
        match key.get("alg") {
            None => {}
            Some(Value::String(given)) if given == alg || (alg == "EdDSA" && given == "Ed25519") => {}
            Some(_) => return Err(unusable("its alg does not match its kty and crv")),
        }
        if key.get("use").is_some_and(|usage| usage != "sig") {
            return Err(unusable("its use is not sig"));
        }
        if key.get("key_ops").is_some_and(|ops| !ops.as_array().is_some_and(|ops| ops.iter().any(|op| op == "verify")))
        {
            return Err(unusable("its key_ops do not include verify"));
        }
        jwk::read(alg, key).map_err(|_| unusable("its coordinates are not a valid public key of its curve"))?;
        match key.get("kid") {
            None => {}
            Some(Value::String(kid)) if !kid.is_empty() => {
                if kids.contains(kid) {
                    return Err(KeySetRefusal::RepeatedKid { index });
                }
                kids.push(kid.clone());
            }
            Some(_) => return Err(unusable("its kid is not a non-empty string")),
        }
    }
    let compact = serde_json::to_string(&document).map_err(|e| KeySetRefusal::NotAKeySet(e.to_string()))?;
    Ok(PublicKeySet::checked(compact, keys.len()))
}

/// The header of an assertion.
#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    crit: Option<Value>,
}

/// Verifies client assertions with a system's key set.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientAssertions;

/// The three parts of a compact JWS.
fn parts(assertion: &str) -> Result<(&str, &str, &str), AssertionRefusal> {
    if assertion.len() > LONGEST_ASSERTION {
        return Err(AssertionRefusal::Malformed("longer than any assertion"));
    }
    let mut parts = assertion.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(header), Some(body), Some(signature), None) => Ok((header, body, signature)),
        _ => Err(AssertionRefusal::Malformed("not three base64url parts separated by dots")),
    }
}

fn decode<T: for<'de> Deserialize<'de>>(part: &str, malformed: &'static str) -> Result<T, AssertionRefusal> {
    let json = URL_SAFE_NO_PAD.decode(part).map_err(|_| AssertionRefusal::Malformed(malformed))?;
    serde_json::from_slice(&json).map_err(|_| AssertionRefusal::Malformed(malformed))
}

impl AssertionVerifier for ClientAssertions {
    fn claimed_system(&self, assertion: &str) -> Result<String, AssertionRefusal> {
        let (_, body, _) = parts(assertion)?;
        let claims: Map<String, Value> = decode(body, "the claims are not base64url JSON")?;
        match claims.get("sub") {
            Some(Value::String(sub)) => Ok(sub.clone()),
            Some(_) => Err(AssertionRefusal::Malformed("sub is not a string")),
            None => Err(AssertionRefusal::Missing("sub")),
        }
    }

    fn verify(&self, assertion: &str, keys: &PublicKeySet) -> Result<AssertionClaims, AssertionRefusal> {
        let (header, body, signature) = parts(assertion)?;
        let header: Header = decode(header, "the header is not base64url JSON")?;
        if header.crit.is_some() {
            return Err(AssertionRefusal::Malformed("crit names extensions this service does not understand"));
        }
        let alg = match header.alg.as_str() {
            "ES256" => "ES256",
            "EdDSA" | "Ed25519" => "EdDSA",
            _ => return Err(AssertionRefusal::Algorithm),
        };
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| AssertionRefusal::Malformed("the signature is not base64url"))?;
        let signed = &assertion[..header_len_and_body(assertion)];
        let candidates = candidate_keys(keys, alg, header.kid.as_deref())?;
        if candidates.is_empty() {
            return Err(AssertionRefusal::UnknownKey);
        }
        let verified = candidates.iter().any(|key| {
            UnparsedPublicKey::new(key.algorithm, &key.public_key).verify(signed.as_bytes(), &signature).is_ok()
        });
        if !verified {
            return Err(AssertionRefusal::Signature);
        }
        claims(&decode(body, "the claims are not base64url JSON")?)
    }
}

/// `header.body`, the signed part.
fn header_len_and_body(assertion: &str) -> usize {
    assertion.rfind('.').unwrap_or_default()
}

/// The keys of `keys` an assertion signed with `alg` and naming `kid` may be verified
/// with: the key with that `kid`, or without one every key of the algorithm.
fn candidate_keys(keys: &PublicKeySet, alg: &str, kid: Option<&str>) -> Result<Vec<PublicJwk>, AssertionRefusal> {
    let document: Value = serde_json::from_str(keys.json()).map_err(|_| AssertionRefusal::UnknownKey)?;
    let listed = document.get("keys").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    Ok(listed
        .iter()
        .filter_map(Value::as_object)
        .filter(|key| jwk::algorithm_of(key) == Some(alg))
        .filter(|key| kid.is_none_or(|kid| key.get("kid").and_then(Value::as_str) == Some(kid)))
        .filter_map(|key| jwk::read(alg, key).ok())
        .collect())
}

/// The claims RFC 7523 §3 requires (`iss`, `sub`, `aud`, `exp`, `jti`), each of its type.
fn claims(body: &Map<String, Value>) -> Result<AssertionClaims, AssertionRefusal> {
    let text = |name: &'static str, malformed: &'static str| match body.get(name) {
        None | Some(Value::Null) => Err(AssertionRefusal::Missing(name)),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(AssertionRefusal::Malformed(malformed)),
    };
    let seconds = |name: &'static str, malformed: &'static str| match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => number
            .as_i64()
            .or_else(|| number.as_f64().filter(|s| s.is_finite()).map(|s| s.floor() as i64))
            .map(Some)
            .ok_or(AssertionRefusal::Malformed(malformed)),
        Some(_) => Err(AssertionRefusal::Malformed(malformed)),
    };
    let audiences = match body.get("aud") {
        None | Some(Value::Null) => return Err(AssertionRefusal::Missing("aud")),
        Some(Value::String(aud)) => vec![aud.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .map(|aud| aud.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or(AssertionRefusal::Malformed("aud is not a string or an array of strings"))?,
        Some(_) => return Err(AssertionRefusal::Malformed("aud is not a string or an array of strings")),
    };
    Ok(AssertionClaims {
        issuer: text("iss", "iss is not a string")?,
        subject: text("sub", "sub is not a string")?,
        audiences,
        expires_at: seconds("exp", "exp is not a number of seconds")?.ok_or(AssertionRefusal::Missing("exp"))?,
        not_before: seconds("nbf", "nbf is not a number of seconds")?,
        issued_at: seconds("iat", "iat is not a number of seconds")?,
        jti: text("jti", "jti is not a string")?,
    })
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
    use serde_json::json;

    use super::*;

    /// A P-256 key: its public JWK and a signer.
    fn p256(kid: &str) -> (Value, EcdsaKeyPair) {
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new()).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document.as_ref()).unwrap();
        let point = pair.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])});
        (jwk, pair)
    }

    fn ed25519(kid: &str) -> (Value, Ed25519KeyPair) {
        let pair = Ed25519KeyPair::generate().unwrap();
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref())});
        (jwk, pair)
    }

    fn compact(header: &Value, claims: &Value, sign: impl Fn(&[u8]) -> Vec<u8>) -> String {
        let signed =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = sign(signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    fn claims() -> Value {
        json!({"iss": "queue-1", "sub": "queue-1", "aud": "https://api.example", "exp": 2_000_000_000,
            "jti": "a-1", "iat": 1_999_999_900})
    }

    #[test]
    fn a_key_set_of_public_es256_and_eddsa_keys_is_read_and_kept_compact() {
        let set = json!({"keys": [p256("a").0, ed25519("b").0]});
        let read = read_key_set(&serde_json::to_string_pretty(&set).unwrap()).unwrap();
        assert_eq!(read.len(), 2);
        assert!(!read.json().contains('\n'));
    }

    #[test]
    fn a_key_set_with_a_private_member_or_no_usable_key_is_refused_in_one_line() {
        let (mut private, _) = p256("a");
        private["d"] = json!("c2VjcmV0");
        let refusals = [
            (
                json!({"keys": [p256("a").0, private]}),
                "key 1 holds the private member \"d\": give the system's public keys only",
            ),
            (json!({"keys": []}), "a system's JWKS holds 1 to 10 keys; this one holds 0"),
            (
                json!({"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}),
                "key 0 is not usable: kty and crv must be EC P-256 or OKP Ed25519",
            ),
            (
                json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}),
                "key 0 holds the private member \"k\": give the system's public keys only",
            ),
            (
                json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}),
                "key 0 is not usable: its coordinates are not a valid public key of its curve",
            ),
        ];
        for (set, expected) in &refusals {
            let refusal = read_key_set(&set.to_string()).unwrap_err().to_string();
            assert_eq!(&refusal, expected);
            assert!(!refusal.contains('\n'));
        }
        let (mut encrypting, _) = p256("a");
        encrypting["use"] = json!("enc");
        assert!(read_key_set(&json!({"keys": [encrypting]}).to_string()).unwrap_err().to_string().contains("use"));
        let twice = json!({"keys": [p256("a").0, ed25519("a").0]});
        assert_eq!(read_key_set(&twice.to_string()), Err(KeySetRefusal::RepeatedKid { index: 1 }));
        assert!(matches!(read_key_set("[1]"), Err(KeySetRefusal::NotAKeySet(_))));
    }

    #[test]
    fn an_assertion_signed_by_a_key_of_the_set_gives_its_claims() {
        let (es_jwk, es) = p256("es");
        let (ed_jwk, ed) = ed25519("ed");
        let keys = read_key_set(&json!({"keys": [es_jwk, ed_jwk]}).to_string()).unwrap();
        let random = SystemRandom::new();
        let by_es = compact(&json!({"alg": "ES256", "kid": "es"}), &claims(), |m| {
            es.sign(&random, m).unwrap().as_ref().to_vec()
        });
        let by_ed = compact(&json!({"alg": "EdDSA"}), &claims(), |m| ed.sign(m).as_ref().to_vec());
        for assertion in [by_es, by_ed] {
            assert_eq!(ClientAssertions.claimed_system(&assertion).unwrap(), "queue-1");
            let verified = ClientAssertions.verify(&assertion, &keys).unwrap();
            assert_eq!(verified.audiences, ["https://api.example"]);
            assert_eq!((verified.expires_at, verified.jti.as_str()), (2_000_000_000, "a-1"));
        }
    }

    #[test]
    fn an_assertion_by_another_key_another_algorithm_or_without_its_claims_is_refused() {
        let (jwk, _) = ed25519("ed");
        let keys = read_key_set(&json!({"keys": [jwk]}).to_string()).unwrap();
        let (_, stranger) = ed25519("ed");
        let forged = compact(&json!({"alg": "EdDSA", "kid": "ed"}), &claims(), |m| stranger.sign(m).as_ref().to_vec());
        assert_eq!(ClientAssertions.verify(&forged, &keys), Err(AssertionRefusal::Signature));
        let other_kid =
            compact(&json!({"alg": "EdDSA", "kid": "nope"}), &claims(), |m| stranger.sign(m).as_ref().to_vec());
        assert_eq!(ClientAssertions.verify(&other_kid, &keys), Err(AssertionRefusal::UnknownKey));
        let es = compact(&json!({"alg": "ES256"}), &claims(), |_| vec![0; 64]);
        assert_eq!(ClientAssertions.verify(&es, &keys), Err(AssertionRefusal::UnknownKey), "no ES256 key");
        for alg in ["HS256", "none", "RS256"] {
            let token = compact(&json!({"alg": alg}), &claims(), |_| vec![1]);
            assert_eq!(ClientAssertions.verify(&token, &keys), Err(AssertionRefusal::Algorithm), "{alg}");
        }
        let (jwk, pair) = ed25519("k");
        let keys = read_key_set(&json!({"keys": [jwk]}).to_string()).unwrap();
        let mut no_jti = claims();
        no_jti.as_object_mut().unwrap().remove("jti");
        let token = compact(&json!({"alg": "EdDSA"}), &no_jti, |m| pair.sign(m).as_ref().to_vec());
        assert_eq!(ClientAssertions.verify(&token, &keys), Err(AssertionRefusal::Missing("jti")));
        assert!(matches!(ClientAssertions.verify("a.b", &keys), Err(AssertionRefusal::Malformed(_))));
        assert!(matches!(ClientAssertions.verify(&"a".repeat(5000), &keys), Err(AssertionRefusal::Malformed(_))));
    }
}
