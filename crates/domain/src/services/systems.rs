//! The bank's systems: registered by operators ([`SystemAdmin`]), given tokens for
//! client credentials proved by a signed assertion ([`SystemTokenService`], RFC 6749
//! §4.4 with RFC 7523 §2.2), and checked at every use of a token ([`SystemBearer`]).

use std::sync::Arc;

use async_trait::async_trait;

use crate::client::ClientStatus;
use crate::ports::{
    AssertionVerifier, Clock, IdGenerator, SigningFailed, StoreUnavailable, SystemRecords, TokenRejected, TokenSigner,
    TokenVerifier,
};
use crate::system::{
    AssertionId, SYSTEM_TOKEN_SECONDS, SystemAccessClaims, SystemChanges, SystemId, SystemRegistration, SystemScope,
    SystemScopes,
};

/// Why an operator's command on a system did nothing.
#[derive(Debug, thiserror::Error)]
pub enum SystemAdminError {
    /// `systems add` with an id already registered.
    #[error("system {0} already exists")]
    AlreadyExists(SystemId),
    /// No system with this id is registered.
    #[error("system {0} does not exist")]
    NotFound(SystemId),
    /// The store could not be read or written; nothing changed.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The operators' commands on systems.
pub struct SystemAdmin {
    systems: Arc<dyn SystemRecords>,
    clock: Arc<dyn Clock>,
}

impl SystemAdmin {
    /// Commands on `systems`.
    pub fn new(systems: Arc<dyn SystemRecords>, clock: Arc<dyn Clock>) -> Self {
        Self { systems, clock }
    }

    /// Registers `system`; an id is registered once.
    ///
    /// # Errors
    /// [`SystemAdminError::AlreadyExists`], or the store's failure.
    pub async fn add(&self, system: &SystemRegistration) -> Result<(), SystemAdminError> {
        if self.systems.insert(system, self.clock.unix_now()).await? {
            Ok(())
        } else {
            Err(SystemAdminError::AlreadyExists(system.id.clone()))
        }
    }

    /// Replaces a system's keys or scopes. New keys take effect at its next assertion;
    /// tokens it holds keep their scopes until they expire (at most
    /// [`SYSTEM_TOKEN_SECONDS`]), unless it is disabled.
    ///
    /// # Errors
    /// [`SystemAdminError::NotFound`], or the store's failure.
    pub async fn update(&self, id: &SystemId, changes: &SystemChanges) -> Result<(), SystemAdminError> {
        if self.systems.change(id, changes).await? { Ok(()) } else { Err(SystemAdminError::NotFound(id.clone())) }
    }

    /// Disables or enables a system: a disabled system gets no token, and its tokens are
    /// refused from the next request on, on every instance.
    ///
    /// # Errors
    /// [`SystemAdminError::NotFound`], or the store's failure.
    pub async fn set_status(&self, id: &SystemId, status: ClientStatus) -> Result<(), SystemAdminError> {
        if self.systems.set_status(id, status).await? { Ok(()) } else { Err(SystemAdminError::NotFound(id.clone())) }
    }

    /// Every system, by id.
    ///
    /// # Errors
    /// The store's failure.
    pub async fn list(&self) -> Result<Vec<SystemRegistration>, StoreUnavailable> {
        self.systems.all().await
    }
}

/// RFC 7523 §2.2's `client_assertion_type`.
pub const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// How far ahead an assertion's `exp` may be: 5 minutes (issue 44), plus the 5 s of
/// clock skew the service allows a proof or an event.
pub const LONGEST_ASSERTION_SECONDS: i64 = 5 * 60 + 5;
/// Clock skew allowed on an assertion's `nbf` and `iat`.
const SKEW_SECONDS: i64 = 5;

/// A client-credentials token request, as the form gave it (`grant_type` already
/// `client_credentials`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientCredentials {
    /// `client_assertion_type`.
    pub assertion_type: Option<String>,
    /// `client_assertion`.
    pub assertion: Option<String>,
    /// `client_id`, optional with an assertion (RFC 7521 §4.2); must name the same system.
    pub client_id: Option<String>,
    /// `scope`, a subset of the system's; all of them when absent.
    pub scope: Option<String>,
}

/// A token issued to a system (RFC 6749 §5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemToken {
    /// The access token, a JWT.
    pub access_token: String,
    /// Its lifetime, in seconds.
    pub expires_in: i64,
    /// The scopes granted.
    pub scopes: SystemScopes,
}

