//! The request's `uuid` header (spec: a random 128-bit UUID per request): the correlation
//! id of its log lines, echoed in the answer (by [`crate::middleware::observe`]) and in
//! error bodies that have a `uuid`.

use actix_web::http::header::{HeaderMap, HeaderValue};

use crate::headers::{UUID_HEADER, single_header};

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
