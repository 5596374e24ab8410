//! Prometheus metrics, on a listener of their own (`--metrics-listen`), never on the
//! public port; off by default, and then nothing is recorded at all.
//!
//! The `metrics` facade records (in the HTTP layer, `api::observe`, and in the adapters:
//! the token writer, the view, the readiness probe); `metrics-exporter-prometheus`,
//! installed here, keeps the values and writes the exposition format. HTTP requests follow OpenTelemetry's HTTP
//! semantic conventions as exported to Prometheus; the service's own metrics start with
//! `branch_atm_`. Every name and label is in `docs/operations.md`.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::{App, HttpResponse, HttpServer, web};
use domain::ports::{ImportLog, ImportTally};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// The buckets OpenTelemetry advises for `http.server.request.duration` (semantic
/// conventions, HTTP metrics), in seconds, and 0.3 besides: the latency objective is
/// 95 % of requests within 300 ms per operation (`docs/prometheus-slo-rules.yml`, which
/// reads the `le="0.3"` bucket), and a histogram only counts exactly at its boundaries.
/// Sorted, as Prometheus buckets must be.
const HTTP_BUCKETS: [f64; 15] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];

/// Token records per group commit: powers of two up to the writer's largest batch.
const BATCH_BUCKETS: [f64; 10] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

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
    let handle = builder()?.install_recorder().map_err(|e| e.to_string())?;
    let handle = HANDLE.get_or_init(|| handle);
    Ok(handle)
}

/// Minutes of absolute error of a wait estimate: within half a minute (the estimate is
/// told rounded) up to an hour; the simulator's 90th percentile is about 3.
const ESTIMATE_ERROR_BUCKETS: [f64; 10] = [0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 30.0, 60.0];

/// The exporter with the service's buckets.
fn builder() -> Result<PrometheusBuilder, String> {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Full(api::observe::HTTP_DURATION.to_owned()), &HTTP_BUCKETS)
        .and_then(|builder| {
            builder.set_buckets_for_metric(
                Matcher::Full(adapters::token_writer::BATCH_SIZE_METRIC.to_owned()),
                &BATCH_BUCKETS,
            )
        })
        .and_then(|builder| {
            builder.set_buckets_for_metric(
                Matcher::Full(api::observe::WAIT_ESTIMATE_ERROR.to_owned()),
                &ESTIMATE_ERROR_BUCKETS,
            )
        })
        .map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_buckets_are_sorted_and_have_the_latency_objectives_boundary() {
        assert!(HTTP_BUCKETS.windows(2).all(|pair| pair[0] < pair[1]), "{HTTP_BUCKETS:?}");
        assert!(HTTP_BUCKETS.contains(&0.3), "the latency objective's 300 ms");
    }

    /// `docs/prometheus-slo-rules.yml` reads `le="0.3"` by that exact text.
    #[test]
    fn the_request_duration_histogram_is_exported_with_an_le_0_3_bucket() {
        let recorder = builder().unwrap().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            metrics::histogram!(api::observe::HTTP_DURATION, "http_route" => "/api/v1/atms").record(0.28);
            metrics::histogram!(api::observe::HTTP_DURATION, "http_route" => "/api/v1/atms").record(0.31);
        });
        let text = handle.render();
        let bucket = |le: &str| {
            let series = format!(r#"{}_bucket{{http_route="/api/v1/atms",le="{le}"}} "#, api::observe::HTTP_DURATION);
            text.lines().find_map(|line| line.strip_prefix(series.as_str())).map(str::to_owned)
        };
        assert_eq!(bucket("0.25").as_deref(), Some("0"), "{text}");
        assert_eq!(bucket("0.3").as_deref(), Some("1"), "{text}");
        assert_eq!(bucket("0.5").as_deref(), Some("2"), "{text}");
    }
}
