//! Requests the HTTP parser refused, counted instead of logged one by one.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// At most one summary line of malformed requests per this interval.
pub(super) const SUMMARY_INTERVAL: Duration = Duration::from_secs(60);

/// Requests the HTTP parser refused before the service saw them: malformed heads,
/// bodies cut short, clients too slow to send or gone. actix-http's dispatcher logs each
/// at ERROR, but any outsider can send them; they are not errors of the service. This
/// layer keeps them out of the log and counts them instead; a thread writes one WARN
/// line (seen with `--log-filter warn` too) with the count and the last reason within a
/// second of the first one, then at most once per interval (the fault issue, finding 8).
/// Every other dispatcher error stays an ERROR line.
#[derive(Clone)]
pub(super) struct MalformedRequests(Arc<Mutex<Tally>>);

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
    /// The layer, and the thread that writes its summaries at most once per `interval`.
    pub(super) fn start(interval: Duration) -> Self {
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
    use super::*;

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
