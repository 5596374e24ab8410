//! Cross-origin calls from browser apps (the Fetch standard's CORS protocol).
//!
//! A client's pages may call the API from the origins of its registered redirect URIs
//! and from the origins added with `clients add|update --allowed-origin`
//! ([`domain::client::ClientRegistration::allows_origin`]). A response is readable by a
//! page only when the request's own client allows the page's origin; a preflight names
//! no client, so it is answered for an origin some active client allows. Requests with
//! no `Origin` (apps, servers) pass untouched; an origin nobody allows gets no CORS
//! header at all (its preflight is the resource's 405).

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpResponse, web};
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
pub enum ClientIn {
    /// The `client_id` query parameter (the token endpoint).
    Query,
    /// The `client_id` header (the bearer operations).
    Header,
}

/// CORS for an operation answering `method`, whose requests name their client `client_in`.
pub async fn cors(
    method: Method,
    client_in: ClientIn,
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(origin) = request.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_owned) else {
        return Ok(next.call(request).await?.map_into_left_body());
    };
    let Some(state) = request.app_data::<web::Data<AppState>>().cloned() else {
        return Ok(next.call(request).await?.map_into_left_body());
    };
    if request.method() == Method::OPTIONS && request.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        let registered = state.clients.origin_registered(&origin).await.unwrap_or(false);
        let asks_for = request.headers().get(header::ACCESS_CONTROL_REQUEST_METHOD).map(HeaderValue::as_bytes);
        if registered && asks_for == Some(method.as_str().as_bytes()) {
            let mut answer = HttpResponse::build(StatusCode::NO_CONTENT);
            answer
                .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, method.as_str()))
                .insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, ALLOWED_HEADERS))
                .insert_header((header::ACCESS_CONTROL_MAX_AGE, PREFLIGHT_MAX_AGE));
            let mut response = request.into_response(answer.finish());
            allow(response.headers_mut(), &origin);
            response.headers_mut().append(header::VARY, HeaderValue::from_static("Origin"));
            return Ok(response.map_into_right_body());
        }
        return Ok(next.call(request).await?.map_into_left_body());
    }
    let client = match client_in {
        ClientIn::Header => request.headers().get("client_id").and_then(|v| v.to_str().ok()).map(str::to_owned),
        ClientIn::Query => form_urlencoded::parse(request.query_string().as_bytes())
            .find(|(name, _)| name == "client_id")
            .map(|(_, value)| value.into_owned()),
    };
    let allowed = match client.as_deref().map(ClientId::parse) {
        Some(Ok(client_id)) => state
            .clients
            .find(&client_id)
            .await
            .ok()
            .flatten()
            .is_some_and(|registration| registration.allows_origin(&origin)),
        _ => false,
    };
    let mut response = next.call(request).await?;
    let headers = response.headers_mut();
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    if allowed {
        allow(headers, &origin);
        headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSED));
    }
    Ok(response.map_into_left_body())
}

/// Lets `origin` read the response (it came from an `Origin` header, so it is a valid
/// header value).
fn allow(headers: &mut HeaderMap, origin: &str) {
    if let Ok(value) = HeaderValue::from_str(origin) {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
    }
}
