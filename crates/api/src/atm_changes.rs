//! GET /api/v1/atms/changes: the ATMs' change feed apps keep a copy in step with.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use domain::atm_feed::{ChangeKind, DEFAULT_CHANGES, FeedCursor, MOST_CHANGES};
use domain::input::Expected;
use domain::posted::EventTime;
use domain::services::atm_feed::{FeedItem, FeedPage};
use serde_json::Value;
use utoipa::ToSchema;

use crate::errors::bodies::ErrorResponseBody as ErrorResponse;
use crate::errors::{ApiError, AtmChanges, BadRequest, Message, answer, mime_json};
use crate::headers::{BearerHeaders, ErrorLanguage, OptionalCorrelation};
use crate::json_text::push_string;
use crate::request::{Query, authenticate, optional_uuid};
use crate::state::AppState;

/// A page of the feed is the same for everyone and changes only by growing: no cache.
const CACHE_CONTROL: &str = "no-store";

/// One change, as the OpenAPI document shows it (written by [`render`]).
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the answer")]
pub(crate) struct AtmChangeOut {
    /// The ATM's OBIE `Identification`.
    #[schema(rename = "atmId", example = "LFFFBC11")]
    atm_id: String,
    /// `upserted` (the record added or replaced), `removed` (gone from the listings:
    /// dropped by an import, or closed) or `state` (its state or closure changed).
    #[schema(example = "upserted")]
    change: String,
    /// When it happened.
    #[schema(format = DateTime)]
    at: String,
    /// The record's brand (upserted, removed): an `Identification` is unique within a
    /// brand only.
    brand: Option<String>,
    /// The OBIE ATM 2.3 record (upserted only).
    #[schema(value_type = Option<Object>)]
    record: Option<Value>,
    /// The state object, as GET /v1/atms/state shows it while fresh (state only).
    #[schema(value_type = Option<Object>)]
    state: Option<Value>,
}

/// A page of changes and where the next starts.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the answer")]
pub(crate) struct AtmChangesData {
    /// The changes, in commit order.
    changes: Vec<AtmChangeOut>,
    /// The `since` of the next page: opaque, valid on every instance and after restarts.
    next: String,
}

/// The answer.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the answer")]
pub(crate) struct AtmChangesResponse {
    data: AtmChangesData,
    /// `Self`, as an absolute URI.
    #[schema(value_type = Object)]
    links: Value,
    /// Empty.
    #[schema(value_type = Object)]
    meta: Value,
}

/// The cursor and page size asked for.
fn feed_query(raw: &str) -> Result<(Option<FeedCursor>, usize), BadRequest> {
    let query = Query::parse(raw, &["since", "limit"])?;
    let since = query
        .optional("since")
        .map(|since| {
            FeedCursor::parse(since).map_err(|_| BadRequest::new("since", Message::Malformed(Expected::FeedCursor)))
        })
        .transpose()?;
    let limit = match query.optional("limit") {
        None => DEFAULT_CHANGES,
        Some(limit) => limit
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MOST_CHANGES).contains(n) && limit.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| BadRequest::new("limit", Message::LimitRange(MOST_CHANGES)))?,
    };
    Ok((since, limit))
}

/// What an item writes between its `atmId` and its JSON: `,"change":…,"at":…`, its brand
/// and the name of what follows. Written once per run of items that share it (a
/// snapshot's items all do, but for brand changes; an import's changes share theirs):
/// formatting a date costs more than the rest of an item.
struct Middle<'a> {
    kind: ChangeKind,
    at: EventTime,
    brand: Option<&'a str>,
    text: String,
}

