//! Reading headers, query parameters and bodies into domain values, each failure a
//! [`BadRequest`] naming its location; and the bearer check every protected operation
//! starts with ([`authenticate`]).

use std::borrow::Cow;
use tracing::Instrument as _;

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderMap};
use actix_web::web::{Bytes, Payload};
use domain::client::ClientId;
use domain::dpop::ProofRefusal;
use domain::input::Expected;
use domain::services::bearer::BearerError;
use domain::token::AccessClaims;

use crate::dpop::presented_proof;
use crate::errors::{BadRequest, Unauthenticated};
use crate::headers::{AUTHORIZATION, CLIENT_ID, RequestHeader, UUID_HEADER, single_header};
use crate::state::AppState;
use crate::texts::Message;

/// The client a handler read from its request's body (the revocation form), left in the
/// request's extensions for what runs after it: CORS ([`crate::cors`]) and the access
/// log.
#[derive(Debug, Clone)]
pub struct ClientInBody(pub ClientId);

/// The client a request names, when it is a valid client id: the one its handler read
/// from the body ([`ClientInBody`]), else the `client_id` header (the bearer
/// operations), else the `client_id` query parameter (the token request).
pub fn named_client(request: &HttpRequest) -> Option<ClientId> {
    use actix_web::HttpMessage as _;
    if let Some(ClientInBody(client_id)) = request.extensions().get::<ClientInBody>() {
        return Some(client_id.clone());
    }
    let raw = match request.headers().get(CLIENT_ID.key()) {
        Some(value) => Cow::Borrowed(value.to_str().ok()?),
        None => form_urlencoded::parse(request.query_string().as_bytes()).find(|(name, _)| name == "client_id")?.1,
    };
    ClientId::parse(&raw).ok()
}

/// Bodies larger than this are refused before they are buffered. 100 branch items of
/// `{"branchId":"01234"}` are about 2 KB; 64 KiB leaves room for whitespace and nothing
/// for abuse.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A query string: each known parameter at most once, unknown ones ignored (RFC 6749
/// §3.1 for authorize; the same rule serves every endpoint). A handful of parameters in
/// a list, each value borrowed from the query string unless it was percent-encoded (a
/// hash map and a copy of every value were most of the 8,400 instructions parsing took
/// in a token request; callgrind, issue 25).
pub struct Query<'a>(Vec<(&'static str, Cow<'a, str>)>);

impl<'a> Query<'a> {
    /// Parses `raw`, keeping only the parameters named in `known`.
    pub fn parse(raw: &'a str, known: &[&'static str]) -> Result<Self, BadRequest> {
        let mut parameters: Vec<(&'static str, Cow<'a, str>)> = Vec::with_capacity(known.len());
        for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
            let Some(name) = known.iter().find(|known| **known == name) else { continue };
            if parameters.iter().any(|(seen, _)| seen == name) {
                return Err(BadRequest::new(*name, Message::Repeated));
            }
            parameters.push((*name, value));
        }
        Ok(Self(parameters))
    }

    /// Parameter `name`, if sent.
    pub fn optional(&self, name: &'static str) -> Option<&str> {
        self.0.iter().find(|(known, _)| *known == name).map(|(_, value)| value.as_ref())
    }

    /// Parameter `name`, which must be sent.
    pub fn required(&self, name: &'static str) -> Result<&str, BadRequest> {
        self.optional(name).ok_or_else(|| BadRequest::new(name, Message::Missing))
    }

    /// Parameter `name`, which must be sent, parsed into a domain value.
    pub fn parsed<T>(
        &self,
        name: &'static str,
        parse: impl FnOnce(&str) -> Result<T, Expected>,
    ) -> Result<T, BadRequest> {
        parse(self.required(name)?).map_err(|shape| BadRequest::new(name, Message::Malformed(shape)))
    }
}

