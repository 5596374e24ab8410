//! The HTTP layer on mocked use cases, in process, without a store: every error variant
//! of every operation becomes its status, wire `code` and body, and the successes their
//! wire shape. The status of each is chosen in `api::errors` only: these tests would fail
//! if a handler chose one of its own.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service as _, ServiceResponse};
use actix_web::http::header::HeaderValue;
use actix_web::{App, test, web};
use api::AppState;
use api::caller::TrustedProxies;
use api::middleware::Observer;
use api::readiness::Readiness;
use domain::atm_catalog::AtmCatalog;
use domain::branch::{BranchId, BranchWaitTime, WaitTime};
use domain::limits::{Admission, Limit, LimitCheck, LimitExceeded};
use domain::ports::{MockServingHealth, RequestLimiter, SigningFailed, StoreUnavailable};
use domain::services::atm_feed::MockAtmChangeFeed;
use domain::services::atm_states::{MockAtmStateEnquiry, MockAtmStateIntake};
use domain::services::atms::{AtmSnapshot, ListAtmsError, MockAtmInformation};
use domain::services::authorize::{AuthorizeError, ClientRefusal, MockTokenIssuance};
use domain::services::bearer::{BearerError, MockBearerAuthentication};
use domain::services::keys::MockKeyPublication;
use domain::services::origins::MockBrowserOrigins;
use domain::services::outages::MockServiceDiscovery;
use domain::services::posts::{PostEventsError, RejectedEvent};
use domain::services::queue_events::{MockQueueEventIntake, PostedEvents};
use domain::services::revocation::{MockTokenRevocation, RevocationError, RevocationOutcome};
use domain::services::systems::{
    MockSystemAuthentication, MockSystemTokenIssuance, SystemBearerError, SystemToken, SystemTokenError,
};
use domain::services::wait_times::{MockWaitTimeEnquiry, RetrieveWaitTimesError};
use domain::status::{ServiceCondition, ServiceStatus};
use domain::token::{OpaqueToken, Scope, SessionId, TokenGrant};
use serde_json::Value;

const UUID: &str = "3fa85f64-5717-4562-b3fc-2c963f66afa6";
const CLIENT: &str = "demo-mobile-app";
/// A session id as authorize makes them.
const SID: &str = "iQOkyUaPa-f1kLBq4Bamag";
const WAIT_TIMES: &str = "/api/v1/open-banking/channels/branch/waittime/retrieve";
const AUTHORIZE: &str =
    "/api/v1/authorize?response_type=token&client_id=demo-mobile-app&businessCode=GCB&countryCode=MX&channelId=MOBILE";

/// The status and outages of a service that is well and plans nothing.
fn discovery() -> MockServiceDiscovery {
    let mut discovery = MockServiceDiscovery::new();
    discovery.expect_status().returning(|| ServiceStatus {
        condition: ServiceCondition::Ok,
        explanation: None,
        detection_time: None,
        expected_resolution_time: None,
        update_time: 1_800_000_000,
    });
    discovery.expect_planned_outages().returning(Vec::new);
    discovery
}

/// The mocks a test sets up; every use case is a mock that fails the test if it is
/// called without an expectation.
#[derive(Default)]
struct Mocks {
    tokens: MockTokenIssuance,
    revocation: MockTokenRevocation,
    bearer: MockBearerAuthentication,
    wait_times: MockWaitTimeEnquiry,
    atms: MockAtmInformation,
    keys: MockKeyPublication,
    system_tokens: MockSystemTokenIssuance,
    system_bearer: MockSystemAuthentication,
    queue_events: MockQueueEventIntake,
    atm_state_events: MockAtmStateIntake,
    atm_states: MockAtmStateEnquiry,
    atm_changes: MockAtmChangeFeed,
    /// Token requests past the first refused for their caller (else every request
    /// admitted).
    one_token_request: bool,
    /// Whether the store answers and whether the data held is current (both by default).
    health: Option<(bool, bool)>,
}

impl Mocks {
    /// Bearer checks that let the demo client's session [`SID`] through.
    fn admitting() -> Self {
        let mut mocks = Self::default();
        mocks.bearer.expect_authenticate().returning(|_, _, _, _| Ok(domain::testing::claims(CLIENT, SID, 0, 1800)));
        mocks
    }

    /// Bearer checks that end in `error`.
    fn refusing(error: fn() -> BearerError) -> Self {
        let mut mocks = Self::default();
        mocks.bearer.expect_authenticate().returning(move |_, _, _, _| Err(error()));
        mocks
    }

    fn state(self) -> web::Data<AppState> {
        let (answers, current) = self.health.unwrap_or((true, true));
        let mut health = MockServingHealth::new();
        health.expect_can_serve().returning(move || answers && current);
        health.expect_can_serve_reads().returning(move || current);
        let mut origins = MockBrowserOrigins::new();
        origins.expect_any_client_allows().returning(|_| Ok(false));
        origins.expect_client_allows().returning(|_, _| Ok(false));
        web::Data::new(AppState {
            tokens: Arc::new(self.tokens),
            revocation: Arc::new(self.revocation),
            system_tokens: Arc::new(self.system_tokens),
            system_bearer: Arc::new(self.system_bearer),
            queue_events: Arc::new(self.queue_events),
            atm_state_events: Arc::new(self.atm_state_events),
            atm_states: Arc::new(self.atm_states),
            atm_changes: Arc::new(self.atm_changes),
            bearer: Arc::new(self.bearer),
            wait_times: Arc::new(self.wait_times),
            atms: Arc::new(self.atms),
            keys: Arc::new(self.keys),
            server_metadata: api::meta::server_metadata("https://api.example.mx"),
            origins: Arc::new(origins),
            discovery: Arc::new(discovery()),
            jwks_cache_control: HeaderValue::from_static("public, max-age=300"),
            readiness: Arc::new(Readiness::new(Arc::new(health))),
            limits: Arc::new(Limiter { one_token_request: self.one_token_request, seen: AtomicBool::new(false) }),
            proxies: TrustedProxies::default(),
            public_base_url: "https://api.example.mx".to_owned(),
            body_timeout: Duration::from_secs(5),
            dpop_nonces: None,
        })
    }

    /// Sends `request` to the HTTP layer wired to these mocks, with its middleware.
    async fn call(self, request: test::TestRequest) -> Answer {
        let state = self.state();
        let observer = Arc::new(Observer::new(Arc::clone(&state.readiness), None, false));
        let app = test::init_service(
            App::new()
                .wrap(actix_web::middleware::from_fn(move |request, next| {
                    api::middleware::observe(Arc::clone(&observer), request, next)
                }))
                .wrap(api::middleware::security_headers())
                .app_data(state)
                .configure(api::routes)
                .configure(api::well_known_routes("https://api.example.mx"))
                .default_service(web::to(api::not_found)),
        )
        .await;
        answer(app.call(request.to_request()).await.unwrap()).await
    }
}

