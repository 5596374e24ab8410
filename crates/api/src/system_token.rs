//! POST /api/v1/token: tokens for the bank's own systems (RFC 6749 §4.4 client
//! credentials, authenticated by a signed assertion, RFC 7523 §2.2 `private_key_jwt`).

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::services::systems::ClientCredentials;
use serde::Serialize;
use utoipa::ToSchema;

use crate::errors::bodies::OAuthErrorBody as OAuthError;
use crate::errors::{ApiError, BadRequest, Message, SystemToken, UnsupportedGrantType, answer};
use crate::headers::{CONTENT_TYPE, OptionalCorrelation, single_header};
use crate::rate_limit;
use crate::request::{Query, optional_uuid, read_body};
use crate::revoke::is_form;
use crate::state::AppState;

/// The parameters this endpoint reads (RFC 6749 §4.4.2, RFC 7521 §4.2); others are ignored.
const PARAMETERS: [&str; 5] = ["grant_type", "client_assertion_type", "client_assertion", "client_id", "scope"];

// Read by hand from the form, each parameter at most once (`token_call`).
/// The token request, as the OpenAPI document shows it.
#[derive(ToSchema)]
#[allow(dead_code, reason = "the OpenAPI document's description of the form")]
pub(crate) struct SystemTokenRequest {
    /// `client_credentials`.
    #[schema(example = "client_credentials")]
    grant_type: String,
    /// `urn:ietf:params:oauth:client-assertion-type:jwt-bearer`.
    #[schema(example = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")]
    client_assertion_type: String,
    /// A JWT signed (ES256 or EdDSA) by a key the system registered: `iss` and `sub` the
    /// system's id, `aud` the issuer (or this endpoint's URL), `exp` at most 5 minutes
    /// ahead, a `jti` used once.
    client_assertion: String,
    /// The system's id; optional, and if sent the assertion's `sub`.
    client_id: Option<String>,
    /// Space-separated scopes, a subset of the system's (all of them when absent).
    #[schema(example = "queue:write")]
    scope: Option<String>,
}

/// RFC 6749 §5.1's answer.
#[derive(Serialize, ToSchema)]
pub(crate) struct SystemTokenResponse {
    /// An RFC 9068 JWT with `client_id` and `scope`.
    access_token: String,
    /// `Bearer`.
    #[schema(example = "Bearer")]
    token_type: &'static str,
    /// Seconds the token lives: at most 900.
    #[schema(example = 900)]
    expires_in: i64,
    /// The scopes granted.
    #[schema(example = "queue:write")]
    scope: String,
}

/// The request's form, each parameter at most once; `grant_type` client credentials.
async fn token_call(
    request: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
) -> Result<Result<ClientCredentials, UnsupportedGrantType>, BadRequest> {
    let headers = request.headers();
    optional_uuid(headers)?;
    let content_type = single_header(headers, &CONTENT_TYPE)?.and_then(|value| value.to_str().ok());
    if !content_type.is_some_and(is_form) {
        return Err(BadRequest::new(CONTENT_TYPE.name, Message::FormContentType));
    }
    let body = read_body(headers, payload, state.body_timeout).await?;
    let form = std::str::from_utf8(&body).map_err(|_| BadRequest::new("body", Message::Invalid))?;
    let query = Query::parse(form, &PARAMETERS)?;
    if query.required("grant_type")? != "client_credentials" {
        return Ok(Err(UnsupportedGrantType));
    }
    let text = |name| query.optional(name).map(str::to_owned);
    Ok(Ok(ClientCredentials {
        assertion_type: text("client_assertion_type"),
        assertion: text("client_assertion"),
        client_id: text("client_id"),
        scope: text("scope"),
    }))
}

/// Issues a token to a bank system.
#[utoipa::path(
    post,
    path = "/v1/token",
    tag = "Token",
    operation_id = "systemToken",
    summary = "A token for a bank system (client credentials with private_key_jwt)",
    params(
        OptionalCorrelation,
    ),
    request_body(content = SystemTokenRequest, content_type = "application/x-www-form-urlencoded", description = "RFC 6749 §4.4.2 with RFC 7523 §2.2's client assertion."),
    responses(
        (status = 200, description = "The token (RFC 6749 §5.1).", body = SystemTokenResponse, headers(
            ("Cache-Control" = String, description = "`no-store`."),
        )),
        (status = 400, description = "`invalid_request`: a parameter missing, sent twice or malformed, or the body not a form; `unsupported_grant_type`: not `client_credentials`; `invalid_scope`: a scope the system may not have.", body = OAuthError),
        (status = 401, description = "`invalid_client`: the assertion does not authenticate an active system (its signature, `iss`, `sub`, `aud`, `exp`, a `jti` used before; the description says which).", body = OAuthError, headers(
            ("WWW-Authenticate" = String, description = "`Bearer error=\"invalid_client\"`."),
        )),
        (status = 405, description = "Method not allowed (`invalid_request`).", body = OAuthError),
        (status = 429, description = "Over the caller address's rate of token requests (`temporarily_unavailable`).", body = OAuthError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 503, description = "The token could not be issued (`temporarily_unavailable`); try again.", body = OAuthError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
    ),
)]
///
/// Responses: 200 with the token; 400 `invalid_request`, `unsupported_grant_type` or
/// `invalid_scope`; 401 `invalid_client`; 429 and 503 `temporarily_unavailable`.
pub async fn token(request: HttpRequest, payload: web::Payload) -> Result<HttpResponse, ApiError> {
    answer::<SystemToken>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract and 2. parse.
            let credentials = token_call(&request, payload, state).await??;
            rate_limit::system_token_request(state, &request).await?;
            // 3. Call the use case.
            let issued = state.system_tokens.issue(&credentials).await?;
            // 4. Map to the wire.
            let body = SystemTokenResponse {
                access_token: issued.access_token,
                token_type: "Bearer",
                expires_in: issued.expires_in,
                scope: issued.scopes.to_string(),
            };
            Ok(HttpResponse::Ok()
                .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
                .insert_header((header::PRAGMA, HeaderValue::from_static("no-cache")))
                .json(body))
        }
        .await,
    )
}