/// Why a system got no token: RFC 6749 §5.2's errors, and the service's own failures.
#[derive(Debug, thiserror::Error)]
pub enum SystemTokenError {
    /// A parameter is missing, repeated or not understood (`invalid_request`).
    #[error("{0}")]
    InvalidRequest(&'static str),
    /// The assertion does not authenticate a registered, active system
    /// (`invalid_client`, 401): the reason, told to the caller.
    #[error("{0}")]
    InvalidClient(String),
    /// The scope asked for is unknown or not the system's (`invalid_scope`).
    #[error("the scope asked for is not one this system may have")]
    InvalidScope,
    /// The store could not be read or written: try again.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
    /// No key signs now.
    #[error(transparent)]
    SigningFailed(#[from] SigningFailed),
}

/// The client-credentials grant for systems (`POST /api/v1/token`).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SystemTokenIssuance: Send + Sync {
    /// A token for the system `request`'s assertion authenticates.
    ///
    /// # Errors
    /// [`SystemTokenError`].
    async fn issue(&self, request: &ClientCredentials) -> Result<SystemToken, SystemTokenError>;
}

/// Issues systems' tokens: the assertion verified with the system's registered keys,
/// its claims checked, its `jti` used once on every instance (through the store).
pub struct SystemTokenService {
    systems: Arc<dyn SystemRecords>,
    assertions: Arc<dyn AssertionVerifier>,
    signer: Arc<dyn TokenSigner>,
    ids: Arc<dyn IdGenerator>,
    clock: Arc<dyn Clock>,
    /// The audiences an assertion may name: the issuer and the token endpoint's URL.
    audiences: Vec<String>,
}

impl SystemTokenService {
    /// The grant, accepting assertions whose `aud` names one of `audiences`.
    pub fn new(
        systems: Arc<dyn SystemRecords>,
        assertions: Arc<dyn AssertionVerifier>,
        signer: Arc<dyn TokenSigner>,
        ids: Arc<dyn IdGenerator>,
        clock: Arc<dyn Clock>,
        audiences: Vec<String>,
    ) -> Self {
        Self { systems, assertions, signer, ids, clock, audiences }
    }
}

#[async_trait]
impl SystemTokenIssuance for SystemTokenService {
    async fn issue(&self, request: &ClientCredentials) -> Result<SystemToken, SystemTokenError> {
        let refused = |why: &str| SystemTokenError::InvalidClient(why.to_owned());
        match request.assertion_type.as_deref() {
            None => return Err(SystemTokenError::InvalidRequest("client_assertion_type is required")),
            Some(JWT_BEARER_ASSERTION) => {}
            Some(_) => {
                return Err(SystemTokenError::InvalidRequest(
                    "client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                ));
            }
        }
        let assertion =
            request.assertion.as_deref().ok_or(SystemTokenError::InvalidRequest("client_assertion is required"))?;
        let asked = request
            .scope
            .as_deref()
            .map(|scope| SystemScopes::parse(scope).map_err(|_| SystemTokenError::InvalidScope))
            .transpose()?;
        let claimed = self.assertions.claimed_system(assertion).map_err(|e| refused(&e.to_string()))?;
        let id = SystemId::parse(&claimed).map_err(|_| refused("the client assertion's sub is not a system id"))?;
        if request.client_id.as_deref().is_some_and(|client_id| client_id != id.as_str()) {
            return Err(refused("client_id differs from the client assertion's sub"));
        }
        let unknown = || refused("no active system has this id");
        let system = self.systems.find(&id).await?.ok_or_else(unknown)?;
        if system.status == ClientStatus::Disabled {
            return Err(unknown());
        }
        let claims = self.assertions.verify(assertion, &system.keys).map_err(|e| refused(&e.to_string()))?;
        if claims.issuer != claims.subject {
            return Err(refused("the client assertion's iss differs from its sub"));
        }
        if !claims.audiences.iter().any(|aud| self.audiences.contains(aud)) {
            return Err(refused("the client assertion's aud names neither the issuer nor the token endpoint"));
        }
        let now = self.clock.unix_now();
        if claims.expires_at <= now {
            return Err(refused("the client assertion has expired"));
        }
        if claims.expires_at > now + LONGEST_ASSERTION_SECONDS {
            return Err(refused("the client assertion's exp is more than 5 minutes ahead"));
        }
        if claims.not_before.is_some_and(|nbf| nbf > now + SKEW_SECONDS)
            || claims.issued_at.is_some_and(|iat| iat > now + SKEW_SECONDS)
        {
            return Err(refused("the client assertion is dated ahead of the service's clock"));
        }
        let jti = AssertionId::parse(&claims.jti)
            .ok_or_else(|| refused("the client assertion's jti must be 1 to 255 bytes with no control character"))?;
        let scopes = match asked {
            Some(asked) if asked.is_within(&system.scopes) => asked,
            Some(_) => return Err(SystemTokenError::InvalidScope),
            None => system.scopes.clone(),
        };
        if !self.systems.use_assertion(&id, &jti, claims.expires_at).await? {
            return Err(refused("this client assertion was used before"));
        }
        let token = SystemAccessClaims {
            system: id,
            scopes: scopes.clone(),
            token_id: self.ids.token_id(),
            issued_at: now,
            expires_at: now + SYSTEM_TOKEN_SECONDS,
        };
        let access_token = self.signer.sign_system(&token)?;
        Ok(SystemToken { access_token, expires_in: SYSTEM_TOKEN_SECONDS, scopes })
    }
}

/// Why a system's token was refused at an operation.
#[derive(Debug, thiserror::Error)]
pub enum SystemBearerError {
    /// Missing, not valid, expired, a visitor's, or its system disabled or gone
    /// (`invalid_token`, 401).
    #[error("{0}")]
    InvalidToken(TokenRejected),
    /// Valid, without the scope the operation needs (`insufficient_scope`, 403).
    #[error("the token lacks the scope {}", .0.as_str())]
    InsufficientScope(SystemScope),
    /// The store could not say whether the system is active.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The check of a system's bearer token at the systems' operations.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SystemAuthentication: Send + Sync {
    /// The system `token` authenticates, if it is valid, its system active, and it
    /// carries `needed`.
    ///
    /// # Errors
    /// [`SystemBearerError`].
    async fn authenticate(&self, token: &str, needed: SystemScope) -> Result<SystemId, SystemBearerError>;
}

/// Checks systems' tokens; the system's status is read from the store at every use, so
/// a system disabled on one instance is refused at once on every other.
pub struct SystemBearer {
    systems: Arc<dyn SystemRecords>,
    verifier: Arc<dyn TokenVerifier>,
}

impl SystemBearer {
    /// Checks with `verifier`, the status in `systems`.
    pub fn new(systems: Arc<dyn SystemRecords>, verifier: Arc<dyn TokenVerifier>) -> Self {
        Self { systems, verifier }
    }
}

#[async_trait]
impl SystemAuthentication for SystemBearer {
    async fn authenticate(&self, token: &str, needed: SystemScope) -> Result<SystemId, SystemBearerError> {
        let claims = self.verifier.verify_system(token).map_err(SystemBearerError::InvalidToken)?;
        let active = self.systems.find(&claims.system).await?.is_some_and(|s| s.status == ClientStatus::Active);
        if !active {
            return Err(SystemBearerError::InvalidToken(TokenRejected::Invalid("its system is disabled or gone")));
        }
        if !claims.scopes.contains(needed) {
            return Err(SystemBearerError::InsufficientScope(needed));
        }
        Ok(claims.system)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{MockAssertionVerifier, MockIdGenerator, MockSystemRecords, MockTokenSigner};
    use crate::system::{AssertionClaims, AssertionRefusal, PublicKeySet};
    use crate::testing::ManualClock;
    use crate::token::TokenId;

    const NOW: i64 = 1_800_000_000;

    fn registration(status: ClientStatus) -> SystemRegistration {
        SystemRegistration {
            id: SystemId::parse("queue-1").unwrap(),
            keys: PublicKeySet::checked(r#"{"keys":[]}"#.to_owned(), 1),
            scopes: SystemScopes::parse("queue:write").unwrap(),
            status,
        }
    }

    fn good_claims() -> AssertionClaims {
        AssertionClaims {
            issuer: "queue-1".into(),
            subject: "queue-1".into(),
            audiences: vec!["https://api.example".into()],
            expires_at: NOW + 60,
            not_before: None,
            issued_at: Some(NOW),
            jti: "j-1".into(),
        }
    }

    fn request() -> ClientCredentials {
        ClientCredentials {
            assertion_type: Some(JWT_BEARER_ASSERTION.into()),
            assertion: Some("a.b.c".into()),
            client_id: None,
            scope: None,
        }
    }

    /// The service over a registered `status` system whose assertion claims `claims`,
    /// its jti new when `first_use`.
    fn service(
        status: ClientStatus,
        claims: Result<AssertionClaims, AssertionRefusal>,
        first_use: bool,
    ) -> SystemTokenService {
        let mut systems = MockSystemRecords::new();
        systems.expect_find().returning(move |_| Ok(Some(registration(status))));
        systems.expect_use_assertion().returning(move |_, _, _| Ok(first_use));
        let mut assertions = MockAssertionVerifier::new();
        assertions.expect_claimed_system().returning(|_| Ok("queue-1".into()));
        assertions.expect_verify().returning(move |_, _| claims.clone());
        let mut signer = MockTokenSigner::new();
        signer.expect_sign_system().returning(|claims| Ok(format!("token-for-{}", claims.system)));
        let mut ids = MockIdGenerator::new();
        ids.expect_token_id().returning(|| TokenId::new("t".repeat(26)));
        SystemTokenService::new(
            Arc::new(systems),
            Arc::new(assertions),
            Arc::new(signer),
            Arc::new(ids),
            Arc::new(ManualClock::at(time::OffsetDateTime::from_unix_timestamp(NOW).unwrap())),
            vec!["https://api.example".into(), "https://api.example/api/v1/token".into()],
        )
    }

    fn refusal(result: Result<SystemToken, SystemTokenError>) -> String {
        match result {
            Err(SystemTokenError::InvalidClient(why)) => why,
            other => panic!("expected invalid_client, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_valid_assertion_gets_a_token_with_the_systems_scopes() {
        let token = service(ClientStatus::Active, Ok(good_claims()), true).issue(&request()).await.unwrap();
        assert_eq!(token.access_token, "token-for-queue-1");
        assert_eq!(token.expires_in, 900);
        assert_eq!(token.scopes.to_string(), "queue:write");
    }

    #[tokio::test]
    async fn every_check_of_the_assertion_refuses_as_invalid_client_with_its_reason() {
        let with = |change: fn(&mut AssertionClaims)| {
            let mut claims = good_claims();
            change(&mut claims);
            claims
        };
        let cases = [
            (with(|c| c.issuer = "other".into()), "iss differs"),
            (with(|c| c.audiences = vec!["https://elsewhere".into()]), "aud names neither"),
            (with(|c| c.expires_at = NOW), "has expired"),
            (with(|c| c.expires_at = NOW + 306), "more than 5 minutes ahead"),
            (with(|c| c.not_before = Some(NOW + 6)), "dated ahead"),
            (with(|c| c.jti = String::new()), "jti must be"),
        ];
        for (claims, expected) in cases {
            let why = refusal(service(ClientStatus::Active, Ok(claims), true).issue(&request()).await);
            assert!(why.contains(expected), "{why} / {expected}");
        }
        let replay = refusal(service(ClientStatus::Active, Ok(good_claims()), false).issue(&request()).await);
        assert_eq!(replay, "this client assertion was used before");
        let disabled = refusal(service(ClientStatus::Disabled, Ok(good_claims()), true).issue(&request()).await);
        assert_eq!(disabled, "no active system has this id");
        let forged =
            refusal(service(ClientStatus::Active, Err(AssertionRefusal::Signature), true).issue(&request()).await);
        assert_eq!(forged, "the client assertion's signature does not verify");
        let other_id = ClientCredentials { client_id: Some("queue-2".into()), ..request() };
        assert!(
            refusal(service(ClientStatus::Active, Ok(good_claims()), true).issue(&other_id).await)
                .contains("client_id")
        );
    }

    #[tokio::test]
    async fn a_missing_parameter_is_invalid_request_and_a_scope_not_the_systems_invalid_scope() {
        let service = service(ClientStatus::Active, Ok(good_claims()), true);
        let no_type = ClientCredentials { assertion_type: None, ..request() };
        assert!(matches!(service.issue(&no_type).await, Err(SystemTokenError::InvalidRequest(_))));
        let wrong_type = ClientCredentials { assertion_type: Some("urn:other".into()), ..request() };
        assert!(matches!(service.issue(&wrong_type).await, Err(SystemTokenError::InvalidRequest(_))));
        let no_assertion = ClientCredentials { assertion: None, ..request() };
        assert!(matches!(service.issue(&no_assertion).await, Err(SystemTokenError::InvalidRequest(_))));
        let unknown_scope = ClientCredentials { scope: Some("visitor".into()), ..request() };
        assert!(matches!(service.issue(&unknown_scope).await, Err(SystemTokenError::InvalidScope)));
        let asked = ClientCredentials { scope: Some("queue:write".into()), ..request() };
        assert_eq!(service.issue(&asked).await.unwrap().scopes.to_string(), "queue:write");
    }

    #[tokio::test]
    async fn a_systems_token_is_refused_once_its_system_is_disabled() {
        let claims = SystemAccessClaims {
            system: SystemId::parse("queue-1").unwrap(),
            scopes: SystemScopes::parse("queue:write").unwrap(),
            token_id: TokenId::new("t".repeat(26)),
            issued_at: NOW,
            expires_at: NOW + 900,
        };
        let bearer = |status: ClientStatus| {
            let mut systems = MockSystemRecords::new();
            systems.expect_find().returning(move |_| Ok(Some(registration(status))));
            let mut verifier = crate::ports::MockTokenVerifier::new();
            let claims = claims.clone();
            verifier.expect_verify_system().returning(move |_| Ok(claims.clone()));
            SystemBearer::new(Arc::new(systems), Arc::new(verifier))
        };
        let active = bearer(ClientStatus::Active).authenticate("t", SystemScope::QueueWrite).await.unwrap();
        assert_eq!(active.as_str(), "queue-1");
        let disabled = bearer(ClientStatus::Disabled).authenticate("t", SystemScope::QueueWrite).await;
        assert!(matches!(disabled, Err(SystemBearerError::InvalidToken(_))));
    }
}
