//! An app ends its own visitor session (RFC 7009 token revocation for public clients):
//! the access token or its opaque token, with the client it was issued to.

use std::sync::Arc;

use async_trait::async_trait;

use crate::client::ClientId;
use crate::ports::{ClientRegistry, Clock, StoreUnavailable, TokenArchive, TokenLedger, TokenVerifier};
use crate::token::{OpaqueToken, TokenId};

/// Why a revocation request was refused.
#[derive(Debug, thiserror::Error)]
pub enum RevocationError {
    /// `client_id` names no active client (RFC 6749 §5.2 `invalid_client`).
    #[error("the client is not registered or not active")]
    UnknownClient,
    /// The token was issued to another client: it is not revoked (RFC 7009 §2.1).
    #[error("the token was issued to another client")]
    OtherClient,
    /// The store could not be read or written: the token may still be valid, and the
    /// app should try again (RFC 7009 §2.2.1).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// What a revocation request found. Each is answered alike (RFC 7009 §2.2: the client
/// cannot act on the difference); the log and the tests can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevocationOutcome {
    /// The token is refused from now on, on every instance within the refresh bound.
    Revoked,
    /// It was revoked before.
    AlreadyRevoked,
    /// No live token of this service: unknown, expired, or not valid.
    NoSuchToken,
}

/// Revoking a token at its client's request.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TokenRevocation: Send + Sync {
    /// Revokes `token` (a compact JWS access token, or the `opaque_token` issued with it)
    /// if it is a live token issued to `client_id`.
    ///
    /// # Errors
    /// See [`RevocationError`].
    async fn revoke(&self, token: &str, client_id: &ClientId) -> Result<RevocationOutcome, RevocationError>;
}

/// [`TokenRevocation`] over the service's verifier, token records and client registry.
pub struct RevocationService {
    verifier: Arc<dyn TokenVerifier>,
    archive: Arc<dyn TokenArchive>,
    ledger: Arc<dyn TokenLedger>,
    clients: Arc<dyn ClientRegistry>,
    clock: Arc<dyn Clock>,
}

impl RevocationService {
    /// Verifies access tokens with `verifier`, finds opaque tokens in `archive`, revokes
    /// through `ledger`, and checks clients in `clients`.
    pub fn new(
        verifier: Arc<dyn TokenVerifier>,
        archive: Arc<dyn TokenArchive>,
        ledger: Arc<dyn TokenLedger>,
        clients: Arc<dyn ClientRegistry>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { verifier, archive, ledger, clients, clock }
    }

    /// The id and client of the live token `token` names, if it names one. Which kind it
    /// is shows in its shape (a JWS has dots, an opaque token none), so no
    /// `token_type_hint` is needed (RFC 7009 §2.1 lets the server ignore it).
    async fn live_token(&self, token: &str, now: i64) -> Result<Option<(TokenId, ClientId)>, StoreUnavailable> {
        if token.contains('.') {
            return Ok(self.verifier.verify(token).ok().map(|claims| (claims.token_id, claims.client_id)));
        }
        let Some(opaque) = OpaqueToken::parse(token) else {
            return Ok(None);
        };
        let record = self.archive.find(&opaque).await?;
        Ok(record
            .filter(|record| record.token.expires_at > now)
            .map(|record| (record.token.token_id, record.token.client_id)))
    }
}

