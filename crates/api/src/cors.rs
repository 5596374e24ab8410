//! Cross-origin calls from browser apps (the Fetch standard's CORS protocol).
//!
//! A client's pages may call the API from the origins of its registered redirect URIs
//! and from the origins added with `clients add|update --allowed-origin`
//! ([`domain::client::ClientRegistration::allows_origin`]). A response is readable by a
//! page only when the request's own client allows the page's origin; a preflight names
//! no client, so it is answered for an origin some active client allows. Requests with
//! no `Origin` (apps, servers) pay one header lookup in the request middleware; an origin
//! nobody allows gets no CORS header at all (its preflight is the resource's 405).
//!
//! The public discovery resources (the status and planned outages) are not operations of
//! a client: any page may read them, and their handlers say so themselves
//! (`Access-Control-Allow-Origin: *`, [`crate::discovery`]). They need no preflight: a
//! page reads them with a simple GET.

use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse};

use crate::state::AppState;

/// Headers a page may read from our responses (the spec's and the validators).
const EXPOSED: &str = "sid, state, uuid, ETag, Last-Modified, Retry-After, WWW-Authenticate, DPoP-Nonce";
/// Request headers the operations read, beside the CORS-safelisted ones.
const ALLOWED_HEADERS: &str = "Authorization, DPoP, client_id, uuid, sid, countryCode, businessCode, ChannelId, \
    Content-Type, Accept, Accept-Language, If-None-Match, If-Modified-Since";
/// How long a browser may reuse a preflight's answer, in seconds (Chromium caps it at 7200).
const PREFLIGHT_MAX_AGE: &str = "600";

/// The operations browser pages may call, by path under `/api`; each names its client
/// ([`crate::request::named_client`]: a header, a query parameter, or the revocation
/// form's body).
const OPERATIONS: [&str; 4] =
    ["/api/v1/authorize", "/api/v1/atms", "/api/v1/open-banking/channels/branch/waittime/retrieve", "/api/v1/revoke"];

/// The answer to a browser's preflight (`OPTIONS` with `Access-Control-Request-Method`)
/// on an operation answering `method`: 204 with the CORS headers for an origin some
/// active client allows, asking for that method; otherwise `None`, and the resource
/// answers as to any other method it does not take (405).
pub async fn preflight(request: &HttpRequest, method: &Method) -> Option<HttpResponse> {
    if request.method() != Method::OPTIONS || !OPERATIONS.contains(&request.path()) {
        return None;
    }
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    let asks_for = headers.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
    let state = AppState::of(request).ok()?;
    if asks_for.as_bytes() != method.as_str().as_bytes() || !state.origins.any_client_allows(origin).await.ok()? {
        return None;
    }
    let mut answer = HttpResponse::build(StatusCode::NO_CONTENT);
    answer
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_str(origin).ok()?))
        .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, method.as_str()))
        .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOWED_HEADERS))
        .insert_header((header::ACCESS_CONTROL_MAX_AGE, PREFLIGHT_MAX_AGE))
        .insert_header((header::VARY, "Origin"));
    Some(answer.finish())
}

/// For a request from a page (it has an `Origin`) to one of the operations, the origin
/// if the request's own client allows it: its answer is then readable by the page
/// ([`expose`]). `None` for every other request, after one header lookup. Asked once
/// the handler has run, so that a client named in the body is known.
pub async fn allowed_origin(request: &HttpRequest) -> Option<Option<HeaderValue>> {
    let origin = request.headers().get(header::ORIGIN)?;
    if request.method() == Method::OPTIONS || !OPERATIONS.contains(&request.path()) {
        return None;
    }
    let state = AppState::of(request).ok()?;
    let allowed = match (crate::request::named_client(request), origin.to_str()) {
        (Some(client_id), Ok(origin)) => state.origins.client_allows(&client_id, origin).await.unwrap_or(false),
        _ => false,
    };
    Some(allowed.then(|| origin.clone()))
}

/// Marks an operation's answer to a page: `Vary: Origin` always (a browser cache keeps
/// answers for different pages apart), and, for an allowed origin, the headers that let
/// the page read it.
pub fn expose(headers: &mut HeaderMap, allowed: Option<HeaderValue>) {
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(origin) = allowed {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED));
    }
}
