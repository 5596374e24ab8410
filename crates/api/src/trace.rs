//! Traces (OpenTelemetry, docs/operations.md "Traces"): each request's server span, made
//! by [`crate::middleware::observe`] when the server exports traces (`--otlp-endpoint`).
//!
//! A request that carries a W3C `traceparent` follows its caller's sampling decision; one
//! without starts a trace of its own, sampled at the configured ratio. A sampled request
//! gets a span the server's exporter sees ([`EXPORTED`]), with OpenTelemetry's HTTP
//! server attributes, and the work beneath it (the bearer check, limits, signing, the
//! store) adds children. An unsampled one gets only a plain span that carries the trace
//! and span ids into its log lines ([`LOGGED`]), made only when the log records it (at
//! `info`); nothing beneath it makes a span (docs/benchmarks.md, "Traces", says what it
//! costs).
//!
//! With tracing off, none of this runs: the middleware keeps its one span per request
//! that sent a `uuid`.

use actix_web::dev::ServiceRequest;
use actix_web::http::header::{self, HeaderMap};
use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt as _, TraceId};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The target of a sampled request's server span: [`domain::TRACE_ROOT`], the target of
/// every span that starts an exported trace.
pub const EXPORTED: &str = domain::TRACE_ROOT;

/// The W3C header of the caller's span.
const TRACEPARENT: header::HeaderName = header::HeaderName::from_static("traceparent");

/// The target of an unsampled request's span: seen by the log only.
pub const LOGGED: &str = "branch_atm::request";

/// How requests are traced: the share of new traces sampled.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    /// The share of requests without a `traceparent` whose trace is kept, 0 to 1.
    pub ratio: f64,
}

/// A request's trace and span ids, for its access line (written as 32 and 16 hex digits
/// only when a line is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceIds {
    /// The trace's id.
    pub trace_id: TraceId,
    /// The request's span's id.
    pub span_id: SpanId,
}

impl TraceIds {
    /// The trace id as W3C writes it (32 lower-case hex digits), on the stack: the log's
    /// span fields and the access line take the ids as text, which costs a fraction of
    /// formatting the numbers through `Display` (issue 34's bench, `--logged`).
    pub fn trace_id_hex(&self) -> Hex<32> {
        Hex::of(&self.trace_id.to_bytes())
    }

    /// The span id as W3C writes it (16 lower-case hex digits), on the stack.
    pub fn span_id_hex(&self) -> Hex<16> {
        Hex::of(&self.span_id.to_bytes())
    }
}

/// Lower-case hex digits on the stack ([`TraceIds::trace_id_hex`]).
#[derive(Debug, Clone, Copy)]
pub struct Hex<const DIGITS: usize>([u8; DIGITS]);

