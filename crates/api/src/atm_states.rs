//! ATMs as they are now: POST /api/v1/atms/state-events (the bank's ATM monitoring posts
//! what its machines report) and GET /api/v1/atms/state (apps read every ATM's state).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::atm_catalog::PageRequest;
use domain::atm_state::AtmId;
use domain::atm_state::Shown;
use domain::input::Expected;
use domain::posted::EventTime;
use domain::services::atm_states::{MOST_ATM_IDS, PostedStates, StateItem, StatePage};
use domain::system::SystemScope;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::conditional::{not_modified, strong_tag};
use crate::errors::bodies::ErrorResponseBody as ErrorResponse;
use crate::errors::bodies::ObieErrorBody as AtmError;
use crate::errors::{ApiError, Atms, BadRequest, Failure, Message, SystemPosts, answer, mime_json};
use crate::headers::{BearerHeaders, ErrorLanguage, OptionalCorrelation};
use crate::json_text::push_string;
use crate::posts::{RejectedEventOut, posted_events};
use crate::request::{Query, authenticate, optional_uuid};
use crate::state::AppState;

/// States change within minutes: an app may keep a page half a minute, then revalidate.
const CACHE_CONTROL: &str = "private, max-age=30, must-revalidate";

/// One state event, as the OpenAPI document shows it; read by `domain::atm_state`.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the body")]
pub(crate) struct AtmStateEventIn {
    /// Unique across every system, 1 to 64 printable ASCII characters; a resent id is a
    /// duplicate and changes nothing.
    #[schema(example = "mon-2026-11-28-000981", min_length = 1, max_length = 64)]
    #[serde(rename = "eventId")]
    event_id: String,
    /// The ATM's OBIE `Identification`, of an ATM in the set.
    #[schema(example = "LFFFBC11", min_length = 1, max_length = 35)]
    #[serde(rename = "atmId")]
    atm_id: String,
    /// RFC 3339, fractions allowed; at most 24 h old and 5 s ahead of the service's clock.
    #[schema(example = "2026-11-28T12:30:05.250Z", format = "date-time")]
    at: String,
    /// InService or OutOfService.
    #[schema(example = "InService")]
    state: String,
    /// OBIE ATM 2.3 `ATMServices` codes not available now (may be empty).
    #[schema(example = json!(["CashDeposits"]))]
    #[serde(rename = "unavailableServices")]
    unavailable_services: Option<Vec<String>>,
    /// Why, for people: at most 140 characters, no control character.
    #[schema(example = "Deposit module out of order", max_length = 140)]
    reason: Option<String>,
    /// When it is expected back in full service, RFC 3339.
    #[schema(example = "2026-11-28T15:00:00Z", format = "date-time")]
    #[serde(rename = "expectedBackAt")]
    expected_back_at: Option<String>,
}

/// The body.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the body")]
pub(crate) struct AtmStateEventsRequest {
    /// 1 to 1,000 events, in any order.
    #[schema(min_items = 1, max_items = 1000)]
    events: Vec<AtmStateEventIn>,
}

/// An event stored that changed nothing: its ATM's state came from a newer event.
#[derive(Serialize, ToSchema)]
pub(crate) struct SupersededEventOut {
    /// Its index in `events`.
    index: usize,
    /// Its `eventId`.
    #[serde(rename = "eventId")]
    event_id: String,
}

/// What became of each event.
#[derive(Serialize, ToSchema)]
pub(crate) struct AtmStateEventsAnswer {
    /// Events stored now and applied to their ATM's state, durable.
    accepted: usize,
    /// Events stored now that changed nothing: their ATM's newest applied event is later.
    superseded: Vec<SupersededEventOut>,
    /// Events whose id was stored before: nothing changed.
    duplicates: usize,
    /// Events refused.
    rejected: Vec<RejectedEventOut>,
}

impl AtmStateEventsAnswer {
    fn of(posted: PostedStates) -> Self {
        Self {
            accepted: posted.accepted,
            superseded: posted
                .superseded
                .into_iter()
                .map(|(index, id)| SupersededEventOut { index, event_id: id.as_str().to_owned() })
                .collect(),
            duplicates: posted.duplicates,
            rejected: posted.rejected.into_iter().map(RejectedEventOut::of).collect(),
        }
    }
}

