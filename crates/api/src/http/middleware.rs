//! What wraps every response: security headers, correlation id, the access log, and
//! `Connection: close` while the service drains.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::http::header::HeaderName;
use actix_web::middleware::{DefaultHeaders, Next};
use tracing::Instrument as _;

use domain::client::ClientId;

use super::access_log::{AccessLine, AccessLog};
use super::meta::Readiness;
use super::request::{UUID_HEADER, valid_uuid_header};

/// The security headers DECISIONS.md puts on every response (OWASP Secure Headers).
/// `X-XSS-Protection: 0` turns off the legacy browser filter, which OWASP now advises.
pub fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add(("Strict-Transport-Security", "max-age=31536000; includeSubDomains"))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("X-XSS-Protection", "0"))
        .add(("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'"))
}

/// The docs page's policy: Swagger UI needs its own scripts and styles (it sets inline
/// style attributes), data: images from its stylesheet, and fetches of the OpenAPI
/// document and of "Try it out" calls to this origin. Nothing else.
pub const DOCS_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Headers of the docs page: its own CSP, set before [`security_headers`] would set the
/// JSON one (DefaultHeaders never overrides a header already present).
pub fn docs_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add(("Content-Security-Policy", DOCS_CONTENT_SECURITY_POLICY))
        .add(("Cache-Control", "public, max-age=300"))
}

/// Runs each request in a span carrying its `uuid` (the correlation id), echoes a valid
/// `uuid` as a response header, marks answers to browser pages for CORS
/// ([`super::cors`]), records its metrics, and writes its access line
/// ([`super::access_log`]). While the service drains before it stops, every response
/// says `Connection: close`, so a keep-alive client sends its next request elsewhere
/// instead of into a connection about to close.
pub async fn observe(
    readiness: Arc<Readiness>,
    access: AccessLog,
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let metrics = crate::metrics::on();
    let method = (metrics || access != AccessLog::Off).then(|| request.method().clone());
    let uuid = valid_uuid_header(request.headers()).cloned();
    let page = super::cors::allowed_origin(&request).await;
    let who = (access != AccessLog::Off).then(|| (client_id_of(&request), caller_of(&request)));
    // The span carries the correlation id into whatever the request logs; a request
    // without one (health checks, most probes) has nothing to correlate and gets none.
    let span = match uuid.as_ref().and_then(|v| v.to_str().ok()) {
        Some(uuid) => tracing::info_span!("request", uuid),
        None => tracing::Span::none(),
    };
    let mut response = next.call(request).instrument(span).await?;
    let status = response.status().as_u16();
    if let Some(method) = method {
        let route = response.request().match_pattern();
        let elapsed = started.elapsed();
        if metrics {
            crate::metrics::request_done(&method, route.clone(), status, elapsed.as_secs_f64());
        }
        if access.writes(status) {
            let (client_id, caller) = who.unwrap_or_default();
            AccessLine {
                method: &method,
                route: route.as_deref(),
                status,
                micros: elapsed.as_micros() as u64,
                uuid: uuid.as_ref().and_then(|v| v.to_str().ok()),
                client_id: client_id.as_ref().map(ClientId::as_str),
                caller,
            }
            .write(crate::telemetry::log_format());
        }
    }
    if let Some(uuid) = uuid {
        response.headers_mut().insert(HeaderName::from_static(UUID_HEADER), uuid);
    }
    if let Some(allowed) = page {
        super::cors::expose(response.headers_mut(), allowed);
    }
    if readiness.is_draining() {
        response.response_mut().head_mut().set_connection_type(ConnectionType::Close);
    }
    Ok(response)
}

/// The client a request names (the `client_id` header, or the token request's query
/// parameter), when it is a valid client id.
fn client_id_of(request: &ServiceRequest) -> Option<ClientId> {
    let header = request.headers().get("client_id").and_then(|value| value.to_str().ok());
    let raw = match header {
        Some(value) => std::borrow::Cow::Borrowed(value),
        None => form_urlencoded::parse(request.query_string().as_bytes())
            .find(|(name, _)| name == "client_id")
            .map(|(_, value)| value)?,
    };
    ClientId::parse(&raw).ok()
}

/// The caller's address: the peer, or what a trusted proxy reports.
fn caller_of(request: &ServiceRequest) -> Option<std::net::IpAddr> {
    let state = request.app_data::<actix_web::web::Data<super::AppState>>()?;
    Some(state.proxies.caller(request.request()))
}
