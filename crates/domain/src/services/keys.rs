//! The keys that sign access tokens: there is always a current one, and rotating
//! replaces it without invalidating live tokens.

use std::sync::Arc;

use crate::ports::{Clock, KeyGenerationFailed, KeyGenerator, SigningKeyRecords, StoreUnavailable};

/// Why a key was not made current.
#[derive(Debug, thiserror::Error)]
pub enum KeyManagementError {
    /// No key could be generated.
    #[error(transparent)]
    Generation(#[from] KeyGenerationFailed),
    /// The store could not be read or written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The operators' and the service's commands on signing keys.
pub struct KeyManagement {
    keys: Arc<dyn SigningKeyRecords>,
    generator: Arc<dyn KeyGenerator>,
    clock: Arc<dyn Clock>,
}

impl KeyManagement {
    /// Commands on `keys`, making new ones with `generator`.
    pub fn new(keys: Arc<dyn SigningKeyRecords>, generator: Arc<dyn KeyGenerator>, clock: Arc<dyn Clock>) -> Self {
        Self { keys, generator, clock }
    }

    /// Makes sure a key signs new tokens: a new store (or one whose keys were all
    /// retired) gets one. Returns the new key's id when one was made.
    ///
    /// # Errors
    /// See [`KeyManagementError`].
    pub async fn ensure_current(&self) -> Result<Option<String>, KeyManagementError> {
        let now = self.clock.unix_now();
        if self.keys.published(now).await?.iter().any(|key| key.is_current()) {
            return Ok(None);
        }
        self.rotate().await.map(Some)
    }

    /// Makes a new key current; the previous one is retired now but stays published
    /// (and verifies) until the tokens it signed have expired. Returns the new key's id.
    ///
    /// # Errors
    /// See [`KeyManagementError`].
    pub async fn rotate(&self) -> Result<String, KeyManagementError> {
        let now = self.clock.unix_now();
        let key = self.generator.generate(now)?;
        self.keys.make_current(&key, now).await?;
        Ok(key.kid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{MockKeyGenerator, MockSigningKeyRecords};
    use crate::testing::clock_at;
    use crate::token::SigningKey;

    fn key(kid: &str, retired_at: Option<i64>) -> SigningKey {
        SigningKey { kid: kid.into(), private_pkcs8: vec![], public_key: vec![], created_at: 0, retired_at }
    }

    fn generator() -> MockKeyGenerator {
        let mut generator = MockKeyGenerator::new();
        generator.expect_generate().returning(|now| Ok(SigningKey { created_at: now, ..key("new", None) }));
        generator
    }

    #[tokio::test]
    async fn a_store_without_a_current_key_gets_one() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_published().returning(|_| Ok(vec![key("old", Some(10))]));
        keys.expect_make_current().withf(|key, now| key.kid == "new" && *now == 500).times(1).returning(|_, _| Ok(()));
        let management = KeyManagement::new(Arc::new(keys), Arc::new(generator()), Arc::new(clock_at(500)));
        assert_eq!(management.ensure_current().await.unwrap().as_deref(), Some("new"));
    }

    #[tokio::test]
    async fn a_store_with_a_current_key_keeps_it() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_published().returning(|_| Ok(vec![key("current", None)]));
        keys.expect_make_current().never();
        let management = KeyManagement::new(Arc::new(keys), Arc::new(generator()), Arc::new(clock_at(500)));
        assert_eq!(management.ensure_current().await.unwrap(), None);
    }
}
