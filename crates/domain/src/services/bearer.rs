//! The bearer check every protected operation starts with.

use std::sync::Arc;
use tracing::Instrument as _;

use async_trait::async_trait;

use std::net::IpAddr;

use crate::client::ClientId;
use crate::dpop::{DpopPolicy, ProofRefusal};
use crate::limits::{LimitCheck, LimitError, LimitExceeded};
use crate::ports::{ClientRegistry, RequestLimiter, StoreUnavailable, TokenLedger, TokenRejected, TokenVerifier};
use crate::services::dpop::{DpopCheck, PresentedProof};
use crate::token::AccessClaims;

/// Why a bearer token was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum BearerError {
    /// The token was valid and has expired (401): the caller should fetch a new one.
    #[error("the access token expired")]
    Expired,
    /// The token or the client id presented with it is not acceptable (401). The reason
    /// is for the log only: a caller is told no more than that the token is not valid.
    #[error("bearer credentials refused: {0}")]
    Refused(&'static str),
    /// The token is bound to a key and its DPoP proof was refused (401): the caller is
    /// told why, and given a nonce when one is wanted.
    #[error(transparent)]
    Proof(ProofRefusal),
    /// The session, the caller or the client is over its rate (429).
    #[error(transparent)]
    Limited(LimitExceeded),
    /// Revocations or the client registry could not be read (500).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Checks access tokens: signature and claims, the key a bound token is bound to and
/// its proof, revocation, the `client_id` header, and that the client is still active
/// and, if it requires DPoP, that the token is bound.
pub struct BearerCheck {
    verifier: Arc<dyn TokenVerifier>,
    ledger: Arc<dyn TokenLedger>,
    clients: Arc<dyn ClientRegistry>,
    limits: Arc<dyn RequestLimiter>,
    proofs: Arc<DpopCheck>,
}

impl BearerCheck {
    /// A check verifying with `verifier`, consulting `ledger` for revocations and
    /// `clients` for the client's status, counting calls in `limits`, and checking
    /// proofs with `proofs`.
    pub fn new(
        verifier: Arc<dyn TokenVerifier>,
        ledger: Arc<dyn TokenLedger>,
        clients: Arc<dyn ClientRegistry>,
        limits: Arc<dyn RequestLimiter>,
        proofs: Arc<DpopCheck>,
    ) -> Self {
        Self { verifier, ledger, clients, limits, proofs }
    }
}

/// Checking the bearer token a protected operation is called with.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BearerAuthentication: Send + Sync {
    /// The token's claims, if it verifies, is not revoked, was issued to `client_id`, and
    /// that client is active; the call counted against its session's, its `caller`'s (an
    /// IPv4 address or an IPv6 /64) and its client's rates. A token bound to a key must
    /// come with `proof` (sent with the `DPoP` scheme) made by that key; a bearer token
    /// must come without one (sent with the `Bearer` scheme), and is refused when its
    /// client requires DPoP.
    ///
    /// The proof is checked last, after the limits: its signature is the costliest step
    /// of the call, and a proof that passes is remembered, so a flood of calls is
    /// refused before it costs either.
    ///
    /// # Errors
    /// [`BearerError::Refused`] for any failed check of the token,
    /// [`BearerError::Limited`] over a rate, [`BearerError::Proof`] for its proof,
    /// [`BearerError::Unavailable`] when revocations or the registry cannot be read.
    async fn authenticate(
        &self,
        token: &str,
        proof: Option<PresentedProof>,
        client_id: &ClientId,
        caller: IpAddr,
    ) -> Result<AccessClaims, BearerError>;
}

