//! A bank system's key as the tests hold one: its public JWK for `systems add`, and the
//! client assertions (RFC 7523) it signs.

#![allow(dead_code, reason = "each test binary uses its own part")]

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// A system's key: its public JWK and how it signs.
pub enum SystemKey {
    /// ES256.
    P256(EcdsaKeyPair, String),
    /// EdDSA.
    Ed25519(Ed25519KeyPair, String),
}

impl SystemKey {
    pub fn p256(kid: &str) -> Self {
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new()).unwrap();
        Self::P256(EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document.as_ref()).unwrap(), kid.into())
    }

    pub fn ed25519(kid: &str) -> Self {
        Self::Ed25519(Ed25519KeyPair::generate().unwrap(), kid.into())
    }

    pub fn public_jwk(&self) -> Value {
        match self {
            Self::P256(pair, kid) => {
                let point = pair.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
                    "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
            }
            Self::Ed25519(pair, kid) => {
                json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref())})
            }
        }
    }

    /// `claims` signed as a compact JWS.
    pub fn sign(&self, claims: &Value) -> String {
        let (alg, kid) = match self {
            Self::P256(_, kid) => ("ES256", kid),
            Self::Ed25519(_, kid) => ("EdDSA", kid),
        };
        let header = json!({"alg": alg, "kid": kid, "typ": "JWT"});
        let signed =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = match self {
            Self::P256(pair, _) => pair.sign(&SystemRandom::new(), signed.as_bytes()).unwrap().as_ref().to_vec(),
            Self::Ed25519(pair, _) => pair.sign(signed.as_bytes()).as_ref().to_vec(),
        };
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// An assertion's claims for `system` to `audience`, expiring in a minute, with a new `jti`.
pub fn assertion_claims(system: &str, audience: &str) -> Value {
    json!({"iss": system, "sub": system, "aud": audience, "exp": now() + 60, "iat": now(),
        "jti": uuid::Uuid::new_v4().to_string()})
}
