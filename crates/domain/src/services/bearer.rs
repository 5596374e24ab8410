//! The bearer check every protected operation starts with.

use std::sync::Arc;

use async_trait::async_trait;

use crate::client::ClientId;
use crate::ports::{ClientRegistry, StoreUnavailable, TokenLedger, TokenRejected, TokenVerifier};
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
    /// Revocations or the client registry could not be read (500).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Checks bearer tokens: signature and claims, revocation, the `client_id` header, and
/// that the client is still active.
pub struct BearerCheck {
    verifier: Arc<dyn TokenVerifier>,
    ledger: Arc<dyn TokenLedger>,
    clients: Arc<dyn ClientRegistry>,
}

impl BearerCheck {
    /// A check verifying with `verifier`, consulting `ledger` for revocations and
    /// `clients` for the client's status.
    pub fn new(
        verifier: Arc<dyn TokenVerifier>,
        ledger: Arc<dyn TokenLedger>,
        clients: Arc<dyn ClientRegistry>,
    ) -> Self {
        Self { verifier, ledger, clients }
    }
}

/// Checking the bearer token a protected operation is called with.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BearerAuthentication: Send + Sync {
    /// The token's claims, if it verifies, is not revoked, was issued to `client_id`, and
    /// that client is active.
    ///
    /// # Errors
    /// [`BearerError::Refused`] for any failed check, [`BearerError::Unavailable`] when
    /// revocations or the registry cannot be read.
    async fn authenticate(&self, token: &str, client_id: &ClientId) -> Result<AccessClaims, BearerError>;
}

#[async_trait]
impl BearerAuthentication for BearerCheck {
    async fn authenticate(&self, token: &str, client_id: &ClientId) -> Result<AccessClaims, BearerError> {
        let claims = self.verifier.verify(token).map_err(|rejected| match rejected {
            TokenRejected::Expired => BearerError::Expired,
            TokenRejected::Invalid(reason) => BearerError::Refused(reason),
        })?;
        if &claims.client_id != client_id {
            return Err(BearerError::Refused("client_id differs from the token's subject"));
        }
        if self.ledger.is_revoked(&claims.token_id).await? {
            return Err(BearerError::Refused("token revoked"));
        }
        // Whenever the token was issued: an instance that had not yet seen a disable may
        // have issued it, and no revocation made at the disable can name it.
        if !self.clients.is_active(client_id).await? {
            return Err(BearerError::Refused("the client is disabled"));
        }
        Ok(claims)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
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
        let mut clients = MockClientRegistry::new();
        clients.expect_is_active().returning(move |_| Ok(active));
        clients
    }

    fn check(verifier: MockTokenVerifier, ledger: MockTokenLedger) -> BearerCheck {
        BearerCheck::new(Arc::new(verifier), Arc::new(ledger), Arc::new(registry(true)))
    }

    #[tokio::test]
    async fn a_live_token_presented_by_its_client_is_accepted() {
        let accepted = check(verifier(Ok(claims())), ledger(false))
            .authenticate("token", &ClientId::parse("demo-app").unwrap())
            .await
            .unwrap();
        assert_eq!(accepted, claims());
    }

    #[tokio::test]
    async fn an_expired_token_is_told_apart_from_one_that_is_not_valid() {
        let result = check(verifier(Err(TokenRejected::Expired)), ledger(false))
            .authenticate("token", &ClientId::parse("demo-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Expired)));
    }

    #[tokio::test]
    async fn a_token_presented_by_another_client_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(false))
            .authenticate("token", &ClientId::parse("other-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Refused(_))));
    }

    #[tokio::test]
    async fn a_revoked_token_is_refused() {
        let result = check(verifier(Ok(claims())), ledger(true))
            .authenticate("token", &ClientId::parse("demo-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Refused("token revoked"))));
    }

    /// The finding: tokens issued just after `clients disable` (by an instance that had
    /// not yet seen it) stayed valid for their whole lifetime.
    #[tokio::test]
    async fn a_live_unrevoked_token_of_a_disabled_client_is_refused() {
        let check =
            BearerCheck::new(Arc::new(verifier(Ok(claims()))), Arc::new(ledger(false)), Arc::new(registry(false)));
        let result = check.authenticate("token", &ClientId::parse("demo-app").unwrap()).await;
        assert!(matches!(result, Err(BearerError::Refused("the client is disabled"))));
    }

    #[tokio::test]
    async fn a_token_the_verifier_rejects_is_refused_before_revocations_are_read() {
        let mut unread = MockTokenLedger::new();
        unread.expect_is_revoked().never();
        let result = check(verifier(Err(TokenRejected::Invalid("bad signature"))), unread)
            .authenticate("token", &ClientId::parse("demo-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Refused("bad signature"))));
    }
}
