//! The keys that sign access tokens: there is always a current one, and rotating
//! replaces it without invalidating live tokens or surprising verifiers.
//!
//! A rotation publishes the next key at once and lets it sign only once every verifier's
//! cached key set has had time to expire and be fetched again, so nobody meets a `kid`
//! they do not know. Each key's activation (and its predecessor's retirement) is stored
//! with it, so every instance switches at the same moment without being told.

use std::sync::Arc;

use crate::ports::{Clock, KeyGenerationFailed, KeyGenerator, SigningKeyRecords, StoreUnavailable, TokenVerifier};
use crate::token::{KeyId, KeyState, SigningKey};

/// Why a key was not made or scheduled.
#[derive(Debug, thiserror::Error)]
pub enum KeyManagementError {
    /// A next key is already published and waiting; a second would make the first one's
    /// publication useless. `--now` replaces it.
    #[error("key {kid} is already next and signs from {activates_at} (Unix time); rotate --now replaces it")]
    NextAlreadyWaiting {
        /// The waiting key.
        kid: String,
        /// When it starts signing.
        activates_at: i64,
    },
    /// No key with this id is stored.
    #[error("no signing key {0} is stored (keys list shows them)")]
    UnknownKey(String),
    /// No key could be generated.
    #[error(transparent)]
    Generation(#[from] KeyGenerationFailed),
    /// The store could not be read or written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// A key and where it is in its life now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStatus {
    /// Its id.
    pub kid: String,
    /// Next, current or retired, now.
    pub state: KeyState,
    /// When it was made.
    pub created_at: i64,
    /// When it signs from.
    pub activates_at: i64,
    /// When it stops (or stopped) signing, once decided.
    pub retired_at: Option<i64>,
    /// When it was withdrawn, if it was.
    pub revoked_at: Option<i64>,
}

/// What revoking a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRevocation {
    /// The key is withdrawn; if it was signing or waiting to, `replaced_by` takes its place.
    Revoked {
        /// The new key that signs instead of it (at once, for the signing key; at the
        /// same moment, for a waiting one), when it was not retired already.
        replaced_by: Option<ScheduledKey>,
    },
    /// It was revoked before; nothing changed.
    AlreadyRevoked,
}

