//! Token issuance: the first call of a pre-login session.

use std::sync::Arc;
use tracing::Instrument as _;

use async_trait::async_trait;

use crate::client::{ChannelScope, ClientId, ClientStatus};
use crate::dpop::{DpopPolicy, ProofRefusal};
use crate::ports::{ClientRegistry, Clock, IdGenerator, SigningFailed, StoreUnavailable, TokenLedger, TokenSigner};
use crate::services::dpop::{DpopCheck, PresentedProof};
use crate::token::{AccessClaims, CodeChallenge, IssuedToken, Scope, TokenGrant};

/// A token request whose every field already parsed.
#[derive(Debug, Clone)]
pub struct AuthorizeRequest {
    /// The calling application.
    pub client_id: ClientId,
    /// The country, business and channel it says it calls from.
    pub scope: ChannelScope,
    /// The redirect URI it sent, if any; it must be one it registered.
    pub redirect_uri: Option<String>,
    /// The PKCE S256 challenge it sent, if any.
    pub code_challenge: Option<CodeChallenge>,
    /// The DPoP proof it sent, if any: the token is then bound to the proof's key.
    pub proof: Option<PresentedProof>,
}

/// Why a client was refused; all are one 401 to the caller, told apart in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRefusal {
    /// No client with that id is registered.
    Unknown,
    /// The client is disabled.
    Disabled,
    /// The business, country or channel differ from the client's registration.
    RegistrationMismatch,
}

impl ClientRefusal {
    /// A short name of the reason, for counting refusals (never told to the caller).
    pub fn label(self) -> &'static str {
        match self {
            Self::Unknown => "unknown client",
            Self::Disabled => "disabled client",
            Self::RegistrationMismatch => "registration mismatch",
        }
    }
}

/// Why a token was not issued.
#[derive(Debug, thiserror::Error)]
pub enum AuthorizeError {
    /// The client's credentials are missing or invalid (401).
    #[error("client refused: {0:?}")]
    Unauthorized(ClientRefusal),
    /// `redirect_uri` is not one the client registered (400, RFC 9700 §2.1).
    #[error("redirect_uri is not registered for this client")]
    RedirectUriNotRegistered,
    /// The DPoP proof was refused (400, RFC 9449 §5); no token was issued.
    #[error(transparent)]
    Proof(ProofRefusal),
    /// The client requires DPoP and sent no proof (400).
    #[error("the client requires DPoP and sent no proof")]
    ProofRequired,
    /// The registry or the token ledger could not be reached (500).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
    /// No token could be signed (500).
    #[error(transparent)]
    SigningFailed(#[from] SigningFailed),
}

/// Issues pre-login visitor tokens.
pub struct TokenService {
    registry: Arc<dyn ClientRegistry>,
    ledger: Arc<dyn TokenLedger>,
    signer: Arc<dyn TokenSigner>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    proofs: Arc<DpopCheck>,
    lifetime_seconds: u32,
}

impl TokenService {
    /// A service issuing tokens that live `lifetime_seconds`, bound to the key of the
    /// proof a request sends, checked by `proofs`.
    pub fn new(
        registry: Arc<dyn ClientRegistry>,
        ledger: Arc<dyn TokenLedger>,
        signer: Arc<dyn TokenSigner>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        proofs: Arc<DpopCheck>,
        lifetime_seconds: u32,
    ) -> Self {
        Self { registry, ledger, signer, clock, ids, proofs, lifetime_seconds }
    }
}

/// Issuing pre-login visitor tokens: the use case behind GET /v1/authorize.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TokenIssuance: Send + Sync {
    /// Checks the client against its registration, signs a visitor token for a new
    /// session, and records it durably before handing it out.
    ///
    /// # Errors
    /// See [`AuthorizeError`]: each variant is one response status.
    async fn authorize(&self, request: AuthorizeRequest) -> Result<TokenGrant, AuthorizeError>;
}

