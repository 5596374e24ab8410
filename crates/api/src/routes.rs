//! Every route: which handler answers which path and method, and what answers the
//! others (a 405 in the operation's body shape, a browser's preflight, a 404); the
//! operations that take a DPoP proof hand out its nonces ([`dpop::Nonces`]).

use actix_web::http::{Method, header};
use actix_web::{HttpRequest, HttpResponse, web};
use utoipa_swagger_ui::{Config as SwaggerConfig, SwaggerUi};

use crate::errors::{
    ApiError, AtmChanges, Atms, Authorize, Meta, NoRoute, Operation, Revoke, SystemPosts, SystemToken, WaitTimes,
};
use crate::{
    atm_changes, atm_states, atms, authorize, cors, discovery, dpop, meta, middleware, openapi, queue_events, revoke,
    system_token, wait_times,
};

/// Every route under `/api`.
pub fn routes(config: &mut web::ServiceConfig) {
    config.service(get_resource::<Meta, _, _>("/", openapi::root, Head::Answered));
    config.service(
        web::scope("/api")
            .service(
                get_resource::<Authorize, _, _>("/v1/authorize", authorize::authorize, Head::Refused)
                    .wrap(dpop::Nonces),
            )
            .service(web::resource("/v1/revoke").route(web::post().to(revoke::revoke)).default_service(web::to(
                |request: HttpRequest| async move { other_method::<Revoke>(&request, Method::POST, "POST").await },
            )))
            .service(web::resource("/v1/token").route(web::post().to(system_token::token)).default_service(web::to(
                |request: HttpRequest| async move { other_method::<SystemToken>(&request, Method::POST, "POST").await },
            )))
            .service(
                web::resource("/v1/branches/queue-events").route(web::post().to(queue_events::post)).default_service(
                    web::to(|request: HttpRequest| async move {
                        other_method::<SystemPosts>(&request, Method::POST, "POST").await
                    }),
                ),
            )
            .service(get_resource::<Atms, _, _>("/v1/atms", atms::list, Head::Answered).wrap(dpop::Nonces))
            .service(get_resource::<Atms, _, _>("/v1/atms/state", atm_states::list, Head::Answered).wrap(dpop::Nonces))
            .service(
                get_resource::<AtmChanges, _, _>("/v1/atms/changes", atm_changes::list, Head::Answered)
                    .wrap(dpop::Nonces),
            )
            .service(web::resource("/v1/atms/state-events").route(web::post().to(atm_states::post)).default_service(
                web::to(|request: HttpRequest| async move {
                    other_method::<SystemPosts>(&request, Method::POST, "POST").await
                }),
            ))
            .service(
                web::resource("/v1/open-banking/channels/branch/waittime/retrieve")
                    .wrap(dpop::Nonces)
                    .route(web::post().to(wait_times::retrieve))
                    .default_service(web::to(|request: HttpRequest| async move {
                        other_method::<WaitTimes>(&request, Method::POST, "POST").await
                    })),
            )
            .service(get_resource::<Meta, _, _>("/v1/discovery/status", discovery::status, Head::Answered))
            .service(get_resource::<Meta, _, _>("/v1/discovery/outages", discovery::outages, Head::Answered))
            .service(get_resource::<Meta, _, _>("/.well-known/jwks.json", meta::jwks, Head::Answered))
            .service(get_resource::<Meta, _, _>(
                "/.well-known/oauth-authorization-server",
                meta::authorization_server,
                Head::Answered,
            ))
            .service(get_resource::<Meta, _, _>("/openapi.json", openapi::serve, Head::Answered))
            .service(get_resource::<Meta, _, _>("/docs", openapi::to_docs, Head::Answered))
            .service(
                web::scope("/docs")
                    .wrap(middleware::docs_headers())
                    // The docs page's assets come from a service that routes GET only.
                    .wrap(actix_web::middleware::from_fn(middleware::head_as_get))
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

/// Whether a GET resource also answers HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// HEAD runs the GET handler, and the server drops the body.
    Answered,
    /// HEAD is refused (405): the GET does something a body nobody reads must not cause
    /// (authorize mints and stores a token).
    Refused,
}

/// A GET (and HEAD, RFC 9110 §9.3.2) resource whose other methods get a 405.
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
