//! The bearer check every protected operation starts with.

use std::sync::Arc;

use async_trait::async_trait;

use crate::client::ClientId;
use crate::dpop::{DpopPolicy, ProofRefusal};
use crate::ports::{ClientRegistry, StoreUnavailable, TokenLedger, TokenRejected, TokenVerifier};
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
    proofs: Arc<DpopCheck>,
}

impl BearerCheck {
    /// A check verifying with `verifier`, checking proofs with `proofs`, consulting
    /// `ledger` for revocations and `clients` for the client's status.
    pub fn new(
        verifier: Arc<dyn TokenVerifier>,
        ledger: Arc<dyn TokenLedger>,
        clients: Arc<dyn ClientRegistry>,
        proofs: Arc<DpopCheck>,
    ) -> Self {
        Self { verifier, ledger, clients, proofs }
    }
}

/// Checking the bearer token a protected operation is called with.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BearerAuthentication: Send + Sync {
    /// The token's claims, if it verifies, is not revoked, was issued to `client_id`, and
    /// that client is active. A token bound to a key must come with `proof` (sent with
    /// the `DPoP` scheme) made by that key; a bearer token must come without one (sent
    /// with the `Bearer` scheme), and is refused when its client requires DPoP.
    ///
    /// # Errors
    /// [`BearerError::Refused`] for any failed check of the token,
    /// [`BearerError::Proof`] for its proof, [`BearerError::Unavailable`] when
    /// revocations or the registry cannot be read.
    async fn authenticate(
        &self,
        token: &str,
        proof: Option<PresentedProof>,
        client_id: &ClientId,
    ) -> Result<AccessClaims, BearerError>;
}

#[async_trait]
impl BearerAuthentication for BearerCheck {
    async fn authenticate(
        &self,
        token: &str,
        proof: Option<PresentedProof>,
        client_id: &ClientId,
    ) -> Result<AccessClaims, BearerError> {
        let claims = self.verifier.verify(token).map_err(|rejected| match rejected {
            TokenRejected::Expired => BearerError::Expired,
            TokenRejected::Invalid(reason) => BearerError::Refused(reason),
        })?;
        if &claims.client_id != client_id {
            return Err(BearerError::Refused("client_id differs from the token's subject"));
        }
        match (&claims.bound_to, proof) {
            (None, None) => {}
            // RFC 9449 §7.2: a bound token is not a bearer token.
            (Some(_), None) => return Err(BearerError::Refused("a bound token sent without a DPoP proof")),
            (None, Some(_)) => return Err(BearerError::Refused("a bearer token sent with the DPoP scheme")),
            (Some(key), Some(proof)) => {
                self.proofs.check(&proof, Some((token, key))).await.map_err(BearerError::Proof)?;
            }
        }
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
        Ok(claims)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dpop::KeyThumbprint;
    use crate::ports::{MockClientRegistry, MockTokenLedger, MockTokenVerifier};

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

    fn check(verifier: MockTokenVerifier, ledger: MockTokenLedger) -> BearerCheck {
        BearerCheck::new(Arc::new(verifier), Arc::new(ledger), Arc::new(registry(true)), proofs())
    }

    fn demo_app() -> ClientId {
        ClientId::parse("demo-app").unwrap()
    }

    #[tokio::test]
    async fn a_bound_token_with_a_proof_of_its_key_is_accepted() {
        let accepted =
            check(verifier(Ok(bound_claims(KEY))), ledger(false)).authenticate("token", presented(), &demo_app()).await;
        assert_eq!(accepted.unwrap(), bound_claims(KEY));
    }

    #[tokio::test]
    async fn a_bound_token_without_a_proof_is_not_a_bearer_token() {
        let result =
            check(verifier(Ok(bound_claims(KEY))), ledger(false)).authenticate("token", None, &demo_app()).await;
        assert!(matches!(result, Err(BearerError::Refused("a bound token sent without a DPoP proof"))));
    }

    #[tokio::test]
    async fn a_bearer_token_sent_with_a_proof_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(false)).authenticate("token", presented(), &demo_app()).await;
        assert!(matches!(result, Err(BearerError::Refused("a bearer token sent with the DPoP scheme"))));
    }

    #[tokio::test]
    async fn a_proof_by_another_key_than_the_tokens_is_refused_before_revocations_are_read() {
        let mut unread = MockTokenLedger::new();
        unread.expect_is_revoked().never();
        let other = "A".repeat(43);
        let result =
            check(verifier(Ok(bound_claims(&other))), unread).authenticate("token", presented(), &demo_app()).await;
        assert!(matches!(result, Err(BearerError::Proof(ProofRefusal::OtherKey))));
    }

    #[tokio::test]
    async fn a_bearer_token_of_a_client_that_now_requires_dpop_is_refused_and_a_bound_one_is_not() {
        let check = |claims: AccessClaims| {
            BearerCheck::new(
                Arc::new(verifier(Ok(claims))),
                Arc::new(ledger(false)),
                Arc::new(registry_of(Some(DpopPolicy::Required))),
                proofs(),
            )
        };
        let result = check(claims()).authenticate("token", None, &demo_app()).await;
        assert!(matches!(result, Err(BearerError::Refused("the client requires DPoP and the token is not bound"))));
        assert!(check(bound_claims(KEY)).authenticate("token", presented(), &demo_app()).await.is_ok());
    }

    #[tokio::test]
    async fn a_live_token_presented_by_its_client_is_accepted() {
        let accepted = check(verifier(Ok(claims())), ledger(false))
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap())
            .await
            .unwrap();
        assert_eq!(accepted, claims());
    }

    #[tokio::test]
    async fn an_expired_token_is_told_apart_from_one_that_is_not_valid() {
        let result = check(verifier(Err(TokenRejected::Expired)), ledger(false))
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Expired)));
    }

    #[tokio::test]
    async fn a_token_presented_by_another_client_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(false))
            .authenticate("token", None, &ClientId::parse("other-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Refused(_))));
    }

    #[tokio::test]
    async fn a_revoked_token_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(true))
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap())
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
            proofs(),
        );
        let result = check.authenticate("token", None, &demo_app()).await;
        assert!(matches!(result, Err(BearerError::Refused("the client is disabled"))));
    }

    #[tokio::test]
    async fn a_token_the_verifier_rejects_is_refused_before_revocations_are_read() {
        let mut unread = MockTokenLedger::new();
        unread.expect_is_revoked().never();
        let result = check(verifier(Err(TokenRejected::Invalid("bad signature"))), unread)
            .authenticate("token", None, &ClientId::parse("demo-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Refused("bad signature"))));
    }
}
