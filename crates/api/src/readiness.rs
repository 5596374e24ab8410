//! Whether the service should get traffic: the store answers (readiness), the data held
//! is current enough for reads, and the service is not draining before it stops. Read by
//! the health checks ([`crate::meta`]) and the middleware (`Connection: close` while
//! draining).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use domain::ports::ServingHealth;

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

    /// The body of the readiness for reads: why the service should not get reads now, if
    /// it should not.
    pub(crate) fn reads_status(&self) -> Result<&'static str, &'static str> {
        if self.is_draining() {
            Err(r#"{"status":"draining"}"#)
        } else if !self.health.can_serve_reads() {
            Err(r#"{"status":"stale"}"#)
        } else {
            Ok(r#"{"status":"ready"}"#)
        }
    }

    /// The readiness body: why the service should not get traffic now, if it should not.
    pub(crate) async fn status(&self) -> Result<&'static str, &'static str> {
        if self.is_draining() {
            Err(r#"{"status":"draining"}"#)
        } else if !self.health.can_serve().await {
            Err(r#"{"status":"unavailable"}"#)
        } else {
            Ok(r#"{"status":"ready"}"#)
        }
    }
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