/// A key that was made, and when it signs from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledKey {
    /// Its id.
    pub kid: String,
    /// When it signs from (now, for an immediate rotation).
    pub activates_at: i64,
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

    /// Makes sure a key signs new tokens now: a new store (or one whose keys were all
    /// retired) gets one at once. Returns the new key's id when one was made.
    ///
    /// # Errors
    /// See [`KeyManagementError`].
    pub async fn ensure_current(&self) -> Result<Option<String>, KeyManagementError> {
        let now = self.clock.unix_now();
        if self.keys.published(now).await?.iter().any(|key| key.signs_at(now)) {
            return Ok(None);
        }
        self.rotate_now().await.map(|key| Some(key.kid))
    }

    /// Publishes a new key now and lets it sign after `delay_seconds` (the verifiers'
    /// key-set cache lifetime plus one refresh); the current key signs until then and
    /// stays published while its tokens live.
    ///
    /// # Errors
    /// [`KeyManagementError::NextAlreadyWaiting`] if a next key is already waiting;
    /// otherwise see [`KeyManagementError`].
    pub async fn rotate(&self, delay_seconds: i64) -> Result<ScheduledKey, KeyManagementError> {
        let now = self.clock.unix_now();
        let waiting = self.keys.published(now).await?.into_iter().find(|key| key.state_at(now) == KeyState::Next);
        if let Some(key) = waiting {
            return Err(KeyManagementError::NextAlreadyWaiting { kid: key.kid, activates_at: key.activates_at });
        }
        self.schedule(now, now + delay_seconds.max(0)).await
    }

    /// Makes a new key sign at once (for a key that may be compromised), dropping a
    /// waiting next key. Verifiers with a cached key set meet its `kid` before they
    /// refresh: the price of stopping a compromised key now.
    ///
    /// # Errors
    /// See [`KeyManagementError`].
    pub async fn rotate_now(&self) -> Result<ScheduledKey, KeyManagementError> {
        let now = self.clock.unix_now();
        self.schedule(now, now).await
    }

    async fn schedule(&self, now: i64, activates_at: i64) -> Result<ScheduledKey, KeyManagementError> {
        let key = SigningKey { activates_at, ..self.generator.generate(now)? };
        self.keys.schedule(&key, now).await?;
        Ok(ScheduledKey { kid: key.kid, activates_at })
    }

    /// Withdraws key `kid` at once (a key that leaked, or was used to forge tokens): it
    /// leaves the JWKS and every verifier within the refresh bound, so every token it
    /// signed is refused. In the same step a new key takes its place if it had one: the
    /// signing key's at once (as `rotate --now`), a waiting key's at the moment it was to
    /// sign from, so that tokens keep being issued.
    ///
    /// # Errors
    /// [`KeyManagementError::UnknownKey`] for a key the store does not hold; otherwise
    /// see [`KeyManagementError`].
    pub async fn revoke(&self, kid: &KeyId) -> Result<KeyRevocation, KeyManagementError> {
        let now = self.clock.unix_now();
        let keys = self.keys.all().await?;
        let key = keys
            .iter()
            .find(|key| key.kid == kid.as_str())
            .ok_or_else(|| KeyManagementError::UnknownKey(kid.to_string()))?;
        let replacement = match key.state_at(now) {
            KeyState::Revoked => return Ok(KeyRevocation::AlreadyRevoked),
            KeyState::Retired => None,
            KeyState::Current => Some(now),
            KeyState::Next => Some(key.activates_at),
        };
        let replacement = (replacement
            .map(|activates_at| self.generator.generate(now).map(|new| SigningKey { activates_at, ..new })))
        .transpose()?;
        let replaced_by =
            replacement.as_ref().map(|key| ScheduledKey { kid: key.kid.clone(), activates_at: key.activates_at });
        if !self.keys.revoke(kid.as_str(), now, replacement).await? {
            return Ok(KeyRevocation::AlreadyRevoked);
        }
        Ok(KeyRevocation::Revoked { replaced_by })
    }

    /// Every key in the store, newest activation first, with its state now.
    ///
    /// # Errors
    /// See [`KeyManagementError`].
    pub async fn list(&self) -> Result<Vec<KeyStatus>, KeyManagementError> {
        let now = self.clock.unix_now();
        Ok(self
            .keys
            .all()
            .await?
            .into_iter()
            .map(|key| KeyStatus {
                state: key.state_at(now),
                kid: key.kid,
                created_at: key.created_at,
                activates_at: key.activates_at,
                retired_at: key.retired_at,
                revoked_at: key.revoked_at,
            })
            .collect())
    }
}

/// Publishing the keys that verify access tokens: the use case behind the JWKS.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait KeyPublication: Send + Sync {
    /// The public keys that verify live tokens, as a JWK Set document (RFC 7517 §5).
    fn key_set(&self) -> String;
}

/// The keys the token verifier holds, published.
pub struct PublishedKeys {
    verifier: Arc<dyn TokenVerifier>,
}

impl PublishedKeys {
    /// The keys `verifier` verifies with.
    pub fn new(verifier: Arc<dyn TokenVerifier>) -> Self {
        Self { verifier }
    }
}

impl KeyPublication for PublishedKeys {
    fn key_set(&self) -> String {
        self.verifier.key_set_document()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{MockKeyGenerator, MockSigningKeyRecords};
    use crate::testing::clock_at;

    fn key(kid: &str, activates_at: i64, retired_at: Option<i64>) -> SigningKey {
        SigningKey {
            kid: kid.into(),
            private_pkcs8: vec![],
            public_key: vec![],
            created_at: activates_at,
            activates_at,
            retired_at,
            revoked_at: None,
        }
    }

    fn generator() -> MockKeyGenerator {
        let mut generator = MockKeyGenerator::new();
        generator.expect_generate().returning(|now| Ok(key("new", now, None)));
        generator
    }

    fn kid(raw: &str) -> KeyId {
        KeyId::parse(raw).unwrap()
    }

    fn management(keys: MockSigningKeyRecords, now: i64) -> KeyManagement {
        KeyManagement::new(Arc::new(keys), Arc::new(generator()), Arc::new(clock_at(now)))
    }

    #[tokio::test]
    async fn a_store_without_a_signing_key_gets_one_that_signs_at_once() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_published().returning(|_| Ok(vec![key("old", 0, Some(10))]));
        keys.expect_schedule()
            .withf(|key, now| key.kid == "new" && key.activates_at == 500 && *now == 500)
            .times(1)
            .returning(|_, _| Ok(()));
        assert_eq!(management(keys, 500).ensure_current().await.unwrap().as_deref(), Some("new"));
    }

