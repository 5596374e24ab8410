//! The DPoP proof check (RFC 9449 §4.3) shared by token issuance and the bearer
//! operations: what a proof whose signature verified must say of the request, its time,
//! its nonce, and that it is used once.

use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::dpop::{KeyThumbprint, ProofRefusal};
use crate::ports::{Clock, ProofNonces, ProofReplays, ProofVerifier};

/// A proof as a request presents it: the `DPoP` header's value, the request's method,
/// and the URL of the resource it asks for (without query), as the service's public
/// base URL names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedProof {
    /// The `DPoP` header's value.
    pub proof: String,
    /// The request's method, upper case.
    pub method: &'static str,
    /// The resource's public URL, without query and fragment.
    pub uri: String,
}

/// How long a proof is good for, by its `iat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProofWindow {
    /// A proof made longer ago than this is refused.
    pub max_age: Duration,
    /// A proof dated further ahead than this (a device's clock running fast) is refused.
    pub skew: Duration,
}

impl ProofWindow {
    /// How long a proof's `jti` must be remembered: as long as its `iat` is acceptable,
    /// and a skew longer, for another instance whose clock is that far behind.
    pub fn replay_ttl(self) -> Duration {
        self.max_age + self.skew * 2
    }
}

/// Checks DPoP proofs against the request they came with.
pub struct DpopCheck {
    verifier: Arc<dyn ProofVerifier>,
    replays: Arc<dyn ProofReplays>,
    nonces: Option<Arc<dyn ProofNonces>>,
    clock: Arc<dyn Clock>,
    window: ProofWindow,
}

impl DpopCheck {
    /// A check reading proofs with `verifier`, remembering them in `replays`, accepting
    /// them within `window` of `clock`, and asking for a nonce from `nonces` when given.
    pub fn new(
        verifier: Arc<dyn ProofVerifier>,
        replays: Arc<dyn ProofReplays>,
        nonces: Option<Arc<dyn ProofNonces>>,
        clock: Arc<dyn Clock>,
        window: ProofWindow,
    ) -> Self {
        Self { verifier, replays, nonces, clock, window }
    }

    /// The thumbprint of the key that made `presented`, if the proof verifies, names the
    /// request's method and URL, is within the window, carries a recent nonce when
    /// nonces are required, and was not seen before. With `bound`, an access token and
    /// the key it is bound to, the proof must also carry the token's hash (`ath`) and be
    /// made by that key.
    ///
    /// The proof is recorded as seen only when every other check passed, so a proof
    /// refused for another reason cannot use up a valid one's `jti`.
    ///
    /// # Errors
    /// The first [`ProofRefusal`] that applies.
    pub async fn check(
        &self,
        presented: &PresentedProof,
        bound: Option<(&str, &KeyThumbprint)>,
    ) -> Result<KeyThumbprint, ProofRefusal> {
        let claims = self.verifier.verify(&presented.proof)?;
        if claims.htm != presented.method {
            return Err(ProofRefusal::Method);
        }
        if !same_resource(&claims.htu, &presented.uri) {
            return Err(ProofRefusal::Uri);
        }
        let now_ms = self.clock.now().unix_timestamp_nanos() / 1_000_000;
        let iat_ms = i128::from(claims.iat) * 1000;
        if now_ms - iat_ms > self.window.max_age.as_millis() as i128 {
            return Err(ProofRefusal::TooOld);
        }
        if iat_ms - now_ms > self.window.skew.as_millis() as i128 {
            return Err(ProofRefusal::TooNew);
        }
        if let Some((token, key)) = bound {
            let ath = claims.ath.as_deref().ok_or(ProofRefusal::Missing("ath"))?;
            if ath != self.verifier.token_hash(token) {
                return Err(ProofRefusal::TokenHash);
            }
            if &claims.key != key {
                return Err(ProofRefusal::OtherKey);
            }
        }
        if let Some(nonces) = &self.nonces
            && !claims.nonce.as_deref().is_some_and(|nonce| nonces.accepts(nonce))
        {
            return Err(ProofRefusal::UseNonce { fresh: nonces.issue().unwrap_or_default() });
        }
        let seen = format!("{}:{}", claims.key, claims.jti);
        if !self.replays.first_use(&seen).await {
            return Err(ProofRefusal::Replayed);
        }
        Ok(claims.key)
    }
}

