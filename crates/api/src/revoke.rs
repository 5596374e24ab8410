//! POST /api/v1/revoke: an app ends its own visitor session (RFC 7009 token revocation
//! for public clients).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use domain::client::ClientId;
use domain::services::revocation::RevocationOutcome;
use utoipa::ToSchema;

use crate::errors::bodies::OAuthErrorBody as OAuthError;
use crate::errors::{ApiError, BadRequest, Message, Revoke, answer};
use crate::headers::{CONTENT_TYPE, OptionalCorrelation, single_header};
use crate::rate_limit;
use crate::request::{ClientInBody, Query, optional_uuid, read_body};
use crate::state::AppState;

/// The parameters this endpoint reads (RFC 7009 §2.1); others are ignored.
const PARAMETERS: [&str; 3] = ["token", "client_id", "token_type_hint"];

// Read by hand from the form, each parameter at most once (`revocation_call`).
/// The revocation request, as the OpenAPI document shows it.
#[derive(ToSchema)]
pub(crate) struct RevocationRequest {
    /// The token to revoke: the `access_token` or the `opaque_token` /v1/authorize
    /// returned.
    #[schema(min_length = 1)]
    token: String,
    /// The client the token was issued to.
    #[schema(value_type = String, pattern = "^[A-Za-z0-9._-]{1,64}$")]
    client_id: ClientId,
    /// `access_token` or `opaque_token`, or any other value: a hint the server may
    /// ignore (RFC 7009 §2.1), and does, since a token's kind shows in its shape.
    token_type_hint: Option<String>,
}

/// Whether `value` is a form's media type, with or without parameters.
pub(crate) fn is_form(value: &str) -> bool {
    let media = value.split(';').next().unwrap_or_default().trim();
    media.eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

/// The request's form, each parameter at most once.
async fn revocation_call(
    request: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<RevocationRequest, BadRequest> {
    let headers = request.headers();
    optional_uuid(headers)?;
    let content_type = single_header(headers, &CONTENT_TYPE)?.and_then(|value| value.to_str().ok());
    if !content_type.is_some_and(is_form) {
        return Err(BadRequest::new(CONTENT_TYPE.name, Message::FormContentType));
    }
    let body = read_body(headers, payload, state.body_timeout).await?;
    let form = std::str::from_utf8(&body).map_err(|_| BadRequest::new("body", Message::Invalid))?;
    let query = Query::parse(form, &PARAMETERS)?;
    let client_id = query.parsed("client_id", ClientId::parse)?;
    let token = query.required("token")?;
    if token.is_empty() {
        return Err(BadRequest::new("token", Message::Missing));
    }
    let token_type_hint = query.optional("token_type_hint").map(str::to_owned);
    Ok(RevocationRequest { token: token.to_owned(), client_id, token_type_hint })
}

/// Revokes a token at its client's request.
#[utoipa::path(
    post,
    path = "/v1/revoke",
    tag = "Token",
    operation_id = "revokeToken",
    summary = "Revoke a visitor token (RFC 7009)",
    params(
        OptionalCorrelation,
    ),
    request_body(content = RevocationRequest, content_type = "application/x-www-form-urlencoded", description = "The token and the client it was issued to."),
    responses(
        (status = 200, description = "The token is revoked (refused everywhere within the refresh bound), or it was no live token of this service (unknown, expired, not valid): RFC 7009 §2.2 answers both alike. No body.", headers(
            ("Cache-Control" = String, description = "`no-store`."),
        )),
        (status = 400, description = "`invalid_request`: `token` or `client_id` missing, sent twice or malformed, or the body not a form; `invalid_client`: `client_id` names no active client; `unauthorized_client`: the token was issued to another client, and is not revoked.", body = OAuthError),
        (status = 405, description = "Method not allowed (`invalid_request`).", body = OAuthError),
        (status = 429, description = "Over the caller address's or the client's rate of token requests (`temporarily_unavailable`).", body = OAuthError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 503, description = "The token could not be revoked and may still be valid (`temporarily_unavailable`); try again.", body = OAuthError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    ),
)]
///
/// Responses: 200 with no body, revoked or not a live token (RFC 7009 §2.2); 400
/// `invalid_request`, `invalid_client` or `unauthorized_client`; 429 and 503
/// `temporarily_unavailable` with `Retry-After`. Requests count against the token
/// requests' limits.
pub async fn revoke(request: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    answer::<Revoke>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract and 2. parse into domain values.
            let RevocationRequest { token, client_id, token_type_hint } =
                revocation_call(&request, payload, state).await?;
            request.extensions_mut().insert(ClientInBody(client_id.clone()));
            rate_limit::token_request(state, &request, &client_id).await?;
            // 3. Call the use case.
            let outcome = state.revocation.revoke(&token, &client_id).await?;
            // The hint changes nothing (a token's kind shows in its shape), but an app that
            // sends one it should not is worth seeing when a revocation finds no token.
            tracing::debug!(token_type_hint = token_type_hint.as_deref(), ?outcome, "revocation");
            crate::observe::revocation(match outcome {
                RevocationOutcome::Revoked => "revoked",
                RevocationOutcome::AlreadyRevoked => "already revoked",
                RevocationOutcome::NoSuchToken => "no such token",
            });
            // 4. Map to the wire.
            Ok(HttpResponse::Ok().insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store"))).finish())
        }
        .await,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_may_carry_a_charset() {
        assert!(is_form("application/x-www-form-urlencoded"));
        assert!(is_form("Application/X-WWW-Form-Urlencoded; charset=UTF-8"));
        assert!(!is_form("application/json"));
        assert!(!is_form("multipart/form-data; boundary=x"));
    }
}
