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
/// ([`super::cors`]), and logs one line per request with status and latency.
/// While the service drains before it stops, every response says `Connection: close`,
/// so a keep-alive client sends its next request elsewhere instead of into a connection
/// about to close.
pub async fn observe(
    readiness: Arc<Readiness>,
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = crate::metrics::on().then(|| request.method().clone());
    let uuid = valid_uuid_header(request.headers()).cloned();
    let page = super::cors::allowed_origin(&request).await;
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.path(),
        uuid = uuid.as_ref().and_then(|v| v.to_str().ok()).unwrap_or(""),
    );
    let mut response = next.call(request).instrument(span.clone()).await?;
    if let Some(uuid) = uuid {
        response.headers_mut().insert(HeaderName::from_static(UUID_HEADER), uuid);
    }
    if let Some(allowed) = page {
        super::cors::expose(response.headers_mut(), allowed);
    }
    if let Some(method) = method {
        let route = response.request().match_pattern();
        crate::metrics::request_done(&method, route, response.status().as_u16(), started.elapsed().as_secs_f64());
    }
    if readiness.is_draining() {
        response.response_mut().head_mut().set_connection_type(ConnectionType::Close);
    }
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            micros = started.elapsed().as_micros() as u64,
            "request completed"
        );
    });
    Ok(response)
}
