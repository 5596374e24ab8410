//! DPoP nonces (RFC 9449 §8) made from the signing keys: every instance that loads the
//! keys makes and accepts the same nonces, with no store between them.

use aws_lc_rs::hmac;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::ports::ProofNonces;

use super::JwtTokens;

/// DPoP nonces (RFC 9449 §8) are valid in the minute they are handed out and the next:
/// from one to two minutes. A proof made with one cannot be made ahead of that time.
const NONCE_STEP_SECONDS: i64 = 60;

/// The bytes of a nonce's tag kept: 128 bits, as a random nonce would have.
const NONCE_TAG_BYTES: usize = 16;

/// The secret a signing key's nonces are made with: an HMAC of the private key under a
/// label of this use (HKDF's extract step, RFC 5869 §2.2), so that a nonce says nothing
/// of the key, and every instance that loads the key makes and accepts the same
/// nonces, with no store between them.
pub(super) fn nonce_secret(private_pkcs8: &[u8]) -> hmac::Key {
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use domain::ports::ProofNonces as _;

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
}
