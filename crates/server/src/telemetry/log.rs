//! The log: pretty lines on a terminal, JSON for log shippers, written by a thread of
//! its own so that no request waits on stdout.

use std::io::IsTerminal as _;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span;
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::Layer;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormattedFields;
use tracing_subscriber::fmt::format::{FormatFields, Writer};

/// How log lines are written: the access log's ([`crate::access_log`]) and every other
/// line of the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Where log lines go.
#[derive(Debug, Clone, Copy)]
pub enum Sink {
    /// Standard output: the service's own logs.
    Stdout,
    /// Standard error: a command's logs, only when asked for.
    Stderr,
}

/// The service's log writer: lines go to a thread that writes them to stdout in batches,
/// so no request waits on the terminal or the pipe (the access log writes here too,
/// [`log_writer`]), and the format of its lines.
static LOG_WRITER: OnceLock<(NonBlocking, LogFormat)> = OnceLock::new();

/// The service's log writer and the format of its lines, once [`super::init`] made them for
/// the service (`Sink::Stdout`).
pub fn log_writer() -> Option<(NonBlocking, LogFormat)> {
    LOG_WRITER.get().cloned()
}

/// Messages the log writer holds before it drops new ones rather than make a request
/// wait: a message is one log line, or one access-log batch of up to 16 KB, so this
/// bounds the backlog at 64 MB.
const BUFFERED_MESSAGES: usize = 4096;

/// Log messages dropped because the reader of stdout fell behind, since the start.
pub fn dropped_log_messages() -> usize {
    LOG_WRITER.get().map_or(0, |(writer, _)| writer.error_counter().dropped_lines())
}

/// Starts the service's log writer (stdout), once: the guard that writes its last lines
/// when dropped, or `None` when it was started before (tests).
pub(super) fn start_writer(format: LogFormat) -> Option<WorkerGuard> {
    let (writer, flusher) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(BUFFERED_MESSAGES)
        .thread_name("log-writer")
        .finish(std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()));
    LOG_WRITER.set((writer, format)).is_ok().then_some(flusher)
}

/// Whether `sink` is a terminal.
pub(super) fn is_terminal(sink: Sink) -> bool {
    match sink {
        Sink::Stdout => std::io::stdout().is_terminal(),
        Sink::Stderr => std::io::stderr().is_terminal(),
    }
}

/// The log's layer: JSON or compact text, to the service's log writer (stdout) or to
/// standard error.
pub(super) fn log_layer<S>(format: LogFormat, sink: Sink, terminal: bool) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    let fmt = tracing_subscriber::fmt::layer().with_ansi(terminal);
    let json = || {
        let json = tracing_subscriber::fmt::layer().json().with_current_span(true).with_span_list(false);
        json.fmt_fields(SpanFieldsJson)
    };
    let stdout = LOG_WRITER.get().map(|(writer, _)| writer.clone());
    match (format, sink, stdout) {
        (LogFormat::Json, Sink::Stdout, Some(writer)) => json().with_writer(writer).boxed(),
        (LogFormat::Pretty, Sink::Stdout, Some(writer)) => fmt.compact().with_writer(writer).boxed(),
        (LogFormat::Json, Sink::Stdout, None) => json().with_writer(std::io::stdout).boxed(),
        (LogFormat::Json, Sink::Stderr, _) => json().with_writer(std::io::stderr).boxed(),
        (LogFormat::Pretty, Sink::Stdout, None) => fmt.compact().with_writer(std::io::stdout).boxed(),
        (LogFormat::Pretty, Sink::Stderr, _) => fmt.compact().with_writer(std::io::stderr).boxed(),
    }
}

/// A span's fields for the JSON log: the JSON object tracing-subscriber's `JsonFields`
/// writes (strings, numbers and booleans as such, anything else as its `Debug` text; a
/// raw identifier's `r#` left out), written straight into the span's text instead of
/// through a map of `serde_json::Value`s. The log formats a span's fields when the span
/// is made, so every request with a `uuid` (and, with traces on, every request at
/// `info`) pays for it: 3,900 instructions a request for one field with `JsonFields`,
/// 10,000 for three (issue 34's bench, `--logged`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SpanFieldsJson;

