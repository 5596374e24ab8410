//! GET /api/v1/authorize: a pre-login visitor token.

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use domain::client::{BusinessCode, ChannelId, ChannelScope, ClientId, CountryCode};
use domain::services::authorize::AuthorizeRequest;
use domain::token::{CodeChallenge, Scope, TokenGrant};
use serde::Serialize;
use utoipa::ToSchema;

use crate::dpop::presented_proof;
use crate::errors::bodies::TokenErrorBody as TokenError;
use crate::errors::{ApiError, Authorize, BadRequest, Failure, Message, answer, mime_json};
use crate::headers::{Correlation, ErrorLanguage};
use crate::rate_limit;
use crate::request::{Query, require_uuid};
use crate::state::AppState;

/// The only `response_type` served: a visitor token in the JSON body (docs/contract.md).
const RESPONSE_TYPE: &str = "token";

/// RFC 6749 §4.1.1 recommends bounding `state`; 1024 leaves room for any CSRF scheme.
const MAX_STATE_LEN: usize = 1024;

/// The token response (spec: all fields strings).
#[derive(Serialize, ToSchema)]
pub(crate) struct TokenResponse<'a> {
    /// A JWS (Ed25519, `kid` in the header) carrying the caller's identity and access;
    /// verify it with GET /.well-known/jwks.json.
    #[schema(value_type = String)]
    access_token: &'a str,
    /// `DPoP` for a token bound to the key of the request's DPoP proof (send it as
    /// `Authorization: DPoP <token>` with a proof), else `Bearer`.
    #[schema(value_type = String, pattern = "^(Bearer|DPoP)$", example = "Bearer")]
    token_type: &'static str,
    /// Lifetime in seconds, as a string.
    #[schema(pattern = "^[0-9]+$", example = "1800")]
    expires_in: String,
    /// Always `visitor`.
    #[schema(value_type = String, pattern = "^visitor$", example = "visitor")]
    scope: &'static str,
    /// A random handle on the token's server-side record; grants nothing by itself.
    #[schema(value_type = String, pattern = "^[A-Za-z0-9_-]{22,}$")]
    opaque_token: &'a str,
}

