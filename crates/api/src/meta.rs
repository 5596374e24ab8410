//! The JWKS, the authorization server's metadata (RFC 8414) and the health checks.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};

use crate::errors::{ApiError, Meta, mime_json};
use crate::state::AppState;

/// GET /api/.well-known/jwks.json: the public keys that verify access tokens (RFC 7517).
#[utoipa::path(
    get,
    path = "/.well-known/jwks.json",
    tag = "Token",
    operation_id = "jwks",
    summary = "Public keys that verify access tokens",
    responses((status = 200, description = "A JWK Set of Ed25519 keys (RFC 7517, RFC 8037).", content_type = "application/jwk-set+json", body = Object)),
)]
pub async fn jwks(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let state = AppState::serving::<Meta>(&request)?;
    Ok(HttpResponse::Ok()
        .content_type(HeaderValue::from_static("application/jwk-set+json"))
        .insert_header((header::CACHE_CONTROL, state.jwks_cache_control.clone()))
        .body(state.keys.key_set()))
}

/// The authorization server's metadata (RFC 8414 §2) for the issuer `{public_base_url}/api`:
/// where tokens come from and are revoked, the keys that verify them, and what the server
/// supports. Made once at start-up from the public base URL every instance shares.
pub fn server_metadata(public_base_url: &str) -> String {
    let issuer = format!("{public_base_url}/api");
    serde_json::json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/v1/authorize"),
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "token_endpoint": format!("{issuer}/v1/token"),
        "revocation_endpoint": format!("{issuer}/v1/revoke"),
        "revocation_endpoint_auth_methods_supported": ["none"],
        // Visitors' tokens come back in the JSON body of the authorization endpoint (the
        // implicit grant's response type); the token endpoint serves the bank's systems
        // only, with client credentials proved by a signed assertion (RFC 7523 §2.2).
        "response_types_supported": ["token"],
        "grant_types_supported": ["implicit", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["private_key_jwt"],
        "token_endpoint_auth_signing_alg_values_supported": ["ES256", "EdDSA"],
        "scopes_supported": std::iter::once("visitor")
            .chain(domain::system::SystemScope::ALL.map(domain::system::SystemScope::as_str))
            .collect::<Vec<_>>(),
        "code_challenge_methods_supported": ["S256"],
        // RFC 9449 §5.1: tokens are bound to the key of a proof made with one of these.
        "dpop_signing_alg_values_supported": domain::dpop::PROOF_ALGORITHMS,
        "service_documentation": format!("{issuer}/docs"),
        "ui_locales_supported": ["en", "es"],
    })
    .to_string()
}

/// The path RFC 8414 §3.1 puts the metadata at for the issuer `{public_base_url}/api`:
/// `/.well-known/oauth-authorization-server` between the host and the issuer's path.
pub fn well_known_metadata_path(public_base_url: &str) -> String {
    let after_scheme = public_base_url.split_once("://").map_or(public_base_url, |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("", |start| &after_scheme[start..]);
    format!("/.well-known/oauth-authorization-server{}/api", path.trim_end_matches('/'))
}

/// GET /api/.well-known/oauth-authorization-server, and the same document at the path
/// RFC 8414 §3.1 gives (`/.well-known/oauth-authorization-server/api`): how a client or a
/// resource server discovers the issuer, its keys and its endpoints.
#[utoipa::path(
    get,
    path = "/.well-known/oauth-authorization-server",
    tag = "Token",
    operation_id = "authorizationServerMetadata",
    summary = "Authorization server metadata (RFC 8414)",
    description = "Also served at `/.well-known/oauth-authorization-server/api` on the host (RFC 8414 §3.1: the \
                   well-known segment goes between the host and the issuer's path).",
    responses((status = 200, description = "The metadata of the issuer `<base>/api` (RFC 8414 §2).", body = Object,
        headers(("Cache-Control" = String, description = "`public, max-age=<JWKS max-age>`.")),
        example = json!({"issuer": "https://api.example.mx/api", "authorization_endpoint": "https://api.example.mx/api/v1/authorize", "jwks_uri": "https://api.example.mx/api/.well-known/jwks.json", "token_endpoint": "https://api.example.mx/api/v1/token", "revocation_endpoint": "https://api.example.mx/api/v1/revoke", "response_types_supported": ["token"], "grant_types_supported": ["implicit", "client_credentials"], "token_endpoint_auth_methods_supported": ["private_key_jwt"], "scopes_supported": ["visitor", "queue:write", "atm:write"], "code_challenge_methods_supported": ["S256"]}))),
)]
pub async fn authorization_server(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let state = AppState::serving::<Meta>(&request)?;
    Ok(HttpResponse::Ok()
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, state.jwks_cache_control.clone()))
        .body(state.server_metadata.clone()))
}

