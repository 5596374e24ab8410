//! Public keys read from JWKs (RFC 7517): a DPoP proof's own key, and a bank system's
//! keys. Read here, not by jsonwebtoken: its `Jwk` drops private members without a word,
//! and its `DecodingKey::from_jwk` checks neither the curve nor the lengths of the
//! coordinates. Signatures are aws-lc-rs's.

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, ED25519, VerificationAlgorithm};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::dpop::KeyThumbprint;
use serde_json::{Map, Value};

/// The JWK members that hold private or symmetric key material (RFC 7518 §6.2.2,
/// §6.3.2, §6.4; RFC 8037 §2): a public key must have none.
pub const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// A public signing key read from a JWK: how its signatures verify, and its RFC 7638
/// thumbprint.
pub struct PublicJwk {
    /// The signature algorithm.
    pub algorithm: &'static dyn VerificationAlgorithm,
    /// The key's bytes as aws-lc-rs takes them.
    pub public_key: Vec<u8>,
    /// Its RFC 7638 SHA-256 thumbprint.
    pub thumbprint: KeyThumbprint,
}

/// Why a JWK is not a key of `alg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwkProblem {
    /// `alg` is none of ES256, EdDSA, Ed25519.
    Algorithm,
    /// The key is not a valid key of that algorithm (type, curve, coordinates).
    Key,
}

/// The algorithm a key of this type and curve signs with, as its `alg` would say it.
pub fn algorithm_of(jwk: &Map<String, Value>) -> Option<&'static str> {
    match (jwk.get("kty").and_then(Value::as_str), jwk.get("crv").and_then(Value::as_str)) {
        (Some("EC"), Some("P-256")) => Some("ES256"),
        (Some("OKP"), Some("Ed25519")) => Some("EdDSA"),
        _ => None,
    }
}

/// The public key of `jwk` for `alg` (its private members are the caller's to refuse): ES256 with a P-256 `EC` key, EdDSA with an
/// Ed25519 `OKP` key, every coordinate 32 bytes of canonical base64url.
pub fn read(alg: &str, jwk: &Map<String, Value>) -> Result<PublicJwk, JwkProblem> {
    let member = |name: &str| jwk.get(name).and_then(Value::as_str);
    let coordinate = |name: &str| -> Result<[u8; 32], JwkProblem> {
        let bytes = URL_SAFE_NO_PAD.decode(member(name).ok_or(JwkProblem::Key)?).map_err(|_| JwkProblem::Key)?;
        bytes.try_into().map_err(|_| JwkProblem::Key)
    };
    let canonical = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
    match alg {
        "ES256" => {
            if member("kty") != Some("EC") || member("crv") != Some("P-256") {
                return Err(JwkProblem::Key);
            }
            let (x, y) = (coordinate("x")?, coordinate("y")?);
            let mut public_key = Vec::with_capacity(65);
            public_key.push(0x04);
            public_key.extend_from_slice(&x);
            public_key.extend_from_slice(&y);
            // RFC 7638 §3.2: the required members, in lexicographic order, no spaces.
            let members = format!(r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#, canonical(&x), canonical(&y));
            Ok(PublicJwk { algorithm: &ECDSA_P256_SHA256_FIXED, public_key, thumbprint: thumbprint(&members) })
        }
        "EdDSA" | "Ed25519" => {
            if member("kty") != Some("OKP") || member("crv") != Some("Ed25519") {
                return Err(JwkProblem::Key);
            }
            let x = coordinate("x")?;
            if small_order(&x) {
                return Err(JwkProblem::Key);
            }
            let members = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, canonical(&x));
            Ok(PublicJwk { algorithm: &ED25519, public_key: x.to_vec(), thumbprint: thumbprint(&members) })
        }
        _ => Err(JwkProblem::Algorithm),
    }
}

/// Whether an Ed25519 public key is a point of small order (libsodium's list, the sign
/// bit aside): with such a key a signature of `S = 0` verifies for any message under a
/// cofactorless check, so a proof "by" it proves nothing.
pub(crate) fn small_order(key: &[u8; 32]) -> bool {
    const SMALL_ORDER: [[u8; 32]; 7] = [
        // 0 (order 4)
        [0; 32],
        // 1 (order 1)
        [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        // order 8
        [
            0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf,
            0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05,
        ],
        // order 8
        [
            0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20,
            0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
        ],
        // p - 1 (order 2)
        [
            0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ],
        // p (0, order 4, not canonical)
        [
            0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ],
        // p + 1 (1, order 1, not canonical)
        [
            0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ],
    ];
    SMALL_ORDER.iter().any(|listed| listed[..31] == key[..31] && listed[31] == key[31] & 0x7f)
}

fn thumbprint(members: &str) -> KeyThumbprint {
    let encoded = URL_SAFE_NO_PAD.encode(digest(&SHA256, members.as_bytes()));
    KeyThumbprint::parse(&encoded).unwrap_or_else(|| unreachable!("a SHA-256 digest is 43 base64url characters"))
}
