//! What the handlers share, and the one way they reach it ([`AppState::of`]).

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{HttpRequest, web};
use domain::ports::{ProofNonces, RequestLimiter};
use domain::services::atm_feed::AtmChangeFeed;
use domain::services::atm_states::{AtmStateEnquiry, AtmStateIntake};
use domain::services::atms::AtmInformation;
use domain::services::authorize::TokenIssuance;
use domain::services::bearer::BearerAuthentication;
use domain::services::keys::KeyPublication;
use domain::services::origins::BrowserOrigins;
use domain::services::outages::ServiceDiscovery;
use domain::services::queue_events::QueueEventIntake;
use domain::services::revocation::TokenRevocation;
use domain::services::systems::{SystemAuthentication, SystemTokenIssuance};
use domain::services::wait_times::WaitTimeEnquiry;

use crate::caller::TrustedProxies;
use crate::errors::{ApiError, Operation, Unwired};
use crate::readiness::Readiness;

/// What the handlers share: the domain's use cases (as traits, so a test gives mocks),
/// readiness, the request limits, and the few settings the wire needs.
pub struct AppState {
    /// Token issuance.
    pub tokens: Arc<dyn TokenIssuance>,
    /// Revocations apps ask for (RFC 7009).
    pub revocation: Arc<dyn TokenRevocation>,
    /// Tokens for the bank's systems (client credentials).
    pub system_tokens: Arc<dyn SystemTokenIssuance>,
    /// The check of a bank system's token.
    pub system_bearer: Arc<dyn SystemAuthentication>,
    /// Queue events posted by the branches' systems.
    pub queue_events: Arc<dyn QueueEventIntake>,
    /// State events posted by the ATM monitoring.
    pub atm_state_events: Arc<dyn AtmStateIntake>,
    /// The ATMs' states, as apps read them.
    pub atm_states: Arc<dyn AtmStateEnquiry>,
    /// The ATMs' change feed.
    pub atm_changes: Arc<dyn AtmChangeFeed>,
    /// Bearer checks.
    pub bearer: Arc<dyn BearerAuthentication>,
    /// Wait times.
    pub wait_times: Arc<dyn WaitTimeEnquiry>,
    /// ATM information.
    pub atms: Arc<dyn AtmInformation>,
    /// The JWKS.
    pub keys: Arc<dyn KeyPublication>,
    /// The authorization server's metadata document (RFC 8414), made once
    /// ([`crate::meta::server_metadata`]).
    pub server_metadata: String,
    /// The origins browser pages may call from.
    pub origins: Arc<dyn BrowserOrigins>,
    /// The service's published status and planned outages.
    pub discovery: Arc<dyn ServiceDiscovery>,
    /// The JWKS's `Cache-Control` (`public, max-age=<--jwks-max-age-seconds>`): a
    /// rotated key signs only after this has run out (`keys rotate`).
    pub jwks_cache_control: header::HeaderValue,
    /// Readiness, and whether the service is draining before it stops.
    pub readiness: Arc<Readiness>,
    /// The request limits.
    pub limits: Arc<dyn RequestLimiter>,
    /// Whose forwarding headers name the caller.
    pub proxies: TrustedProxies,
    /// Where clients reach the service, for absolute links.
    pub public_base_url: String,
    /// How long a request body may take to arrive.
    pub body_timeout: std::time::Duration,
    /// Server nonces for DPoP proofs, when `serve --dpop-nonce` asks for them: every
    /// answer to a request with a proof then carries a fresh one (RFC 9449 §8.2).
    pub dpop_nonces: Option<Arc<dyn ProofNonces>>,
}

impl AppState {
    /// The state of the application serving `request`, borrowed. `web::Data` as a
    /// handler argument clones one `Arc` that every worker thread shares and drops it
    /// after the answer: two atomic writes a request to a cache line the cores pass back
    /// and forth (0.5 % of the service's CPU under load on the wait-time operation,
    /// `perf`, issue 25).
    ///
    /// # Errors
    /// When no state was registered with the application: a wiring fault.
    pub fn of(request: &HttpRequest) -> Result<&Self, Unwired> {
        request
            .app_data::<web::Data<Self>>()
            .map(|data| data.get_ref())
            .ok_or(Unwired("no application state is registered"))
    }

    /// [`Self::of`] for a handler of operation `Op`: without a state it answers that
    /// operation's wiring fault (500, in its body shape).
    ///
    /// # Errors
    /// When no state was registered with the application.
    pub fn serving<Op: Operation>(request: &HttpRequest) -> Result<&Self, ApiError> {
        Self::of(request).map_err(|unwired| ApiError::of::<Op>(unwired, request))
    }
}
