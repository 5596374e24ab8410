//! Logging: pretty lines on a terminal, JSON for log shippers; malformed requests
//! counted instead of logged one by one.

use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber, span};
use tracing_appender::non_blocking::{NonBlocking, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormattedFields;
use tracing_subscriber::fmt::format::{FormatFields, Writer};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

use serde::{Deserialize, Serialize};

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

/// The service's log writer and the format of its lines, once [`init`] made them for
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

/// What [`init`] returns: dropping it writes the log writer's last lines and sends the
/// last spans. Keep it until exit.
#[must_use = "dropping it at once stops the log writer and the trace exporter"]
pub struct Telemetry {
    _log: Option<WorkerGuard>,
    traces: Option<crate::traces::Exporter>,
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
/// are also exported over OTLP ([`crate::traces`]): a global filter lets in what the log
/// or the trace wants, and the log filters again on its own, so the spans only traces
/// need (TRACE level, made only inside a traced request) never reach the log; with no
/// `traces` nothing of them runs.
pub fn init(filter: &str, format: Option<LogFormat>, sink: Sink, traces: Option<&TraceExport>) -> Telemetry {
    let terminal = match sink {
        Sink::Stdout => std::io::stdout().is_terminal(),
        Sink::Stderr => std::io::stderr().is_terminal(),
    };
    let format = format.unwrap_or(if terminal { LogFormat::Pretty } else { LogFormat::Json });
    let env_filter = || EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let malformed = MalformedRequests::start(SUMMARY_INTERVAL);
    let mut guard = None;
    if let Sink::Stdout = sink {
        let (writer, flusher) = NonBlockingBuilder::default()
            .lossy(true)
            .buffered_lines_limit(BUFFERED_MESSAGES)
            .thread_name("log-writer")
            .finish(std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()));
        if LOG_WRITER.set((writer, format)).is_ok() {
            guard = Some(flusher);
        }
    }
    let Some(traces) = traces else {
        let _ = tracing_subscriber::registry()
            .with(malformed)
            .with(env_filter())
            .with(log_layer(format, sink, terminal))
            .try_init();
        return Telemetry { _log: guard, traces: None };
    };
    let (exporter, layer) = crate::traces::start(traces);
    let installed =
        crate::traces::subscriber(env_filter, malformed.boxed(), log_layer(format, sink, terminal), layer).try_init();
    Telemetry { _log: guard, traces: installed.is_ok().then_some(exporter) }
}

/// Where and how spans are exported: [`crate::settings::Logs`]'s trace settings.
#[derive(Debug, Clone)]
pub struct TraceExport {
    /// The OTLP/HTTP URL spans are sent to (`{--otlp-endpoint}/v1/traces`, or
    /// `--otlp-traces-endpoint` whole).
    pub url: String,
    /// The `service.name` of every span.
    pub service_name: String,
    /// The share of new traces kept.
    pub ratio: f64,
}

/// The log's layer: JSON or compact text, to the service's log writer (stdout) or to
/// standard error.
fn log_layer<S>(format: LogFormat, sink: Sink, terminal: bool) -> Box<dyn Layer<S> + Send + Sync>
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

/// At most one summary line of malformed requests per this interval.
const SUMMARY_INTERVAL: Duration = Duration::from_secs(60);

/// Requests the HTTP parser refused before the service saw them: malformed heads,
/// bodies cut short, clients too slow to send or gone. actix-http's dispatcher logs each
/// at ERROR, but any outsider can send them; they are not errors of the service. This
/// layer keeps them out of the log and counts them instead; a thread writes one WARN
/// line (seen with `--log-filter warn` too) with the count and the last reason within a
/// second of the first one, then at most once per interval (the fault issue, finding 8).
/// Every other dispatcher error stays an ERROR line.
#[derive(Clone)]
struct MalformedRequests(Arc<Mutex<Tally>>);

#[derive(Default)]
struct Tally {
    count: u64,
    last_reason: String,
    next_summary: Option<Instant>,
}

/// Where actix-http logs the requests it refused.
const DISPATCHER_TARGET: &str = "actix_http::h1::dispatcher";

/// How the dispatcher words a connection's failure ("stream error: {DispatchError}").
const STREAM_ERROR: &str = "stream error: ";

/// The `DispatchError`s (actix-http 3) a client causes: a malformed request, its
/// connection failing, a request or a close too slow, a body the handler did not need.
/// The others (service, body, upgrade, internal errors) are the service's own.
const CLIENT_CAUSES: [&str; 5] = [
    "request parse error",
    "I/O error",
    "request did not complete within the specified timeout",
    "connection shutdown timeout",
    "handler dropped payload before reading EOF",
];

impl MalformedRequests {
    fn start(interval: Duration) -> Self {
        let layer = Self(Arc::default());
        let tally = Arc::clone(&layer.0);
        std::thread::Builder::new()
            .name("malformed-requests".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                    if let Some((count, reason)) = summary_due(&tally, interval, Instant::now()) {
                        tracing::warn!(
                            malformed_requests = count,
                            last_reason = %reason,
                            "requests or connections refused by the HTTP parser (malformed, too slow, or cut short)"
                        );
                    }
                }
            })
            .ok();
        layer
    }
}

/// The count and last reason to log now, if any are waiting and the last summary is at
/// least `interval` old; resets the count.
fn summary_due(tally: &Mutex<Tally>, interval: Duration, now: Instant) -> Option<(u64, String)> {
    let mut tally = tally.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if tally.count == 0 || tally.next_summary.is_some_and(|next| now < next) {
        return None;
    }
    tally.next_summary = Some(now + interval);
    Some((std::mem::take(&mut tally.count), std::mem::take(&mut tally.last_reason)))
}

/// The `message` field of an event.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for MalformedRequests {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        let metadata = event.metadata();
        if *metadata.level() != Level::ERROR || metadata.target() != DISPATCHER_TARGET {
            return true;
        }
        let mut message = Message::default();
        event.record(&mut message);
        let from_client = message
            .0
            .strip_prefix(STREAM_ERROR)
            .is_some_and(|cause| CLIENT_CAUSES.iter().any(|client| cause.starts_with(client)));
        if !from_client {
            return true;
        }
        let mut tally = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tally.count += 1;
        tally.last_reason = message.0;
        false
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn the_first_malformed_requests_are_summarised_at_once_and_later_ones_once_an_interval() {
        let tally = Mutex::new(Tally::default());
        let start = Instant::now();
        let interval = Duration::from_secs(60);
        assert_eq!(summary_due(&tally, interval, start), None, "nothing to say");

        tally.lock().unwrap().count = 3;
        tally.lock().unwrap().last_reason = "request parse error".into();
        assert_eq!(summary_due(&tally, interval, start), Some((3, "request parse error".into())));

        tally.lock().unwrap().count = 5;
        assert_eq!(summary_due(&tally, interval, start + Duration::from_secs(59)), None, "not within the interval");
        assert_eq!(summary_due(&tally, interval, start + Duration::from_secs(60)).map(|(n, _)| n), Some(5));
    }
}