/// Stores the ATM monitoring's state events.
#[utoipa::path(
    post,
    path = "/v1/atms/state-events",
    tag = "ATMs",
    operation_id = "postAtmStateEvents",
    summary = "Post the ATM monitoring's state events",
    security(("bearer" = [])),
    params(
        OptionalCorrelation,
        ("Authorization" = String, Header, description = "`Bearer` and a bank system's token with scope `atm:write` (from POST /v1/token)."),
    ),
    request_body(content = AtmStateEventsRequest, content_type = "application/json", description = "1 to 1,000 events, at most 256 KiB."),
    responses(
        (status = 200, description = "Each event accepted (stored and applied), superseded (stored; its ATM had newer news), a duplicate (its id was stored before) or rejected (with why).", body = AtmStateEventsAnswer),
        (status = 400, description = "The body is not JSON, or not an object with 1 to 1,000 `events`, or over 256 KiB; `Content-Type` not JSON.", body = ErrorResponse),
        (status = 401, description = "No bank system's token, or not a valid one (a visitor's, expired, its system disabled).", body = ErrorResponse,
            headers(("WWW-Authenticate" = String, description = "`Bearer`, with `error=\"invalid_token\"` for a refused token."))),
        (status = 403, description = "`insufficientScope`: the system's token lacks `atm:write`.", body = ErrorResponse,
            headers(("WWW-Authenticate" = String, description = "`Bearer error=\"insufficient_scope\", scope=\"atm:write\"`."))),
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
            let (system, events) = posted_events(state, &request, payload, SystemScope::AtmWrite).await?;
            // 3. Call the use case.
            let posted = state.atm_state_events.post(&system, &events).await?;
            crate::observe::atm_state_events(
                posted.accepted,
                posted.superseded.len(),
                posted.duplicates,
                posted.rejected.len(),
            );
            // 4. Map to the wire.
            Ok(HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
                .json(AtmStateEventsAnswer::of(posted)))
        }
        .await,
    )
}

/// One ATM's state, as the document shows it (written by [`render`]).
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the answer")]
pub(crate) struct AtmStateOut {
    /// The ATM's OBIE `Identification`.
    #[schema(rename = "atmId", example = "LFFFBC11")]
    atm_id: String,
    /// InService; Limited (in service, some services unavailable); OutOfService; Unknown
    /// (nothing heard for the freshness window, or ever); Closed.
    #[schema(example = "Limited")]
    state: String,
    /// OBIE `ATMServices` codes not available now (empty when Unknown).
    #[schema(rename = "unavailableServices", example = json!(["CashDeposits"]))]
    unavailable_services: Vec<String>,
    /// Since when this state holds (for Unknown: when the window passed; for Closed: the
    /// closure's date); absent for an ATM never heard of.
    #[schema(format = DateTime)]
    since: Option<String>,
    /// When the monitoring expects it back in full service.
    #[schema(rename = "expectedBackAt", format = DateTime)]
    expected_back_at: Option<String>,
    /// Why, as the monitoring says it.
    reason: Option<String>,
    /// Its closure, announced ahead: from `closesOn` (00:00 UTC) it is `Closed` and
    /// gone from the ATM listings.
    closure: Option<ClosureOut>,
}

/// An ATM's closure, as announced.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the answer")]
pub(crate) struct ClosureOut {
    /// The first day it is closed.
    #[schema(rename = "closesOn", format = Date, example = "2027-03-01")]
    closes_on: String,
    /// What customers are told.
    #[schema(example = "This ATM closes when the shop it stands in closes.")]
    explanation: String,
}

/// A page of states.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the answer")]
pub(crate) struct AtmStatesResponse {
    /// The page's ATMs, in the ATM pages' order (brand, then identification).
    data: Vec<AtmStateOut>,
    /// `LastUpdated` (the ATM set's date or the newest state event, the later) and
    /// `TotalResults` (every ATM asked for, on all pages).
    #[schema(value_type = Object)]
    meta: Value,
    /// `Self`, `First`, `Prev`, `Next`, `Last`, as absolute URIs.
    #[schema(value_type = Object)]
    links: Value,
}

