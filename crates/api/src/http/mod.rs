//! The HTTP face: routes, middleware, and one module per operation.
//!
//! Handlers read top to bottom in four steps: extract, turn into domain values, call a
//! service, map the outcome to the wire. Every status and wire code is chosen in
//! [`errors`]: domain errors convert there, one `From` per operation; handlers never
//! choose a status. Texts come from [`crate::texts`].

pub mod access_log;
pub mod atms;
pub mod authorize;
pub mod caller;
pub mod cors;
pub mod errors;
pub mod language;
pub mod meta;
pub mod middleware;
pub mod openapi;
pub mod rate_limit;
pub mod request;
pub mod wait_times;

use std::sync::Arc;

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::ports::{ClientRegistry, TokenVerifier};
use domain::services::atms::AtmLocator;
use domain::services::authorize::TokenService;
use domain::services::bearer::BearerCheck;
use domain::services::wait_times::WaitTimeService;

use errors::{ApiError, Failure, Shape};
use request::error_context;
use utoipa_swagger_ui::{Config as SwaggerConfig, SwaggerUi};

/// What the handlers share.
pub struct AppState {
    /// Token issuance.
    pub tokens: TokenService,
    /// Bearer checks.
    pub bearer: BearerCheck,
    /// Wait times.
    pub wait_times: WaitTimeService,
    /// The registered clients, for the origins their pages may call from.
    pub clients: Arc<dyn ClientRegistry>,
    /// Publishes the JWKS.
    pub verifier: Arc<dyn TokenVerifier>,
    /// The JWKS's `Cache-Control` (`public, max-age=<--jwks-max-age-seconds>`): a
    /// rotated key signs only after this has run out (`keys rotate`).
    pub jwks_cache_control: header::HeaderValue,
    /// Readiness, and whether the service is draining before it stops.
    pub readiness: Arc<meta::Readiness>,
    /// ATM listings.
    pub atms: AtmLocator,
    /// The request limits.
    pub limits: rate_limit::Limits,
    /// Whose forwarding headers name the caller.
    pub proxies: caller::TrustedProxies,
    /// Where clients reach the service, for absolute links.
    pub public_base_url: String,
    /// How long a request body may take to arrive.
    pub body_timeout: std::time::Duration,
}

/// Every route under `/api`.
pub fn routes(config: &mut web::ServiceConfig) {
    config.service(
        web::scope("/api")
            .service(get_resource("/v1/authorize", authorize::authorize, Shape::Token, Head::Refused))
            .service(get_resource("/v1/atms", atms::list, Shape::Obie, Head::Answered))
            .service(
                web::resource("/v1/open-banking/channels/branch/waittime/retrieve")
                    .route(web::post().to(wait_times::retrieve))
                    .default_service(web::to(|request: HttpRequest| async move {
                        other_method(&request, Method::POST, "POST", Shape::ErrorResponse).await
                    })),
            )
            .service(get_resource("/.well-known/jwks.json", meta::jwks, Shape::ErrorResponse, Head::Answered))
            .service(get_resource("/openapi.json", openapi::serve, Shape::ErrorResponse, Head::Answered))
            .service(web::resource("/docs").route(web::get().to(openapi::to_docs)))
            .service(
                web::scope("/docs")
                    .wrap(middleware::docs_headers())
                    .service(SwaggerUi::new("/{_:.*}").config(SwaggerConfig::new(["/api/openapi.json"]))),
            )
            .service(get_resource("/health/live", meta::live, Shape::ErrorResponse, Head::Answered))
            .service(get_resource("/health/ready", meta::ready, Shape::ErrorResponse, Head::Answered)),
    );
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

fn get_resource<F, Args>(path: &str, handler: F, shape: Shape, head: Head) -> actix_web::Resource
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
        other_method(&request, Method::GET, allow, shape).await
    }))
}

/// A method the resource does not take: a browser's preflight for one of the
/// operations ([`cors::preflight`]), or a 405.
async fn other_method(
    request: &HttpRequest,
    method: Method,
    allow: &'static str,
    shape: Shape,
) -> Result<HttpResponse, ApiError> {
    match cors::preflight(request, &method).await {
        Some(answer) => Ok(answer),
        None => method_not_allowed(request, allow, shape),
    }
}

fn method_not_allowed(request: &HttpRequest, allow: &'static str, shape: Shape) -> Result<HttpResponse, ApiError> {
    let error = ApiError::new(Failure::method_not_allowed(), shape, &error_context(request));
    let mut response = actix_web::ResponseError::error_response(&error);
    response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static(allow));
    Ok(response)
}

/// Unknown paths: 404 with the JSON ErrorResponse body, never an HTML page.
pub async fn not_found(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::new(Failure::no_such_path(), Shape::ErrorResponse, &error_context(&request)))
}
