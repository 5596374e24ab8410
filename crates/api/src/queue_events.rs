//! POST /api/v1/branches/queue-events: the bank's branch queue systems post what their
//! queues did (tickets issued, called, served, given up; counters opened and closed).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::services::queue_events::PostedEvents;
use domain::system::SystemScope;
use serde::Serialize;
use utoipa::ToSchema;

use crate::errors::bodies::ErrorResponseBody as ErrorResponse;
use crate::errors::{ApiError, SystemPosts, answer};
use crate::headers::OptionalCorrelation;
use crate::posts::{RejectedEventOut, posted_events};
use crate::state::AppState;

/// One event, as the OpenAPI document shows it; read by `domain::queue::event`.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the body")]
pub(crate) struct QueueEventIn {
    /// Unique across every system and branch, 1 to 64 printable ASCII characters; a resent
    /// id is a duplicate and changes nothing.
    #[schema(example = "hq-2026-11-28-000123", min_length = 1, max_length = 64)]
    #[serde(rename = "eventId")]
    event_id: String,
    /// Five digits.
    #[schema(example = "00042", pattern = "^[0-9]{5}$")]
    #[serde(rename = "branchId")]
    branch_id: String,
    /// TicketIssued, TicketCalled, ServiceEnded, TicketCancelled, CounterOpened or CounterClosed.
    #[schema(example = "TicketIssued")]
    r#type: String,
    /// RFC 3339, fractions allowed; at most 24 h old and 5 s ahead of the service's clock.
    #[schema(example = "2026-11-28T12:30:05.250Z", format = "date-time")]
    at: String,
    /// The ticket (ticket events), 1 to 32 printable ASCII characters.
    #[schema(example = "A042")]
    ticket: Option<String>,
    /// The counter (TicketCalled and counter events), 1 to 32 printable ASCII characters.
    #[schema(example = "3")]
    counter: Option<String>,
}

/// The body.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the body")]
pub(crate) struct QueueEventsRequest {
    /// 1 to 1,000 events, in any order.
    #[schema(min_items = 1, max_items = 1000)]
    events: Vec<QueueEventIn>,
}

/// What became of each event.
#[derive(Serialize, ToSchema)]
pub(crate) struct QueueEventsAnswer {
    /// Events stored now, durable on every instance.
    accepted: usize,
    /// Events whose id was stored before: nothing changed.
    duplicates: usize,
    /// Events refused.
    rejected: Vec<RejectedEventOut>,
}

fn answer_of(posted: PostedEvents) -> QueueEventsAnswer {
    QueueEventsAnswer {
        accepted: posted.accepted,
        duplicates: posted.duplicates,
        rejected: posted.rejected.into_iter().map(RejectedEventOut::of).collect(),
    }
}

/// Stores a queue system's events.
#[utoipa::path(
    post,
    path = "/v1/branches/queue-events",
    tag = "Branches",
    operation_id = "postQueueEvents",
    summary = "Post a branch queue system's events",
    security(("bearer" = [])),
    params(
        OptionalCorrelation,
        ("Authorization" = String, Header, description = "`Bearer` and a bank system's token with scope `queue:write` (from POST /v1/token)."),
    ),
    request_body(content = QueueEventsRequest, content_type = "application/json", description = "1 to 1,000 events, at most 256 KiB."),
    responses(
        (status = 200, description = "Each event accepted (stored, durable), a duplicate (its id was stored before) or rejected (with why).", body = QueueEventsAnswer),
        (status = 400, description = "The body is not JSON, or not an object with 1 to 1,000 `events`, or over 256 KiB; `Content-Type` not JSON.", body = ErrorResponse),
        (status = 401, description = "No bank system's token, or not a valid one (a visitor's, expired, its system disabled).", body = ErrorResponse,
            headers(("WWW-Authenticate" = String, description = "`Bearer`, with `error=\"invalid_token\"` for a refused token."))),
        (status = 403, description = "`insufficientScope`: the system's token lacks `queue:write`.", body = ErrorResponse,
            headers(("WWW-Authenticate" = String, description = "`Bearer error=\"insufficient_scope\", scope=\"queue:write\"`."))),
        (status = 405, description = "Method not allowed.", body = ErrorResponse),
        (status = 503, description = "Nothing was stored: send the post again (`Retry-After`).", body = ErrorResponse,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    ),
)]
///
/// Responses: 200 with each event's fate; 400 `invalidRequest`; 401 `unAuthorized`; 403
/// `insufficientScope`; 503 `serverUnavailable` with `Retry-After`.
pub async fn post(request: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    answer::<SystemPosts>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract: the credentials first, then the body; 2. each event is read by
            // the use case, to say what became of it.
            let (system, events) = posted_events(state, &request, payload, SystemScope::QueueWrite).await?;
            // 3. Call the use case.
            let posted = state.queue_events.post(&system, &events).await?;
            crate::observe::queue_events(
                posted.accepted,
                posted.duplicates,
                posted.rejected.len(),
                &posted.estimate_errors,
            );
            // 4. Map to the wire.
            Ok(HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
                .json(answer_of(posted)))
        }
        .await,
    )
}
