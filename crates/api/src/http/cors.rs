//! Cross-origin calls from browser apps (the Fetch standard's CORS protocol).
//!
//! A client's pages may call the API from the origins of its registered redirect URIs
//! and from the origins added with `clients add|update --allowed-origin`
//! ([`domain::client::ClientRegistration::allows_origin`]). A response is readable by a
//! page only when the request's own client allows the page's origin; a preflight names
//! no client, so it is answered for an origin some active client allows. Requests with
//! no `Origin` (apps, servers) pay one header lookup in the request middleware; an origin
//! nobody allows gets no CORS header at all (its preflight is the resource's 405).

use actix_web::dev::ServiceRequest;
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::client::ClientId;

use super::AppState;

/// Headers a page may read from our responses (the spec's and the validators).
const EXPOSED: &str = "sid, state, uuid, ETag, Last-Modified, Retry-After, WWW-Authenticate";
/// Request headers the operations read, beside the CORS-safelisted ones.
const ALLOWED_HEADERS: &str = "Authorization, client_id, uuid, sid, countryCode, businessCode, ChannelId, \
    Content-Type, Accept, Accept-Language, If-None-Match, If-Modified-Since";
/// How long a browser may reuse a preflight's answer, in seconds (Chromium caps it at 7200).
const PREFLIGHT_MAX_AGE: &str = "600";

/// Where an operation's request names its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientIn {
    /// The `client_id` query parameter (the token endpoint).
    Query,
    /// The `client_id` header (the bearer operations).
    Header,
}

/// The operations browser pages may call, by path under `/api`, and where each names
/// its client.
const OPERATIONS: [(&str, ClientIn); 3] = [
    ("/api/v1/authorize", ClientIn::Query),
    ("/api/v1/atms", ClientIn::Header),
    ("/api/v1/open-banking/channels/branch/waittime/retrieve", ClientIn::Header),
];

/// The answer to a browser's preflight (`OPTIONS` with `Access-Control-Request-Method`)
/// on an operation answering `method`: 204 with the CORS headers for an origin some
/// active client allows, asking for that method; otherwise `None`, and the resource
/// answers as to any other method it does not take (405).
pub async fn preflight(request: &HttpRequest, method: &Method) -> Option<HttpResponse> {
    if request.method() != Method::OPTIONS || !OPERATIONS.iter().any(|(path, _)| *path == request.path()) {
        return None;
    }
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    let asks_for = headers.get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
    let state = request.app_data::<web::Data<AppState>>()?;
    if asks_for.as_bytes() != method.as_str().as_bytes() || !state.clients.origin_registered(origin).await.ok()? {
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
/// ([`expose`]). `None` for every other request, after one header lookup.
pub async fn allowed_origin(request: &ServiceRequest) -> Option<Option<HeaderValue>> {
    let origin = request.headers().get(header::ORIGIN)?;
    if request.method() == Method::OPTIONS {
        return None;
    }
    let (_, client_in) = OPERATIONS.iter().find(|(path, _)| *path == request.path())?;
    let client = match client_in {
        ClientIn::Header => request.headers().get("client_id").and_then(|v| v.to_str().ok()).map(str::to_owned),
        ClientIn::Query => form_urlencoded::parse(request.query_string().as_bytes())
            .find(|(name, _)| name == "client_id")
            .map(|(_, value)| value.into_owned()),
    };
    let state = request.app_data::<web::Data<AppState>>()?;
    let allowed = match (client.as_deref().map(ClientId::parse), origin.to_str()) {
        (Some(Ok(client_id)), Ok(origin)) => {
            state.clients.find(&client_id).await.ok().flatten().is_some_and(|client| client.allows_origin(origin))
        }
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