#[async_trait]
impl TokenRevocation for RevocationService {
    async fn revoke(&self, token: &str, client_id: &ClientId) -> Result<RevocationOutcome, RevocationError> {
        if self.clients.active_policy(client_id).await?.is_none() {
            return Err(RevocationError::UnknownClient);
        }
        let now = self.clock.unix_now();
        let Some((token_id, owner)) = self.live_token(token, now).await? else {
            return Ok(RevocationOutcome::NoSuchToken);
        };
        if &owner != client_id {
            return Err(RevocationError::OtherClient);
        }
        Ok(if self.ledger.revoke(&token_id, now).await? {
            RevocationOutcome::Revoked
        } else {
            RevocationOutcome::AlreadyRevoked
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{MockClientRegistry, MockTokenArchive, MockTokenLedger, MockTokenVerifier, TokenRejected};
    use crate::testing::clock_at;
    use crate::token::{IssuedToken, SessionId, TokenRecord};

    const NOW: i64 = 1_000;

    fn client(id: &str) -> ClientId {
        ClientId::parse(id).unwrap()
    }

    fn record(client_id: &str, expires_at: i64) -> TokenRecord {
        TokenRecord {
            token: IssuedToken {
                token_id: TokenId::new("jti-1".into()),
                opaque_token: OpaqueToken::new("opaque-1".into()),
                client_id: client(client_id),
                session: SessionId::new("sid-1".into()),
                issued_at: expires_at - 1_800,
                expires_at,
                code_challenge: None,
            },
            revoked_at: None,
        }
    }

    /// A service whose verifier accepts `"a.jws.token"` as a token of `demo-app`,
    /// whose archive holds `found` behind any opaque token, whose clients are
    /// `demo-app` and `other-app`, and whose revocations go to `ledger`.
    fn service(found: Option<TokenRecord>, ledger: MockTokenLedger) -> RevocationService {
        let mut verifier = MockTokenVerifier::new();
        verifier.expect_verify().returning(|token| match token {
            "a.jws.token" => Ok(crate::testing::claims("demo-app", "sid-1", NOW - 10, 1_800)),
            "an.expired.token" => Err(TokenRejected::Expired),
            _ => Err(TokenRejected::Invalid("bad signature")),
        });
        let mut archive = MockTokenArchive::new();
        archive.expect_find().returning(move |_| Ok(found.clone()));
        let mut clients = MockClientRegistry::new();
        clients.expect_active_policy().returning(|id| {
            Ok(["demo-app", "other-app"].contains(&id.as_str()).then_some(crate::dpop::DpopPolicy::Optional))
        });
        RevocationService::new(
            Arc::new(verifier),
            Arc::new(archive),
            Arc::new(ledger),
            Arc::new(clients),
            Arc::new(clock_at(NOW)),
        )
    }

    fn revoking(id: &'static str, answer: bool) -> MockTokenLedger {
        let mut ledger = MockTokenLedger::new();
        ledger
            .expect_revoke()
            .withf(move |token_id, now| token_id.as_str() == id && *now == NOW)
            .times(1)
            .returning(move |_, _| Ok(answer));
        ledger
    }

    fn never_revoking() -> MockTokenLedger {
        let mut ledger = MockTokenLedger::new();
        ledger.expect_revoke().never();
        ledger
    }

    #[tokio::test]
    async fn an_access_token_of_the_client_is_revoked_by_its_id() {
        let service = service(None, revoking("jti-sid-1-990", true));
        assert_eq!(service.revoke("a.jws.token", &client("demo-app")).await.unwrap(), RevocationOutcome::Revoked);
    }

    #[tokio::test]
    async fn an_opaque_token_of_the_client_is_revoked_and_a_second_time_changes_nothing() {
        let service = service(Some(record("demo-app", NOW + 60)), revoking("jti-1", false));
        let outcome = service.revoke("opaque-1", &client("demo-app")).await.unwrap();
        assert_eq!(outcome, RevocationOutcome::AlreadyRevoked);
    }

    #[tokio::test]
    async fn an_unknown_expired_or_invalid_token_is_no_token_and_nothing_is_revoked() {
        for (token, found) in [
            ("no-such-opaque", None),
            ("opaque-expired", Some(record("demo-app", NOW))),
            ("an.expired.token", None),
            ("a.tampered.token", None),
        ] {
            let outcome = service(found, never_revoking()).revoke(token, &client("demo-app")).await.unwrap();
            assert_eq!(outcome, RevocationOutcome::NoSuchToken, "{token}");
        }
    }

    /// The finding: a token holding a NUL byte reached PostgreSQL, whose refusal was
    /// answered as an outage (503). What cannot be an opaque token is not looked up.
    #[tokio::test]
    async fn a_value_that_cannot_be_an_opaque_token_is_no_token_without_asking_the_store() {
        let mut archive = MockTokenArchive::new();
        archive.expect_find().never();
        let mut clients = MockClientRegistry::new();
        clients.expect_active_policy().returning(|_| Ok(Some(crate::dpop::DpopPolicy::Optional)));
        let service = RevocationService::new(
            Arc::new(MockTokenVerifier::new()),
            Arc::new(archive),
            Arc::new(never_revoking()),
            Arc::new(clients),
            Arc::new(clock_at(NOW)),
        );
        for token in ["\0Q/\u{14} \u{f3}", "caf\u{e9}", "with space", &"A".repeat(129)] {
            let outcome = service.revoke(token, &client("demo-app")).await.unwrap();
            assert_eq!(outcome, RevocationOutcome::NoSuchToken, "{token:?}");
        }
    }

    #[tokio::test]
    async fn another_clients_token_is_not_revoked() {
        let by_jws = service(None, never_revoking()).revoke("a.jws.token", &client("other-app")).await;
        assert!(matches!(by_jws, Err(RevocationError::OtherClient)));
        let by_opaque = service(Some(record("demo-app", NOW + 60)), never_revoking())
            .revoke("opaque-1", &client("other-app"))
            .await;
        assert!(matches!(by_opaque, Err(RevocationError::OtherClient)));
    }

    #[tokio::test]
    async fn a_client_that_is_not_active_is_refused_before_the_token_is_looked_at() {
        let outcome = service(None, never_revoking()).revoke("a.jws.token", &client("gone-app")).await;
        assert!(matches!(outcome, Err(RevocationError::UnknownClient)));
    }
}