#[async_trait]
impl BearerAuthentication for BearerCheck {
    async fn authenticate(
        &self,
        token: &str,
        proof: Option<PresentedProof>,
        client_id: &ClientId,
        caller: IpAddr,
    ) -> Result<AccessClaims, BearerError> {
        let claims = self.verifier.verify(token).map_err(|rejected| match rejected {
            TokenRejected::Expired => BearerError::Expired,
            TokenRejected::Invalid(reason) => BearerError::Refused(reason),
        })?;
        if &claims.client_id != client_id {
            return Err(BearerError::Refused("client_id differs from the token's subject"));
        }
        let proof = match (&claims.bound_to, proof) {
            (None, None) => None,
            // RFC 9449 §7.2: a bound token is not a bearer token.
            (Some(_), None) => return Err(BearerError::Refused("a bound token sent without a DPoP proof")),
            (None, Some(_)) => return Err(BearerError::Refused("a bearer token sent with the DPoP scheme")),
            (Some(key), Some(proof)) => Some((key, proof)),
        };
        if self.ledger.is_revoked(&claims.token_id).await? {
            return Err(BearerError::Refused("token revoked"));
        }
        // Whenever the token was issued: an instance that had not yet seen a disable may
        // have issued it, and no revocation made at the disable can name it.
        match self.clients.active_policy(client_id).await? {
            None => return Err(BearerError::Refused("the client is disabled")),
            // A bearer token issued before the client came to require DPoP.
            Some(DpopPolicy::Required) if claims.bound_to.is_none() => {
                return Err(BearerError::Refused("the client requires DPoP and the token is not bound"));
            }
            Some(_) => {}
        }
        let checks = [
            LimitCheck::PerSession(&claims.session),
            LimitCheck::PerCaller(caller),
            LimitCheck::PerClient(&claims.client_id),
        ];
        match self.limits.admit(&checks).instrument(tracing::trace_span!("rate limits")).await {
            Err(LimitError::Exceeded(over)) => return Err(BearerError::Limited(over)),
            // A limiter that cannot count lets the call through, never refusing everything.
            Ok(()) | Err(LimitError::Unavailable(_)) => {}
        }
        if let Some((key, proof)) = proof {
            self.proofs
                .check(&proof, Some((token, key)))
                .instrument(tracing::trace_span!("dpop proof"))
                .await
                .map_err(BearerError::Proof)?;
        }
        Ok(claims)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dpop::KeyThumbprint;
    use crate::ports::{MockClientRegistry, MockProofVerifier, MockTokenLedger, MockTokenVerifier};

    /// Claims of a live token issued to `demo-app` on MX/GCB/MOBILE in session `sid-1`.
    pub(crate) fn claims() -> AccessClaims {
        crate::testing::claims("demo-app", "sid-1", 0, 1800)
    }

    fn verifier(result: Result<AccessClaims, TokenRejected>) -> MockTokenVerifier {
        let mut verifier = MockTokenVerifier::new();
        verifier.expect_verify().returning(move |_| result.clone());
        verifier
    }

    fn ledger(revoked: bool) -> MockTokenLedger {
        let mut ledger = MockTokenLedger::new();
        ledger.expect_is_revoked().returning(move |_| Ok(revoked));
        ledger
    }

    fn registry(active: bool) -> MockClientRegistry {
        registry_of(active.then_some(DpopPolicy::Optional))
    }

    fn registry_of(policy: Option<DpopPolicy>) -> MockClientRegistry {
        let mut clients = MockClientRegistry::new();
        clients.expect_active_policy().returning(move |_| Ok(policy));
        clients
    }

    /// Proofs of `KEY` for the ATM list, each new.
    fn proofs() -> Arc<DpopCheck> {
        crate::services::dpop::tests::proofs_by(KEY, "https://api.example.mx/api/v1/atms", false)
    }

    const KEY: &str = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I";

    fn presented() -> Option<PresentedProof> {
        Some(PresentedProof { proof: "proof".into(), method: "GET", uri: "https://api.example.mx/api/v1/atms".into() })
    }

    fn bound_claims(key: &str) -> AccessClaims {
        AccessClaims { bound_to: KeyThumbprint::parse(key), ..claims() }
    }

    /// Limits that admit every call, or refuse every one over the session's rate, and
    /// count the calls they were asked about.
    #[derive(Default)]
    struct Limits {
        refuse: bool,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl RequestLimiter for Limits {
        fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> crate::limits::Admission<'a> {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let over =
                crate::limits::LimitExceeded { limit: checks[0].limit(), wait: std::time::Duration::from_secs(1) };
            crate::limits::Admission::decided(if self.refuse { Err(over.into()) } else { Ok(()) })
        }
    }

    const CALLER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn check(verifier: MockTokenVerifier, ledger: MockTokenLedger) -> BearerCheck {
        BearerCheck::new(
            Arc::new(verifier),
            Arc::new(ledger),
            Arc::new(registry(true)),
            Arc::new(Limits::default()),
            proofs(),
        )
    }

    fn demo_app() -> ClientId {
        ClientId::parse("demo-app").unwrap()
    }

    #[tokio::test]
    async fn a_bound_token_with_a_proof_of_its_key_is_accepted() {
        let accepted = check(verifier(Ok(bound_claims(KEY))), ledger(false))
            .authenticate("token", presented(), &demo_app(), CALLER)
            .await;
        assert_eq!(accepted.unwrap(), bound_claims(KEY));
    }

    /// The review's finding: a flood of calls with one's own bound token cost a proof's
    /// signature (and a place in the replay cache) each before its 429.
    #[tokio::test]
    async fn a_call_over_its_rate_is_refused_before_its_proof_is_verified_or_remembered() {
        let mut verifier = MockProofVerifier::new();
        verifier.expect_verify().never();
        let window = crate::services::dpop::ProofWindow {
            max_age: std::time::Duration::from_secs(60),
            skew: std::time::Duration::from_secs(5),
        };
        let mut replays = crate::ports::MockProofReplays::new();
        replays.expect_first_use().never();
        let proofs = DpopCheck::new(
            Arc::new(verifier),
            Arc::new(replays),
            None,
            Arc::new(crate::testing::clock_at(1_000)),
            window,
        );
        let limits = Arc::new(Limits { refuse: true, ..Limits::default() });
        let check = BearerCheck::new(
            Arc::new(super::tests::verifier(Ok(bound_claims(KEY)))),
            Arc::new(ledger(false)),
            Arc::new(registry(true)),
            limits.clone(),
            Arc::new(proofs),
        );
        let result = check.authenticate("token", presented(), &demo_app(), CALLER).await;
        assert!(matches!(result, Err(BearerError::Limited(_))), "{result:?}");
        assert_eq!(limits.asked.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_bound_token_without_a_proof_is_not_a_bearer_token() {
        let result = check(verifier(Ok(bound_claims(KEY))), ledger(false))
            .authenticate("token", None, &demo_app(), CALLER)
            .await;
        assert!(matches!(result, Err(BearerError::Refused("a bound token sent without a DPoP proof"))));
    }

    #[tokio::test]
    async fn a_bearer_token_sent_with_a_proof_is_refused() {
        let result =
            check(verifier(Ok(claims())), ledger(false)).authenticate("token", presented(), &demo_app(), CALLER).await;
        assert!(matches!(result, Err(BearerError::Refused("a bearer token sent with the DPoP scheme"))));
    }

    #[tokio::test]
    async fn a_proof_by_another_key_than_the_tokens_is_refused() {
        let other = "A".repeat(43);
        let result = check(verifier(Ok(bound_claims(&other))), ledger(false))
            .authenticate("token", presented(), &demo_app(), CALLER)
            .await;
        assert!(matches!(result, Err(BearerError::Proof(ProofRefusal::OtherKey))));
    }

    #[tokio::test]
    async fn a_bearer_token_of_a_client_that_now_requires_dpop_is_refused_and_a_bound_one_is_not() {
        let check = |claims: AccessClaims| {
            BearerCheck::new(
                Arc::new(verifier(Ok(claims))),
                Arc::new(ledger(false)),
                Arc::new(registry_of(Some(DpopPolicy::Required))),
                Arc::new(Limits::default()),
                proofs(),
            )
        };
        let result = check(claims()).authenticate("token", None, &demo_app(), CALLER).await;
        assert!(matches!(result, Err(BearerError::Refused("the client requires DPoP and the token is not bound"))));
        assert!(check(bound_claims(KEY)).authenticate("token", presented(), &demo_app(), CALLER).await.is_ok());
    }

    #[tokio::test]
    async fn a_live_token_presented_by_its_client_is_accepted() {
        let accepted = check(verifier(Ok(claims())), ledger(false))
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap(), CALLER)
            .await
            .unwrap();
        assert_eq!(accepted, claims());
    }

    #[tokio::test]
    async fn an_expired_token_is_told_apart_from_one_that_is_not_valid() {
        let result = check(verifier(Err(TokenRejected::Expired)), ledger(false))
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap(), CALLER)
            .await;
        assert!(matches!(result, Err(BearerError::Expired)));
    }

    #[tokio::test]
    async fn a_token_presented_by_another_client_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(false))
            .authenticate("token", None, &ClientId::parse("other-app").unwrap(), CALLER)
            .await;
        assert!(matches!(result, Err(BearerError::Refused(_))));
    }

    #[tokio::test]
    async fn a_revoked_token_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(true))
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap(), CALLER)
            .await;
        assert!(matches!(result, Err(BearerError::Refused("token revoked"))));
    }

    /// The finding: tokens issued just after `clients disable` (by an instance that had
    /// not yet seen it) stayed valid for their whole lifetime.
    #[tokio::test]
    async fn a_live_unrevoked_token_of_a_disabled_client_is_refused() {
        let check = BearerCheck::new(
            Arc::new(verifier(Ok(claims()))),
            Arc::new(ledger(false)),
            Arc::new(registry(false)),
            Arc::new(Limits::default()),
            proofs(),
        );
        let result = check.authenticate("token", None, &demo_app(), CALLER).await;
        assert!(matches!(result, Err(BearerError::Refused("the client is disabled"))));
    }

    #[tokio::test]
    async fn a_token_the_verifier_rejects_is_refused_before_revocations_are_read() {
        let mut unread = MockTokenLedger::new();
        unread.expect_is_revoked().never();
        let result = check(verifier(Err(TokenRejected::Invalid("bad signature"))), unread)
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap(), CALLER)
            .await;
        assert!(matches!(result, Err(BearerError::Refused("bad signature"))));
    }
}
