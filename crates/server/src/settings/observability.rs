//! What the service says about itself: its log, its access log, its metrics.

use std::net::SocketAddr;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{AccessLog, LogFormat};

/// The log (options of every command).
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