impl<const DIGITS: usize> Hex<DIGITS> {
    fn of(bytes: &[u8]) -> Self {
        let mut digits = [0; DIGITS];
        // Infallible: the ids' bytes are exactly half the digits.
        let _ = hex::encode_to_slice(bytes, &mut digits);
        Self(digits)
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The request's span and its ids: a child of the caller's span when it sent a
/// `traceparent`, sampled as the caller decided; otherwise the root of a new trace,
/// sampled at `sampling`'s ratio. `uuid` is the request's valid `uuid` header, the spec's
/// correlation id, recorded so that an app developer's uuid leads to the trace.
pub fn request_span(request: &ServiceRequest, sampling: Sampling, uuid: Option<&str>) -> (tracing::Span, TraceIds) {
    // Most requests carry no `traceparent`: no context is made for them.
    let parent = request
        .headers()
        .contains_key(TRACEPARENT)
        .then(|| TraceContextPropagator::new().extract(&Headers(request.headers())));
    let remote = parent.as_ref().map_or_else(SpanContext::empty_context, |parent| parent.span().span_context().clone());
    let sampled = if remote.is_valid() { remote.is_sampled() } else { rand::random::<f64>() < sampling.ratio };
    if !sampled {
        // Made only when the log records it (its fields are written only then): with the
        // log above `info`, an unsampled request makes no span at all.
        let ids = unsampled_ids(&remote);
        let span = tracing::info_span!(
            target: LOGGED,
            "request",
            uuid,
            trace_id = ids.trace_id_hex().as_str(),
            span_id = ids.span_id_hex().as_str()
        );
        return (span, ids);
    }
    let method = crate::observe::method_label(request.method());
    let route = request.match_pattern();
    // OpenTelemetry's rule: `{method} {route}`, the method alone without a route, and
    // `HTTP` for a method it does not know.
    let shown = if method == "_OTHER" { "HTTP" } else { method };
    let name = match &route {
        Some(route) => format!("{shown} {route}"),
        None => shown.to_owned(),
    };
    // Only what the log needs is a field (every line inside the request prints the
    // span's fields); the HTTP attributes go to the trace alone.
    let span = tracing::info_span!(
        target: EXPORTED,
        "request",
        otel.name = name.as_str(),
        otel.kind = "server",
        uuid,
        trace_id = Empty,
        span_id = Empty,
    );
    span.set_attribute("http.request.method", method);
    if method == "_OTHER" {
        span.set_attribute("http.request.method_original", request.method().as_str().to_owned());
    }
    if let Some(route) = route {
        span.set_attribute("http.route", route);
    }
    span.set_attribute("url.path", request.path().to_owned());
    span.set_attribute("url.scheme", if request.app_config().secure() { "https" } else { "http" });
    if let Ok(state) = crate::state::AppState::of(request.request()) {
        span.set_attribute("client.address", state.proxies.caller(request.request()).to_string());
    }
    if let Some(host) = request.headers().get(header::HOST).and_then(|host| host.to_str().ok()) {
        span.set_attribute("server.address", host_name(host).to_owned());
    }
    if let Some(agent) = request.headers().get(header::USER_AGENT).and_then(|agent| agent.to_str().ok()) {
        span.set_attribute("user_agent.original", agent.to_owned());
    }
    if let Some(parent) = parent.filter(|_| remote.is_valid()) {
        // Fails only when no trace layer is installed (tests without one): the span is
        // then a root, as it would be anyway.
        let _ = span.set_parent(parent);
    }
    let context = span.context();
    let own = context.span().span_context().clone();
    let ids = if own.is_valid() { ids_of(&own) } else { unsampled_ids(&remote) };
    span.record("trace_id", ids.trace_id_hex().as_str());
    span.record("span_id", ids.span_id_hex().as_str());
    (span, ids)
}

/// Records the answer on the request's span when its trace is kept: its status, and on
/// a 5xx (only, as OpenTelemetry's HTTP conventions say) the error type and the span's
/// status Error. An unsampled request's span has nothing to record it in (one check,
/// where asking the trace layer would look the span up twice).
pub fn answered(span: &tracing::Span, status: u16) {
    if span.metadata().is_none_or(|metadata| metadata.target() != EXPORTED) {
        return;
    }
    span.set_attribute("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.set_attribute("error.type", crate::observe::status_label(status));
        span.set_status(opentelemetry::trace::Status::error(""));
    }
}

/// The host of a `Host` header's value, without its port.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_once(']').map_or(host, |(v6, _)| v6.trim_start_matches('['));
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Ids for a request whose trace is not kept: the caller's trace id when it sent one
/// (its log lines then match the caller's), a new random one otherwise, and a new span
/// id.
fn unsampled_ids(remote: &SpanContext) -> TraceIds {
    // Never zero (an invalid id in W3C's rules).
    let trace_id = if remote.is_valid() { remote.trace_id() } else { TraceId::from(rand::random::<u128>() | 1) };
    TraceIds { trace_id, span_id: SpanId::from(rand::random::<u64>() | 1) }
}

fn ids_of(context: &SpanContext) -> TraceIds {
    TraceIds { trace_id: context.trace_id(), span_id: context.span_id() }
}

/// A request's headers as the W3C propagator reads them.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(header::HeaderName::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_named_without_its_port() {
        assert_eq!(host_name("api.example.com:8443"), "api.example.com");
        assert_eq!(host_name("api.example.com"), "api.example.com");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("[::1]"), "::1");
    }

    #[test]
    fn an_unsampled_request_keeps_its_callers_trace_id() {
        let parent = TraceContextPropagator::new().extract(&Headers(&HeaderMap::from_iter([(
            header::HeaderName::from_static("traceparent"),
            header::HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
        )])));
        let remote = parent.span().span_context().clone();
        assert!(remote.is_valid() && !remote.is_sampled());
        let ids = unsampled_ids(&remote);
        assert_eq!(ids.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(ids.span_id.to_string().len(), 16);
        assert_ne!(ids.span_id.to_string(), "00f067aa0ba902b7");
    }

    #[test]
    fn the_ids_are_written_as_w3c_writes_them() {
        let ids = TraceIds {
            trace_id: TraceId::from(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736),
            span_id: SpanId::from(0x00f0_67aa_0ba9_02b7),
        };
        let (trace_id, span_id) = (ids.trace_id_hex(), ids.span_id_hex());
        assert_eq!((trace_id.as_str(), span_id.as_str()), ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"));
        assert_eq!(trace_id.as_str(), ids.trace_id.to_string(), "what OpenTelemetry's own Display writes");
    }
}