/// The page asked for, and the `atmId` part of its links.
fn state_query(raw: &str) -> Result<(PageRequest, Option<Vec<AtmId>>, String), BadRequest> {
    let query = Query::parse(raw, &["page"])?;
    let page = query.optional("page").map_or(PageRequest::FIRST, PageRequest::parse);
    let mut ids = Vec::new();
    let mut filters = form_urlencoded::Serializer::new(String::new());
    for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
        if name != "atmId" {
            continue;
        }
        if ids.len() == MOST_ATM_IDS {
            return Err(BadRequest::new("atmId", Message::TooManyAtmIds(MOST_ATM_IDS)));
        }
        let id = AtmId::parse(&value).ok_or_else(|| BadRequest::new("atmId", Message::Malformed(Expected::AtmId)))?;
        filters.append_pair("atmId", id.as_str());
        ids.push(id);
    }
    Ok((page, (!ids.is_empty()).then_some(ids), filters.finish()))
}

/// Writes the link to page `page` (its `atmId`s kept) into `body`, quoted.
fn push_link(body: &mut String, base: &str, filters: &str, page: u32) {
    body.push('"');
    body.push_str(base);
    body.push_str("/api/v1/atms/state?page=");
    body.push_str(itoa::Buffer::new().format(page));
    if !filters.is_empty() {
        body.push('&');
        body.push_str(filters);
    }
    body.push('"');
}

/// The page's `LastUpdated`, RFC 3339: formatted once per second per worker thread.
fn last_updated_text(seconds: i64) -> String {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(i64, String)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| match last {
        Some((at, text)) if *at == seconds => text.clone(),
        _ => {
            let text = EventTime::from_unix_seconds(seconds.max(0).unsigned_abs()).to_string();
            *last = Some((seconds, text.clone()));
            text
        }
    })
}

