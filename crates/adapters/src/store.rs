//! What a database adapter provides: the durable side of every port, the loads that
//! feed the in-memory view, and the operators' admin commands.
//!
//! The SQLite store implements it today; a PostgreSQL store implements the same trait,
//! and the contract tests in `tests/store_contract.rs` run against each.

use async_trait::async_trait;
use domain::atm::Brand;
use domain::branch::BranchWaitTime;
use domain::client::{ChannelScope, ClientId, ClientRegistration};
use domain::ports::StoreUnavailable;
use domain::store_contents::StoreContents;
use domain::token::{IssuedToken, OpaqueToken, TokenId};

/// Change counters, one per topic, bumped by the database itself (triggers) on every
/// write, whoever makes it: this server, the CLI, or the bank's branch systems.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Revisions {
    /// Client registrations.
    pub clients: i64,
    /// Supported channel combinations.
    pub access: i64,
    /// Branch wait times.
    pub wait_times: i64,
    /// Token revocations.
    pub revocations: i64,
    /// Signing keys.
    pub signing_keys: i64,
    /// The ATM set.
    pub atms: i64,
}

/// The ATM set as stored: records as their OBIE JSON, in brand then identification
/// order. Kept as text so a large set is never held twice in memory while loading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtmSet {
    /// (brand name, OBIE ATM 2.3 record as JSON) pairs.
    pub records: Vec<(String, String)>,
    /// When the set was last replaced, seconds since the Unix epoch.
    pub last_updated: i64,
}

/// One branch's estimate as stored, with when it was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeEstimate {
    /// The branch and its wait.
    pub estimate: BranchWaitTime,
    /// When it was estimated, seconds since the Unix epoch.
    pub estimated_at: i64,
}

/// An Ed25519 signing key as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredSigningKey {
    /// Key id: the RFC 7638 thumbprint of the public key.
    pub kid: String,
    /// PKCS#8 v2 document holding the private key.
    pub private_pkcs8: Vec<u8>,
    /// The raw 32-byte public key.
    pub public_key: Vec<u8>,
    /// When it was created, seconds since the Unix epoch.
    pub created_at: i64,
    /// When it stopped signing, if it has.
    pub retired_at: Option<i64>,
}

impl std::fmt::Debug for StoredSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSigningKey")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .field("retired_at", &self.retired_at)
            .finish_non_exhaustive()
    }
}

/// A token record with its revocation state, for operators' look-ups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// The record as issued.
    pub token: IssuedToken,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// Why an admin command did not change the store.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The thing to create already exists.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// The thing to change does not exist.
    #[error("{0} does not exist")]
    NotFound(String),
    /// The store could not be reached or failed.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// A database the service runs on.
#[async_trait]
pub trait Store: Send + Sync {
    /// Applies pending migrations.
    async fn migrate(&self) -> Result<(), StoreUnavailable>;
    /// Answers if the database is reachable and usable.
    async fn ping(&self) -> Result<(), StoreUnavailable>;
    /// The current change counters.
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable>;
    /// Which kinds of operator data the store holds.
    async fn contents(&self) -> Result<StoreContents, StoreUnavailable>;

    /// Every client registration, ordered by client id.
    async fn clients(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable>;
    /// Every supported channel combination, ordered.
    async fn supported_channels(&self) -> Result<Vec<ChannelScope>, StoreUnavailable>;
    /// Every branch's current estimate.
    async fn wait_times(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable>;
    /// The ids of revoked tokens that have not yet expired at `now`.
    async fn revoked_tokens(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable>;
    /// The current signing key and the retired ones retired after `retired_after`,
    /// newest first.
    async fn signing_keys(&self, retired_after: i64) -> Result<Vec<StoredSigningKey>, StoreUnavailable>;

    /// Durably records issued tokens, all or none.
    async fn record_tokens(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable>;
    /// The record behind an opaque token.
    async fn find_token(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable>;
    /// Revokes the token behind an opaque token; `false` if it was already revoked.
    async fn revoke_token(&self, opaque: &OpaqueToken, now: i64) -> Result<bool, AdminError>;
    /// Deletes token records that expired before `before`; returns how many.
    async fn purge_expired_tokens(&self, before: i64) -> Result<u64, StoreUnavailable>;

    /// Registers a client.
    async fn register_client(&self, client: &ClientRegistration, now: i64) -> Result<(), AdminError>;
    /// Disables a client and revokes its live tokens; returns how many were revoked.
    async fn disable_client(&self, client_id: &ClientId, now: i64) -> Result<u64, AdminError>;
    /// Adds a supported channel combination; `false` if it was already supported.
    async fn allow_channel(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable>;
    /// Inserts or replaces estimates, all or none.
    async fn upsert_wait_times(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable>;
    /// Makes `key` the current signing key and retires the previous one at `now`.
    async fn rotate_signing_key(&self, key: &StoredSigningKey, now: i64) -> Result<(), StoreUnavailable>;

    /// The ATM set.
    async fn atms(&self) -> Result<AtmSet, StoreUnavailable>;
    /// Replaces the whole ATM set with `brands` in one transaction, `last_updated` = `now`.
    /// The caller has checked that (brand, identification) pairs are unique.
    async fn replace_atms(&self, brands: &[Brand], now: i64) -> Result<(), StoreUnavailable>;
    /// Closes the store's connections; later calls fail as an unreachable store would.
    async fn close(&self);
}
