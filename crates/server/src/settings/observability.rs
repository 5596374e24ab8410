//! What the service says about itself: its log, its access log, its metrics.

use std::net::SocketAddr;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{AccessLog, LogFormat, SettingsError};
use crate::telemetry::TraceExport;

/// The log and traces (options of every command: an import run by a command is traced
/// too).
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Logs {
    /// Log filter, tracing-subscriber syntax; commands log to stderr only when it is
    /// given [default: info (serve); none (commands)].
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_filter: Option<String>,
    /// Log format [default: pretty on a terminal, else json].
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    /// OTLP/HTTP collector to send traces to (protobuf, to `URL/v1/traces`); also read
    /// from `OTEL_EXPORTER_OTLP_ENDPOINT` [default: none (no traces)].
    #[arg(long, global = true, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The whole OTLP/HTTP URL traces are sent to (nothing added), for a collector
    /// whose traces are not at `/v1/traces`; wins over `--otlp-endpoint`; also read
    /// from `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` [default: none].
    #[arg(long, global = true, value_name = "URL")]
    pub otlp_traces_endpoint: Option<String>,
    /// The `service.name` of the traces; also read from `OTEL_SERVICE_NAME`.
    #[arg(long, global = true, value_name = "NAME", default_value = DEFAULT_SERVICE_NAME)]
    pub otel_service_name: String,
    /// Share of new traces kept by `serve`, 0 to 1 (a request with a `traceparent`
    /// follows its caller's decision; a command given a collector keeps its whole trace);
    /// also read from `OTEL_TRACES_SAMPLER_ARG`.
    #[arg(long, global = true, value_name = "RATIO", default_value_t = 0.01)]
    pub trace_sample_ratio: f64,
}

/// The service name traces carry unless told otherwise.
const DEFAULT_SERVICE_NAME: &str = "branch-atm";

impl Logs {
    /// Where and how traces go, when a collector is given.
    pub fn traces(&self) -> Option<TraceExport> {
        let url = match (given(&self.otlp_traces_endpoint), given(&self.otlp_endpoint)) {
            (Some(whole), _) => whole.to_owned(),
            (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
            (None, None) => return None,
        };
        Some(TraceExport { url, service_name: self.otel_service_name.clone(), ratio: self.trace_sample_ratio })
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        if !is_ratio(self.trace_sample_ratio) {
            return Err(SettingsError("trace-sample-ratio must be from 0 to 1".to_owned()));
        }
        if self.otel_service_name.trim().is_empty() {
            return Err(SettingsError("otel-service-name must not be empty".to_owned()));
        }
        for (setting, url) in
            [("otlp-endpoint", &self.otlp_endpoint), ("otlp-traces-endpoint", &self.otlp_traces_endpoint)]
        {
            if let Some(problem) = given(url).and_then(collector_url_problem) {
                return Err(SettingsError(format!("{setting} {problem}")));
            }
        }
        Ok(())
    }
}

/// Whether `ratio` is a share of new traces to keep: from 0 to 1.
pub(super) fn is_ratio(ratio: f64) -> bool {
    (0.0..=1.0).contains(&ratio)
}

/// Why `url` cannot be a collector's URL, if it cannot.
pub(super) fn collector_url_problem(url: &str) -> Option<String> {
    match url::Url::parse(url) {
        Err(error) => Some(format!("is not a URL ({error})")),
        // Not the scheme either: in `user:secret@host`, the user is read as one.
        Ok(url) if !matches!(url.scheme(), "http" | "https") => Some("must be an http or https URL".to_owned()),
        Ok(_) => None,
    }
}

/// A URL setting's value, when one is given (an empty one is not).
fn given(url: &Option<String>) -> Option<&str> {
    url.as_deref().map(str::trim).filter(|url| !url.is_empty())
}

/// `serve`'s access log and metrics.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Observability {
    /// Which requests the access log writes: all, errors (4xx and 5xx), off.
    #[arg(long, value_enum, default_value_t = AccessLog::default())]
    pub access_log: AccessLog,
    /// Address of a second listener serving Prometheus metrics at /metrics; keep it off
    /// the public network [default: none (no metrics)].
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
}