#[async_trait]
impl TokenIssuance for TokenService {
    #[tracing::instrument(skip_all, fields(client_id = %request.client_id))]
    async fn authorize(&self, request: AuthorizeRequest) -> Result<TokenGrant, AuthorizeError> {
        // The proof first: a request's own fault (400) is told before its client's (401),
        // and a token request whose proof fails gets no token whoever the client is.
        let bound_to = match &request.proof {
            Some(proof) => Some(
                self.proofs
                    .check(proof, None)
                    .instrument(tracing::trace_span!("dpop proof"))
                    .await
                    .map_err(AuthorizeError::Proof)?,
            ),
            None => None,
        };
        let client = self
            .registry
            .find(&request.client_id)
            .await?
            .ok_or(AuthorizeError::Unauthorized(ClientRefusal::Unknown))?;
        if client.status == ClientStatus::Disabled {
            return Err(AuthorizeError::Unauthorized(ClientRefusal::Disabled));
        }
        if client.scope != request.scope {
            return Err(AuthorizeError::Unauthorized(ClientRefusal::RegistrationMismatch));
        }
        if let Some(sent) = &request.redirect_uri
            && !client.redirect_uris.iter().any(|registered| registered.as_str() == sent)
        {
            return Err(AuthorizeError::RedirectUriNotRegistered);
        }
        if client.dpop == DpopPolicy::Required && bound_to.is_none() {
            return Err(AuthorizeError::ProofRequired);
        }

        let now = self.clock.now().unix_timestamp();
        let claims = AccessClaims {
            client_id: request.client_id,
            scope: request.scope,
            session: self.ids.session_id(),
            token_id: self.ids.token_id(),
            granted: Scope::Visitor,
            issued_at: now,
            not_before: now,
            expires_at: now + i64::from(self.lifetime_seconds),
            bound_to,
        };
        let access_token = tracing::trace_span!("sign token").in_scope(|| self.signer.sign(&claims))?;
        let opaque_token = self.ids.opaque_token();
        self.ledger
            .record(IssuedToken {
                token_id: claims.token_id,
                opaque_token: opaque_token.clone(),
                client_id: claims.client_id,
                session: claims.session.clone(),
                issued_at: claims.issued_at,
                expires_at: claims.expires_at,
                code_challenge: request.code_challenge,
            })
            .await?;
        Ok(TokenGrant {
            bound: claims.bound_to.is_some(),
            access_token,
            expires_in: self.lifetime_seconds,
            scope: Scope::Visitor,
            opaque_token,
            session: claims.session,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{BusinessCode, ChannelId, ClientRegistration, CountryCode, RedirectUri};
    use crate::dpop::KeyThumbprint;
    use crate::ports::{MockClientRegistry, MockIdGenerator, MockTokenLedger, MockTokenSigner};
    use crate::testing::clock_at;
    use crate::token::{OpaqueToken, SessionId, TokenId};

    fn scope(channel: &str) -> ChannelScope {
        ChannelScope {
            country: CountryCode::parse("MX").unwrap(),
            business: BusinessCode::parse("GCB").unwrap(),
            channel: ChannelId::parse(channel).unwrap(),
        }
    }

    fn registration(status: ClientStatus) -> ClientRegistration {
        ClientRegistration {
            client_id: ClientId::parse("demo-app").unwrap(),
            scope: scope("MOBILE"),
            redirect_uris: vec![RedirectUri::parse("https://app.example.mx/cb").unwrap()],
            allowed_origins: Vec::new(),
            status,
            dpop: DpopPolicy::Optional,
        }
    }

    fn request() -> AuthorizeRequest {
        AuthorizeRequest {
            client_id: ClientId::parse("demo-app").unwrap(),
            scope: scope("MOBILE"),
            redirect_uri: None,
            code_challenge: None,
            proof: None,
        }
    }

    fn registry_with(found: Option<ClientRegistration>) -> MockClientRegistry {
        let mut registry = MockClientRegistry::new();
        registry.expect_find().returning(move |_| Ok(found.clone()));
        registry
    }

    fn ids() -> MockIdGenerator {
        let mut ids = MockIdGenerator::new();
        ids.expect_token_id().returning(|| TokenId::new("jti-1".into()));
        ids.expect_session_id().returning(|| SessionId::new("sid-1".into()));
        ids.expect_opaque_token().returning(|| OpaqueToken::new("opaque-1".into()));
        ids
    }

    fn service(registry: MockClientRegistry, ledger: MockTokenLedger, signer: MockTokenSigner) -> TokenService {
        TokenService::new(
            Arc::new(registry),
            Arc::new(ledger),
            Arc::new(signer),
            Arc::new(clock_at(1_000)),
            Arc::new(ids()),
            proofs(),
            1800,
        )
    }

    const KEY: &str = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I";

    /// Proofs of `KEY` for the authorization endpoint, made now: accepted unless
    /// `replayed`.
    fn proofs_seen(replayed: bool) -> Arc<DpopCheck> {
        crate::services::dpop::tests::proofs_by(KEY, AUTHORIZE_URL, replayed)
    }

    fn proofs() -> Arc<DpopCheck> {
        proofs_seen(false)
    }

    const AUTHORIZE_URL: &str = "https://api.example.mx/api/v1/authorize";

    fn with_proof() -> AuthorizeRequest {
        AuthorizeRequest {
            proof: Some(PresentedProof { proof: "proof".into(), method: "GET", uri: AUTHORIZE_URL.into() }),
            ..request()
        }
    }

    fn signer_of_bound_tokens() -> MockTokenSigner {
        let mut signer = MockTokenSigner::new();
        signer
            .expect_sign()
            .withf(|claims| claims.bound_to.as_ref().map(KeyThumbprint::as_str) == Some(KEY))
            .returning(|_| Ok("bound.jwt".into()));
        signer
    }

    fn ledger_recording() -> MockTokenLedger {
        let mut ledger = MockTokenLedger::new();
        ledger.expect_record().returning(|_| Ok(()));
        ledger
    }

    #[tokio::test]
    async fn a_request_with_a_valid_proof_gets_a_token_bound_to_its_key() {
        let grant = service(
            registry_with(Some(registration(ClientStatus::Active))),
            ledger_recording(),
            signer_of_bound_tokens(),
        )
        .authorize(with_proof())
        .await
        .unwrap();
        assert!(grant.bound);
        assert_eq!(grant.access_token, "bound.jwt");
    }

    #[tokio::test]
    async fn a_request_whose_proof_is_refused_gets_no_token_whoever_the_client_is() {
        let service = TokenService::new(
            Arc::new(registry_with(None)),
            Arc::new(ledger_never_called()),
            Arc::new(signer_never_called()),
            Arc::new(clock_at(1_000)),
            Arc::new(ids()),
            proofs_seen(true),
            1800,
        );
        let result = service.authorize(with_proof()).await;
        assert!(matches!(result, Err(AuthorizeError::Proof(ProofRefusal::Replayed))));
    }

    #[tokio::test]
    async fn a_client_that_requires_dpop_gets_no_bearer_token() {
        let requiring = ClientRegistration { dpop: DpopPolicy::Required, ..registration(ClientStatus::Active) };
        let result = service(registry_with(Some(requiring.clone())), ledger_never_called(), signer_never_called())
            .authorize(request())
            .await;
        assert!(matches!(result, Err(AuthorizeError::ProofRequired)));
        let grant = service(registry_with(Some(requiring)), ledger_recording(), signer_of_bound_tokens())
            .authorize(with_proof())
            .await
            .unwrap();
        assert!(grant.bound);
    }

    fn signer_never_called() -> MockTokenSigner {
        let mut signer = MockTokenSigner::new();
        signer.expect_sign().never();
        signer
    }

    fn ledger_never_called() -> MockTokenLedger {
        let mut ledger = MockTokenLedger::new();
        ledger.expect_record().never();
        ledger
    }

    #[tokio::test]
    async fn a_registered_client_gets_a_visitor_token_bound_to_a_new_session() {
        let mut signer = MockTokenSigner::new();
        signer
            .expect_sign()
            .withf(|claims| {
                claims.session.as_str() == "sid-1"
                    && claims.expires_at - claims.issued_at == 1800
                    && claims.granted == Scope::Visitor
                    && claims.client_id.as_str() == "demo-app"
            })
            .returning(|_| Ok("signed.jwt.here".into()));
        let mut ledger = MockTokenLedger::new();
        ledger
            .expect_record()
            .withf(|token| token.token_id.as_str() == "jti-1" && token.opaque_token.as_str() == "opaque-1")
            .times(1)
            .returning(|_| Ok(()));

        let grant = service(registry_with(Some(registration(ClientStatus::Active))), ledger, signer)
            .authorize(request())
            .await
            .unwrap();

        assert_eq!(grant.access_token, "signed.jwt.here");
        assert_eq!(grant.expires_in, 1800);
        assert_eq!(grant.scope, Scope::Visitor);
        assert_eq!(grant.session.as_str(), "sid-1");
        assert_eq!(grant.opaque_token.as_str(), "opaque-1");
    }

    #[tokio::test]
    async fn an_unknown_client_is_refused_without_signing_anything() {
        let result =
            service(registry_with(None), ledger_never_called(), signer_never_called()).authorize(request()).await;
        assert!(matches!(result, Err(AuthorizeError::Unauthorized(ClientRefusal::Unknown))));
    }

    #[tokio::test]
    async fn a_disabled_client_is_refused() {
        let result = service(
            registry_with(Some(registration(ClientStatus::Disabled))),
            ledger_never_called(),
            signer_never_called(),
        )
        .authorize(request())
        .await;
        assert!(matches!(result, Err(AuthorizeError::Unauthorized(ClientRefusal::Disabled))));
    }

    #[tokio::test]
    async fn a_client_calling_from_another_channel_than_registered_is_refused() {
        let mut other_channel = request();
        other_channel.scope = scope("WEB");
        let result = service(
            registry_with(Some(registration(ClientStatus::Active))),
            ledger_never_called(),
            signer_never_called(),
        )
        .authorize(other_channel)
        .await;
        assert!(matches!(result, Err(AuthorizeError::Unauthorized(ClientRefusal::RegistrationMismatch))));
    }

    #[tokio::test]
    async fn a_redirect_uri_must_match_a_registered_one_exactly() {
        let mut near_miss = request();
        near_miss.redirect_uri = Some("https://app.example.mx/cb/".into());
        let result = service(
            registry_with(Some(registration(ClientStatus::Active))),
            ledger_never_called(),
            signer_never_called(),
        )
        .authorize(near_miss)
        .await;
        assert!(matches!(result, Err(AuthorizeError::RedirectUriNotRegistered)));
    }

    #[tokio::test]
    async fn no_token_is_handed_out_when_its_record_cannot_be_stored() {
        let mut signer = MockTokenSigner::new();
        signer.expect_sign().returning(|_| Ok("signed".into()));
        let mut ledger = MockTokenLedger::new();
        ledger.expect_record().returning(|_| Err(StoreUnavailable::new("disk full")));
        let result =
            service(registry_with(Some(registration(ClientStatus::Active))), ledger, signer).authorize(request()).await;
        assert!(matches!(result, Err(AuthorizeError::Unavailable(_))));
    }
}