/// The raw value of header `name`: required, sent once, and visible ASCII.
pub fn required_header<'r>(headers: &'r HeaderMap, header: &'static RequestHeader) -> Result<&'r str, BadRequest> {
    let name = header.name;
    let value = single_header(headers, header)?.ok_or_else(|| BadRequest::new(name, Message::MissingHeader))?;
    value.to_str().map_err(|_| BadRequest::new(name, Message::NotText))
}

/// Whether some `Accept` header allows JSON: a list header, so its copies count as one
/// list (RFC 9110 §5.3). Missing is an error.
pub fn accepts_json_header(headers: &HeaderMap) -> Result<bool, BadRequest> {
    let mut allowed = None;
    for value in headers.get_all(header::ACCEPT) {
        let value = value.to_str().map_err(|_| BadRequest::new("Accept", Message::NotText))?;
        allowed = Some(allowed.unwrap_or(false) || accepts_json(value));
    }
    allowed.ok_or_else(|| BadRequest::new("Accept", Message::MissingHeader))
}

/// Header `name` parsed into a domain value.
pub fn parsed_header<T>(
    headers: &HeaderMap,
    header: &'static RequestHeader,
    parse: impl FnOnce(&str) -> Result<T, Expected>,
) -> Result<T, BadRequest> {
    parse(required_header(headers, header)?).map_err(|shape| BadRequest::new(header.name, Message::Malformed(shape)))
}

/// Checks that the required `uuid` header is present and a UUID.
pub fn require_uuid(headers: &HeaderMap) -> Result<(), BadRequest> {
    let value = required_header(headers, &UUID_HEADER)?;
    match uuid::Uuid::try_parse(value) {
        Ok(_) => Ok(()),
        Err(_) => Err(BadRequest::new(UUID_HEADER.name, Message::Malformed(Expected::Uuid))),
    }
}

/// Checks that the optional `uuid` header, when sent, is a UUID.
pub fn optional_uuid(headers: &HeaderMap) -> Result<(), BadRequest> {
    if headers.contains_key(UUID_HEADER.key()) && crate::correlation::valid_uuid_header(headers).is_none() {
        return Err(BadRequest::new(UUID_HEADER.name, Message::Malformed(Expected::Uuid)));
    }
    Ok(())
}

/// The scheme an access token is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `Bearer` (RFC 6750 §2.1): a bearer token.
    Bearer,
    /// `DPoP` (RFC 9449 §7.1): a bound token, with a proof in the `DPoP` header.
    Dpop,
}

/// The scheme and token of the `Authorization: Bearer <token>` or `DPoP <token>`
/// header (RFC 6750 §2.1, RFC 9449 §7.1).
///
/// # Errors
/// [`Unauthenticated::NoToken`] without the header; [`Unauthenticated::MalformedHeader`]
/// when it is sent twice or is not `Bearer` or `DPoP`, one space, and a token without
/// spaces.
pub fn access_token(headers: &HeaderMap) -> Result<(Scheme, &str), Unauthenticated> {
    let header = single_header(headers, &AUTHORIZATION).map_err(|_| Unauthenticated::MalformedHeader)?;
    // UTF-8 rather than `to_str`'s byte-by-byte visible-ASCII test: a token is read on
    // every protected call, and any byte a token may not hold fails its verification.
    let value = std::str::from_utf8(header.ok_or(Unauthenticated::NoToken)?.as_bytes())
        .map_err(|_| Unauthenticated::MalformedHeader)?;
    // The token is searched for a second space with memchr's vector search: `contains`
    // walks a token of hundreds of bytes a word at a time.
    let (scheme, token) = value.split_once(' ').ok_or(Unauthenticated::MalformedHeader)?;
    let scheme = if scheme.eq_ignore_ascii_case("Bearer") {
        Scheme::Bearer
    } else if scheme.eq_ignore_ascii_case("DPoP") {
        Scheme::Dpop
    } else {
        return Err(Unauthenticated::MalformedHeader);
    };
    if token.is_empty() || memchr::memchr(b' ', token.as_bytes()).is_some() {
        return Err(Unauthenticated::MalformedHeader);
    }
    Ok((scheme, token))
}