impl<'a> Middle<'a> {
    fn of(item: &FeedItem<'a>) -> Self {
        let mut text = String::with_capacity(96);
        text.push_str(r#","change":""#);
        text.push_str(item.kind.name());
        text.push_str(r#"","at":""#);
        text.push_str(&item.at.to_string());
        text.push('"');
        if let Some(brand) = item.brand {
            text.push_str(r#","brand":"#);
            push_string(&mut text, brand);
        }
        if item.body.is_some() {
            text.push_str(if item.kind == ChangeKind::State { r#","state":"# } else { r#","record":"# });
        }
        Self { kind: item.kind, at: item.at, brand: item.brand, text }
    }

    fn fits(&self, item: &FeedItem<'_>) -> bool {
        self.kind == item.kind && self.at == item.at && self.brand == item.brand
    }
}

/// The answer's body, written in place: records and states are JSON already, copied as
/// they are (the record validated at import, the state written by `domain::atm_feed`).
fn render(page: &FeedPage, base: &str, query: &str) -> Vec<u8> {
    // Sized for records of about OBIE's usual size (real feeds: 430 to 561 bytes); a page
    // of larger ones grows its buffer.
    let mut body = String::with_capacity(512 + base.len() + query.len() + page.len() * 800);
    body.push_str(r#"{"data":{"changes":["#);
    let mut middle: Option<Middle<'_>> = None;
    for (n, item) in page.items().enumerate() {
        body.push_str(if n > 0 { r#",{"atmId":"# } else { r#"{"atmId":"# });
        push_string(&mut body, item.atm);
        let current = match middle.take() {
            Some(kept) if kept.fits(&item) => kept,
            _ => Middle::of(&item),
        };
        body.push_str(&current.text);
        if let Some(json) = item.body {
            body.push_str(json);
        }
        body.push('}');
        middle = Some(current);
    }
    body.push_str(r#"],"next":""#);
    body.push_str(&page.next.to_string());
    body.push_str(r#""},"links":{"Self":"#);
    let mut link = String::with_capacity(base.len() + query.len() + 24);
    link.push_str(base);
    link.push_str("/api/v1/atms/changes");
    if !query.is_empty() {
        link.push('?');
        link.push_str(query);
    }
    push_string(&mut body, &link);
    body.push_str(r#"},"meta":{}}"#);
    body.into_bytes()
}

/// Reads the ATMs' change feed.
#[utoipa::path(
    get,
    path = "/v1/atms/changes",
    tag = "ATMs",
    operation_id = "listAtmChanges",
    summary = "What changed in the ATMs, in commit order",
    security(("bearer" = []), ("dpop" = [])),
    params(
        BearerHeaders,
        OptionalCorrelation,
        ErrorLanguage,
        ("since" = Option<String>, Query, description = "The `next` of the page before; without it the feed starts with every ATM served as `upserted`, then what changed after."),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "Changes a page holds at most (500 by default)."),
    ),
    responses(
        (status = 200, description = "A page of changes; an empty one when nothing changed since.", body = AtmChangesResponse, headers(
            ("Cache-Control" = String, description = "`no-store`."),
        )),
        (status = 400, description = "Bad request: an invalid `since`, `limit`, `uuid` or `client_id`.", body = ErrorResponse),
        (status = 401, description = "Token, its DPoP proof or `client_id` missing or invalid (a bank system's token is refused).", body = ErrorResponse,
            headers(("WWW-Authenticate" = String, description = "The scheme the request used, as for GET /v1/atms."))),
        (status = 405, description = "Method not allowed.", body = ErrorResponse),
        (status = 410, description = "`cursorExpired`: the cursor is older than the changes kept (30 days by default) or of another store; start again without `since`.", body = ErrorResponse),
        (status = 429, description = "Over the session's, the caller address's or the client's request rate.", body = ErrorResponse,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 500, description = "Internal server error.", body = ErrorResponse),
        (status = 503, description = "The ATM data cannot be served now.", body = ErrorResponse,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    ),
)]
///
/// Responses: 200 the page; 400 a bad query, `uuid` or `client_id`; 401 bearer token;
/// 410 a cursor too old; 429 over a rate; 503 the data cannot be vouched for.
pub async fn list(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer::<AtmChanges>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract: optional uuid, credentials, the query.
            optional_uuid(request.headers())?;
            authenticate(state, &request).await?;
            let (since, limit) = feed_query(request.query_string())?;
            // 2. Call the use case.
            let page = state.atm_changes.page(since, limit).await?;
            // 3. Map to the wire.
            let body = render(&page, state.public_base_url.as_str(), request.query_string());
            Ok(HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)))
                .content_type(mime_json())
                .body(body))
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_1_to_1000_and_a_cursor_one_the_feed_gave() {
        assert_eq!(feed_query("").unwrap(), (None, 500));
        assert_eq!(feed_query("limit=1000").unwrap().1, 1000);
        for bad in ["limit=0", "limit=1001", "limit=+5", "limit=x", "limit=5&limit=6"] {
            assert_eq!(feed_query(bad).unwrap_err().location, "limit", "{bad}");
        }
        for bad in ["since=", "since=l.ab.x", "since=..."] {
            assert_eq!(feed_query(bad).unwrap_err().location, "since", "{bad}");
        }
        assert!(feed_query("since=l.ab12.7&limit=3").unwrap().0.is_some());
    }
}
