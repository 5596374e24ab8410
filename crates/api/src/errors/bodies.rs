//! The error bodies of each operation family, and their OpenAPI schemas.

use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;

/// ErrorResponse: the wait-time operation's error body (and that of unknown paths).
#[derive(Serialize, ToSchema)]
#[schema(as = ErrorResponse)]
pub struct ErrorResponseBody<'a> {
    /// `error` for 4xx, `fatal` for 5xx (spec: one of error, warn, invalid, fatal).
    #[serde(rename = "type")]
    #[schema(value_type = String, pattern = "^(error|warn|invalid|fatal)$", example = "error")]
    pub(super) kind: &'static str,
    /// The error code: invalidRequest, unAuthorized, accessNotConfigured,
    /// resourceNotFound, methodNotAllowed, businessValidationFailed, tooManyRequests,
    /// serverUnavailable; insufficientScope (403, a bank system's token without the
    /// operation's scope).
    #[schema(value_type = String, example = "invalidRequest")]
    pub(super) code: &'static str,
    /// What went wrong, in English or Spanish per Accept-Language.
    #[schema(value_type = String)]
    pub(super) details: &'a str,
    /// The header, parameter or body field at fault, such as `branches[3].branchId`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "branches[3].branchId")]
    pub(super) location: Option<&'a str>,
    /// The request's `uuid` header, when it was a valid UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = "uuid")]
    pub(super) uuid: Option<&'a str>,
    /// When the error happened (RFC 3339, UTC).
    #[schema(value_type = String, format = DateTime)]
    pub(super) timestamp: &'a str,
}

/// The ATM endpoint's error body (OBIE): the status, OBIE's title for it, and what was
/// wrong.
#[derive(Serialize, ToSchema)]
#[schema(as = AtmError)]
pub struct ObieErrorBody<'a> {
    /// The HTTP status code, as a string.
    #[schema(value_type = String, pattern = "^[0-9]{3}$", example = "400")]
    pub(super) status: &'a str,
    /// OBIE's title for the status (Spanish with Accept-Language: es).
    #[schema(value_type = String, example = "Bad request")]
    pub(super) title: &'static str,
    /// What was wrong: the header or parameter at fault and why (Spanish with
    /// Accept-Language: es).
    #[schema(value_type = String, example = "latitude must be between -90 and 90.")]
    pub(super) description: &'a str,
}

/// The token endpoint's error body.
#[derive(Serialize, ToSchema)]
#[schema(as = TokenError)]
pub struct TokenErrorBody<'a> {
    /// invalidRequest (400), invalid_dpop_proof or use_dpop_nonce (400, RFC 9449, with
    /// `location` `DPoP`), unAuthorized (401), methodNotAllowed (405), tooManyRequests
    /// (429) or serverUnavailable (500).
    #[schema(value_type = String, example = "invalidRequest")]
    pub(super) code: &'static str,
    /// What went wrong, in English or Spanish per Accept-Language.
    #[schema(value_type = String)]
    pub(super) details: &'a str,
    /// The parameter or header at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "countryCode")]
    pub(super) location: Option<&'a str>,
    /// When the error happened (RFC 3339, UTC).
    #[schema(value_type = String, format = DateTime)]
    pub(super) timestamp: &'a str,
}

/// The revocation endpoint's error body (RFC 6749 §5.2, which RFC 7009 §2.2.1 uses).
#[derive(Serialize, ToSchema)]
#[schema(as = OAuthError)]
pub struct OAuthErrorBody<'a> {
    /// invalid_request (400: a parameter missing, sent twice or malformed, or not a
    /// form), invalid_client (400: client_id names no active client),
    /// unauthorized_client (400: the token is another client's) or
    /// temporarily_unavailable (429 over the rate, 503 when the service cannot revoke:
    /// the token may still be valid; both with Retry-After).
    #[schema(value_type = String, example = "invalid_request")]
    pub(super) error: &'static str,
    /// What went wrong, in English (RFC 6749 §5.2: ASCII).
    #[schema(value_type = String, example = "The required value token is missing.")]
    pub(super) error_description: &'a str,
}

/// Now, RFC 3339 in UTC, for error `timestamp` fields.
pub fn timestamp() -> String {
    OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default()
}
