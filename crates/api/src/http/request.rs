//! Reading headers, query parameters and bodies into domain values, each failure a
//! [`Failure`] naming its location.

use std::collections::HashMap;

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::web::{Bytes, Payload};
use domain::client::ClientId;
use domain::input::Expected;
use domain::ports::StoreUnavailable;
use domain::services::bearer::{BearerCheck, BearerError};
use domain::token::AccessClaims;

use super::errors::{ErrorContext, Failure, Message};
use super::language::Language;

/// The request header that carries the per-request UUID (spec: `uuid`).
pub const UUID_HEADER: &str = "uuid";

/// Bodies larger than this are refused before they are buffered. 100 branch items of
/// `{"branchId":"01234"}` are about 2 KB; 64 KiB leaves room for whitespace and nothing
/// for abuse.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A query string: each known parameter at most once, unknown ones ignored (RFC 6749
/// §3.1 for authorize; the same rule serves every endpoint).
pub struct Query(HashMap<&'static str, String>);

impl Query {
    /// Parses `raw`, keeping only the parameters named in `known`.
    pub fn parse(raw: &str, known: &[&'static str]) -> Result<Self, Failure> {
        let mut parameters = HashMap::new();
        for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
            let Some(name) = known.iter().find(|known| **known == name) else { continue };
            if parameters.insert(*name, value.into_owned()).is_some() {
                return Err(Failure::invalid(*name, Message::Repeated));
            }
        }
        Ok(Self(parameters))
    }

    /// Parameter `name`, if sent.
    pub fn optional(&self, name: &'static str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Parameter `name`, which must be sent.
    pub fn required(&self, name: &'static str) -> Result<&str, Failure> {
        self.optional(name).ok_or_else(|| Failure::invalid(name, Message::Missing))
    }

    /// Parameter `name`, which must be sent, parsed into a domain value.
    pub fn parsed<T>(&self, name: &'static str, parse: impl FnOnce(&str) -> Result<T, Expected>) -> Result<T, Failure> {
        parse(self.required(name)?).map_err(|shape| Failure::invalid(name, Message::Malformed(shape)))
    }
}

/// The one value of header `name`, if sent. A header that takes one value is refused
/// when sent twice, never read first-wins: which copy a proxy in front read, and which
/// one the service did, would be anyone's guess.
fn single_header<'r>(headers: &'r HeaderMap, name: &'static str) -> Result<Option<&'r HeaderValue>, Failure> {
    let mut values = headers.get_all(name);
    let first = values.next();
    if values.next().is_some() {
        return Err(Failure::invalid(name, Message::RepeatedHeader));
    }
    Ok(first)
}

/// The raw value of header `name`: required, sent once, and visible ASCII.
pub fn required_header<'r>(headers: &'r HeaderMap, name: &'static str) -> Result<&'r str, Failure> {
    let value = single_header(headers, name)?.ok_or_else(|| Failure::invalid(name, Message::Missing))?;
    value.to_str().map_err(|_| Failure::invalid(name, Message::NotText))
}

/// Whether some `Accept` header allows JSON: a list header, so its copies count as one
/// list (RFC 9110 §5.3). Missing is an error.
pub fn accepts_json_header(headers: &HeaderMap) -> Result<bool, Failure> {
    let mut allowed = None;
    for value in headers.get_all(header::ACCEPT) {
        let value = value.to_str().map_err(|_| Failure::invalid("Accept", Message::NotText))?;
        allowed = Some(allowed.unwrap_or(false) || accepts_json(value));
    }
    allowed.ok_or_else(|| Failure::invalid("Accept", Message::Missing))
}

/// Header `name` parsed into a domain value.
pub fn parsed_header<T>(
    headers: &HeaderMap,
    name: &'static str,
    parse: impl FnOnce(&str) -> Result<T, Expected>,
) -> Result<T, Failure> {
    parse(required_header(headers, name)?).map_err(|shape| Failure::invalid(name, Message::Malformed(shape)))
}

/// The `uuid` header's value, if it was sent once and is a valid UUID (RFC 9562), as sent.
pub fn valid_uuid(headers: &HeaderMap) -> Option<&str> {
    valid_uuid_header(headers).and_then(|value| value.to_str().ok())
}

/// The `uuid` header itself, if it was sent once and is a valid UUID: to echo it as it
/// came, without copying or checking its bytes again.
pub fn valid_uuid_header(headers: &HeaderMap) -> Option<&HeaderValue> {
    single_header(headers, UUID_HEADER)
        .ok()
        .flatten()
        .filter(|value| std::str::from_utf8(value.as_bytes()).is_ok_and(|text| uuid::Uuid::try_parse(text).is_ok()))
}

/// The language and correlation id errors of this request are written with.
pub fn error_context(request: &HttpRequest) -> ErrorContext {
    ErrorContext { language: Language::of(request), uuid: valid_uuid(request.headers()).map(str::to_owned) }
}

/// Checks that the required `uuid` header is present and a UUID.
pub fn require_uuid(headers: &HeaderMap) -> Result<(), Failure> {
    required_header(headers, UUID_HEADER)?;
    valid_uuid_header(headers)
        .map(drop)
        .ok_or_else(|| Failure::invalid(UUID_HEADER, Message::Malformed(Expected::Uuid)))
}

/// The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), if the
/// header is there once and well formed.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    // UTF-8 rather than `to_str`'s byte-by-byte visible-ASCII test: a token is read on
    // every protected call, and any byte a token may not hold fails its verification.
    let value = std::str::from_utf8(single_header(headers, "authorization").ok()??.as_bytes()).ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("Bearer") && !token.is_empty() && !token.contains(' ')).then_some(token)
}

