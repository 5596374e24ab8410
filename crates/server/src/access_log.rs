//! The access log's writer: the lines the HTTP layer's middleware records
//! ([`api::access_log::AccessLine`]), formatted and written off the request path.
//!
//! Formatting an access line through `tracing`'s JSON formatter and writing it to
//! stdout on the request's thread halved the service's throughput (issue 14: 87k against
//! 164k requests a second on the liveness floor). The line is built here with nothing
//! but what it holds (every value is one the service made or validated, so nothing
//! needs escaping), and handed to the process's non-blocking log writer (the logging
//! set-up's, [`crate::telemetry::log_writer`]), whose thread batches lines into few
//! writes. When that thread falls behind, lines are dropped (and counted in a metric),
//! never waited for. `--access-log errors` keeps only 4xx and 5xx answers; `off`, none.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api::access_log::{AccessLine, AccessWriter};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tracing_appender::non_blocking::NonBlocking;

use crate::telemetry::LogFormat;

/// Which requests the access log writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessLog {
    /// Every request.
    #[default]
    All,
    /// Requests answered 400 or above.
    Errors,
    /// None.
    Off,
}

impl AccessLog {
    /// Whether a request answered `status` is written.
    pub fn writes(self, status: u16) -> bool {
        match self {
            Self::All => true,
            Self::Errors => status >= 400,
            Self::Off => false,
        }
    }
}

/// The access log of a service: the requests `which` keeps, as `format` lines, to the
/// process's log writer.
struct AccessLogWriter {
    which: AccessLog,
    format: LogFormat,
    writer: NonBlocking,
}

impl AccessWriter for AccessLogWriter {
    fn records(&self, status: u16) -> bool {
        self.which.writes(status)
    }

    fn write(&self, line: &AccessLine<'_>) {
        let text = format(line, self.format);
        BATCH.with(|batch| lock(batch).push(&text, &self.writer));
    }
}

/// The access log that `which` asks for, writing to the service's log writer: `None`
/// when it is off, or when logging was not set up (tests that start the service
/// in-process, whose access lines go nowhere). Starts the thread that hands the workers'
/// lines over every [`BATCH_AGE`].
pub fn writer(which: AccessLog) -> Option<Arc<dyn AccessWriter>> {
    if which == AccessLog::Off {
        return None;
    }
    let (writer, format) = crate::telemetry::log_writer()?;
    start_flushing();
    Some(Arc::new(AccessLogWriter { which, format, writer }))
}