/// The request limits: every request admitted, or token requests past the first
/// refused for their caller.
struct Limiter {
    one_token_request: bool,
    seen: AtomicBool,
}

impl RequestLimiter for Limiter {
    fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Admission<'a> {
        let token_request = checks.iter().any(|check| check.limit() == Limit::IssuePerCaller);
        if self.one_token_request && token_request && self.seen.swap(true, Ordering::Relaxed) {
            let wait = Duration::from_millis(300);
            return Admission::decided(Err(LimitExceeded { limit: Limit::IssuePerCaller, wait }.into()));
        }
        Admission::decided(Ok(()))
    }
}

/// A response's status, JSON body (`null` when empty) and headers by lower-case name.
type Answer = (u16, Value, HashMap<String, String>);

async fn answer<B: MessageBody>(response: ServiceResponse<B>) -> Answer {
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap().to_owned()))
        .collect();
    let body = test::read_body(response).await;
    let json = if body.is_empty() { Value::Null } else { serde_json::from_slice(&body).unwrap() };
    (status, json, headers)
}

fn bearer_get(uri: &str) -> test::TestRequest {
    test::TestRequest::get()
        .uri(uri)
        .insert_header(("Authorization", "Bearer token"))
        .insert_header(("client_id", CLIENT))
        .insert_header(("uuid", UUID))
}

/// The headers of a valid wait-time call, its bearer token and session included.
fn wait_time_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Authorization", "Bearer token"),
        ("client_id", CLIENT),
        ("uuid", UUID),
        ("Accept", "application/json"),
        ("Content-Type", "application/json"),
        ("countryCode", "MX"),
        ("businessCode", "GCB"),
        ("ChannelId", "MOBILE"),
        ("sid", SID),
    ]
}

/// A wait-time call with every header but those named in `without`, and no body yet.
fn wait_time_request(without: &[&str]) -> test::TestRequest {
    let mut request = test::TestRequest::post().uri(WAIT_TIMES);
    for (name, value) in wait_time_headers() {
        if !without.iter().any(|skip| skip.eq_ignore_ascii_case(name)) {
            request = request.insert_header((name, value));
        }
    }
    request
}

fn wait_times_post(body: &str) -> test::TestRequest {
    wait_time_request(&[]).set_payload(body.to_owned())
}

/// An error a use case answers, and the status, wire `code` and `location` it must become.
type Case<E> = (fn() -> E, u16, &'static str, Option<&'static str>);

const ONE_BRANCH: &str = r#"{"branches":[{"branchId":"00001"}]}"#;

fn grant() -> TokenGrant {
    TokenGrant {
        access_token: "a.b.c".into(),
        expires_in: 1800,
        scope: Scope::Visitor,
        opaque_token: OpaqueToken::new("opaque".into()),
        session: SessionId::new("sid-1".into()),
        bound: false,
    }
}

fn token_error_case(error: fn() -> AuthorizeError) -> Mocks {
    let mut mocks = Mocks::default();
    mocks.tokens.expect_authorize().returning(move |_| Err(error()));
    mocks
}

#[actix_web::test]
async fn every_authorize_error_has_its_status_code_and_token_body() {
    let cases: [Case<AuthorizeError>; 6] = [
        (|| AuthorizeError::Unauthorized(ClientRefusal::Unknown), 401, "unAuthorized", None),
        (|| AuthorizeError::Unauthorized(ClientRefusal::Disabled), 401, "unAuthorized", None),
        (|| AuthorizeError::Unauthorized(ClientRefusal::RegistrationMismatch), 401, "unAuthorized", None),
        (|| AuthorizeError::RedirectUriNotRegistered, 400, "invalidRequest", Some("redirect_uri")),
        (|| AuthorizeError::Unavailable(StoreUnavailable::new("down")), 500, "serverUnavailable", None),
        (|| AuthorizeError::SigningFailed(SigningFailed("no key".into())), 500, "serverUnavailable", None),
    ];
    for (error, status, code, location) in cases {
        let request = test::TestRequest::get().uri(AUTHORIZE).insert_header(("uuid", UUID));
        let (got, body, headers) = token_error_case(error).call(request).await;
        assert_eq!((got, body["code"].as_str(), body["location"].as_str()), (status, Some(code), location), "{body}");
        assert!(body["details"].is_string() && body["timestamp"].is_string(), "the token body: {body}");
        assert!(body.get("type").is_none() && body.get("uuid").is_none(), "not ErrorResponse: {body}");
        assert_eq!(headers["cache-control"], "no-store");
        assert!(!body.to_string().contains("down") && !body.to_string().contains("no key"), "nothing internal");
    }
}

#[actix_web::test]
async fn a_token_is_answered_in_the_specs_shape_with_its_session() {
    let mut mocks = Mocks::default();
    mocks.tokens.expect_authorize().returning(|_| Ok(grant()));
    let request = test::TestRequest::get().uri(&format!("{AUTHORIZE}&state=xyz")).insert_header(("uuid", UUID));
    let (status, body, headers) = mocks.call(request).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        serde_json::json!({"access_token":"a.b.c","token_type":"Bearer","expires_in":"1800","scope":"visitor","opaque_token":"opaque"})
    );
    assert_eq!((headers["sid"].as_str(), headers["state"].as_str()), ("sid-1", "xyz"));
    assert_eq!(headers["uuid"], UUID);
}

#[actix_web::test]
async fn a_bad_request_or_a_limit_is_answered_before_any_use_case_is_called() {
    let no_uuid = test::TestRequest::get().uri(AUTHORIZE);
    let (status, body, _) = Mocks::default().call(no_uuid).await;
    assert_eq!((status, body["code"].as_str(), body["location"].as_str()), (400, Some("invalidRequest"), Some("uuid")));

    let mut mocks = Mocks::default();
    mocks.tokens.expect_authorize().times(1).returning(|_| Ok(grant()));
    mocks.one_token_request = true;
    let state = mocks.state();
    let app = test::init_service(App::new().app_data(state).configure(api::routes)).await;
    let first = app.call(test::TestRequest::get().uri(AUTHORIZE).insert_header(("uuid", UUID)).to_request()).await;
    assert_eq!(first.unwrap().status(), 200);
    let second = app.call(test::TestRequest::get().uri(AUTHORIZE).insert_header(("uuid", UUID)).to_request()).await;
    let (status, body, headers) = answer(second.unwrap()).await;
    assert_eq!((status, body["code"].as_str()), (429, Some("tooManyRequests")));
    assert_eq!(headers["retry-after"], "1", "whole seconds, rounded up");
}

