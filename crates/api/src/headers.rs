//! The headers the operations read and write, each named once: for the code (a
//! [`RequestHeader`], read with [`single_header`]) and for the OpenAPI document (the
//! `IntoParams` types below, which the operations' `#[utoipa::path]` list instead of
//! describing a shared header again). Nothing here reads a header into a domain value;
//! that is [`crate::request`]'s.

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use utoipa::IntoParams;

/// A request header an operation reads: its name as the spec writes it (what a refusal
/// names) and the same name as a [`HeaderName`] made once. A look-up by `&str` parses
/// the name on every call, and copies a custom one (`countryCode`) into a new
/// allocation; a made name is only hashed (callgrind: the ten look-ups of a wait-time
/// request cost about 4,200 instructions by `&str`; ADR 0031).
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

/// The per-request UUID (spec: `uuid`), the correlation id ([`crate::correlation`]).
pub static UUID_HEADER: RequestHeader = RequestHeader::new("uuid", "uuid");
/// The access token (RFC 6750 §2.1, RFC 9449 §7.1).
pub static AUTHORIZATION: RequestHeader = RequestHeader::new("Authorization", "authorization");
/// A DPoP proof (RFC 9449 §4.1).
pub static DPOP: RequestHeader = RequestHeader::new("DPoP", "dpop");
/// The client a bearer call names.
pub static CLIENT_ID: RequestHeader = RequestHeader::new("client_id", "client_id");
/// The body's media type.
pub static CONTENT_TYPE: RequestHeader = RequestHeader::new("Content-Type", "content-type");
/// The channel scope's country.
pub static COUNTRY_CODE: RequestHeader = RequestHeader::new("countryCode", "countrycode");
/// The channel scope's business.
pub static BUSINESS_CODE: RequestHeader = RequestHeader::new("businessCode", "businesscode");
/// The channel scope's channel.
pub static CHANNEL_ID: RequestHeader = RequestHeader::new("ChannelId", "channelid");
/// The session a token was issued with.
pub static SESSION_ID: RequestHeader = RequestHeader::new("sid", "sid");

/// The nonce a DPoP proof must carry (RFC 9449 §8.1), in an answer ([`crate::dpop`]).
pub const DPOP_NONCE: HeaderName = HeaderName::from_static("dpop-nonce");

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

/// Whether the request's `Authorization` header uses the `DPoP` scheme (with a token or
/// without): a refusal's challenge is then in that scheme.
pub fn sent_with_dpop(headers: &HeaderMap) -> bool {
    headers.get(AUTHORIZATION.key()).is_some_and(|value| {
        let value = value.as_bytes();
        value.get(..4).is_some_and(|scheme| scheme.eq_ignore_ascii_case(b"DPoP"))
            && value.get(4).is_none_or(|after| *after == b' ')
    })
}

// The OpenAPI declarations of the headers several operations share. The fields are never
// read (the handlers read the headers above); a field's doc comment is the parameter's
// description, and its type says whether it is required.

/// The headers of a bearer operation, beside `Authorization` (the security scheme).
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(dead_code, reason = "declared for the document; the handlers read the headers themselves")]
pub(crate) struct BearerHeaders {
    /// A DPoP proof (RFC 9449 §4): required with `Authorization: DPoP`, made by the key the token is bound to for this request (`htm`, `htu` without query, `ath`).
    #[param(rename = "DPoP")]
    dpop: Option<String>,
    /// The client id the token was issued to.
    #[param(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    client_id: String,
}

/// The `uuid` header where the operation requires it (spec).
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(dead_code, reason = "declared for the document; the handlers read the headers themselves")]
pub(crate) struct Correlation {
    /// A random UUID, new for every request; echoed in the `uuid` response header.
    #[param(
        format = "uuid",
        pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    uuid: String,
}

/// The `uuid` header where the operation takes it but does not require it (the same
/// header as [`Correlation`]: utoipa takes a pattern as a literal only).
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(dead_code, reason = "declared for the document; the handlers read the headers themselves")]
pub(crate) struct OptionalCorrelation {
    /// A random UUID, new for every request; echoed in the `uuid` response header.
    #[param(
        format = "uuid",
        pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    uuid: Option<String>,
}

/// The language of error texts ([`crate::language`]).
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(dead_code, reason = "declared for the document; the handlers read the headers themselves")]
pub(crate) struct ErrorLanguage {
    /// `es` or `en` (default) for error texts.
    #[param(rename = "Accept-Language")]
    accept_language: Option<String>,
}
