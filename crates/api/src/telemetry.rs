//! Logging: pretty lines on a terminal, JSON for log shippers.

use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use crate::settings::LogFormat;

/// Where log lines go.
#[derive(Debug, Clone, Copy)]
pub enum Sink {
    /// Standard output: the service's own logs.
    Stdout,
    /// Standard error: a command's logs, only when asked for.
    Stderr,
}

/// Installs the global subscriber. `format` defaults to pretty on a terminal and JSON
/// otherwise. A second call (tests) is a no-op.
pub fn init(filter: &str, format: Option<LogFormat>, sink: Sink) {
    let terminal = match sink {
        Sink::Stdout => std::io::stdout().is_terminal(),
        Sink::Stderr => std::io::stderr().is_terminal(),
    };
    let format = format.unwrap_or(if terminal { LogFormat::Pretty } else { LogFormat::Json });
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(terminal);
    let _ = match (format, sink) {
        (LogFormat::Json, Sink::Stdout) => {
            builder.json().with_current_span(true).with_span_list(false).with_writer(std::io::stdout).try_init()
        }
        (LogFormat::Json, Sink::Stderr) => {
            builder.json().with_current_span(true).with_span_list(false).with_writer(std::io::stderr).try_init()
        }
        (LogFormat::Pretty, Sink::Stdout) => builder.compact().with_writer(std::io::stdout).try_init(),
        (LogFormat::Pretty, Sink::Stderr) => builder.compact().with_writer(std::io::stderr).try_init(),
    };
}
