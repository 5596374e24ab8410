//! GET /api/v1/authorize: a pre-login visitor token.

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use domain::client::{BusinessCode, ChannelId, ChannelScope, ClientId, CountryCode};
use domain::services::authorize::{AuthorizeError, AuthorizeRequest};
use domain::token::{CodeChallenge, Scope};
use serde::Serialize;

use super::AppState;
use super::errors::{ApiError, Failure, Message, Shape, mime_json};
use super::request::{Query, error_context, require_uuid};

/// The only `response_type` served: a visitor token in the JSON body (DECISIONS.md).
const RESPONSE_TYPE: &str = "token";

/// RFC 6749 §4.1.1 recommends bounding `state`; 1024 leaves room for any CSRF scheme.
const MAX_STATE_LEN: usize = 1024;

/// The token response (spec: all fields strings).
#[derive(Serialize)]
struct TokenResponse<'a> {
    access_token: &'a str,
    token_type: &'static str,
    expires_in: String,
    scope: &'static str,
    opaque_token: &'a str,
}

/// The parameters this endpoint reads (spec: GET /v1/authorize).
const PARAMETERS: [&str; 10] = [
    "response_type",
    "client_id",
    "code_challenge",
    "code_challenge_method",
    "redirect_uri",
    "scope",
    "state",
    "businessCode",
    "countryCode",
    "channelId",
];

/// What the request asks for, parsed; `state` rides along to the response.
struct TokenCall {
    request: AuthorizeRequest,
    state: Option<HeaderValue>,
}

fn token_call(request: &HttpRequest) -> Result<TokenCall, Failure> {
    require_uuid(request.headers())?;
    let query = Query::parse(request.query_string(), &PARAMETERS)?;
    if query.required("response_type")? != RESPONSE_TYPE {
        return Err(Failure::invalid("response_type", Message::ResponseType));
    }
    let client_id = query.parsed("client_id", ClientId::parse)?;
    let scope = ChannelScope {
        business: query.parsed("businessCode", BusinessCode::parse)?,
        country: query.parsed("countryCode", CountryCode::parse)?,
        channel: query.parsed("channelId", ChannelId::parse)?,
    };
    let code_challenge = match (query.optional("code_challenge"), query.optional("code_challenge_method")) {
        (None, None) => None,
        (Some(challenge), Some("S256")) => Some(
            CodeChallenge::parse(challenge)
                .map_err(|shape| Failure::invalid("code_challenge", Message::Malformed(shape)))?,
        ),
        (Some(_), _) => return Err(Failure::invalid("code_challenge_method", Message::ChallengeMethod)),
        (None, Some(_)) => return Err(Failure::invalid("code_challenge", Message::Missing)),
    };
    if let Some(requested) = query.optional("scope") {
        Scope::parse_request(requested).map_err(|shape| Failure::invalid("scope", Message::Malformed(shape)))?;
    }
    let state = query
        .optional("state")
        .map(|state| {
            HeaderValue::from_str(state)
                .ok()
                .filter(|_| !state.is_empty() && state.len() <= MAX_STATE_LEN)
                .ok_or_else(|| Failure::invalid("state", Message::State))
        })
        .transpose()?;
    Ok(TokenCall {
        request: AuthorizeRequest {
            client_id,
            scope,
            redirect_uri: query.optional("redirect_uri").map(str::to_owned),
            code_challenge,
        },
        state,
    })
}

fn failure_of(error: AuthorizeError) -> Failure {
    match error {
        AuthorizeError::Unauthorized(reason) => {
            tracing::info!(?reason, "client refused");
            Failure::unauthorized(Message::Unauthorized)
        }
        AuthorizeError::RedirectUriNotRegistered => Failure::invalid("redirect_uri", Message::RedirectUri),
        AuthorizeError::Unavailable(cause) => {
            tracing::error!(error = %cause, "token issuance failed");
            Failure::unavailable()
        }
        AuthorizeError::SigningFailed(cause) => {
            tracing::error!(error = %cause, "token issuance failed");
            Failure::unavailable()
        }
    }
}

/// Issues a visitor token.
///
/// Responses: 200 token (with `sid`, `state`, `Cache-Control: no-store`); 400
/// `invalidRequest` (missing or malformed parameter or `uuid`, `location` names it);
/// 401 `unAuthorized` (unknown or disabled client, or not its registration); 500
/// `serverUnavailable`.
pub async fn authorize(request: HttpRequest, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let context = error_context(&request);
    let fail = |failure| ApiError::new(failure, Shape::Token, &context);

    let call = token_call(&request).map_err(fail)?;
    let grant = state.tokens.authorize(call.request).await.map_err(|e| fail(failure_of(e)))?;

    let body = serde_json::to_vec(&TokenResponse {
        access_token: &grant.access_token,
        token_type: "Bearer",
        expires_in: grant.expires_in.to_string(),
        scope: grant.scope.as_str(),
        opaque_token: grant.opaque_token.as_str(),
    })
    .map_err(|_| fail(Failure::unavailable()))?;
    let session = HeaderValue::from_str(grant.session.as_str()).map_err(|_| fail(Failure::unavailable()))?;
    let mut response = HttpResponse::Ok();
    response
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .insert_header((header::PRAGMA, HeaderValue::from_static("no-cache")))
        .insert_header((HeaderName::from_static("sid"), session));
    if let Some(value) = call.state {
        response.insert_header((HeaderName::from_static("state"), value));
    }
    Ok(response.body(body))
}
