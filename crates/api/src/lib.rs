//! The HTTP face of the branch and ATM open-banking service: routes, middleware,
//! handlers, wire errors and texts, the OpenAPI document, and the request limits.
//!
//! Handlers read top to bottom in four steps: extract, turn into domain values, call a
//! use case, map the outcome to the wire. They reach the domain only through its use
//! cases' traits ([`Services`]), so a handler runs in a test on mocks, without a store.
//! Every status and wire code is chosen in [`errors`]: each operation's domain error
//! becomes its wire failure in one `From`; handlers never choose a status. Texts come
//! from [`texts`]. This crate holds no SQL, no JWT code, no settings parsing and no CLI:
//! those are the adapters' and the server's.
//!
//! # Layout
//! - [`authorize`], [`revoke`], [`atms`], [`wait_times`], [`meta`] — one module per
//!   operation (meta: the JWKS, the server metadata and the health checks), each with its
//!   `#[utoipa::path]`.
//! - [`request`] — reading headers, queries and bodies into domain values;
//!   [`correlation`] — the request's `uuid`; [`conditional`] — validators and 304s.
//! - [`errors`] — every wire failure, its status, code and body shape.
//! - [`texts`], [`language`] — everything said to people, in English and Spanish.
//! - [`middleware`] — security headers, correlation id, draining; [`observe`] — the one
//!   place requests and refusals are logged and counted ([`log_summary`]: one line a
//!   second per cause); [`access_log`] — its lines.
//! - [`cors`] — browser pages of registered clients.
//! - [`rate_limit`], [`caller`] — request limits, and who the caller is behind proxies.
//! - [`openapi`] — the OpenAPI 3.1 document and the docs page.

pub mod access_log;
pub mod atms;
pub mod authorize;
pub mod caller;
pub mod conditional;
pub mod correlation;
pub mod cors;
pub mod errors;
pub mod language;
pub mod log_summary;
pub mod meta;
pub mod middleware;
pub mod observe;
pub mod openapi;
pub mod rate_limit;
pub mod request;
pub mod revoke;
pub mod texts;
pub mod wait_times;

use std::sync::Arc;

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::services::atms::AtmInformation;
use domain::services::authorize::TokenIssuance;
use domain::services::bearer::BearerAuthentication;
use domain::services::keys::KeyPublication;
use domain::services::origins::BrowserOrigins;
use domain::services::revocation::TokenRevocation;
use domain::services::wait_times::WaitTimeEnquiry;
use errors::{ApiError, Atms, Authorize, Meta, NoRoute, Operation, Revoke, WaitTimes};
use utoipa_swagger_ui::{Config as SwaggerConfig, SwaggerUi};

/// What the handlers share: the domain's use cases (as traits, so a test gives mocks),
/// readiness, the request limits, and the few settings the wire needs.
pub struct AppState {
    /// Token issuance.
    pub tokens: Arc<dyn TokenIssuance>,
    /// Revocations apps ask for (RFC 7009).
    pub revocation: Arc<dyn TokenRevocation>,
    /// Bearer checks.
    pub bearer: Arc<dyn BearerAuthentication>,
    /// Wait times.
    pub wait_times: Arc<dyn WaitTimeEnquiry>,
    /// ATM information.
    pub atms: Arc<dyn AtmInformation>,
    /// The JWKS.
    pub keys: Arc<dyn KeyPublication>,
    /// The authorization server's metadata document (RFC 8414), made once
    /// ([`meta::server_metadata`]).
    pub server_metadata: String,
    /// The origins browser pages may call from.
    pub origins: Arc<dyn BrowserOrigins>,
    /// The JWKS's `Cache-Control` (`public, max-age=<--jwks-max-age-seconds>`): a
    /// rotated key signs only after this has run out (`keys rotate`).
    pub jwks_cache_control: header::HeaderValue,
    /// Readiness, and whether the service is draining before it stops.
    pub readiness: Arc<meta::Readiness>,
    /// The request limits.
    pub limits: rate_limit::Limits,
    /// Whose forwarding headers name the caller.
    pub proxies: caller::TrustedProxies,
    /// Where clients reach the service, for absolute links.
    pub public_base_url: String,
    /// How long a request body may take to arrive.
    pub body_timeout: std::time::Duration,
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
    pub fn of(request: &HttpRequest) -> Result<&Self, &'static str> {
        request.app_data::<web::Data<Self>>().map(|data| data.get_ref()).ok_or("no application state is registered")
    }
}

