//! The JWKS and the health checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, web};
use domain::ports::ServingHealth;

use super::AppState;
use super::errors::mime_json;

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
        .insert_header((header::CACHE_CONTROL, state.jwks_cache_control.clone()))
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

/// What readiness is made of. Nothing here waits on the store for more than half a
/// second: a load balancer must be told quickly, also when the store is stuck (the fault
/// issue).
pub struct Readiness {
    health: Arc<dyn ServingHealth>,
    draining: AtomicBool,
}

impl Readiness {
    /// Ready while `health` says the service can answer from its store.
    pub fn new(health: Arc<dyn ServingHealth>) -> Self {
        Self { health, draining: AtomicBool::new(false) }
    }

    /// From now on readiness fails and every response closes its connection: the
    /// service is about to stop (SIGTERM).
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Whether the service is draining before it stops.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// The readiness body: why the service should not get traffic now, if it should not.
    async fn status(&self) -> Result<&'static str, &'static str> {
        if self.is_draining() {
            Err(r#"{"status":"draining"}"#)
        } else if !self.health.can_serve().await {
            Err(r#"{"status":"unavailable"}"#)
        } else {
            Ok(r#"{"status":"ready"}"#)
        }
    }
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
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let (mut response, body) = match state.readiness.status().await {
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
    use domain::ports::MockServingHealth;

    fn readiness(can_serve: bool) -> Readiness {
        let mut health = MockServingHealth::new();
        health.expect_can_serve().returning(move || can_serve);
        Readiness::new(Arc::new(health))
    }

    #[tokio::test]
    async fn ready_while_the_store_serves_and_never_while_draining() {
        assert_eq!(readiness(true).status().await, Ok(r#"{"status":"ready"}"#));
        assert_eq!(readiness(false).status().await, Err(r#"{"status":"unavailable"}"#));
        let stopping = readiness(true);
        stopping.start_draining();
        assert_eq!(stopping.status().await, Err(r#"{"status":"draining"}"#));
    }
}
