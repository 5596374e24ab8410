//! Prometheus metrics, on a listener of their own (`--metrics-listen`), never on the
//! public port; off by default, and then nothing is recorded at all.
//!
//! The `metrics` facade records (here, in the HTTP layer, and in the adapters: the token
//! writer, the view, the readiness probe); `metrics-exporter-prometheus` keeps the
//! values and writes the exposition format. HTTP requests follow OpenTelemetry's HTTP
//! semantic conventions as exported to Prometheus; the service's own metrics start with
//! `branch_atm_`. Every name and label is in `docs/operations.md`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{App, HttpResponse, HttpServer, web};
use domain::ports::{ImportLog, ImportTally};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// OpenTelemetry's `http.server.request.duration`, in seconds.
pub const HTTP_DURATION: &str = "http_server_request_duration_seconds";

/// The buckets OpenTelemetry advises for `http.server.request.duration` (semantic
/// conventions, HTTP metrics), in seconds.
const HTTP_BUCKETS: [f64; 14] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];

/// Token records per group commit: powers of two up to the writer's largest batch.
const BATCH_BUCKETS: [f64; 10] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// The route label of requests that matched no route: one value, never the raw path
/// (anyone can send any path; each would be a new series).
pub const UNMATCHED_ROUTE: &str = "unmatched";

static ON: AtomicBool = AtomicBool::new(false);
static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Whether metrics are recorded (a `--metrics-listen` was given in this process).
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Starts recording: installs the process's recorder, once (later calls reuse it: tests
/// start several services in one process). Call before anything records.
///
/// # Errors
/// The exporter's reason when the recorder cannot be installed.
pub fn install() -> Result<(), String> {
    recorder().map(drop)
}

fn recorder() -> Result<&'static PrometheusHandle, String> {
    if let Some(handle) = HANDLE.get() {
        return Ok(handle);
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.to_owned()), &HTTP_BUCKETS)
        .and_then(|builder| {
            builder.set_buckets_for_metric(
                Matcher::Full(adapters::token_writer::BATCH_SIZE_METRIC.to_owned()),
                &BATCH_BUCKETS,
            )
        })
        .map_err(|e| e.to_string())?
        .install_recorder()
        .map_err(|e| e.to_string())?;
    let handle = HANDLE.get_or_init(|| handle);
    ON.store(true, Ordering::Relaxed);
    Ok(handle)
}

/// Serves `GET /metrics` on `listen`; `before_render` sets the gauges read at scrape
/// time (the view's age, what it holds), and the counts of imports are read from
/// `imports` (the store) at each scrape. Returns the server and the port it bound.
///
/// # Errors
/// Why the recorder could not be installed or the address bound.
pub fn serve(
    listen: SocketAddr,
    before_render: impl Fn() + Send + Sync + Clone + 'static,
    imports: Arc<dyn ImportLog>,
) -> Result<(Server, u16), String> {
    let handle = recorder()?;
    let server = HttpServer::new(move || {
        let before_render = before_render.clone();
        let imports = Arc::clone(&imports);
        App::new().route(
            "/metrics",
            web::get().to(move || {
                before_render();
                let imports = Arc::clone(&imports);
                async move {
                    count_imports(imports.as_ref()).await;
                    let body = handle.render();
                    HttpResponse::Ok().content_type("text/plain; version=0.0.4; charset=utf-8").body(body)
                }
            }),
        )
    })
    .workers(1)
    .disable_signals()
    .bind(listen)
    .map_err(|e| format!("--metrics-listen {listen}: {e}"))?;
    let port = server.addrs().first().map_or(listen.port(), SocketAddr::port);
    Ok((server.run(), port))
}

/// The longest a scrape waits for the store's counts of imports; then it shows the
/// counts it read last.
const IMPORT_COUNTS_DEADLINE: Duration = Duration::from_millis(500);