fn revocation_post(form: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/v1/revoke")
        .insert_header(("Content-Type", "application/x-www-form-urlencoded"))
        .set_payload(form.to_owned())
}

#[actix_web::test]
async fn a_revocation_is_a_bodyless_200_whatever_it_found() {
    for outcome in [RevocationOutcome::Revoked, RevocationOutcome::AlreadyRevoked, RevocationOutcome::NoSuchToken] {
        let mut mocks = Mocks::default();
        mocks
            .revocation
            .expect_revoke()
            .withf(|token, client| token == "a.b.c" && client.as_str() == CLIENT)
            .times(1)
            .returning(move |_, _| Ok(outcome));
        let form = format!("token=a.b.c&client_id={CLIENT}&token_type_hint=access_token&unknown=ignored");
        let (status, body, headers) = mocks.call(revocation_post(&form)).await;
        assert_eq!((status, &body), (200, &Value::Null), "{outcome:?}");
        assert_eq!(headers["cache-control"], "no-store");
    }
}

#[actix_web::test]
async fn every_revocation_error_has_its_status_and_rfc_6749_body() {
    // The RFC 6749 body names no location.
    let cases: [Case<RevocationError>; 3] = [
        (|| RevocationError::UnknownClient, 400, "invalid_client", None),
        (|| RevocationError::OtherClient, 400, "unauthorized_client", None),
        (|| RevocationError::Unavailable(StoreUnavailable::new("down")), 503, "temporarily_unavailable", None),
    ];
    for (error, status, code, _) in cases {
        let mut mocks = Mocks::default();
        mocks.revocation.expect_revoke().returning(move |_, _| Err(error()));
        let request =
            revocation_post(&format!("token=opaque&client_id={CLIENT}")).insert_header(("Accept-Language", "es"));
        let (got, body, headers) = mocks.call(request).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(code)), "{body}");
        let description = body["error_description"].as_str().unwrap();
        assert!(description.is_ascii() && !description.contains("down"), "English, ASCII, nothing internal: {body}");
        assert_eq!(body.as_object().unwrap().len(), 2, "error and error_description only: {body}");
        assert_eq!(headers["content-language"], "en");
        assert_eq!(headers["cache-control"], "no-store");
        assert_eq!(headers.contains_key("retry-after"), status == 503);
    }
}

#[actix_web::test]
async fn a_malformed_revocation_is_invalid_request_before_the_use_case_is_called() {
    let cases = [
        (revocation_post(&format!("client_id={CLIENT}")), "The required value token is missing."),
        (revocation_post(&format!("token=&client_id={CLIENT}")), "The required value token is missing."),
        (revocation_post("token=x"), "The required value client_id is missing."),
        (revocation_post("token=x&client_id=not%20a%20client"), "client_id is not valid"),
        (revocation_post(&format!("token=x&token=y&client_id={CLIENT}")), "token was sent more than once"),
        (
            test::TestRequest::post()
                .uri("/api/v1/revoke")
                .insert_header(("Content-Type", "application/json"))
                .set_payload("{}"),
            "Content-Type must be application/x-www-form-urlencoded.",
        ),
    ];
    for (request, said) in cases {
        let (status, body, _) = Mocks::default().call(request).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")), "{body}");
        assert!(body["error_description"].as_str().unwrap().contains(said), "{body}");
    }
    let get = test::TestRequest::get().uri("/api/v1/revoke");
    let (status, body, headers) = Mocks::default().call(get).await;
    assert_eq!((status, body["error"].as_str(), headers["allow"].as_str()), (405, Some("invalid_request"), "POST"));
}

fn system_token_post(form: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/v1/token")
        .insert_header(("Content-Type", "application/x-www-form-urlencoded"))
        .set_payload(form.to_owned())
}

const CLIENT_CREDENTIALS: &str = "grant_type=client_credentials&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion=a.b.c";

#[actix_web::test]
async fn a_systems_token_is_answered_as_rfc_6749_says_and_never_cached() {
    let mut mocks = Mocks::default();
    mocks
        .system_tokens
        .expect_issue()
        .withf(|request| {
            request.assertion.as_deref() == Some("a.b.c")
                && request.scope.as_deref() == Some("queue:write")
                && request.client_id.is_none()
        })
        .times(1)
        .returning(|_| {
            Ok(SystemToken {
                access_token: "jwt".into(),
                expires_in: 900,
                scopes: domain::system::SystemScopes::parse("queue:write").unwrap(),
            })
        });
    let (status, body, headers) =
        mocks.call(system_token_post(&format!("{CLIENT_CREDENTIALS}&scope=queue%3Awrite&other=ignored"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        serde_json::json!({"access_token": "jwt", "token_type": "Bearer", "expires_in": 900, "scope": "queue:write"})
    );
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["pragma"], "no-cache");
}

#[actix_web::test]
async fn every_system_token_error_has_its_rfc_6749_error_and_status() {
    let cases: [Case<SystemTokenError>; 4] = [
        (
            || SystemTokenError::InvalidClient("this client assertion was used before".into()),
            401,
            "invalid_client",
            None,
        ),
        (|| SystemTokenError::InvalidScope, 400, "invalid_scope", None),
        (|| SystemTokenError::InvalidRequest("client_assertion is required"), 400, "invalid_request", None),
        (|| SystemTokenError::Unavailable(StoreUnavailable::new("down")), 503, "temporarily_unavailable", None),
    ];
    for (error, status, code, _) in cases {
        let mut mocks = Mocks::default();
        mocks.system_tokens.expect_issue().returning(move |_| Err(error()));
        let (got, body, headers) = mocks.call(system_token_post(CLIENT_CREDENTIALS)).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(code)), "{body}");
        assert!(!body["error_description"].as_str().unwrap().contains("down"), "nothing internal: {body}");
        assert_eq!(headers.contains_key("www-authenticate"), status == 401);
        assert_eq!(headers.contains_key("retry-after"), status == 503);
    }
    let mut mocks = Mocks::default();
    mocks
        .system_tokens
        .expect_issue()
        .returning(|_| Err(SystemTokenError::InvalidClient("this client assertion was used before".into())));
    let (_, body, headers) = mocks.call(system_token_post(CLIENT_CREDENTIALS)).await;
    assert_eq!(body["error_description"], "this client assertion was used before.");
    assert_eq!(headers["www-authenticate"], r#"Bearer error="invalid_client""#);
}