/// The check every protected operation starts with: `Authorization: Bearer` (or
/// `DPoP` with its proof), the `client_id` header, then the domain's
/// [`domain::services::bearer::BearerAuthentication`], which also counts the call
/// against the session's, the caller's and the client's rates before it verifies a
/// proof. Why a token was refused is for the log only (the observer's), never the
/// caller; why a proof was, the caller is told.
///
/// # Errors
/// [`Unauthenticated`]: no usable token, a missing or malformed `client_id`, a `DPoP`
/// header missing or sent twice with the `DPoP` scheme, or the domain's refusal.
pub async fn authenticate(state: &AppState, request: &HttpRequest) -> Result<AccessClaims, Unauthenticated> {
    let headers = request.headers();
    let (scheme, token) = access_token(headers)?;
    let client_id = parsed_header(headers, &CLIENT_ID, ClientId::parse).map_err(Unauthenticated::BadRequest)?;
    let proof = match scheme {
        Scheme::Bearer => None,
        Scheme::Dpop => Some(
            presented_proof(request, &state.public_base_url)
                .and_then(|proof| proof.ok_or(ProofRefusal::Count))
                .map_err(|refusal| Unauthenticated::Bearer(BearerError::Proof(refusal)))?,
        ),
    };
    let caller = crate::rate_limit::caller_key(state.proxies.caller(request));
    state
        .bearer
        .authenticate(token, proof, &client_id, caller)
        .instrument(tracing::trace_span!("bearer check"))
        .await
        .map_err(Unauthenticated::Bearer)
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
pub async fn read_body(
    headers: &HeaderMap,
    payload: Payload,
    deadline: std::time::Duration,
) -> Result<Bytes, BadRequest> {
    read_body_up_to(headers, payload, deadline, MAX_BODY_BYTES).await
}

/// [`read_body`] with a limit of `most` bytes.
///
/// # Errors
/// `body` too large, not read, or late.
pub async fn read_body_up_to(
    headers: &HeaderMap,
    payload: Payload,
    deadline: std::time::Duration,
    most: usize,
) -> Result<Bytes, BadRequest> {
    let too_large = || BadRequest::new("body", Message::BodyTooLarge(most));
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > most) {
        return Err(too_large());
    }
    match tokio::time::timeout(deadline, payload.to_bytes_limited(most)).await {
        Ok(Ok(Ok(bytes))) => Ok(bytes),
        Ok(Ok(Err(_))) => Err(too_large()),
        Ok(Err(_)) => Err(BadRequest::new("body", Message::Body("the body could not be read".into()))),
        Err(_) => Err(BadRequest::new("body", Message::BodyTimeout)),
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
    fn a_bearer_header_is_the_scheme_one_space_and_a_token_without_spaces() {
        let token = "x".repeat(700);
        let read = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, header::HeaderValue::from_str(value).unwrap());
            access_token(&headers).map(|(scheme, token)| (scheme, token.to_owned()))
        };
        assert_eq!(read(&format!("Bearer {token}")).unwrap(), (Scheme::Bearer, token.clone()));
        assert_eq!(read("bEARER a.b.c").unwrap(), (Scheme::Bearer, "a.b.c".into()), "the scheme is case-insensitive");
        assert_eq!(read("DPoP a.b.c").unwrap(), (Scheme::Dpop, "a.b.c".into()));
        assert_eq!(read("dpop a.b.c").unwrap(), (Scheme::Dpop, "a.b.c".into()));
        for refused in [
            "Bearer",
            "Bearer ",
            "Bearer  a",
            "Basic a",
            "DPoP",
            "DPoP ",
            &format!("Bearer {token} x"),
            &format!("Bearer {token} "),
        ] {
            assert!(matches!(read(refused), Err(Unauthenticated::MalformedHeader)), "{refused:?}");
        }
        assert!(matches!(access_token(&HeaderMap::new()), Err(Unauthenticated::NoToken)));
    }

    #[test]
    fn json_content_types_may_carry_a_charset() {
        assert!(is_json_content_type("application/json; charset=utf-8"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type("application/jsonx"));
    }
}