/// The answer's body, written in place: the items' times are written already
/// (`HeldState`), so an item is a few copies (callgrind: a `serde_json::Value` per item
/// and a date formatted per item cost 4.4 times ATM page 1).
fn render(page: &StatePage, items: &[StateItem<'_>], filters: &str, base: &str) -> Vec<u8> {
    let mut body = String::with_capacity(256 + items.len() * 160 + 5 * (base.len() + filters.len() + 40));
    body.push_str(r#"{"data":["#);
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            body.push(',');
        }
        body.push_str(r#"{"atmId":"#);
        push_string(&mut body, item.atm);
        body.push_str(r#","state":""#);
        body.push_str(item.shown.name());
        body.push_str(r#"","unavailableServices":["#);
        if let Some(held) = item.state {
            for (n, service) in held.state.unavailable.iter().enumerate() {
                if n > 0 {
                    body.push(',');
                }
                body.push('"');
                body.push_str(service.name());
                body.push('"');
            }
        }
        body.push(']');
        if let Some(since) = item.since {
            body.push_str(r#","since":""#);
            body.push_str(since);
            body.push('"');
        }
        if let Some(held) = item.state {
            if let Some(back) = &held.expected_back {
                body.push_str(r#","expectedBackAt":""#);
                body.push_str(back);
                body.push('"');
            }
            if let Some(reason) = &held.state.reason {
                body.push_str(r#","reason":"#);
                push_string(&mut body, reason.as_str());
            }
        }
        if let Some(closure) = item.closure {
            body.push_str(r#","closure":{"closesOn":""#);
            body.push_str(&closure.closes_on);
            body.push_str(r#"","explanation":"#);
            push_string(&mut body, closure.closure.explanation.as_str());
            body.push('}');
        }
        body.push('}');
    }
    body.push_str(r#"],"meta":{"LastUpdated":""#);
    body.push_str(&last_updated_text(page.last_updated()));
    body.push_str(r#"","TotalResults":"#);
    body.push_str(itoa::Buffer::new().format(page.total));
    body.push_str(r#"},"links":{"Self":"#);
    push_link(&mut body, base, filters, page.number);
    body.push_str(r#","First":"#);
    push_link(&mut body, base, filters, 1);
    if page.number > 1 {
        body.push_str(r#","Prev":"#);
        push_link(&mut body, base, filters, page.number - 1);
    }
    if page.number < page.last_page {
        body.push_str(r#","Next":"#);
        push_link(&mut body, base, filters, page.number + 1);
    }
    body.push_str(r#","Last":"#);
    push_link(&mut body, base, filters, page.last_page);
    body.push_str("}}");
    body.into_bytes()
}

/// Lists the ATMs' states.
#[utoipa::path(
    get,
    path = "/v1/atms/state",
    tag = "ATMs",
    operation_id = "listAtmStates",
    summary = "Every ATM's state now",
    security(("bearer" = []), ("dpop" = [])),
    params(
        BearerHeaders,
        OptionalCorrelation,
        ("If-None-Match" = Option<String>, Header, description = "An ETag from an earlier answer: 304 if it still matches."),
        ErrorLanguage,
        ("page" = Option<u32>, Query, minimum = 1, description = "1-based page number; pages follow the ATM pages' order."),
        ("atmId" = Option<Vec<String>>, Query, explode = true, description = "Only these ATMs (1 to 100, repeated): their `Identification`s."),
    ),
    responses(
        (status = 200, description = "A page of states.", body = AtmStatesResponse, headers(
            ("ETag" = String, description = "Strong validator of this page."),
            ("Cache-Control" = String, description = "`private, max-age=30, must-revalidate`."),
        )),
        (status = 304, description = "Not modified since the ETag sent.", headers(
            ("ETag" = String, description = "The page's validator."),
        )),
        (status = 400, description = "Bad request: an invalid page, `atmId`, `uuid` or `client_id`.", body = AtmError),
        (status = 401, description = "Token, its DPoP proof or `client_id` missing or invalid (a bank system's token is refused).", body = AtmError,
            headers(("WWW-Authenticate" = String, description = "The scheme the request used, as for GET /v1/atms."))),
        (status = 405, description = "Method not allowed.", body = AtmError),
        (status = 429, description = "Over the session's, the caller address's or the client's request rate.", body = AtmError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 500, description = "Internal server error.", body = AtmError),
        (status = 503, description = "The ATM data cannot be served now.", body = AtmError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    ),
)]
///
/// Responses: 200 the page (ETag, Cache-Control); 304 when If-None-Match matches; 400
/// bad query, `uuid` or `client_id`; 401 bearer token; 429 over a rate; 503 the data
/// cannot be vouched for. Bodies are OBIE's `{status, title, description}`.
pub async fn list(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer::<Atms>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract: optional uuid, credentials, the client's rate, the query.
            optional_uuid(request.headers())?;
            authenticate(state, &request).await?;
            // 2. Domain values.
            let (page, atm_ids, filters) = state_query(request.query_string())?;
            // 3. Call the use case.
            let page = state.atm_states.page(page, atm_ids).await?;
            // 4. Map to the wire. The page's bytes are a function of the set, the states
            // held, the page's place, each item's shown state (the clock alone turns one
            // `Unknown`) and the representation: its strong tag is known before it is
            // written, and a current copy costs no body.
            let items: Vec<StateItem<'_>> = page.items().collect();
            let base = state.public_base_url.as_str();
            let shown: Vec<Shown> = items.iter().map(|item| item.shown).collect();
            let tag = strong_tag((page.fingerprint(), shown, base, &filters, env!("CARGO_PKG_VERSION")));
            // No Last-Modified: If-Modified-Since is ignored (RFC 9110 §13.1.3); the page
            // may change with the clock alone.
            let current = not_modified(&request, &tag, i64::MAX);
            let mut response = if current { HttpResponse::NotModified() } else { HttpResponse::Ok() };
            response
                .insert_header((header::ETAG, tag.header_value().map_err(Failure::unwritable)?))
                .insert_header((header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)));
            if current {
                return Ok(response.finish());
            }
            Ok(response.content_type(mime_json()).body(render(&page, &items, &filters, base)))
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atm_ids_repeat_up_to_a_hundred_and_go_into_the_links() {
        let (page, ids, filters) = state_query("atmId=A1&page=2&atmId=B%202&other=x").unwrap();
        assert_eq!(page, PageRequest::number(2));
        let ids: Vec<&str> = ids.iter().flatten().map(AtmId::as_str).collect();
        assert_eq!(ids, ["A1", "B 2"]);
        assert_eq!(filters, "atmId=A1&atmId=B+2");
        assert_eq!(state_query("").unwrap().1, None);
        let many: Vec<String> = (0..101).map(|n| format!("atmId=A{n}")).collect();
        assert_eq!(state_query(&many.join("&")).unwrap_err().location, "atmId");
        assert_eq!(state_query(&many[..100].join("&")).unwrap().1.map(|ids| ids.len()), Some(100));
        assert_eq!(state_query("atmId=").unwrap_err().location, "atmId");
        assert_eq!(state_query(&format!("atmId={}", "x".repeat(36))).unwrap_err().location, "atmId");
        assert_eq!(state_query("page=1&page=2").unwrap_err().location, "page");
    }
}
