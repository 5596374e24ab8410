//! What the service tells of itself as it runs: its log (pretty lines on a terminal, JSON
//! for log shippers) and, given a collector, its traces over OTLP. One subscriber carries
//! both; [`init`] installs it.
//!
//! # Layout
//! - [`log`] — the log's format, its writer thread and its layer.
//! - `malformed` — requests the HTTP parser refused, counted instead of logged.
//! - [`subscriber`] — the subscriber with traces on: which spans exist, and which the log
//!   and the trace each see.
//! - [`traces`] — the export's set-up: OpenTelemetry's batch processor and OTLP exporter,
//!   and the trace's layer; `sampler`, which traces are kept; `export_queue`, the SDK's
//!   batch processor behind a bound that counts the spans it drops.

mod export_queue;
pub mod log;
mod malformed;
mod sampler;
pub mod subscriber;
pub mod traces;

pub use log::{LogFormat, Sink, SpanFieldsJson, dropped_log_messages, log_writer};
pub use traces::TraceExport;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::{Layer as _, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

use malformed::{MalformedRequests, SUMMARY_INTERVAL};

/// What [`init`] returns: dropping it writes the log writer's last lines and sends the
/// last spans. Keep it until exit.
#[must_use = "dropping it at once stops the log writer and the trace exporter"]
pub struct Telemetry {
    _log: Option<WorkerGuard>,
    traces: Option<traces::Exporter>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(traces) = self.traces.take() {
            traces.shut_down();
        }
    }
}

/// Installs the global subscriber. `format` defaults to pretty on a terminal and JSON
/// otherwise. A second call (tests) is a no-op. For the service (`Sink::Stdout`) the
/// returned guard flushes the log writer's last lines when dropped. With `traces`, spans
/// are also exported over OTLP ([`traces`]): a global filter lets in what the log or the
/// trace wants, and the log filters again on its own, so the spans only traces need
/// (TRACE level, made only inside a traced request) never reach the log; with no
/// `traces` nothing of them runs.
pub fn init(filter: &str, format: Option<LogFormat>, sink: Sink, traces: Option<&TraceExport>) -> Telemetry {
    let terminal = log::is_terminal(sink);
    let format = format.unwrap_or(if terminal { LogFormat::Pretty } else { LogFormat::Json });
    let env_filter = || EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let malformed = MalformedRequests::start(SUMMARY_INTERVAL);
    let guard = match sink {
        Sink::Stdout => log::start_writer(format),
        Sink::Stderr => None,
    };
    let traced = traces.map(traces::start);
    if let Some(Ok((exporter, layer))) = traced {
        let log = log::log_layer(format, sink, terminal);
        let installed = subscriber::subscriber(env_filter, malformed.boxed(), log, layer).try_init();
        return Telemetry { _log: guard, traces: installed.is_ok().then_some(exporter) };
    }
    let _ = tracing_subscriber::registry()
        .with(malformed)
        .with(env_filter())
        .with(log::log_layer(format, sink, terminal))
        .try_init();
    if let Some(Err(error)) = traced {
        tracing::error!(%error, "traces: the OTLP exporter could not be made; no span is exported");
    }
    Telemetry { _log: guard, traces: None }
}