impl<'writer> FormatFields<'writer> for SpanFieldsJson {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'writer>, fields: R) -> std::fmt::Result {
        let mut object = JsonObject::default();
        fields.record(&mut object);
        writer.write_str(&object.finish())
    }

    fn add_fields(&self, current: &'writer mut FormattedFields<Self>, fields: &span::Record<'_>) -> std::fmt::Result {
        // The object so far, reopened: `{…}` loses its `}`, and new fields follow a comma.
        let mut object = JsonObject::default();
        let open = current.fields.strip_suffix('}').filter(|open| open.starts_with('{')).map(str::len);
        if let Some(open) = open {
            object.bytes = std::mem::take(&mut current.fields).into_bytes();
            object.bytes.truncate(open);
        }
        fields.record(&mut object);
        current.fields = object.finish();
        Ok(())
    }
}

/// A JSON object being written, without its closing brace.
struct JsonObject {
    bytes: Vec<u8>,
}

impl Default for JsonObject {
    fn default() -> Self {
        let mut bytes = Vec::with_capacity(128);
        bytes.push(b'{');
        Self { bytes }
    }
}

impl JsonObject {
    /// Writes `"name":` (after a comma unless first), then the value by `write`.
    fn field(&mut self, field: &Field, write: impl FnOnce(&mut Vec<u8>)) {
        // Only the `{` so far: the first field.
        if self.bytes.len() > 1 {
            self.bytes.push(b',');
        }
        let name = field.name();
        let _ = serde_json::to_writer(&mut self.bytes, name.strip_prefix("r#").unwrap_or(name));
        self.bytes.push(b':');
        write(&mut self.bytes);
    }

    /// The object, closed.
    fn finish(mut self) -> String {
        self.bytes.push(b'}');
        // serde_json wrote every byte from `str`s, or ASCII.
        String::from_utf8(self.bytes).unwrap_or_default()
    }
}

impl Visit for JsonObject {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.field(field, |bytes| drop(serde_json::to_writer(bytes, value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.field(field, |bytes| bytes.extend_from_slice(if value { b"true" } else { b"false" }));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.field(field, |bytes| bytes.extend_from_slice(itoa::Buffer::new().format(value).as_bytes()));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.field(field, |bytes| bytes.extend_from_slice(itoa::Buffer::new().format(value).as_bytes()));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.field(field, |bytes| drop(serde_json::to_writer(bytes, &value)));
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        // As `JsonFields`: an array of numbers.
        self.field(field, |bytes| drop(serde_json::to_writer(bytes, value)));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        self.field(field, |bytes| drop(serde_json::to_writer(bytes, &text)));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// The `span` object of a JSON line logged inside a span with awkward fields, its
    /// fields written by `fields`.
    fn span_logged_with<N>(fields: N) -> serde_json::Value
    where
        N: for<'writer> FormatFields<'writer> + Send + Sync + 'static,
    {
        let lines = Arc::new(Mutex::new(Vec::<u8>::new()));
        let writer = {
            let lines = Arc::clone(&lines);
            move || LineBuffer(Arc::clone(&lines))
        };
        let layer = tracing_subscriber::fmt::layer().json().with_current_span(true).with_span_list(false);
        let subscriber = tracing_subscriber::registry().with(layer.fmt_fields(fields).with_writer(writer));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                "request",
                uuid = "3fa85f64-\"quoted\"\n",
                r#type = "raw",
                count = 3_i64,
                big = u64::MAX,
                ratio = 0.5,
                kept = true,
                shown = ?Some("debug"),
                raw = &b"ab"[..],
                trace_id = tracing::field::Empty,
            );
            span.record("trace_id", tracing::field::display("4bf92f3577b34da6a3ce929d0e0e4736"));
            span.in_scope(|| tracing::info!("inside"));
        });
        let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        line["span"].clone()
    }

    struct LineBuffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for LineBuffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn span_fields_are_logged_as_tracing_subscribers_json_fields_log_them() {
        let ours = span_logged_with(SpanFieldsJson);
        assert_eq!(ours, span_logged_with(tracing_subscriber::fmt::format::JsonFields::default()));
        assert_eq!(ours["uuid"], "3fa85f64-\"quoted\"\n");
        assert_eq!(ours["type"], "raw");
        assert_eq!((ours["count"].as_i64(), ours["big"].as_u64()), (Some(3), Some(u64::MAX)));
        assert_eq!((ours["ratio"].as_f64(), ours["kept"].as_bool()), (Some(0.5), Some(true)));
        assert_eq!(ours["shown"], "Some(\"debug\")");
        assert_eq!(ours["raw"], serde_json::json!([97, 98]));
        assert_eq!(ours["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736", "recorded after the span was made");
    }
}