#[actix_web::test]
async fn a_malformed_token_request_is_refused_before_the_use_case_is_called() {
    let cases = [
        (system_token_post("client_assertion=a.b.c"), 400, "invalid_request"),
        (system_token_post("grant_type=client_credentials&grant_type=client_credentials"), 400, "invalid_request"),
        (system_token_post("grant_type=password&username=a"), 400, "unsupported_grant_type"),
        (system_token_post("grant_type=authorization_code"), 400, "unsupported_grant_type"),
        (
            test::TestRequest::post()
                .uri("/api/v1/token")
                .insert_header(("Content-Type", "application/json"))
                .set_payload("{}"),
            400,
            "invalid_request",
        ),
        (test::TestRequest::get().uri("/api/v1/token"), 405, "invalid_request"),
    ];
    for (request, status, error) in cases {
        let (got, body, _) = Mocks::default().call(request).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(error)), "{body}");
    }
}

fn events_post(body: &str) -> test::TestRequest {
    test::TestRequest::post()
        .uri("/api/v1/branches/queue-events")
        .insert_header(("Authorization", "Bearer system-token"))
        .insert_header(("Content-Type", "application/json"))
        .set_payload(body.to_owned())
}

/// Mocks whose system bearer check answers `check`.
fn systems(check: fn() -> Result<domain::system::SystemId, SystemBearerError>) -> Mocks {
    let mut mocks = Mocks::default();
    mocks.system_bearer.expect_authenticate().returning(move |_, _| check());
    mocks
}

fn queue_system() -> Result<domain::system::SystemId, SystemBearerError> {
    Ok(domain::system::SystemId::parse("queue-hq").unwrap())
}

