//! The ports the operations use on their request paths.

use std::sync::Arc;

use async_trait::async_trait;

use super::StoreUnavailable;
use crate::atm_catalog::AtmCatalog;
use crate::branch::{BranchId, WaitTimeEstimate};
use crate::client::{ChannelScope, ClientId, ClientRegistration};
use crate::dpop::{DpopPolicy, ProofClaims, ProofRefusal};
use crate::limits::{Admission, LimitCheck};
use crate::system::{AssertionClaims, AssertionRefusal, PublicKeySet, SystemAccessClaims};
use crate::token::{AccessClaims, IssuedToken, TokenId};

/// The registry of client applications.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ClientRegistry: Send + Sync {
    /// The registration of `client_id`, or `None` if no such client was ever registered.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the registry cannot be read; never for an unknown id.
    async fn find(&self, client_id: &ClientId) -> Result<Option<ClientRegistration>, StoreUnavailable>;

    /// The DPoP policy of `client_id` when it is registered and active; `None` when it
    /// is unknown or disabled: a disabled client's tokens are refused whenever they
    /// were issued.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the registry cannot be read; an unknown id is `Ok(None)`.
    async fn active_policy(&self, client_id: &ClientId) -> Result<Option<DpopPolicy>, StoreUnavailable>;

    /// Whether some active client allows pages at `origin` to call the API
    /// ([`ClientRegistration::allows_origin`]): a browser's preflight names no client.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the registry cannot be read.
    async fn origin_registered(&self, origin: &str) -> Result<bool, StoreUnavailable>;
}

/// Which (country, business, channel) combinations the bank supports for the
/// wait-time operation.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AccessPolicy: Send + Sync {
    /// Whether calls from `scope` are supported.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the policy cannot be read; an unsupported combination
    /// is `Ok(false)`.
    async fn is_supported(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable>;
}

/// The estimated wait times of branches.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WaitTimeStore: Send + Sync {
    /// The estimates of those `branches` that the store knows, with when each was made,
    /// in the order asked; unknown branches are left out (stale ones are not: how old is
    /// too old is the service's to decide).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the estimates cannot be read.
    async fn wait_times(&self, branches: &[BranchId]) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable>;
}

/// The current ATM set.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmDirectory: Send + Sync {
    /// The ATM set as last loaded, ready to serve.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the set cannot be read, or when what is held can no
    /// longer be vouched for because the store has not answered for too long.
    async fn catalog(&self) -> Result<Arc<AtmCatalog>, StoreUnavailable>;
}

/// The ATMs' states, as an instance holds them to serve.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmStateDirectory: Send + Sync {
    /// Every ATM's state as last loaded.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when what is held can no longer be vouched for.
    async fn states(&self) -> Result<Arc<crate::atm_state::AtmStates>, StoreUnavailable>;
}

/// The newest changes of the ATMs' feed, as an instance holds them to serve.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmFeedDirectory: Send + Sync {
    /// The changes held, and the log's identity, floor and head as last read.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when what is held can no longer be vouched for.
    async fn tail(&self) -> Result<Arc<crate::atm_feed::FeedTail>, StoreUnavailable>;
}

/// The server-side record of issued tokens.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TokenLedger: Send + Sync {
    /// Records an issued token. Returns only once the record is durable, so a token the
    /// client holds can always be looked up and revoked.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the record could not be made durable; the token must
    /// then not be handed out.
    async fn record(&self, token: IssuedToken) -> Result<(), StoreUnavailable>;

    /// Whether the token `token_id` has been revoked.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when revocations cannot be read; an unknown id is `Ok(false)`
    /// (its signature was checked before this is asked).
    async fn is_revoked(&self, token_id: &TokenId) -> Result<bool, StoreUnavailable>;

    /// Revokes the token `token_id` at `now`: in the store, so that every instance
    /// refuses it within the refresh bound, and on this instance at once.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the revocation could not be written; then the token is
    /// still valid. An unknown or already revoked token is `Ok(false)`.
    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable>;
}

/// A signed access token could not be produced (a missing or broken signing key).
#[derive(Debug, thiserror::Error)]
#[error("the access token could not be signed: {0}")]
pub struct SigningFailed(pub String);

/// Signs access tokens.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait TokenSigner: Send + Sync {
    /// The compact JWS of `claims`, signed with the current key and naming it in `kid`.
    ///
    /// # Errors
    /// [`SigningFailed`] when no usable signing key is loaded.
    fn sign(&self, claims: &AccessClaims) -> Result<String, SigningFailed>;

    /// The compact JWS of a bank system's token, signed as [`TokenSigner::sign`] signs.
    ///
    /// # Errors
    /// [`SigningFailed`] when no usable signing key is loaded.
    fn sign_system(&self, claims: &SystemAccessClaims) -> Result<String, SigningFailed>;
}

/// An access token was refused. Callers are told only whether it expired or is not valid
/// at all; which check failed is logged, never told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejected {
    /// It was valid and its `exp` has passed: the caller should fetch a new one.
    #[error("the access token expired")]
    Expired,
    /// It is not a token this service issued and still honours; the failed check.
    #[error("the access token was refused: {0}")]
    Invalid(&'static str),
}

impl TokenRejected {
    /// Why, in a few words, for the log and the refusals metric.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Expired => "expired",
            Self::Invalid(reason) => reason,
        }
    }
}

