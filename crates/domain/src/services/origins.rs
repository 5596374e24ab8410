//! Browser pages calling the API: which origins the registered clients allow (the
//! origins of their redirect URIs and those added for them).

use std::sync::Arc;

use async_trait::async_trait;

use crate::client::ClientId;
use crate::ports::{ClientRegistry, StoreUnavailable};

/// Which browser pages may call the API: the use case behind CORS.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BrowserOrigins: Send + Sync {
    /// Whether some active client allows pages at `origin` (a preflight names no client).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the registry cannot be read.
    async fn any_client_allows(&self, origin: &str) -> Result<bool, StoreUnavailable>;

    /// Whether `client_id` is registered and allows pages at `origin` to read its answers.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the registry cannot be read.
    async fn client_allows(&self, client_id: &ClientId, origin: &str) -> Result<bool, StoreUnavailable>;
}

/// The origins the client registry allows.
pub struct OriginPolicy {
    registry: Arc<dyn ClientRegistry>,
}

impl OriginPolicy {
    /// The origins `registry`'s clients allow.
    pub fn new(registry: Arc<dyn ClientRegistry>) -> Self {
        Self { registry }
    }
}

#[async_trait]
impl BrowserOrigins for OriginPolicy {
    async fn any_client_allows(&self, origin: &str) -> Result<bool, StoreUnavailable> {
        self.registry.origin_registered(origin).await
    }

    async fn client_allows(&self, client_id: &ClientId, origin: &str) -> Result<bool, StoreUnavailable> {
        Ok(self.registry.find(client_id).await?.is_some_and(|client| client.allows_origin(origin)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Origin;
    use crate::ports::MockClientRegistry;
    use crate::testing::registration;

    #[tokio::test]
    async fn a_client_allows_the_origins_of_its_redirect_uris_and_those_added_for_it() {
        let mut registry = MockClientRegistry::new();
        registry.expect_find().returning(|id| {
            let mut client = registration(id.as_str());
            client.allowed_origins = vec![Origin::parse("https://www.example.mx").unwrap()];
            Ok((id.as_str() != "nobody").then_some(client))
        });
        let policy = OriginPolicy::new(Arc::new(registry));
        let app = ClientId::parse("bank-app").unwrap();
        assert!(policy.client_allows(&app, "https://app.example.mx").await.unwrap(), "its redirect URI's origin");
        assert!(policy.client_allows(&app, "https://www.example.mx").await.unwrap(), "an added origin");
        assert!(!policy.client_allows(&app, "https://evil.example").await.unwrap());
        let nobody = ClientId::parse("nobody").unwrap();
        assert!(!policy.client_allows(&nobody, "https://app.example.mx").await.unwrap(), "an unknown client");
    }
}