#[actix_web::test]
async fn posted_events_are_answered_each_with_its_fate_and_a_refusal_with_its_location() {
    let mut mocks = systems(queue_system);
    mocks
        .queue_events
        .expect_post()
        .withf(|system, events| system.as_str() == "queue-hq" && events.len() == 3)
        .times(1)
        .returning(|_, events| {
            let refusal = domain::queue::event::QueueEvent::from_json(&events[2]).unwrap_err();
            Ok(PostedEvents {
                accepted: 1,
                duplicates: 1,
                rejected: vec![RejectedEvent { index: 2, refusal }],
                estimate_errors: vec![],
            })
        });
    let body = r#"{"events": [{}, {}, {"eventId": "e-3", "branchId": "00001", "type": "TicketIssued", "at": "2026-11-28T12:00:00Z"}]}"#;
    let (status, body, headers) = mocks.call(events_post(body)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(
        body,
        serde_json::json!({"accepted": 1, "duplicates": 1, "rejected": [{"index": 2, "eventId": "e-3",
            "code": "missingField", "location": "events[2].ticket", "details": "ticket is required"}]})
    );
}

#[actix_web::test]
async fn a_post_without_a_systems_token_with_the_scope_is_refused_as_rfc_6750_says() {
    let (status, body, headers) =
        Mocks::default().call(test::TestRequest::post().uri("/api/v1/branches/queue-events").set_payload("{}")).await;
    assert_eq!(
        (status, body["code"].as_str(), headers["www-authenticate"].as_str()),
        (401, Some("unAuthorized"), "Bearer")
    );
    let refused = || Err(SystemBearerError::InvalidToken(domain::ports::TokenRejected::Invalid("a visitor's token")));
    let (status, _, headers) = systems(refused).call(events_post(r#"{"events":[{}]}"#)).await;
    assert_eq!(status, 401);
    assert!(headers["www-authenticate"].contains(r#"error="invalid_token""#));
    let scope = || Err(SystemBearerError::InsufficientScope(domain::system::SystemScope::QueueWrite));
    let (status, body, headers) = systems(scope).call(events_post(r#"{"events":[{}]}"#)).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("insufficientScope")));
    assert_eq!(headers["www-authenticate"], r#"Bearer error="insufficient_scope", scope="queue:write""#);
}

#[actix_web::test]
async fn a_body_that_breaks_the_envelope_is_a_400_and_a_store_failure_a_503() {
    let thousand_and_one = format!(r#"{{"events":[{}]}}"#, vec!["{}"; 1001].join(","));
    let too_large = format!(r#"{{"events":["{}"]}}"#, "x".repeat(256 * 1024));
    for (body, location) in [
        ("not json", "body"),
        (r#"{"events":[]}"#, "events"),
        (r#"{"events":{}}"#, "events"),
        (r#"{"other":[]}"#, "events"),
        (thousand_and_one.as_str(), "events"),
        (too_large.as_str(), "body"),
    ] {
        let (status, answer, _) = systems(queue_system).call(events_post(body)).await;
        assert_eq!(
            (status, answer["code"].as_str(), answer["location"].as_str()),
            (400, Some("invalidRequest"), Some(location)),
            "{answer}"
        );
    }
    let form = events_post("{}").insert_header(("Content-Type", "text/plain"));
    assert_eq!(systems(queue_system).call(form).await.0, 400);
    let mut mocks = systems(queue_system);
    mocks.queue_events.expect_post().returning(|_, _| Err(PostEventsError::Unavailable(StoreUnavailable::new("down"))));
    let (status, body, headers) = mocks.call(events_post(r#"{"events":[{}]}"#)).await;
    assert_eq!((status, body["code"].as_str()), (503, Some("serverUnavailable")));
    assert!(headers.contains_key("retry-after"));
}

#[actix_web::test]
async fn every_wait_time_error_has_its_status_code_and_error_response() {
    let cases: [Case<RetrieveWaitTimesError>; 5] = [
        (|| RetrieveWaitTimesError::SessionMismatch, 401, "unAuthorized", None),
        (|| RetrieveWaitTimesError::AccessNotConfigured, 403, "accessNotConfigured", None),
        (
            || RetrieveWaitTimesError::DuplicateBranch { index: 1, branch: BranchId::parse("00001").unwrap() },
            422,
            "businessValidationFailed",
            Some("branches[1].branchId"),
        ),
        (|| RetrieveWaitTimesError::NoneKnown, 404, "resourceNotFound", None),
        (|| RetrieveWaitTimesError::Unavailable(StoreUnavailable::new("down")), 500, "serverUnavailable", None),
    ];
    for (error, status, code, location) in cases {
        let mut mocks = Mocks::admitting();
        mocks.wait_times.expect_retrieve().returning(move |_, _| Err(error()));
        let (got, body, headers) = mocks.call(wait_times_post(ONE_BRANCH)).await;
        assert_eq!((got, body["code"].as_str(), body["location"].as_str()), (status, Some(code), location), "{body}");
        let kind = if status >= 500 { "fatal" } else { "error" };
        assert_eq!((body["type"].as_str(), body["uuid"].as_str()), (Some(kind), Some(UUID)), "{body}");
        assert_eq!(headers.contains_key("www-authenticate"), status == 401, "a Bearer challenge only on 401");
    }
}

#[actix_web::test]
async fn wait_times_are_answered_in_request_order_with_time_taken() {
    let mocks = answering_wait_times();
    let body = r#"{"branches":[{"branchId":"00042"},{"branchId":"00001"}]}"#;
    let (status, body, _) = mocks.call(wait_times_post(body)).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        serde_json::json!({"branches":[{"branchId":"00042","timeTaken":"7"},{"branchId":"00001","timeTaken":"7"}]})
    );
}

#[actix_web::test]
async fn a_bearer_refusal_or_outage_is_each_operations_own_status_and_body() {
    let refused = || BearerError::Refused("token revoked");
    let down = || BearerError::Unavailable(StoreUnavailable::new("down"));

    let not_valid = r#"Bearer error="invalid_token", error_description="The access token is not valid""#;
    let (status, body, headers) = Mocks::refusing(refused).call(wait_times_post(ONE_BRANCH)).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unAuthorized")));
    assert_eq!(headers["www-authenticate"], not_valid);
    let (status, body, headers) = Mocks::refusing(|| BearerError::Expired).call(wait_times_post(ONE_BRANCH)).await;
    assert_eq!((status, body["details"].as_str()), (401, Some("The access token expired; ask for a new one.")));
    assert_eq!(
        headers["www-authenticate"],
        r#"Bearer error="invalid_token", error_description="The access token expired""#
    );
    let (status, body, _) = Mocks::refusing(down).call(wait_times_post(ONE_BRANCH)).await;
    assert_eq!((status, body["code"].as_str()), (500, Some("serverUnavailable")));

    let (status, body, headers) = Mocks::refusing(refused).call(bearer_get("/api/v1/atms")).await;
    assert_eq!((status, body["status"].as_str(), body["title"].as_str()), (401, Some("401"), Some("Unauthorized")));
    assert_eq!(body["description"], "The access token is not valid.");
    assert_eq!(headers["www-authenticate"], not_valid);
    let (status, body, headers) = Mocks::refusing(down).call(bearer_get("/api/v1/atms")).await;
    assert_eq!((status, body["status"].as_str()), (503, Some("503")), "an ATM outage is a 503: {body}");
    assert_eq!(headers["retry-after"], "5");

    // Over a rate (counted by the bearer check, before any proof is verified): 429.
    let over = || {
        BearerError::Limited(LimitExceeded { limit: Limit::PerSession, wait: std::time::Duration::from_millis(1500) })
    };
    let (status, body, headers) = Mocks::refusing(over).call(wait_times_post(ONE_BRANCH)).await;
    assert_eq!((status, body["code"].as_str()), (429, Some("tooManyRequests")));
    assert_eq!(headers["retry-after"], "2", "whole seconds, rounded up");
    let (status, _, _) = Mocks::refusing(over).call(bearer_get("/api/v1/atms")).await;
    assert_eq!(status, 429);
    // A refused proof: 401, DPoP's challenge, and what was wrong.
    let replayed = || BearerError::Proof(domain::dpop::ProofRefusal::Replayed);
    let (status, body, headers) = Mocks::refusing(replayed).call(wait_times_post(ONE_BRANCH)).await;
    assert_eq!((status, body["details"].as_str()), (401, Some("the DPoP proof was used before (jti).")));
    assert!(headers["www-authenticate"].starts_with(r#"DPoP error="invalid_dpop_proof""#), "{headers:?}");

    let not_bearer = bearer_get("/api/v1/atms").insert_header(("Authorization", "Basic x"));
    let (status, _, headers) = Mocks::default().call(not_bearer).await;
    assert_eq!(status, 401, "no bearer token: refused before the use case is asked");
    assert!(headers["www-authenticate"].starts_with(r#"Bearer error="invalid_request""#));
    let no_client = test::TestRequest::get().uri("/api/v1/atms").insert_header(("Authorization", "Bearer t"));
    let (status, body, _) = Mocks::default().call(no_client).await;
    assert_eq!((status, body["status"].as_str()), (400, Some("400")));
    assert_eq!(body["description"], "The client_id header is missing.");
}

fn atms_answering(result: fn() -> Result<AtmSnapshot, ListAtmsError>) -> Mocks {
    let mut mocks = Mocks::admitting();
    mocks.atms.expect_snapshot().returning(move |_| result());
    mocks
}

fn empty_set() -> Result<AtmSnapshot, ListAtmsError> {
    Ok(AtmSnapshot::new(Arc::new(AtmCatalog::empty(1_800_000_000)), 25))
}

#[actix_web::test]
async fn every_atm_error_has_its_status_and_obie_body() {
    let (status, body, headers) = atms_answering(|| Err(ListAtmsError::Unavailable(StoreUnavailable::new("down"))))
        .call(bearer_get("/api/v1/atms"))
        .await;
    assert_eq!(
        (status, body["status"].as_str(), body["title"].as_str()),
        (503, Some("503"), Some("Service temporarily unavailable"))
    );
    assert_eq!(headers["retry-after"], "5");
    let (status, body, _) = atms_answering(empty_set).call(bearer_get("/api/v1/atms?page=2")).await;
    assert_eq!((status, body["status"].as_str(), body["title"].as_str()), (400, Some("400"), Some("Bad request")));
    assert_eq!(body["description"], "page must be a whole number from 1 to 1.", "the last page of an empty set");
    assert_eq!(body.as_object().unwrap().len(), 3, "status, title, description: {body}");
}

#[actix_web::test]
async fn an_atm_page_carries_validators_and_a_matching_one_is_a_304_without_a_body() {
    let (status, body, headers) = atms_answering(empty_set).call(bearer_get("/api/v1/atms")).await;
    assert_eq!(status, 200);
    assert_eq!(body["meta"]["TotalResults"], 0);
    assert_eq!(body["link"]["Self"], "https://api.example.mx/api/v1/atms?page=1");
    let tag = headers["etag"].to_owned();
    assert_eq!(headers["last-modified"], "Fri, 15 Jan 2027 08:00:00 GMT");

    let again = bearer_get("/api/v1/atms").insert_header(("If-None-Match", tag.as_str()));
    let (status, body, headers) = atms_answering(empty_set).call(again).await;
    assert_eq!((status, body), (304, Value::Null));
    assert_eq!(headers["etag"], tag);
    let since = bearer_get("/api/v1/atms").insert_header(("If-Modified-Since", "Fri, 15 Jan 2027 08:00:00 GMT"));
    assert_eq!(atms_answering(empty_set).call(since).await.0, 304);
    let other = bearer_get("/api/v1/atms").insert_header(("If-None-Match", "\"stale\""));
    assert_eq!(atms_answering(empty_set).call(other).await.0, 200);
}

#[actix_web::test]
async fn the_authorization_server_metadata_is_served_where_rfc_8414_and_clients_look() {
    for path in ["/.well-known/oauth-authorization-server/api", "/api/.well-known/oauth-authorization-server"] {
        let (status, body, headers) = Mocks::default().call(test::TestRequest::get().uri(path)).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(body["issuer"], "https://api.example.mx/api", "{path}");
        assert_eq!(body["code_challenge_methods_supported"], serde_json::json!(["S256"]));
        assert_eq!(headers["cache-control"], "public, max-age=300", "cacheable like the JWKS");
    }
}

#[actix_web::test]
async fn the_jwks_is_the_published_key_set_and_readiness_says_what_the_store_does() {
    let mut mocks = Mocks::default();
    mocks.keys.expect_key_set().returning(|| r#"{"keys":[]}"#.to_owned());
    let (status, body, headers) = mocks.call(test::TestRequest::get().uri("/api/.well-known/jwks.json")).await;
    assert_eq!((status, body), (200, serde_json::json!({"keys": []})));
    assert_eq!(headers["cache-control"], "public, max-age=300");
    let (status, body, _) = Mocks::default().call(test::TestRequest::get().uri("/api/health/ready")).await;
    assert_eq!((status, body), (200, serde_json::json!({"status": "ready"})));
    // A failover: the store does not answer, the data held is current. Not ready, but
    // reads are answered; past the staleness bound, neither.
    for (health, ready, reads) in [((false, true), 503, (200, "ready")), ((false, false), 503, (503, "stale"))] {
        let probe = |path: &'static str| {
            let mocks = Mocks { health: Some(health), ..Mocks::default() };
            mocks.call(test::TestRequest::get().uri(path))
        };
        assert_eq!(probe("/api/health/ready").await.0, ready);
        let (status, body, _) = probe("/api/health/reads").await;
        assert_eq!((status, body["status"].as_str()), (reads.0, Some(reads.1)), "{health:?}");
    }
    let (status, body, headers) = Mocks::default().call(test::TestRequest::get().uri("/api/nowhere")).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("resourceNotFound")));
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let (status, body, headers) = Mocks::default().call(test::TestRequest::delete().uri("/api/v1/atms")).await;
    assert_eq!((status, body["status"].as_str()), (405, Some("405")), "a 405 in the operation's own shape");
    assert_eq!(headers["allow"], "GET, HEAD");
}

#[actix_web::test]
async fn an_application_assembled_without_its_state_answers_each_operations_outage() {
    let app = test::init_service(App::new().configure(api::routes)).await;
    let answer_to = |request: test::TestRequest| {
        let request = request.to_request();
        let app = &app;
        async move { answer(app.call(request).await.unwrap()).await }
    };
    let (status, body, _) = answer_to(test::TestRequest::get().uri(AUTHORIZE).insert_header(("uuid", UUID))).await;
    assert_eq!((status, body["code"].as_str()), (500, Some("serverUnavailable")), "{body}");
    let (status, body, _) = answer_to(wait_times_post(ONE_BRANCH)).await;
    assert_eq!((status, body["code"].as_str()), (500, Some("serverUnavailable")), "{body}");
    let (status, body, _) = answer_to(bearer_get("/api/v1/atms")).await;
    assert_eq!((status, body["status"].as_str()), (503, Some("503")), "{body}");
}

#[actix_web::test]
async fn the_status_is_answered_as_derived_in_cdrs_shape_to_any_origin() {
    let request =
        test::TestRequest::get().uri("/api/v1/discovery/status").insert_header(("Origin", "https://x.example"));
    let (status, body, headers) = Mocks::default().call(request).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        serde_json::json!({
            "data": {"status": "OK", "updateTime": "2027-01-15T08:00:00Z"},
            "links": {"self": "https://api.example.mx/api/v1/discovery/status"},
            "meta": {}
        })
    );
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert_eq!(headers["cache-control"], "public, max-age=2");
    let post = test::TestRequest::post().uri("/api/v1/discovery/outages");
    let (status, body, headers) = Mocks::default().call(post).await;
    assert_eq!(
        (status, body["code"].as_str(), headers["allow"].as_str()),
        (405, Some("methodNotAllowed"), "GET, HEAD")
    );
}

// Reading requests: every header, query parameter and body the operations refuse, with
// the status, code and location a caller sees, answered before any use case is asked
// (the use cases are mocks without expectations, which fail the test if called). These
// tested the parsing through the whole binary before; the black-box suite keeps what
// needs the real service behind the edge (issue 43).

/// Asserts an ErrorResponse failure: status, `code`, `location`, the body's shape and
/// the security headers; the body.
fn assert_error((status, body, headers): &Answer, expected: u16, code: &str, location: Option<&str>) {
    assert_eq!(*status, expected, "status: {body}");
    assert_security_headers(headers);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["location"].as_str(), location, "{body}");
    assert!(body["timestamp"].is_string(), "{body}");
    assert!(body["details"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
}

/// Asserts a token-endpoint failure: status, `code`, `location`, and the body's shape.
fn assert_token_error((status, body, headers): &Answer, expected: u16, code: &str, location: Option<&str>) {
    assert_eq!(*status, expected, "status: {body}");
    assert_security_headers(headers);
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["location"].as_str(), location, "{body}");
    assert!(body["timestamp"].is_string() && body["details"].is_string(), "{body}");
    assert!(body.get("type").is_none() && body.get("uuid").is_none(), "token bodies have neither: {body}");
}

/// The four security headers docs/contract.md puts on every response.
fn assert_security_headers(headers: &HashMap<String, String>) {
    assert_eq!(headers["strict-transport-security"], "max-age=31536000; includeSubDomains");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["x-xss-protection"], "0");
    assert_eq!(headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
}

/// Wait times answered for every branch asked for, 7 minutes each.
fn answering_wait_times() -> Mocks {
    let mut mocks = Mocks::admitting();
    mocks.wait_times.expect_retrieve().returning(|_, query| {
        Ok(query
            .branches
            .iter()
            .map(|branch| BranchWaitTime { branch: *branch, wait: WaitTime::from_minutes(7).unwrap() })
            .collect())
    });
    mocks
}

#[actix_web::test]
async fn the_samples_branch_key_works_like_branches() {
    let request = wait_time_request(&[]).set_payload(r#"{"branch":[{"branchId":"00007"}]}"#);
    let (status, body, _) = answering_wait_times().call(request).await;
    assert_eq!(status, 200);
    assert_eq!(body["branches"][0]["branchId"], "00007");
}

#[actix_web::test]
async fn each_missing_required_wait_time_header_is_a_400_naming_it() {
    for name in ["client_id", "uuid", "Content-Type", "countryCode", "businessCode", "ChannelId", "sid", "Accept"] {
        let request = wait_time_request(&[name]).set_payload(ONE_BRANCH);
        assert_error(&Mocks::admitting().call(request).await, 400, "invalidRequest", Some(name));
    }
}

#[actix_web::test]
async fn malformed_wait_time_headers_are_400s_naming_them() {
    let cases = [
        ("uuid", "12345"),
        ("countryCode", "Mexico"),
        ("businessCode", "G-C-B"),
        ("ChannelId", "MOBILE APP"),
        ("sid", "x"),
        ("Content-Type", "text/plain"),
        ("Accept", "text/html"),
    ];
    for (name, value) in cases {
        let request = wait_time_request(&[name]).insert_header((name, value)).set_payload(ONE_BRANCH);
        assert_error(&Mocks::admitting().call(request).await, 400, "invalidRequest", Some(name));
    }
}

#[actix_web::test]
async fn a_wait_time_header_sent_twice_is_refused_never_read_first_wins() {
    let singletons = wait_time_headers().into_iter().filter(|(name, _)| !matches!(*name, "Accept" | "Authorization"));
    for (name, value) in singletons {
        let request = wait_time_request(&[]).append_header((name, value)).set_payload(ONE_BRANCH);
        assert_error(&Mocks::admitting().call(request).await, 400, "invalidRequest", Some(name));
    }
    let twice = wait_time_request(&[]).append_header(("Authorization", "Bearer token")).set_payload(ONE_BRANCH);
    let (status, _, _) = Mocks::admitting().call(twice).await;
    assert_eq!(status, 401, "two Authorization headers are no credentials");

    // Accept is a list: its copies are one list.
    let accept = wait_time_request(&["Accept"])
        .append_header(("Accept", "text/html"))
        .append_header(("Accept", "application/json"))
        .set_payload(ONE_BRANCH);
    assert_eq!(answering_wait_times().call(accept).await.0, 200);
}

#[actix_web::test]
async fn bad_wait_time_bodies_are_400s_pointing_at_the_field() {
    let cases = [
        (r#"{"branches":[{"branchId":"00001"},{"branchId":"0001"}]}"#, "branches[1].branchId"),
        (r#"{"branches":[{"branchId":"00001"},{"branchId":"00002"},{"branchId":12345}]}"#, "branches[2].branchId"),
        (r#"{"branches":[]}"#, "branches"),
        (r#"{}"#, "branches"),
        (r#"{"branches":[{}]}"#, "branches[0].branchId"),
        (r#"{"branches":[{"branchId":"00001"},{"branchId":null}]}"#, "branches[1].branchId"),
        (r#"{"branches":[{"branchId":"00001"}],"extra":true}"#, "extra"),
        (r#"{"branches":[{"branchId":"00001","x":1}]}"#, "branches[0].x"),
        (r#"{"branches":"#, "branches"),
        ("not json", "body"),
        ("", "body"),
    ];
    for (body, location) in cases {
        let answer = Mocks::admitting().call(wait_times_post(body)).await;
        assert_error(&answer, 400, "invalidRequest", Some(location));
    }
    // The wrong JSON type where an object belongs: told in the API's words, never the
    // server's type names.
    let arrays = [
        ("[]", "body"),
        ("7", "body"),
        (r#"{"branches":[1]}"#, "branches[0]"),
        (r#"[[{"branchId":"00001"}]]"#, "body"),
        (r#"{"branches":[["00001"]]}"#, "branches[0]"),
    ];
    for (body, location) in arrays {
        let answer = Mocks::admitting().call(wait_times_post(body)).await;
        assert_error(&answer, 400, "invalidRequest", Some(location));
        let error = answer.1.to_string();
        for internal in ["RetrieveBranchWaitTimeRequest", "BranchItem", "struct"] {
            assert!(!error.contains(internal), "{body}: {error}");
        }
    }
}

#[actix_web::test]
async fn a_wait_time_body_over_64_kib_is_refused_without_being_read() {
    let huge = format!(r#"{{"branches":[{{"branchId":"00001"}}],"pad":"{}"}}"#, "x".repeat(70 * 1024));
    let answer = Mocks::admitting().call(wait_times_post(&huge)).await;
    assert_error(&answer, 400, "invalidRequest", Some("body"));
}

#[actix_web::test]
async fn wait_time_errors_are_told_in_spanish_with_the_request_uuid_when_asked() {
    let mut mocks = Mocks::admitting();
    mocks.wait_times.expect_retrieve().returning(|_, _| Err(RetrieveWaitTimesError::NoneKnown));
    let request = wait_time_request(&[])
        .insert_header(("Accept-Language", "es-MX, en;q=0.5"))
        .set_payload(r#"{"branches":[{"branchId":"99999"}]}"#);
    let answer = mocks.call(request).await;
    assert_eq!(answer.2["content-language"], "es");
    assert_error(&answer, 404, "resourceNotFound", None);
    let body = &answer.1;
    assert_eq!(body["uuid"], UUID);
    assert!(body["details"].as_str().unwrap().contains("sucursales"), "{body}");
}

#[actix_web::test]
async fn a_missing_or_non_bearer_authorization_is_refused() {
    let malformed = r#"Bearer error="invalid_request", error_description="The Authorization header must be Bearer followed by one space and the token""#;
    let cases = [
        // RFC 6750 §3: a request without credentials gets the scheme alone.
        (None, "Bearer"),
        (Some("Basic token"), malformed),
        (Some("Bearer"), malformed),
    ];
    for (authorization, challenge) in cases {
        let mut request = wait_time_request(&["Authorization"]);
        if let Some(value) = authorization {
            request = request.insert_header(("Authorization", value));
        }
        let answer = Mocks::default().call(request.set_payload(ONE_BRANCH)).await;
        assert_eq!(answer.2["www-authenticate"], challenge);
        assert_error(&answer, 401, "unAuthorized", None);
    }
}

/// The demo client's token request (the black-box suite's `demo_authorize_query`).
fn demo_authorize_query() -> Vec<(&'static str, &'static str)> {
    vec![
        ("response_type", "token"),
        ("client_id", CLIENT),
        ("businessCode", "GCB"),
        ("countryCode", "MX"),
        ("channelId", "MOBILE"),
    ]
}

fn without(name: &str) -> Vec<(&'static str, &'static str)> {
    demo_authorize_query().into_iter().filter(|(key, _)| *key != name).collect()
}

fn with(name: &'static str, value: &'static str) -> Vec<(&'static str, &'static str)> {
    let mut query = without(name);
    query.push((name, value));
    query
}

/// GET /api/v1/authorize with `query` (form-encoded, as an HTTP client writes it) and no
/// headers.
fn authorize_request(query: &[(&str, &str)]) -> test::TestRequest {
    let query = form_urlencoded::Serializer::new(String::new()).extend_pairs(query).finish();
    test::TestRequest::get().uri(&format!("/api/v1/authorize?{query}"))
}

/// The answer to a token request with `query` and a `uuid` header, on use cases that
/// refuse to be called.
async fn authorize_refused(query: &[(&str, &str)]) -> Answer {
    Mocks::default().call(authorize_request(query).insert_header(("uuid", UUID))).await
}

/// The status of a token request with `query` and a `uuid` header, the token issued.
async fn authorize_status(query: &[(&str, &str)]) -> u16 {
    let mut mocks = Mocks::default();
    mocks.tokens.expect_authorize().returning(|_| Ok(grant()));
    mocks.call(authorize_request(query).insert_header(("uuid", UUID))).await.0
}

#[actix_web::test]
async fn state_comes_back_unchanged_in_a_header() {
    let mut mocks = Mocks::default();
    mocks.tokens.expect_authorize().returning(|_| Ok(grant()));
    let request = authorize_request(&with("state", "af0ifjsldkj-._~")).insert_header(("uuid", UUID));
    let (status, _, headers) = mocks.call(request).await;
    assert_eq!(status, 200);
    assert_eq!(headers["state"], "af0ifjsldkj-._~");
}

#[actix_web::test]
async fn each_missing_required_parameter_is_a_400_naming_it() {
    for name in ["response_type", "client_id", "businessCode", "countryCode", "channelId"] {
        assert_token_error(&authorize_refused(&without(name)).await, 400, "invalidRequest", Some(name));
    }
}

#[actix_web::test]
async fn a_missing_or_malformed_uuid_header_is_a_400() {
    let query = demo_authorize_query();
    let missing = Mocks::default().call(authorize_request(&query)).await;
    assert_token_error(&missing, 400, "invalidRequest", Some("uuid"));
    let malformed = Mocks::default().call(authorize_request(&query).insert_header(("uuid", "not-a-uuid"))).await;
    assert_token_error(&malformed, 400, "invalidRequest", Some("uuid"));
    let twice = authorize_request(&query).insert_header(("uuid", UUID)).append_header(("uuid", UUID));
    assert_token_error(&Mocks::default().call(twice).await, 400, "invalidRequest", Some("uuid"));
}

#[actix_web::test]
async fn malformed_parameters_are_400s_naming_them() {
    let cases = [
        ("response_type", "code"),
        ("countryCode", "mex"),
        ("businessCode", "G C B"),
        ("channelId", "MOB/ILE"),
        ("client_id", "demo mobile"),
        ("scope", "visitor admin"),
        ("state", "line\nbreak"),
        ("state", "s\u{b7}"),
    ];
    for (name, value) in cases {
        assert_token_error(&authorize_refused(&with(name, value)).await, 400, "invalidRequest", Some(name));
    }
}

#[actix_web::test]
async fn a_repeated_parameter_is_a_400() {
    let mut query = demo_authorize_query();
    query.push(("client_id", "demo-web-app"));
    assert_token_error(&authorize_refused(&query).await, 400, "invalidRequest", Some("client_id"));
}

#[actix_web::test]
async fn unknown_parameters_are_ignored_even_when_repeated() {
    let mut query = demo_authorize_query();
    query.extend([("utm_source", "app"), ("utm_source", "web")]);
    assert_eq!(authorize_status(&query).await, 200);
}

#[actix_web::test]
async fn pkce_needs_s256_and_a_43_character_challenge() {
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let mut good = demo_authorize_query();
    good.extend([("code_challenge", challenge), ("code_challenge_method", "S256")]);
    assert_eq!(authorize_status(&good).await, 200);

    let mut plain = demo_authorize_query();
    plain.extend([("code_challenge", challenge), ("code_challenge_method", "plain")]);
    assert_token_error(&authorize_refused(&plain).await, 400, "invalidRequest", Some("code_challenge_method"));

    let mut no_method = demo_authorize_query();
    no_method.push(("code_challenge", challenge));
    assert_token_error(&authorize_refused(&no_method).await, 400, "invalidRequest", Some("code_challenge_method"));

    let mut lone_method = demo_authorize_query();
    lone_method.push(("code_challenge_method", "S256"));
    assert_eq!(authorize_status(&lone_method).await, 200, "a method without a challenge asks for nothing");
    for invalid in ["", "plain"] {
        let mut lone_invalid = demo_authorize_query();
        lone_invalid.push(("code_challenge_method", invalid));
        let answer = authorize_refused(&lone_invalid).await;
        assert_token_error(&answer, 400, "invalidRequest", Some("code_challenge_method"));
    }

    let mut short = demo_authorize_query();
    short.extend([("code_challenge", "abc"), ("code_challenge_method", "S256")]);
    assert_token_error(&authorize_refused(&short).await, 400, "invalidRequest", Some("code_challenge"));
}

#[actix_web::test]
async fn token_request_errors_are_told_in_spanish_when_asked() {
    let request = authorize_request(&without("countryCode"))
        .insert_header(("uuid", UUID))
        .insert_header(("Accept-Language", "es-MX,es;q=0.9,en;q=0.5"));
    let answer = Mocks::default().call(request).await;
    assert_eq!(answer.2["content-language"], "es");
    assert_token_error(&answer, 400, "invalidRequest", Some("countryCode"));
    assert!(answer.1["details"].as_str().unwrap().contains("Falta"), "{}", answer.1);
}