/// Why a bearer-protected request was not let through; each operation writes it in its
/// own body shape.
#[derive(Debug)]
pub enum Unauthenticated {
    /// No usable bearer token, or one that does not verify for this client (401).
    Refused,
    /// The `client_id` header is missing or malformed (400).
    Invalid(Failure),
    /// Revocations cannot be read (5xx).
    Unavailable(StoreUnavailable),
}

/// The bearer check every protected operation starts with: `Authorization: Bearer`,
/// the `client_id` header, then [`BearerCheck::authenticate`]. The reason for a refusal
/// goes to the log only.
pub async fn authenticate(bearer: &BearerCheck, headers: &HeaderMap) -> Result<AccessClaims, Unauthenticated> {
    let Some(token) = bearer_token(headers) else {
        if crate::metrics::on() {
            crate::metrics::refused("bearer", "no bearer token");
        }
        return Err(Unauthenticated::Refused);
    };
    let client_id = parsed_header(headers, "client_id", ClientId::parse).map_err(Unauthenticated::Invalid)?;
    bearer.authenticate(token, &client_id).await.map_err(|error| match error {
        BearerError::Refused(reason) => {
            tracing::info!(reason, "bearer token refused");
            if crate::metrics::on() {
                crate::metrics::refused("bearer", reason);
            }
            Unauthenticated::Refused
        }
        BearerError::Unavailable(cause) => Unauthenticated::Unavailable(cause),
    })
}

/// Whether a media-type header value (`Content-Type`) is JSON.
pub fn is_json_content_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// Whether an `Accept` header allows `application/json` (RFC 9110 §12.5.1).
pub fn accepts_json(value: &str) -> bool {
    value.split(',').any(|range| {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim();
        let refused = parts.any(|param| {
            param.trim().strip_prefix("q=").is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
        });
        !refused
            && ["application/json", "application/*", "*/*"].iter().any(|allowed| media.eq_ignore_ascii_case(allowed))
    })
}

/// Reads the body, refusing more than [`MAX_BODY_BYTES`] without buffering it, and a
/// body that has not fully arrived within `deadline` (a stalled client must not hold a
/// request open forever).
pub async fn read_body(headers: &HeaderMap, payload: Payload, deadline: std::time::Duration) -> Result<Bytes, Failure> {
    let too_large = || Failure::invalid("body", Message::BodyTooLarge(MAX_BODY_BYTES));
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    match tokio::time::timeout(deadline, payload.to_bytes_limited(MAX_BODY_BYTES)).await {
        Ok(Ok(Ok(bytes))) => Ok(bytes),
        Ok(Ok(Err(_))) => Err(too_large()),
        Ok(Err(_)) => Err(Failure::invalid("body", Message::Body("the body could not be read".into()))),
        Err(_) => Err(Failure::invalid("body", Message::BodyTimeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_that_allow_json() {
        for value in ["application/json", "*/*", "text/html, application/*;q=0.5", "APPLICATION/JSON; charset=utf-8"] {
            assert!(accepts_json(value), "{value}");
        }
    }

    #[test]
    fn accept_headers_that_do_not_allow_json() {
        for value in ["text/html", "application/xml", "application/json;q=0", ""] {
            assert!(!accepts_json(value), "{value}");
        }
    }

    #[test]
    fn json_content_types_may_carry_a_charset() {
        assert!(is_json_content_type("application/json; charset=utf-8"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type("application/jsonx"));
    }
}