/// Whether a proof's `htu` names `expected` (RFC 9449 §4.3 step 9): both compared after
/// the normalisation the `url` crate does (RFC 3986 §6.2.2–6.2.3 in part: scheme and
/// host case, the default port, dot segments, an empty path; not the case of percent
/// escapes, nor decoding unreserved ones, which only refuses more), the proof's query
/// and fragment ignored.
fn same_resource(htu: &str, expected: &str) -> bool {
    if htu == expected {
        return true;
    }
    let (Ok(mut htu), Ok(expected)) = (Url::parse(htu), Url::parse(expected)) else { return false };
    htu.set_query(None);
    htu.set_fragment(None);
    htu == expected
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dpop::ProofClaims;
    use crate::ports::{MockProofNonces, MockProofReplays, MockProofVerifier};
    use crate::testing::clock_at;

    const URI: &str = "https://api.example.mx/api/v1/authorize";

    /// A check whose every proof is one by the key `key` for `htu`, made at the clock's
    /// now (1,000), with `ath` `ath-of-token` (the verifier hashes a token `t` to
    /// `ath-of-t`), new unless `replayed`.
    pub(crate) fn proofs_by(key: &str, htu: &str, replayed: bool) -> Arc<DpopCheck> {
        let claims = ProofClaims {
            key: KeyThumbprint::parse(key).unwrap(),
            jti: "jti".into(),
            htm: "GET".into(),
            htu: htu.into(),
            iat: 1_000,
            nonce: None,
            ath: Some("ath-of-token".into()),
        };
        let mut verifier = MockProofVerifier::new();
        verifier.expect_verify().returning(move |_| Ok(claims.clone()));
        verifier.expect_token_hash().returning(|token| format!("ath-of-{token}"));
        let window = ProofWindow { max_age: Duration::from_secs(60), skew: Duration::from_secs(5) };
        Arc::new(DpopCheck::new(
            Arc::new(verifier),
            Arc::new(replays(!replayed)),
            None,
            Arc::new(clock_at(1_000)),
            window,
        ))
    }

    fn key() -> KeyThumbprint {
        KeyThumbprint::parse("0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I").unwrap()
    }

    fn claims(iat: i64) -> ProofClaims {
        ProofClaims {
            key: key(),
            jti: "jti-1".into(),
            htm: "GET".into(),
            htu: URI.into(),
            iat,
            nonce: None,
            ath: Some("hash-of-token".into()),
        }
    }

    fn verifier(claims: ProofClaims) -> MockProofVerifier {
        let mut verifier = MockProofVerifier::new();
        verifier.expect_verify().returning(move |_| Ok(claims.clone()));
        verifier.expect_token_hash().returning(|token| format!("hash-of-{token}"));
        verifier
    }

    fn replays(first: bool) -> MockProofReplays {
        let mut replays = MockProofReplays::new();
        replays.expect_first_use().returning(move |_| first);
        replays
    }

    fn unread_replays() -> MockProofReplays {
        let mut replays = MockProofReplays::new();
        replays.expect_first_use().never();
        replays
    }

    fn check_with(claims: ProofClaims, replays: MockProofReplays, nonces: Option<MockProofNonces>) -> DpopCheck {
        let window = ProofWindow { max_age: Duration::from_secs(60), skew: Duration::from_secs(10) };
        DpopCheck::new(
            Arc::new(verifier(claims)),
            Arc::new(replays),
            nonces.map(|nonces| Arc::new(nonces) as Arc<dyn ProofNonces>),
            Arc::new(clock_at(1_000)),
            window,
        )
    }

    fn presented(method: &'static str, uri: &str) -> PresentedProof {
        PresentedProof { proof: "proof".into(), method, uri: uri.into() }
    }

    #[tokio::test]
    async fn a_fresh_proof_for_this_request_gives_its_key() {
        let check = check_with(claims(1_000), replays(true), None);
        assert_eq!(check.check(&presented("GET", URI), None).await, Ok(key()));
    }

    #[tokio::test]
    async fn a_proof_for_another_method_or_resource_is_refused_without_being_recorded() {
        let check = check_with(claims(1_000), unread_replays(), None);
        assert_eq!(check.check(&presented("POST", URI), None).await, Err(ProofRefusal::Method));
        let other = "https://api.example.mx/api/v1/atms";
        assert_eq!(check.check(&presented("GET", other), None).await, Err(ProofRefusal::Uri));
    }

    #[tokio::test]
    async fn htu_compares_after_normalisation_and_without_query() {
        for written in [
            "HTTPS://API.example.mx/api/v1/authorize",
            "https://api.example.mx:443/api/v1/authorize",
            "https://api.example.mx/api/v1/authorize?client_id=x#top",
        ] {
            let check = check_with(ProofClaims { htu: written.into(), ..claims(1_000) }, replays(true), None);
            assert_eq!(check.check(&presented("GET", URI), None).await, Ok(key()), "{written}");
        }
        let check = check_with(claims(1_000), unread_replays(), None);
        assert_eq!(
            check.check(&presented("GET", "https://api.example.mx/api/v1/authorize/"), None).await,
            Err(ProofRefusal::Uri),
            "another path is another resource"
        );
    }

    #[tokio::test]
    async fn a_proof_outside_its_window_is_refused() {
        let check = check_with(claims(1_000 - 61), unread_replays(), None);
        assert_eq!(check.check(&presented("GET", URI), None).await, Err(ProofRefusal::TooOld));
        let check = check_with(claims(1_000 + 11), unread_replays(), None);
        assert_eq!(check.check(&presented("GET", URI), None).await, Err(ProofRefusal::TooNew));
        let check = check_with(claims(1_000 - 60), replays(true), None);
        assert!(check.check(&presented("GET", URI), None).await.is_ok(), "the window's edge is inside");
    }

    #[tokio::test]
    async fn a_proof_seen_before_is_refused() {
        let check = check_with(claims(1_000), replays(false), None);
        assert_eq!(check.check(&presented("GET", URI), None).await, Err(ProofRefusal::Replayed));
    }

    #[tokio::test]
    async fn a_proof_for_a_bound_token_carries_its_hash_and_is_made_by_its_key() {
        let check = check_with(claims(1_000), replays(true), None);
        assert_eq!(check.check(&presented("GET", URI), Some(("token", &key()))).await, Ok(key()));

        let check = check_with(claims(1_000), unread_replays(), None);
        assert_eq!(check.check(&presented("GET", URI), Some(("another", &key()))).await, Err(ProofRefusal::TokenHash));
        let other_key = KeyThumbprint::parse(&"A".repeat(43)).unwrap();
        assert_eq!(check.check(&presented("GET", URI), Some(("token", &other_key))).await, Err(ProofRefusal::OtherKey));
        let check = check_with(ProofClaims { ath: None, ..claims(1_000) }, unread_replays(), None);
        assert_eq!(
            check.check(&presented("GET", URI), Some(("token", &key()))).await,
            Err(ProofRefusal::Missing("ath"))
        );
    }

    #[tokio::test]
    async fn with_nonces_required_a_proof_without_a_recent_one_is_answered_with_a_fresh_one() {
        let nonces = || {
            let mut nonces = MockProofNonces::new();
            nonces.expect_accepts().returning(|nonce| nonce == "recent");
            nonces.expect_issue().returning(|| Some("fresh".into()));
            nonces
        };
        for sent in [None, Some("stale")] {
            let check = check_with(
                ProofClaims { nonce: sent.map(str::to_owned), ..claims(1_000) },
                unread_replays(),
                Some(nonces()),
            );
            assert_eq!(
                check.check(&presented("GET", URI), None).await,
                Err(ProofRefusal::UseNonce { fresh: "fresh".into() }),
                "{sent:?}"
            );
        }
        let check =
            check_with(ProofClaims { nonce: Some("recent".into()), ..claims(1_000) }, replays(true), Some(nonces()));
        assert_eq!(check.check(&presented("GET", URI), None).await, Ok(key()));
    }
}