/// The token answer's JSON. Every value in it is made by the service from characters
/// JSON never escapes (base64url and dots, digits, two words), so it is written in one
/// pass, after one test of all its bytes together (a fold the compiler runs 16 bytes at
/// a time; serde's writer looks up every byte of a 700-byte token in its escape table).
/// serde writes it when a value holds a byte JSON escapes (none can, but the answer
/// never depends on that).
fn token_body(answer: &TokenResponse<'_>) -> Result<Vec<u8>, serde_json::Error> {
    let values = [answer.access_token, answer.token_type, &answer.expires_in, answer.scope, answer.opaque_token];
    let escaped = |value: &&str| value.bytes().fold(false, |any, b| any | (b < 0x20) | (b == b'"') | (b == b'\\'));
    if values.iter().any(escaped) {
        return serde_json::to_vec(answer);
    }
    let names = [
        r#"{"access_token":""#,
        r#"","token_type":""#,
        r#"","expires_in":""#,
        r#"","scope":""#,
        r#"","opaque_token":""#,
    ];
    let mut body = Vec::with_capacity(values.iter().chain(&names).map(|part| part.len()).sum::<usize>() + 2);
    for (name, value) in names.iter().zip(values) {
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(value.as_bytes());
    }
    body.extend_from_slice(br#""}"#);
    Ok(body)
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

fn token_call(request: &HttpRequest) -> Result<TokenCall, BadRequest> {
    require_uuid(request.headers())?;
    let query = Query::parse(request.query_string(), &PARAMETERS)?;
    if query.required("response_type")? != RESPONSE_TYPE {
        return Err(BadRequest::new("response_type", Message::ResponseType));
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
                .map_err(|shape| BadRequest::new("code_challenge", Message::Malformed(shape)))?,
        ),
        (Some(_), _) => return Err(BadRequest::new("code_challenge_method", Message::ChallengeMethod)),
        // A valid method without a challenge asks for nothing (RFC 7636 §4.3): ignored.
        (None, Some("S256")) => None,
        (None, Some(_)) => return Err(BadRequest::new("code_challenge_method", Message::ChallengeMethod)),
    };
    if let Some(requested) = query.optional("scope") {
        Scope::parse_request(requested).map_err(|shape| BadRequest::new("scope", Message::Malformed(shape)))?;
    }
    let state = query
        .optional("state")
        .map(|state| {
            // VSCHAR only (RFC 6749 Appendix A.5): a header value may also carry obs-text
            // bytes, which `state` may not.
            let visible =
                !state.is_empty() && state.len() <= MAX_STATE_LEN && state.bytes().all(|b| (0x20..=0x7e).contains(&b));
            visible
                .then(|| HeaderValue::from_str(state).ok())
                .flatten()
                .ok_or_else(|| BadRequest::new("state", Message::State))
        })
        .transpose()?;
    Ok(TokenCall {
        request: AuthorizeRequest {
            client_id,
            scope,
            redirect_uri: query.optional("redirect_uri").map(str::to_owned),
            code_challenge,
            // Read after the rate limits, by the handler.
            proof: None,
        },
        state,
    })
}

/// Issues a visitor token.
#[utoipa::path(
    get,
    path = "/v1/authorize",
    tag = "Token",
    operation_id = "authorize",
    summary = "Issue a pre-login visitor token",
    params(
        Correlation,
        ("response_type" = String, Query, pattern = "^token$", description = "Must be `token`: the token comes back in the JSON body."),
        ("client_id" = String, Query, pattern = "^[A-Za-z0-9._-]{1,64}$", description = "The client id generated at application registration."),
        ("businessCode" = String, Query, pattern = "^[A-Za-z0-9]{1,16}$", description = "The business code identified at registration (e.g. GCB)."),
        ("countryCode" = String, Query, pattern = "^[A-Z]{2}$", description = "ISO 3166-1 alpha-2 country code (e.g. MX)."),
        ("channelId" = String, Query, pattern = "^[A-Za-z0-9_-]{1,32}$", description = "The channel identified at registration (e.g. MOBILE)."),
        ("code_challenge" = Option<String>, Query, pattern = "^[A-Za-z0-9_-]{43}$", description = "PKCE challenge (RFC 7636), with code_challenge_method S256."),
        ("code_challenge_method" = Option<String>, Query, pattern = "^S256$", description = "`S256`; required with code_challenge, ignored without it."),
        ("redirect_uri" = Option<String>, Query, description = "Must equal one of the client's registered redirect URIs exactly."),
        ("scope" = Option<String>, Query, pattern = "^visitor( visitor)*$", description = "Space-separated scopes; only `visitor` can be asked for, and it is always granted."),
        ("state" = Option<String>, Query, max_length = 1024, pattern = "^[ -~]+$", description = "Returned unchanged in the `state` response header (CSRF protection)."),
        ErrorLanguage,
        ("DPoP" = Option<String>, Header, description = "A DPoP proof (RFC 9449 §4: `typ` `dpop+jwt`, `alg` ES256, EdDSA or Ed25519, the public `jwk`; claims `jti`, `htm` `GET`, `htu` the authorization endpoint as the metadata names it, `iat`, and `nonce` when the server asks for one). The token is then bound to that key: `token_type` `DPoP`, `cnf.jkt` its RFC 7638 thumbprint. Required for clients registered with `--dpop required`."),
    ),
    responses(
        (status = 200, description = "A pre-login visitor token.", body = TokenResponse, headers(
            ("sid" = String, description = "The session id this call opened; send it as the `sid` header of later calls."),
            ("state" = String, description = "The `state` parameter, unchanged, when one was sent."),
            ("uuid" = String, description = "The request's `uuid` header."),
            ("Cache-Control" = String, description = "`no-store`."),
        )),
        (status = 400, description = "A parameter or the `uuid` header is missing or invalid; `location` names it. With `location` `DPoP`: the proof was refused (`code` `invalid_dpop_proof`, `details` says why), the client requires one and sent none, or the server wants a nonce (`code` `use_dpop_nonce`, with `DPoP-Nonce`).", body = TokenError,
            headers(("DPoP-Nonce" = String, description = "With `use_dpop_nonce`: the nonce to put in the proof (`serve --dpop-nonce`)."))),
        (status = 401, description = "Unknown or disabled client, or not the business, country or channel it registered.", body = TokenError),
        (status = 405, description = "Method not allowed.", body = TokenError),
        (status = 429, description = "Over the caller address's or the client's rate of token requests.", body = TokenError,
            headers(("Retry-After" = String, description = "Seconds to wait."))),
        (status = 500, description = "Server unavailable.", body = TokenError),
    ),
)]
///
/// Responses: 200 token (with `sid`, `state`, `Cache-Control: no-store`); 400
/// `invalidRequest` (missing or malformed parameter or `uuid`, `location` names it);
/// 401 `unAuthorized` (unknown or disabled client, or not its registration); 429
/// `tooManyRequests` (caller address or client over its rate; `Retry-After`); 500
/// `serverUnavailable`.
pub async fn authorize(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    answer::<Authorize>(
        &request,
        async {
            let state = AppState::of(&request)?;
            // 1. Extract and 2. parse into domain values.
            let mut call = token_call(&request)?;
            rate_limit::token_request(state, &request, &call.request.client_id).await?;
            call.request.proof = presented_proof(&request, &state.public_base_url)?;
            // 3. Call the use case.
            let grant = state.tokens.authorize(call.request).await?;
            crate::observe::token_issued();
            // 4. Map to the wire.
            token_answer(&grant, call.state).map_err(Failure::unwritable)
        }
        .await,
    )
}

/// The 200 of a token `grant`: its JSON, its session in `sid`, the caller's `state`
/// echoed, and never cached; or why it could not be written.
fn token_answer(grant: &TokenGrant, state: Option<HeaderValue>) -> Result<HttpResponse, String> {
    let body = token_body(&TokenResponse {
        access_token: &grant.access_token,
        token_type: if grant.bound { "DPoP" } else { "Bearer" },
        expires_in: grant.expires_in.to_string(),
        scope: grant.scope.as_str(),
        opaque_token: grant.opaque_token.as_str(),
    })
    .map_err(|error| error.to_string())?;
    let session = HeaderValue::from_str(grant.session.as_str()).map_err(|error| error.to_string())?;
    let mut response = HttpResponse::Ok();
    response
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .insert_header((header::PRAGMA, HeaderValue::from_static("no-cache")))
        .insert_header((HeaderName::from_static("sid"), session));
    if let Some(value) = state {
        response.insert_header((HeaderName::from_static("state"), value));
    }
    Ok(response.body(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_answer_is_the_json_serde_writes() {
        let token = format!("{}.{}.{}", "eyJhbGciOiJFZERTQSJ9", "e30", "a-b_c".repeat(100));
        for (access_token, opaque_token) in [(token.as_str(), "00019abcdef0A-_z"), ("a\"b", "c\\d\u{1}é")] {
            let answer = TokenResponse {
                access_token,
                token_type: "Bearer",
                expires_in: "1800".to_owned(),
                scope: "visitor",
                opaque_token,
            };
            assert_eq!(token_body(&answer).unwrap(), serde_json::to_vec(&answer).unwrap());
        }
    }
}
