//! Registering, listing, disabling and enabling client applications.

use std::sync::Arc;

use crate::client::{ClientChanges, ClientId, ClientRegistration, ClientStatus};
use crate::ports::{ClientRecords, Clock, StoreUnavailable, TokenArchive};

/// Why a client was not registered.
#[derive(Debug, thiserror::Error)]
pub enum RegisterClientError {
    /// A client with this id is already registered; nothing changed.
    #[error("client {0} already exists")]
    AlreadyExists(ClientId),
    /// The store could not be written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Why a client was not disabled.
#[derive(Debug, thiserror::Error)]
pub enum DisableClientError {
    /// No client with this id is registered.
    #[error("client {0} does not exist")]
    NotFound(ClientId),
    /// The store could not be written. Disabling again finishes the job: both steps
    /// can be repeated.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Why a client was not enabled.
#[derive(Debug, thiserror::Error)]
pub enum EnableClientError {
    /// No client with this id is registered.
    #[error("client {0} does not exist")]
    NotFound(ClientId),
    /// The store could not be read or written. Enabling again finishes the job.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// What enabling a client did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enabled {
    /// It was disabled and is active now; this many tokens issued to it while it was
    /// disabled (by an instance that had not yet seen the disable) were revoked.
    Now {
        /// Tokens revoked.
        revoked: u64,
    },
    /// It was already active; nothing changed.
    Already,
}

/// Why a client's addresses were not changed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateClientError {
    /// No client with this id is registered.
    #[error("client {0} does not exist")]
    NotFound(ClientId),
    /// The store could not be written; nothing changed.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The operators' commands on client applications.
pub struct ClientAdmin {
    clients: Arc<dyn ClientRecords>,
    tokens: Arc<dyn TokenArchive>,
    clock: Arc<dyn Clock>,
}

impl ClientAdmin {
    /// Commands on `clients`, revoking in `tokens`.
    pub fn new(clients: Arc<dyn ClientRecords>, tokens: Arc<dyn TokenArchive>, clock: Arc<dyn Clock>) -> Self {
        Self { clients, tokens, clock }
    }

    /// Registers `client`; a client id is registered once.
    ///
    /// # Errors
    /// See [`RegisterClientError`].
    pub async fn register(&self, client: &ClientRegistration) -> Result<(), RegisterClientError> {
        if !self.clients.insert(client, self.clock.unix_now()).await? {
            return Err(RegisterClientError::AlreadyExists(client.client_id.clone()));
        }
        Ok(())
    }

    /// Every registered client, ordered by client id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    pub async fn list(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable> {
        self.clients.all().await
    }

    /// Replaces the redirect URIs or the added origins of `client_id`, those `addresses` give.
    ///
    /// # Errors
    /// See [`UpdateClientError`].
    pub async fn update(&self, client_id: &ClientId, addresses: &ClientChanges) -> Result<(), UpdateClientError> {
        if !self.clients.change(client_id, addresses).await? {
            return Err(UpdateClientError::NotFound(client_id.clone()));
        }
        Ok(())
    }

    /// Enables `client_id` again. Its tokens stay refused: those live at the disable
    /// were revoked then, and any issued after it (by an instance that had not yet seen
    /// it, refused while the client was disabled) are revoked here, before the client is
    /// active again, so enabling never brings a token back.
    ///
    /// # Errors
    /// See [`EnableClientError`].
    pub async fn enable(&self, client_id: &ClientId) -> Result<Enabled, EnableClientError> {
        let clients = self.clients.all().await?;
        let client = clients
            .iter()
            .find(|client| &client.client_id == client_id)
            .ok_or_else(|| EnableClientError::NotFound(client_id.clone()))?;
        if client.status == ClientStatus::Active {
            return Ok(Enabled::Already);
        }
        let revoked = self.tokens.revoke_live_of(client_id, self.clock.unix_now()).await?;
        if !self.clients.set_status(client_id, ClientStatus::Active).await? {
            return Err(EnableClientError::NotFound(client_id.clone()));
        }
        Ok(Enabled::Now { revoked })
    }

