//! What the bank's systems' posts of events share (queue events, ATM state events): the
//! system's token with the operation's scope, a JSON body of 1 to 1,000 `events` in at
//! most 256 KiB, and how a refused event is told.

use actix_web::{HttpRequest, web};
use domain::services::posts::MOST_EVENTS;
use domain::system::{SystemId, SystemScope};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::errors::{BadRequest, Failure, Message, SystemPosts, Unauthenticated};
use crate::headers::CONTENT_TYPE;
use crate::request::{Scheme, access_token, is_json_content_type, optional_uuid, read_body_up_to, required_header};
use crate::state::AppState;

/// The largest body read: 256 KiB (issue 44), about 1,000 events of 250 bytes.
pub const MOST_BODY_BYTES: usize = 256 * 1024;

/// An event refused; nothing of it was stored.
#[derive(Serialize, ToSchema)]
pub struct RejectedEventOut {
    /// Its index in `events`.
    index: usize,
    /// Its `eventId`, when it had a valid one.
    #[serde(rename = "eventId")]
    event_id: Option<String>,
    /// missingField, invalidField, tooOld, aheadOfClock, or the operation's own (unknownType;
    /// unknownState, unknownService, unknownAtm).
    #[schema(example = "missingField")]
    code: &'static str,
    /// The field at fault, such as `events[3].ticket`.
    #[schema(example = "events[3].ticket")]
    location: String,
    /// What was wrong, in English.
    #[schema(example = "ticket is required")]
    details: String,
}

impl RejectedEventOut {
    /// How `rejected` is told.
    pub fn of(rejected: domain::services::posts::RejectedEvent) -> Self {
        let (index, refusal) = (rejected.index, rejected.refusal);
        let location = if refusal.field.is_empty() {
            format!("events[{index}]")
        } else {
            format!("events[{index}].{}", refusal.field)
        };
        Self {
            index,
            event_id: refusal.event_id.map(|id| id.as_str().to_owned()),
            code: refusal.code,
            location,
            details: refusal.details,
        }
    }
}

/// The system the request's bearer token authenticates, with `scope`.
async fn system_of(
    state: &AppState,
    request: &HttpRequest,
    scope: SystemScope,
) -> Result<SystemId, Failure<SystemPosts>> {
    let (scheme, token) = access_token(request.headers())?;
    if scheme != Scheme::Bearer {
        return Err(Unauthenticated::MalformedHeader.into());
    }
    Ok(state.system_bearer.authenticate(token, scope).await?)
}

/// The events of the body: a JSON object whose `events` holds 1 to [`MOST_EVENTS`].
fn events_of(body: &[u8]) -> Result<Vec<Value>, BadRequest> {
    let document: Value =
        serde_json::from_slice(body).map_err(|e| BadRequest::new("body", Message::Body(e.to_string())))?;
    match document.get("events") {
        None => Err(BadRequest::new("events", Message::Missing)),
        Some(Value::Array(events)) if !events.is_empty() && events.len() <= MOST_EVENTS => Ok(events.clone()),
        Some(_) => Err(BadRequest::new(
            "events",
            Message::Body(format!("events must be an array of 1 to {MOST_EVENTS} events")),
        )),
    }
}

/// A post's system and events: the `uuid` header and the system's token (with `scope`)
/// first, then a JSON body.
///
/// # Errors
/// The refusal to answer with.
pub async fn posted_events(
    state: &AppState,
    request: &HttpRequest,
    payload: web::Payload,
    scope: SystemScope,
) -> Result<(SystemId, Vec<Value>), Failure<SystemPosts>> {
    let headers = request.headers();
    optional_uuid(headers)?;
    let system = system_of(state, request, scope).await?;
    if !is_json_content_type(required_header(headers, &CONTENT_TYPE)?) {
        return Err(BadRequest::new(CONTENT_TYPE.name, Message::ContentType).into());
    }
    let body = read_body_up_to(headers, payload, state.body_timeout, MOST_BODY_BYTES).await?;
    Ok((system, events_of(&body)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_holds_one_to_a_thousand_events() {
        assert_eq!(events_of(br#"{"events":[{}],"other":1}"#).unwrap().len(), 1);
        assert_eq!(events_of(br#"{"events":[]}"#).unwrap_err().location, "events");
        assert_eq!(events_of(br#"{"event":[{}]}"#).unwrap_err().location, "events");
        assert_eq!(events_of(br#"{"events":{}}"#).unwrap_err().location, "events");
        assert_eq!(events_of(b"[1]").unwrap_err().location, "events");
        assert_eq!(events_of(b"nope").unwrap_err().location, "body");
        let many = format!(r#"{{"events":[{}]}}"#, vec!["{}"; 1001].join(","));
        assert_eq!(events_of(many.as_bytes()).unwrap_err().location, "events");
    }
}
