//! The bearer check every protected operation starts with.

use std::sync::Arc;

use crate::client::ClientId;
use crate::ports::{StoreUnavailable, TokenLedger, TokenVerifier};
use crate::token::AccessClaims;

/// Why a bearer token was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum BearerError {
    /// The token or the client id presented with it is not acceptable (401). The reason
    /// is for the log only.
    #[error("bearer credentials refused: {0}")]
    Refused(&'static str),
    /// Revocations could not be read (500).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Checks bearer tokens: signature and claims, revocation, and the `client_id` header.
pub struct BearerCheck {
    verifier: Arc<dyn TokenVerifier>,
    ledger: Arc<dyn TokenLedger>,
}

impl BearerCheck {
    /// A check verifying with `verifier` and consulting `ledger` for revocations.
    pub fn new(verifier: Arc<dyn TokenVerifier>, ledger: Arc<dyn TokenLedger>) -> Self {
        Self { verifier, ledger }
    }

    /// The token's claims, if it verifies, is not revoked, and was issued to `client_id`.
    ///
    /// # Errors
    /// [`BearerError::Refused`] for any failed check, [`BearerError::Unavailable`] when
    /// revocations cannot be read.
    pub async fn authenticate(&self, token: &str, client_id: &ClientId) -> Result<AccessClaims, BearerError> {
        let claims = self.verifier.verify(token).map_err(|rejected| BearerError::Refused(rejected.0))?;
        if &claims.client_id != client_id {
            return Err(BearerError::Refused("client_id differs from the token's subject"));
        }
        if self.ledger.is_revoked(&claims.token_id).await? {
            return Err(BearerError::Refused("token revoked"));
        }
        Ok(claims)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ports::{MockTokenLedger, MockTokenVerifier, TokenRejected};

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

    fn check(verifier: MockTokenVerifier, ledger: MockTokenLedger) -> BearerCheck {
        BearerCheck::new(Arc::new(verifier), Arc::new(ledger))
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

    #[tokio::test]
    async fn a_token_the_verifier_rejects_is_refused_before_revocations_are_read() {
        let mut unread = MockTokenLedger::new();
        unread.expect_is_revoked().never();
        let result = check(verifier(Err(TokenRejected("bad signature"))), unread)
            .authenticate("token", &ClientId::parse("demo-app").unwrap())
            .await;
        assert!(matches!(result, Err(BearerError::Refused("bad signature"))));
    }
}
