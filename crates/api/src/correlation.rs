//! The request's `uuid` header (spec: a random 128-bit UUID per request): the correlation
//! id of its log lines, echoed in the answer and in error bodies that have a `uuid`.

use actix_web::http::header::{HeaderMap, HeaderValue};

/// The request header that carries the per-request UUID (spec: `uuid`).
pub const UUID_HEADER: &str = "uuid";

/// The one value of header `name`, if sent. A header that takes one value is refused
/// when sent twice, never read first-wins: which copy a proxy in front read, and which
/// one the service did, would be anyone's guess.
///
/// # Errors
/// [`SentTwice`] when it was sent more than once.
pub fn single_header<'r>(headers: &'r HeaderMap, name: &'static str) -> Result<Option<&'r HeaderValue>, SentTwice> {
    let mut values = headers.get_all(name);
    let first = values.next();
    if values.next().is_some() {
        return Err(SentTwice(name));
    }
    Ok(first)
}

/// A header that takes one value was sent more than once; its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentTwice(pub &'static str);

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