    /// Disables `client_id` and revokes its live tokens: a disabled application's users
    /// must not keep calling with the tokens it was given before. Returns how many tokens
    /// were revoked. Disabling is done first, so a failure in between leaves no new
    /// tokens issued, and running the command again revokes the rest.
    ///
    /// # Errors
    /// See [`DisableClientError`].
    pub async fn disable(&self, client_id: &ClientId) -> Result<u64, DisableClientError> {
        if !self.clients.set_status(client_id, ClientStatus::Disabled).await? {
            return Err(DisableClientError::NotFound(client_id.clone()));
        }
        Ok(self.tokens.revoke_live_of(client_id, self.clock.unix_now()).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{MockClientRecords, MockTokenArchive};
    use crate::testing::{clock_at, registration};

    fn admin(clients: MockClientRecords, tokens: MockTokenArchive) -> ClientAdmin {
        ClientAdmin::new(Arc::new(clients), Arc::new(tokens), Arc::new(clock_at(1_000)))
    }

    fn no_revocations() -> MockTokenArchive {
        let mut tokens = MockTokenArchive::new();
        tokens.expect_revoke_live_of().never();
        tokens
    }

    #[tokio::test]
    async fn a_client_id_is_registered_once() {
        let mut clients = MockClientRecords::new();
        clients.expect_insert().withf(|_, now| *now == 1_000).times(1).returning(|_, _| Ok(false));
        let result = admin(clients, no_revocations()).register(&registration("bank-app")).await;
        assert!(matches!(result, Err(RegisterClientError::AlreadyExists(id)) if id.as_str() == "bank-app"));
    }

    #[tokio::test]
    async fn disabling_a_client_revokes_its_live_tokens_at_the_same_time() {
        let mut clients = MockClientRecords::new();
        clients
            .expect_set_status()
            .withf(|id, status| id.as_str() == "bank-app" && *status == ClientStatus::Disabled)
            .times(1)
            .returning(|_, _| Ok(true));
        let mut tokens = MockTokenArchive::new();
        tokens
            .expect_revoke_live_of()
            .withf(|id, now| id.as_str() == "bank-app" && *now == 1_000)
            .times(1)
            .returning(|_, _| Ok(3));
        let revoked = admin(clients, tokens).disable(&ClientId::parse("bank-app").unwrap()).await.unwrap();
        assert_eq!(revoked, 3);
    }

    fn registered(status: ClientStatus) -> MockClientRecords {
        let mut clients = MockClientRecords::new();
        clients.expect_all().returning(move || Ok(vec![ClientRegistration { status, ..registration("bank-app") }]));
        clients
    }

    #[tokio::test]
    async fn enabling_a_disabled_client_revokes_what_was_issued_meanwhile_before_it_is_active() {
        let mut sequence = mockall::Sequence::new();
        let mut clients = registered(ClientStatus::Disabled);
        let mut tokens = MockTokenArchive::new();
        tokens
            .expect_revoke_live_of()
            .withf(|id, now| id.as_str() == "bank-app" && *now == 1_000)
            .times(1)
            .in_sequence(&mut sequence)
            .returning(|_, _| Ok(2));
        clients
            .expect_set_status()
            .withf(|id, status| id.as_str() == "bank-app" && *status == ClientStatus::Active)
            .times(1)
            .in_sequence(&mut sequence)
            .returning(|_, _| Ok(true));
        let enabled = admin(clients, tokens).enable(&ClientId::parse("bank-app").unwrap()).await.unwrap();
        assert_eq!(enabled, Enabled::Now { revoked: 2 });
    }

    #[tokio::test]
    async fn enabling_an_active_client_changes_nothing_and_revokes_none_of_its_tokens() {
        let mut clients = registered(ClientStatus::Active);
        clients.expect_set_status().never();
        let enabled = admin(clients, no_revocations()).enable(&ClientId::parse("bank-app").unwrap()).await.unwrap();
        assert_eq!(enabled, Enabled::Already);
    }

    #[tokio::test]
    async fn enabling_an_unknown_client_is_an_error() {
        let mut clients = registered(ClientStatus::Disabled);
        clients.expect_set_status().never();
        let result = admin(clients, no_revocations()).enable(&ClientId::parse("nobody").unwrap()).await;
        assert!(matches!(result, Err(EnableClientError::NotFound(id)) if id.as_str() == "nobody"));
    }

    #[tokio::test]
    async fn updating_an_unknown_client_is_an_error() {
        let mut clients = MockClientRecords::new();
        clients.expect_change().times(1).returning(|_, _| Ok(false));
        let result = admin(clients, no_revocations())
            .update(&ClientId::parse("nobody").unwrap(), &ClientChanges::default())
            .await;
        assert!(matches!(result, Err(UpdateClientError::NotFound(id)) if id.as_str() == "nobody"));
    }

    #[tokio::test]
    async fn disabling_an_unknown_client_revokes_nothing() {
        let mut clients = MockClientRecords::new();
        clients.expect_set_status().returning(|_, _| Ok(false));
        let result = admin(clients, no_revocations()).disable(&ClientId::parse("nobody").unwrap()).await;
        assert!(matches!(result, Err(DisableClientError::NotFound(_))));
    }

    #[tokio::test]
    async fn a_failed_revocation_is_reported_after_the_client_is_disabled() {
        let mut clients = MockClientRecords::new();
        clients.expect_set_status().times(1).returning(|_, _| Ok(true));
        let mut tokens = MockTokenArchive::new();
        tokens.expect_revoke_live_of().returning(|_, _| Err(StoreUnavailable::new("down")));
        let result = admin(clients, tokens).disable(&ClientId::parse("bank-app").unwrap()).await;
        assert!(matches!(result, Err(DisableClientError::Unavailable(_))));
    }
}