/// Every route under `/api`.
pub fn routes(config: &mut web::ServiceConfig) {
    config.service(web::resource("/").route(web::get().to(openapi::root)));
    config.service(
        web::scope("/api")
            .service(get_resource::<Authorize, _, _>("/v1/authorize", authorize::authorize, Head::Refused))
            .service(web::resource("/v1/revoke").route(web::post().to(revoke::revoke)).default_service(web::to(
                |request: HttpRequest| async move { other_method::<Revoke>(&request, Method::POST, "POST").await },
            )))
            .service(get_resource::<Atms, _, _>("/v1/atms", atms::list, Head::Answered))
            .service(
                web::resource("/v1/open-banking/channels/branch/waittime/retrieve")
                    .route(web::post().to(wait_times::retrieve))
                    .default_service(web::to(|request: HttpRequest| async move {
                        other_method::<WaitTimes>(&request, Method::POST, "POST").await
                    })),
            )
            .service(get_resource::<Meta, _, _>("/.well-known/jwks.json", meta::jwks, Head::Answered))
            .service(get_resource::<Meta, _, _>(
                "/.well-known/oauth-authorization-server",
                meta::authorization_server,
                Head::Answered,
            ))
            .service(get_resource::<Meta, _, _>("/openapi.json", openapi::serve, Head::Answered))
            .service(web::resource("/docs").route(web::get().to(openapi::to_docs)))
            .service(
                web::scope("/docs")
                    .wrap(middleware::docs_headers())
                    .service(SwaggerUi::new("/{_:.*}").config(SwaggerConfig::new(["/api/openapi.json"]))),
            )
            .service(get_resource::<Meta, _, _>("/health/live", meta::live, Head::Answered))
            .service(get_resource::<Meta, _, _>("/health/ready", meta::ready, Head::Answered))
            .service(get_resource::<Meta, _, _>("/health/reads", meta::reads, Head::Answered)),
    );
}

/// The authorization server's metadata at the path RFC 8414 §3.1 gives for the issuer of
/// `public_base_url` (outside `/api`: the well-known segment goes between the host and
/// the issuer's path).
pub fn well_known_routes(public_base_url: &str) -> impl Fn(&mut web::ServiceConfig) + Clone + use<> {
    let path = meta::well_known_metadata_path(public_base_url);
    move |config: &mut web::ServiceConfig| {
        config.service(get_resource::<Meta, _, _>(&path, meta::authorization_server, Head::Answered));
    }
}

/// A GET (and HEAD, RFC 9110 §9.3.2) resource whose other methods get a 405.
/// Whether a GET resource also answers HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// HEAD runs the GET handler, and the server drops the body.
    Answered,
    /// HEAD is refused (405): the GET does something a body nobody reads must not cause
    /// (authorize mints and stores a token).
    Refused,
}

fn get_resource<Op: Operation + 'static, F, Args>(path: &str, handler: F, head: Head) -> actix_web::Resource
where
    F: actix_web::Handler<Args> + Clone,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    let resource = web::resource(path).route(web::get().to(handler.clone()));
    let (resource, allow) = match head {
        Head::Answered => (resource.route(web::head().to(handler)), "GET, HEAD"),
        Head::Refused => (resource, "GET"),
    };
    resource.default_service(web::to(move |request: HttpRequest| async move {
        other_method::<Op>(&request, Method::GET, allow).await
    }))
}

/// A method the resource does not take: a browser's preflight for one of the
/// operations ([`cors::preflight`]), or a 405 in the operation's body shape.
async fn other_method<Op: Operation>(
    request: &HttpRequest,
    method: Method,
    allow: &'static str,
) -> Result<HttpResponse, ApiError> {
    if let Some(answer) = cors::preflight(request, &method).await {
        return Ok(answer);
    }
    let error = ApiError::of::<Op>(NoRoute::Method, request);
    let mut response = actix_web::ResponseError::error_response(&error);
    response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static(allow));
    Ok(response)
}

/// Unknown paths: 404 with the JSON ErrorResponse body, never an HTML page.
pub async fn not_found(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::of::<Meta>(NoRoute::Path, &request))
}
