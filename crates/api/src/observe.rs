//! What the HTTP layer counts: requests by route and status, tokens issued, refusals by
//! reason, requests over a limit. Recorded through the `metrics` facade, whose counts go
//! nowhere until the server installs a recorder (`--metrics-listen`); the per-request
//! series and the refusals are not even looked up then ([`crate::middleware::Observer`]
//! knows whether metrics are on). HTTP requests follow OpenTelemetry's HTTP semantic conventions as
//! exported to Prometheus; the service's own metrics start with `branch_atm_`. Every
//! name and label is in `docs/operations.md`.

use crate::errors::{ApiError, Note};
use crate::log_summary::{Cause, LogSummaries, Summary};

/// OpenTelemetry's `http.server.request.duration`, in seconds.
pub const HTTP_DURATION: &str = "http_server_request_duration_seconds";

/// The route label of requests that matched no route: one value, never the raw path
/// (anyone can send any path; each would be a new series).
pub const UNMATCHED_ROUTE: &str = "unmatched";

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
pub(crate) fn method_label(method: &actix_web::http::Method) -> &'static str {
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

/// An app asked to revoke a token, and what it found (`revoked`, `already revoked`,
/// `no such token`).
pub fn revocation(outcome: &'static str) {
    metrics::counter!("branch_atm_token_revocations_total", "outcome" => outcome).increment(1);
}

/// The histogram of live wait estimates' absolute errors, in minutes: each estimate told
/// at a ticket's issue against its wait when the ticket was called.
pub const WAIT_ESTIMATE_ERROR: &str = "branch_atm_wait_estimate_error_minutes";

/// Queue events posted, by what became of them (`accepted`, `duplicate`, `rejected`),
/// and the estimates their calls scored.
pub fn queue_events(accepted: usize, duplicates: usize, rejected: usize, estimate_errors: &[f64]) {
    for (outcome, count) in [("accepted", accepted), ("duplicate", duplicates), ("rejected", rejected)] {
        if count > 0 {
            metrics::counter!("branch_atm_queue_events_total", "outcome" => outcome).increment(count as u64);
        }
    }
    for error in estimate_errors {
        metrics::histogram!(WAIT_ESTIMATE_ERROR).record(*error);
    }
}

/// ATM state events posted, by what became of them (`accepted`, `superseded`,
/// `duplicate`, `rejected`).
pub fn atm_state_events(accepted: usize, superseded: usize, duplicates: usize, rejected: usize) {
    let outcomes =
        [("accepted", accepted), ("superseded", superseded), ("duplicate", duplicates), ("rejected", rejected)];
    for (outcome, count) in outcomes {
        if count > 0 {
            metrics::counter!("branch_atm_atm_state_events_total", "outcome" => outcome).increment(count as u64);
        }
    }
}

/// The one place a failed request is logged and counted, from what its failure noted
/// ([`Note`]): a refusal of credentials (INFO, and `branch_atm_refusals_total` by
/// operation and reason), a request over a limit (`branch_atm_rate_limited_total`), or
/// the service unable to answer (ERROR, with the cause; never sent to the caller). A
/// cause is logged whole once a second, with the request's `uuid` when it sent a valid
/// one, and the others of that second as one line with their count (`summaries`).
/// Counted only when `metrics` are on.
pub fn failure(error: &ApiError, uuid: Option<&str>, summaries: &LogSummaries, metrics: bool) {
    match error.note() {
        Note::Plain => tracing::debug!(uuid, answer = %error, location = error.location(), "request refused"),
        Note::Refused { operation, reason } => {
            if summaries.record(Cause::Refused(operation, reason), "") {
                tracing::info!(uuid, operation, reason, "credentials refused");
            }
            if metrics {
                metrics::counter!("branch_atm_refusals_total", "operation" => *operation, "reason" => *reason)
                    .increment(1);
            }
        }
        Note::RateLimited(limit) => {
            if metrics {
                metrics::counter!("branch_atm_rate_limited_total", "limit" => *limit).increment(1);
            }
        }
        Note::Failed { what, cause } => {
            if summaries.record(Cause::Failed(what), cause) {
                tracing::error!(uuid, answer = %error, error = %cause, "{what}: the service could not answer");
            }
        }
    }
}

/// The line that counts the requests of a cause after the first in a second.
pub fn summarise(summary: &Summary) {
    let more = summary.more;
    match summary.cause {
        Cause::Failed(what) => tracing::error!(
            more,
            last_error = %summary.last,
            "{what}: {more} more requests within a second after the one logged, for the same reason"
        ),
        Cause::Refused(operation, reason) => {
            tracing::info!(
                operation,
                reason,
                more,
                "credentials refused: {more} more within a second, for the same reason"
            );
        }
    }
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