/// Verifies access tokens and publishes the keys that do so.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait TokenVerifier: Send + Sync {
    /// The claims of `token` if its algorithm is the pinned one, its `kid` names a
    /// published key, its signature verifies, and its issuer, audience, `exp` and `nbf`
    /// hold (leeway at most one second).
    ///
    /// # Errors
    /// [`TokenRejected`] for any failure, with the failed check for the log.
    fn verify(&self, token: &str) -> Result<AccessClaims, TokenRejected>;

    /// The claims of a bank system's token, checked as [`TokenVerifier::verify`] checks a
    /// visitor's; a visitor's token is refused here, as a system's is there.
    ///
    /// # Errors
    /// [`TokenRejected`] for any failure, with the failed check for the log.
    fn verify_system(&self, token: &str) -> Result<SystemAccessClaims, TokenRejected>;

    /// The public keys that verify live tokens, as a JWK Set document (RFC 7517 §5).
    fn key_set_document(&self) -> String;
}

/// Whether the service can answer from its store now: what readiness reports.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ServingHealth: Send + Sync {
    /// Whether the store answers and the data held from it is current. Answers within a
    /// bounded time (about half a second), also when the store is stuck.
    async fn can_serve(&self) -> bool;

    /// Whether the data held is current enough to answer reads (wait times, ATMs, bearer
    /// checks), whether or not the store answers now: during a database failover every
    /// instance fails [`can_serve`](Self::can_serve) at once, and a load balancer that
    /// took them all out would refuse reads it could have had answered from memory.
    fn can_serve_reads(&self) -> bool;
}

/// What an instance observes of its own health each refresh, for the status it
/// publishes ([`crate::status`]).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait HealthSignals: Send + Sync {
    /// The facts now. Answers within a bounded time (about half a second), also when
    /// the store is stuck; never fails: what cannot be observed counts as failing.
    async fn observe(&self) -> crate::status::HealthFacts;
}

/// Counts requests against the request limits ([`crate::limits`]), in this instance or where every
/// instance counts them (Redis), so they hold across instances.
pub trait RequestLimiter: Send + Sync {
    /// Counts one request against each of `checks` in order (narrowest first), stopping
    /// at the first that refuses it, so a refused request takes nothing from the later,
    /// wider limits. A limiter counting in this process answers at once
    /// (`Admission::decided`, nothing allocated); one asking elsewhere answers a future.
    ///
    /// # Errors
    /// (Once awaited.) [`LimitError::Exceeded`](crate::limits::LimitError::Exceeded) with the limit that refused the request
    /// and how long to wait; [`LimitError::Unavailable`](crate::limits::LimitError::Unavailable) when the counts cannot be
    /// reached within a few milliseconds: the caller then counts elsewhere or admits,
    /// never refuses everything.
    fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Admission<'a>;
}

/// Reads DPoP proofs (RFC 9449 §4.2) at the JOSE level: the compact JWS, its header and
/// key, its signature, and the presence and types of its claims. What the claims must
/// say of the request is the domain's check ([`crate::services::dpop::DpopCheck`]).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait ProofVerifier: Send + Sync {
    /// The claims of `proof` when its header has `typ` `dpop+jwt`, an `alg` of
    /// [`crate::dpop::PROOF_ALGORITHMS`], and a `jwk` that is a public key of that
    /// algorithm without private members, its signature verifies with that key, and it
    /// carries `jti` (at most [`ProofClaims::MAX_JTI`] bytes), `htm`, `htu` and `iat`.
    ///
    /// # Errors
    /// The first [`ProofRefusal`] that applies.
    fn verify(&self, proof: &str) -> Result<ProofClaims, ProofRefusal>;

    /// The base64url SHA-256 of `access_token`: what a proof sent with it carries as
    /// `ath` (RFC 9449 §4.2).
    fn token_hash(&self, access_token: &str) -> String;
}

/// The proofs seen, so that each is accepted once (RFC 9449 §11.1).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ProofReplays: Send + Sync {
    /// Records `key` (a proof's key thumbprint and `jti`) for at least the proof window
    /// ([`crate::services::dpop::ProofWindow::replay_ttl`]), and says whether it is its
    /// first use in that time. Never fails: a shared cache that cannot answer is stood
    /// in for by the instance's own (docs/security.md says what that allows).
    async fn first_use(&self, key: &str) -> bool;
}

/// Server-issued nonces for DPoP proofs (RFC 9449 §8), valid on every instance that
/// shares the store.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait ProofNonces: Send + Sync {
    /// A nonce to hand out now, or `None` when no key to derive one from is loaded.
    fn issue(&self) -> Option<String>;

    /// Whether `nonce` is one this service issued recently.
    fn accepts(&self, nonce: &str) -> bool;
}

/// Client assertions (RFC 7523 §2.2) read and verified with a system's public keys.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait AssertionVerifier: Send + Sync {
    /// The system an assertion says it comes from (its `sub`), read before anything is
    /// verified, to find the keys to verify it with.
    ///
    /// # Errors
    /// [`AssertionRefusal`] when it is not a JWS with a string `sub`.
    fn claimed_system(&self, assertion: &str) -> Result<String, AssertionRefusal>;

    /// The claims of `assertion` once its signature verifies with one of `keys`.
    ///
    /// # Errors
    /// [`AssertionRefusal`]: malformed, an algorithm not accepted, no matching key, a
    /// signature that does not verify, a required claim missing.
    fn verify(&self, assertion: &str, keys: &PublicKeySet) -> Result<AssertionClaims, AssertionRefusal>;
}