/// GET /api/health/live: the process answers.
#[utoipa::path(
    get,
    path = "/health/live",
    tag = "Health",
    operation_id = "live",
    summary = "Liveness",
    responses((status = 200, description = "The process answers.", body = Object, example = json!({"status": "up"}))),
)]
pub async fn live() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(r#"{"status":"up"}"#)
}

/// GET /api/health/ready: the store answers and the service is not stopping; 503
/// otherwise, within half a second.
#[utoipa::path(
    get,
    path = "/health/ready",
    tag = "Health",
    operation_id = "ready",
    summary = "Readiness",
    responses(
        (status = 200, description = "The store answers.", body = Object, example = json!({"status": "ready"})),
        (status = 503, description = "The store does not answer (`unavailable`), or the service is stopping (`draining`).", body = Object, example = json!({"status": "unavailable"})),
    ),
)]
pub async fn ready(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let state = AppState::serving::<Meta>(&request)?;
    Ok(health_answer(state.readiness.status().await))
}

/// GET /api/health/reads: the data held is current enough to answer reads and the
/// service is not stopping, whether or not the store answers now; 503 otherwise. For a
/// load balancer's fallback when no instance is ready (a database failover): reads are
/// then answered from memory, and writes fail fast.
#[utoipa::path(
    get,
    path = "/health/reads",
    tag = "Health",
    operation_id = "readyForReads",
    summary = "Readiness for reads",
    responses(
        (status = 200, description = "Reads are answered from current data.", body = Object, example = json!({"status": "ready"})),
        (status = 503, description = "The data held is past --max-staleness-ms (`stale`), or the service is stopping (`draining`).", body = Object, example = json!({"status": "stale"})),
    ),
)]
pub async fn reads(request: HttpRequest) -> Result<HttpResponse, ApiError> {
    let state = AppState::serving::<Meta>(&request)?;
    Ok(health_answer(state.readiness.reads_status()))
}

/// A readiness answer: 200 with its status, or 503 with why not; never cached.
fn health_answer(status: Result<&'static str, &'static str>) -> HttpResponse {
    let (mut response, body) = match status {
        Ok(body) => (HttpResponse::Ok(), body),
        Err(body) => (HttpResponse::ServiceUnavailable(), body),
    };
    response
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_names_the_issuer_tokens_carry_and_its_endpoints() {
        let metadata: serde_json::Value = serde_json::from_str(&server_metadata("https://api.bank.mx")).unwrap();
        assert_eq!(metadata["issuer"], "https://api.bank.mx/api");
        assert_eq!(metadata["jwks_uri"], "https://api.bank.mx/api/.well-known/jwks.json");
        assert_eq!(metadata["revocation_endpoint"], "https://api.bank.mx/api/v1/revoke");
        assert_eq!(metadata["scopes_supported"], serde_json::json!(["visitor", "queue:write", "atm:write"]));
        assert_eq!(metadata["token_endpoint"], "https://api.bank.mx/api/v1/token");
        assert_eq!(metadata["token_endpoint_auth_methods_supported"], serde_json::json!(["private_key_jwt"]));
    }

    #[test]
    fn the_well_known_segment_goes_between_the_host_and_the_issuers_path() {
        assert_eq!(well_known_metadata_path("https://api.bank.mx"), "/.well-known/oauth-authorization-server/api");
        assert_eq!(well_known_metadata_path("http://127.0.0.1:8080"), "/.well-known/oauth-authorization-server/api");
        assert_eq!(
            well_known_metadata_path("https://bank.mx/open-banking/"),
            "/.well-known/oauth-authorization-server/open-banking/api"
        );
    }
}
