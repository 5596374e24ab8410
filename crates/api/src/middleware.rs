//! What wraps every response: security headers, correlation id, the access log, and
//! `Connection: close` while the service drains.

use std::sync::Arc;
use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::middleware::{DefaultHeaders, Next};
use tracing::Instrument as _;

use domain::client::ClientId;

use crate::access_log::{AccessLine, AccessWriter};
use crate::correlation::valid_uuid_header;
use crate::errors::ApiError;
use crate::headers::UUID_HEADER;
use crate::log_summary::LogSummaries;
use crate::readiness::Readiness;
use crate::trace::Sampling;

/// The security headers docs/contract.md puts on every response (OWASP Secure Headers).
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

/// What [`observe`] needs beside the request: the readiness (to know the service is
/// draining), the access log when one is written, whether metrics are recorded, and the
/// log's per-second summaries of failures.
pub struct Observer {
    readiness: Arc<Readiness>,
    access: Option<Arc<dyn AccessWriter>>,
    metrics: bool,
    summaries: LogSummaries,
    tracing: Option<Sampling>,
}

impl Observer {
    /// An observer of the service whose readiness is `readiness`, writing access lines
    /// to `access` (none when `None`), and recording metrics when `metrics` (the server
    /// installed a recorder, `--metrics-listen`).
    pub fn new(readiness: Arc<Readiness>, access: Option<Arc<dyn AccessWriter>>, metrics: bool) -> Self {
        Self { readiness, access, metrics, summaries: LogSummaries::start(crate::observe::summarise), tracing: None }
    }

    /// The same observer, also giving each request a span for OpenTelemetry traces,
    /// sampled as `sampling` says ([`crate::trace`]).
    #[must_use]
    pub fn traced(self, sampling: Sampling) -> Self {
        Self { tracing: Some(sampling), ..self }
    }
}

/// Runs each request in a span carrying its `uuid` (the correlation id), echoes a valid
/// `uuid` as a response header, marks answers to browser pages for CORS
/// ([`crate::cors`]), records its metrics, and writes its access line
/// ([`crate::access_log`]). While the service drains before it stops, every response
/// says `Connection: close`, so a keep-alive client sends its next request elsewhere
/// instead of into a connection about to close.
pub async fn observe(
    observer: Arc<Observer>,
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let metrics = observer.metrics;
    let access = observer.access.as_deref();
    let method = (metrics || access.is_some()).then(|| request.method().clone());
    let uuid = valid_uuid_header(request.headers()).cloned();
    // The span carries the correlation id into whatever the request logs; a request
    // without one (health checks, most probes) has nothing to correlate and gets none.
    let uuid_text = uuid.as_ref().and_then(|v| v.to_str().ok());
    let (span, trace) = match (observer.tracing, uuid_text) {
        (Some(sampling), _) => {
            let (span, ids) = crate::trace::request_span(&request, sampling, uuid_text);
            (span, Some(ids))
        }
        (None, Some(uuid)) => (tracing::info_span!("request", uuid), None),
        (None, None) => (tracing::Span::none(), None),
    };
    // The span is kept for the answer's attributes only when traced: with traces off,
    // a request pays for no clone.
    let (span, kept) = if trace.is_some() { (span.clone(), span) } else { (span, tracing::Span::none()) };
    let mut response = match next.call(request).instrument(span).await {
        Ok(response) => response,
        Err(error) => {
            // An error the inner services did not make a response of: the trace still
            // gets the status it will be answered with.
            if trace.is_some() {
                crate::trace::answered(&kept, error.as_response_error().status_code().as_u16());
            }
            return Err(error);
        }
    };
    let span = kept;
    // After the handler: the revocation form names its client in the body it read.
    let page = crate::cors::allowed_origin(response.request()).await;
    let who =
        access.is_some().then(|| (crate::request::named_client(response.request()), caller_of(response.request())));
    if let Some(failure) = response.response().error().and_then(|error| error.as_error::<ApiError>()) {
        let uuid = uuid.as_ref().and_then(|v| v.to_str().ok());
        // Inside the request's span when traced: the line carries its trace.
        let _traced = trace.is_some().then(|| span.enter());
        crate::observe::failure(failure, uuid, &observer.summaries, metrics);
    }
    let status = response.status().as_u16();
    if trace.is_some() {
        crate::trace::answered(&span, status);
    }
    if let Some(method) = method {
        let route = response.request().match_pattern();
        let elapsed = started.elapsed();
        if metrics {
            crate::observe::request_done(&method, route.clone(), status, elapsed.as_secs_f64());
        }
        if let Some(access) = access.filter(|access| access.records(status)) {
            let (client_id, caller) = who.unwrap_or_default();
            access.write(&AccessLine {
                method: &method,
                route: route.as_deref(),
                status,
                micros: elapsed.as_micros() as u64,
                uuid: uuid.as_ref().and_then(|v| v.to_str().ok()),
                client_id: client_id.as_ref().map(ClientId::as_str),
                caller,
                trace: trace.as_ref(),
            });
        }
    }
    if let Some(uuid) = uuid {
        response.headers_mut().insert(UUID_HEADER.key().clone(), uuid);
    }
    if let Some(allowed) = page {
        crate::cors::expose(response.headers_mut(), allowed);
    }
    if observer.readiness.is_draining() {
        response.response_mut().head_mut().set_connection_type(ConnectionType::Close);
    }
    Ok(response)
}

/// The caller's address: the peer, or what a trusted proxy reports.
fn caller_of(request: &actix_web::HttpRequest) -> Option<std::net::IpAddr> {
    let state = crate::state::AppState::of(request).ok()?;
    Some(state.proxies.caller(request))
}

/// Serves `HEAD` as `GET` (RFC 9110 §9.3.2: a `GET` resource answers `HEAD` with the same
/// status and headers) for a service that routes `GET` only, such as the docs page's
/// assets: the request is routed as a `GET`, and the HTTP layer, which read `HEAD` off the
/// wire, sends the answer without its body.
pub async fn head_as_get(
    mut request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if request.method() == actix_web::http::Method::HEAD {
        request.head_mut().method = actix_web::http::Method::GET;
    }
    next.call(request).await
}