/// Sets `branch_atm_imports_total` and `branch_atm_import_last_seconds` from the store:
/// imports are commands of their own on any host, so the store is where they are counted
/// (the same figures on every instance).
async fn count_imports(imports: &dyn ImportLog) {
    let tally = match actix_web::rt::time::timeout(IMPORT_COUNTS_DEADLINE, imports.tally()).await {
        Ok(Ok(tally)) => tally,
        Ok(Err(error)) => {
            tracing::warn!(%error, "the counts of imports could not be read for the metrics");
            adapters::token_writer::store_error("import_counts");
            return;
        }
        Err(_) => {
            adapters::token_writer::store_error("import_counts");
            return;
        }
    };
    for ImportTally { kind, outcome, runs, last_at } in tally {
        let labels = [("kind", kind.label()), ("outcome", outcome.label())];
        metrics::counter!("branch_atm_imports_total", &labels).absolute(runs);
        #[allow(clippy::cast_precision_loss)] // Unix seconds fit an f64's 53 bits exactly.
        metrics::gauge!("branch_atm_import_last_seconds", &labels).set(last_at as f64);
    }
}

/// The `http_response_status_code` label of `status`: its number, for every status
/// HTTP defines (100 to 599, written once per process), `other` outside them.
pub fn status_label(status: u16) -> &'static str {
    static LABELS: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| (100..600u16).map(|status| status.to_string()).collect());
    match status.checked_sub(100).and_then(|index| LABELS.get(usize::from(index))) {
        Some(label) => label.as_str(),
        None => "other",
    }
}

/// Records one request's duration under its method, route template and status.
pub fn request_done(method: &actix_web::http::Method, route: Option<String>, status: u16, seconds: f64) {
    let route = route.unwrap_or_else(|| UNMATCHED_ROUTE.to_owned());
    let (method, status) = (method_label(method), status_label(status));
    HISTOGRAMS.with_borrow_mut(|by_route| {
        if let Some(series) = by_route.get(route.as_str())
            && let Some((_, _, histogram)) =
                series.iter().find(|(m, s, _)| std::ptr::eq(*m, method) && std::ptr::eq(*s, status))
        {
            histogram.record(seconds);
            return;
        }
        let histogram = metrics::histogram!(
            HTTP_DURATION,
            "http_request_method" => method,
            "http_route" => route.clone(),
            "http_response_status_code" => status,
        );
        histogram.record(seconds);
        by_route.entry(route).or_default().push((method, status, histogram));
    });
}

/// One request-duration series of a route: its method and status labels and its handle.
type Series = (&'static str, &'static str, metrics::Histogram);

thread_local! {
    /// Each worker thread's handles of the request-duration series it has recorded, by
    /// route then (method, status) label: a request then costs a lookup of its route,
    /// not the registry's hashing of three labels.
    static HISTOGRAMS: std::cell::RefCell<std::collections::HashMap<String, Vec<Series>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The method label: the request's method when it is a known one, `_OTHER` otherwise
/// (OpenTelemetry's rule, so that no client can invent series).
fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

/// A token was issued.
pub fn token_issued() {
    metrics::counter!("branch_atm_tokens_issued_total").increment(1);
}

/// A request was refused for `operation` (`authorize`, `bearer`) because of `reason`.
pub fn refused(operation: &'static str, reason: &'static str) {
    metrics::counter!("branch_atm_refusals_total", "operation" => operation, "reason" => reason).increment(1);
}

/// A request was refused by the rate limit `limit`.
pub fn rate_limited(limit: &'static str) {
    metrics::counter!("branch_atm_rate_limited_total", "limit" => limit).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_carry_what_a_client_made_up() {
        assert_eq!((status_label(299), status_label(504), status_label(200)), ("299", "504", "200"));
        assert_eq!((status_label(99), status_label(600)), ("other", "other"));
        assert_eq!(method_label(&actix_web::http::Method::from_bytes(b"BREW").unwrap()), "_OTHER");
        assert_eq!(method_label(&actix_web::http::Method::GET), "GET");
    }
}