    #[tokio::test]
    async fn a_store_with_a_signing_key_keeps_it() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_published().returning(|_| Ok(vec![key("current", 0, None)]));
        keys.expect_schedule().never();
        assert_eq!(management(keys, 500).ensure_current().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_rotation_publishes_now_and_signs_after_the_delay() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_published().returning(|_| Ok(vec![key("current", 0, None)]));
        keys.expect_schedule()
            .withf(|key, now| key.activates_at == 800 && key.created_at == 500 && *now == 500)
            .times(1)
            .returning(|_, _| Ok(()));
        let scheduled = management(keys, 500).rotate(300).await.unwrap();
        assert_eq!(scheduled, ScheduledKey { kid: "new".into(), activates_at: 800 });
    }

    #[tokio::test]
    async fn a_second_rotation_while_a_key_waits_is_refused_and_now_replaces_it() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_published().returning(|_| Ok(vec![key("waiting", 800, None), key("current", 0, Some(800))]));
        keys.expect_schedule().withf(|key, _| key.activates_at == 500).times(1).returning(|_, _| Ok(()));
        let management = management(keys, 500);
        let refused = management.rotate(300).await.unwrap_err();
        assert!(
            matches!(refused, KeyManagementError::NextAlreadyWaiting { ref kid, activates_at: 800 } if kid == "waiting")
        );
        assert_eq!(management.rotate_now().await.unwrap().activates_at, 500);
    }

    #[tokio::test]
    async fn revoking_a_key_puts_a_new_one_in_its_place_in_the_same_step() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_all().returning(|| {
            let gone = SigningKey { revoked_at: Some(10), ..key("gone", 0, Some(50)) };
            Ok(vec![key("next", 800, None), key("current", 100, Some(800)), key("old", 0, Some(100)), gone])
        });
        keys.expect_revoke()
            .withf(|kid, now, new| {
                kid == "current" && *now == 500 && new.as_ref().is_some_and(|new| new.activates_at == 500)
            })
            .times(1)
            .returning(|_, _, _| Ok(true));
        keys.expect_revoke()
            .withf(|kid, _, new| kid == "next" && new.as_ref().is_some_and(|new| new.activates_at == 800))
            .times(1)
            .returning(|_, _, _| Ok(true));
        keys.expect_revoke().withf(|kid, _, new| kid == "old" && new.is_none()).times(1).returning(|_, _, _| Ok(true));
        let management = management(keys, 500);
        let signing_now = Some(ScheduledKey { kid: "new".into(), activates_at: 500 });
        assert_eq!(
            management.revoke(&kid("current")).await.unwrap(),
            KeyRevocation::Revoked { replaced_by: signing_now }
        );
        let waiting = Some(ScheduledKey { kid: "new".into(), activates_at: 800 });
        assert_eq!(management.revoke(&kid("next")).await.unwrap(), KeyRevocation::Revoked { replaced_by: waiting });
        assert_eq!(management.revoke(&kid("old")).await.unwrap(), KeyRevocation::Revoked { replaced_by: None });
        assert_eq!(management.revoke(&kid("gone")).await.unwrap(), KeyRevocation::AlreadyRevoked);
        assert!(
            matches!(management.revoke(&kid("nowhere")).await, Err(KeyManagementError::UnknownKey(kid)) if kid == "nowhere")
        );
    }

    #[tokio::test]
    async fn keys_are_listed_with_their_state_now() {
        let mut keys = MockSigningKeyRecords::new();
        keys.expect_all().returning(|| {
            let withdrawn = SigningKey { revoked_at: Some(50), ..key("withdrawn", 0, Some(10)) };
            Ok(vec![key("next", 800, None), key("current", 100, Some(800)), key("old", 0, Some(100)), withdrawn])
        });
        let states: Vec<KeyState> = management(keys, 500).list().await.unwrap().iter().map(|k| k.state).collect();
        assert_eq!(states, [KeyState::Next, KeyState::Current, KeyState::Retired, KeyState::Revoked]);
    }
}
