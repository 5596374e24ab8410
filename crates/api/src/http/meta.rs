//! The JWKS and the health checks.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};

use super::AppState;
use super::errors::mime_json;

/// Verifiers may cache the key set this long; a rotated-in key is published well before
/// it signs anything a verifier sees (DECISIONS.md: keys rotate without invalidating
/// live tokens).
const JWKS_MAX_AGE: &str = "public, max-age=300";

/// GET /api/.well-known/jwks.json: the public keys that verify access tokens (RFC 7517).
#[utoipa::path(
    get,
    path = "/.well-known/jwks.json",
    tag = "Token",
    operation_id = "jwks",
    summary = "Public keys that verify access tokens",
    responses((status = 200, description = "A JWK Set of Ed25519 keys (RFC 7517, RFC 8037).", content_type = "application/jwk-set+json", body = Object)),
)]
pub async fn jwks(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(HeaderValue::from_static("application/jwk-set+json"))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static(JWKS_MAX_AGE)))
        .body(state.verifier.key_set_document())
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

/// GET /api/health/ready: the store answers too; 503 while it does not.
#[utoipa::path(
    get,
    path = "/health/ready",
    tag = "Health",
    operation_id = "ready",
    summary = "Readiness",
    responses(
        (status = 200, description = "The store answers.", body = Object, example = json!({"status": "ready"})),
        (status = 503, description = "The store does not answer.", body = Object, example = json!({"status": "unavailable"})),
    ),
)]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let (mut response, body) = match state.store.ping().await {
        Ok(()) => (HttpResponse::Ok(), r#"{"status":"ready"}"#),
        Err(error) => {
            tracing::warn!(error = %error, "not ready: the store does not answer");
            (HttpResponse::ServiceUnavailable(), r#"{"status":"unavailable"}"#)
        }
    };
    response
        .content_type(mime_json())
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .body(body)
}
