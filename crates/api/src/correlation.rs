//! The request's `uuid` header (spec: a random 128-bit UUID per request): the correlation
//! id of its log lines, echoed in the answer and in error bodies that have a `uuid`.

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

/// A request header an operation reads: its name as the spec writes it (what a refusal
/// names) and the same name as a [`HeaderName`] made once. A look-up by `&str` parses
/// the name on every call, and copies a custom one (`countryCode`) into a new
/// allocation; a made name is only hashed (callgrind: the ten look-ups of a wait-time
/// request cost about 4,200 instructions by `&str`; docs/benchmarks.md, issue 25).
#[derive(Debug)]
pub struct RequestHeader {
    /// As the spec writes it (`countryCode`), for refusals.
    pub name: &'static str,
    key: HeaderName,
}

impl RequestHeader {
    /// `name` as the spec writes it; `lower_case`, the same name in lower case.
    pub const fn new(name: &'static str, lower_case: &'static str) -> Self {
        Self { name, key: HeaderName::from_static(lower_case) }
    }

    /// The name as sent on the wire.
    pub fn key(&self) -> &HeaderName {
        &self.key
    }
}

/// The request header that carries the per-request UUID (spec: `uuid`).
pub static UUID_HEADER: RequestHeader = RequestHeader::new("uuid", "uuid");

/// The one value of `header`, if sent. A header that takes one value is refused when
/// sent twice, never read first-wins: which copy a proxy in front read, and which one
/// the service did, would be anyone's guess.
///
/// # Errors
/// [`SentTwice`] when it was sent more than once.
pub fn single_header<'r>(
    headers: &'r HeaderMap,
    header: &'static RequestHeader,
) -> Result<Option<&'r HeaderValue>, SentTwice> {
    let mut values = headers.get_all(&header.key);
    let first = values.next();
    if values.next().is_some() {
        return Err(SentTwice(header.name));
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
    single_header(headers, &UUID_HEADER)
        .ok()
        .flatten()
        .filter(|value| std::str::from_utf8(value.as_bytes()).is_ok_and(|text| uuid::Uuid::try_parse(text).is_ok()))
}