/// The line, JSON (one object, the service's other JSON logs' `timestamp` and `level`)
/// or compact text, ending in a newline.
pub fn format(access: &AccessLine<'_>, format: LogFormat) -> String {
    let mut text = String::with_capacity(256);
    let route = access.route.unwrap_or(api::observe::UNMATCHED_ROUTE);
    let mut numbers = itoa::Buffer::new();
    let mut caller = String::new();
    if let Some(ip) = access.caller {
        push_ip(&mut caller, ip);
    }
    let (trace_id, span_id) = (access.trace.map(|ids| ids.trace_id_hex()), access.trace.map(|ids| ids.span_id_hex()));
    let fields = [
        ("uuid", access.uuid),
        ("client_id", access.client_id),
        ("caller", access.caller.map(|_| caller.as_str())),
        ("trace_id", trace_id.as_ref().map(api::trace::Hex::as_str)),
        ("span_id", span_id.as_ref().map(api::trace::Hex::as_str)),
    ];
    match format {
        LogFormat::Json => {
            text.push_str(r#"{"timestamp":""#);
            push_timestamp(&mut text);
            text.push_str(r#"","level":"INFO","target":"access","method":""#);
            text.push_str(access.method.as_str());
            text.push_str(r#"","route":""#);
            text.push_str(route);
            text.push_str(r#"","status":"#);
            text.push_str(numbers.format(access.status));
            text.push_str(r#","micros":"#);
            text.push_str(numbers.format(access.micros));
            for (name, value) in fields {
                if let Some(value) = value {
                    text.push_str(",\"");
                    text.push_str(name);
                    text.push_str("\":\"");
                    text.push_str(value);
                    text.push('"');
                }
            }
            text.push_str("}\n");
        }
        LogFormat::Pretty => {
            push_timestamp(&mut text);
            text.push_str("  INFO access: ");
            text.push_str(access.method.as_str());
            text.push(' ');
            text.push_str(route);
            text.push(' ');
            text.push_str(numbers.format(access.status));
            text.push(' ');
            text.push_str(numbers.format(access.micros));
            text.push_str("µs");
            for (name, value) in fields {
                if let Some(value) = value {
                    text.push(' ');
                    text.push_str(name);
                    text.push('=');
                    text.push_str(value);
                }
            }
            text.push('\n');
        }
    }
    text
}

/// A worker thread's lines not yet handed to the log writer: handing each line over on
/// its own costs a copy and a channel message per request; a batch costs them once per
/// [`BATCH_BYTES`], or per [`BATCH_AGE`] at the longest ([`flush`] runs on that period,
/// so a quiet worker's lines wait no longer, and once more when the service stops).
struct Batch {
    lines: String,
    since: Option<Instant>,
    /// The log writer the lines go to (set by the first line).
    writer: Option<NonBlocking>,
}

/// Bytes of lines a worker gathers before handing them over.
const BATCH_BYTES: usize = 16 * 1024;

/// The longest a line waits in its worker's batch.
pub const BATCH_AGE: Duration = Duration::from_millis(100);

/// Every thread's batch, for [`flush`]. A worker locks only its own (uncontended but
/// for the flush every [`BATCH_AGE`]).
static BATCHES: Mutex<Vec<Arc<Mutex<Batch>>>> = Mutex::new(Vec::new());

thread_local! {
    static BATCH: Arc<Mutex<Batch>> = {
        let batch = Arc::new(Mutex::new(Batch { lines: String::new(), since: None, writer: None }));
        lock(&BATCHES).push(Arc::clone(&batch));
        batch
    };
}

/// `mutex`'s value, also after a panic while it was held (a batch of log lines is never
/// left inconsistent by one).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Batch {
    fn push(&mut self, line: &str, writer: &NonBlocking) {
        if self.writer.is_none() {
            self.writer = Some(writer.clone());
        }
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        self.lines.push_str(line);
        if self.lines.len() >= BATCH_BYTES || now.duration_since(since) >= BATCH_AGE {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        self.since = None;
        if self.lines.is_empty() {
            return;
        }
        if let Some(writer) = &mut self.writer {
            let _ = writer.write_all(self.lines.as_bytes());
        }
        self.lines.clear();
    }
}

/// Hands every thread's gathered access lines to the log writer: every [`BATCH_AGE`]
/// (from the thread [`writer`] starts), and when the service has stopped, before the log writer's
/// last lines are written.
pub fn flush() {
    for batch in lock(&BATCHES).iter() {
        lock(batch).hand_over();
    }
}

/// Starts the thread that runs [`flush`] every [`BATCH_AGE`], once a process.
fn start_flushing() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new().name("access-log".to_owned()).spawn(|| {
            loop {
                std::thread::sleep(BATCH_AGE);
                flush();
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "the access log's flushing thread could not start; lines wait for 16 KB");
        }
    });
}

/// Appends the time now, RFC 3339 in UTC with microseconds
/// (`2026-11-24T09:23:51.105117Z`). The date and time to the second are formatted once a
/// second per thread; only the microseconds are written for each line.
fn push_timestamp(line: &mut String) {
    thread_local! {
        static SECOND: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let now = OffsetDateTime::now_utc();
    let second = now.unix_timestamp();
    SECOND.with_borrow_mut(|(cached, prefix)| {
        if *cached != second {
            *prefix = now.replace_nanosecond(0).ok().and_then(|at| at.format(&Rfc3339).ok()).unwrap_or_default();
            // "…T09:23:51Z" without its "Z", to put the fraction before it.
            prefix.pop();
            *cached = second;
        }
        line.push_str(prefix);
    });
    let micros = now.microsecond();
    let mut digits = itoa::Buffer::new();
    let written = digits.format(micros);
    line.push('.');
    for _ in written.len()..6 {
        line.push('0');
    }
    line.push_str(written);
    line.push('Z');
}

/// Appends `ip` as written: IPv4 by hand (the formatter's generic path costs more than
/// the rest of the line), IPv6 through `Display`.
fn push_ip(out: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            let mut digits = itoa::Buffer::new();
            for (n, octet) in v4.octets().into_iter().enumerate() {
                if n > 0 {
                    out.push('.');
                }
                out.push_str(digits.format(octet));
            }
        }
        IpAddr::V6(_) => {
            let _ = write!(out, "{ip}");
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::Method;

    use super::*;

    fn line(format: LogFormat) -> String {
        let trace = api::trace::TraceIds {
            trace_id: opentelemetry::trace::TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            span_id: opentelemetry::trace::SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        };
        let access = AccessLine {
            method: &Method::POST,
            route: Some("/api/v1/open-banking/channels/branch/waittime/retrieve"),
            status: 200,
            micros: 412,
            uuid: Some("3fa85f64-5717-4562-b3fc-2c963f66afa6"),
            client_id: Some("demo-mobile-app"),
            caller: Some("192.0.2.7".parse().unwrap()),
            trace: Some(&trace),
        };
        self::format(&access, format)
    }

    #[test]
    fn a_json_access_line_is_one_object_with_every_field() {
        let json: serde_json::Value = serde_json::from_str(line(LogFormat::Json).trim_end()).unwrap();
        assert_eq!(json["method"], "POST");
        assert_eq!(json["route"], "/api/v1/open-banking/channels/branch/waittime/retrieve");
        assert_eq!((json["status"].as_u64(), json["micros"].as_u64()), (Some(200), Some(412)));
        assert_eq!(json["uuid"], "3fa85f64-5717-4562-b3fc-2c963f66afa6");
        assert_eq!((json["client_id"].as_str(), json["caller"].as_str()), (Some("demo-mobile-app"), Some("192.0.2.7")));
        assert!(json["timestamp"].as_str().unwrap().ends_with('Z'));
        assert_eq!(
            (json["trace_id"].as_str(), json["span_id"].as_str()),
            (Some("4bf92f3577b34da6a3ce929d0e0e4736"), Some("00f067aa0ba902b7"))
        );
    }

    #[test]
    fn a_text_access_line_reads_as_one_line() {
        let text = line(LogFormat::Pretty);
        assert!(text.contains("POST /api/v1/open-banking/channels/branch/waittime/retrieve 200 412µs"), "{text}");
        assert_eq!(text.lines().count(), 1);
    }

    #[test]
    fn addresses_and_times_are_written_as_their_standard_forms() {
        let mut out = String::new();
        push_ip(&mut out, "10.0.200.7".parse().unwrap());
        out.push(' ');
        push_ip(&mut out, "2001:db8::1".parse().unwrap());
        assert_eq!(out, "10.0.200.7 2001:db8::1");
        let mut stamp = String::new();
        push_timestamp(&mut stamp);
        assert!(OffsetDateTime::parse(&stamp, &Rfc3339).is_ok(), "{stamp}");
        assert_eq!(stamp.len(), "2026-11-24T09:23:51.105117Z".len(), "{stamp}");
    }

    #[test]
    fn errors_mode_writes_only_4xx_and_5xx() {
        assert!(!AccessLog::Errors.writes(200) && AccessLog::Errors.writes(429) && AccessLog::Errors.writes(503));
        assert!(AccessLog::All.writes(200) && !AccessLog::Off.writes(500));
    }
}
