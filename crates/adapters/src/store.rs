//! A database the service runs on, seen through each role it plays.
//!
//! A backend (the SQLite store today; PostgreSQL next) implements the domain's record
//! ports (`domain::ports::records`), [`ViewSource`] (what the in-memory view polls and
//! loads) and [`StoreLifecycle`] (migrate, ping, close). [`Store`] holds one backend
//! as all of them, and [`Store::open`] picks the backend from the database URL. The
//! contract tests in `tests/store_contract.rs` run against each backend.

use std::sync::Arc;

use async_trait::async_trait;
use domain::ports::{
    AtmRecords, ChannelRecords, ClientRecords, ImportLog, SigningKeyRecords, StoreInventory, StoreUnavailable,
    TokenArchive, WaitTimeRecords,
};

use crate::key_seal::{KeyEncryptionKey, SealedKeys};
use crate::postgres::PostgresStore;
use crate::sqlite::SqliteStore;

/// The database systems a store can live in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// An embedded SQLite file: one host.
    Sqlite,
    /// A PostgreSQL server: any number of hosts.
    Postgres,
}

impl Backend {
    /// The backend a database URL names, by its scheme.
    pub fn of_url(url: &str) -> Option<Self> {
        let scheme = url.split_once(':')?.0;
        match scheme {
            "sqlite" => Some(Self::Sqlite),
            "postgres" | "postgresql" => Some(Self::Postgres),
            _ => None,
        }
    }
}

/// Change counters, one per topic, bumped by the database itself on every write,
/// whoever makes it: this server, the CLI, or the bank's branch systems.
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

impl Revisions {
    /// The counters from `change_log` rows of (topic, revision); unknown topics are
    /// ignored, missing ones stay 0.
    pub fn from_topics(rows: impl IntoIterator<Item = (String, i64)>) -> Self {
        let mut revisions = Self::default();
        for (topic, revision) in rows {
            let slot = match topic.as_str() {
                "clients" => &mut revisions.clients,
                "access" => &mut revisions.access,
                "wait_times" => &mut revisions.wait_times,
                "revocations" => &mut revisions.revocations,
                "signing_keys" => &mut revisions.signing_keys,
                "atms" => &mut revisions.atms,
                _ => continue,
            };
            *slot = revision;
        }
        revisions
    }
}

/// The ATM set as stored, in brand then identification order: records as their OBIE
/// JSON text (never parsed on loading) beside what listings filter and sort on.
pub use domain::ports::AtmSetRecord as AtmSet;

/// What the in-memory view reads beyond the record ports: the change counters it polls,
/// and the ATM set as stored text.
#[async_trait]
pub trait ViewSource: Send + Sync {
    /// The current change counters.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable>;

    /// The ATM set.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn atms(&self) -> Result<AtmSet, StoreUnavailable>;

    /// A feed of the store's change notices, when the database pushes them (PostgreSQL's
    /// LISTEN/NOTIFY); `None` when changes are only found by polling (SQLite).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the database pushes notices but cannot be listened to now.
    async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
        Ok(None)
    }
}

/// What a [`ChangeFeed`] heard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    /// Something changed (one or more notices, read together).
    Changed,
    /// The feed's connection was lost and is back: notices sent meanwhile are lost.
    Reconnected,
}

/// Change notices pushed by the database, as they come.
#[async_trait]
pub trait ChangeFeed: Send {
    /// Waits for the next notice (and takes any others already arrived with it).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the feed's connection is lost and cannot be made again
    /// now; subscribe again later.
    async fn next(&mut self) -> Result<Notice, StoreUnavailable>;
}

/// The database itself: its schema, whether it answers, and closing it.
#[async_trait]
pub trait StoreLifecycle: Send + Sync {
    /// Applies pending migrations.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be applied.
    async fn migrate(&self) -> Result<(), StoreUnavailable>;

    /// Answers if the database is reachable and can be read.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot.
    async fn ping(&self) -> Result<(), StoreUnavailable>;

    /// Readies the store for the coming day's writes at `now` (PostgreSQL makes the
    /// token partitions of the hours ahead); run when a process opens the store to
    /// write tokens, then every hour.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when the store cannot be read or changed.
    async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable>;

    /// Closes its connections; later calls fail as an unreachable store's would.
    async fn close(&self);
}

/// Where signing keys are sealed in place, beside the domain's key records: rewriting a
/// key's stored private bytes is an adapter's concern (encryption at rest), not the
/// domain's.
#[async_trait]
pub trait KeyVault: Send + Sync {
    /// Replaces the stored private bytes of key `kid` with `to` if they are still `from`;
    /// whether they were replaced.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable>;

    /// Leaves no copy of replaced bytes in the database's files (free pages, a page's
    /// unused space, the write-ahead log), after keys were sealed in place.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not (another process holding the database,
    /// say); the next start that seals nothing does not retry it.
    async fn scrub(&self) -> Result<(), StoreUnavailable>;
}

/// One database, as each of its users sees it.
#[derive(Clone)]
pub struct Store {
    /// Migrations, readiness probes, closing.
    pub lifecycle: Arc<dyn StoreLifecycle>,
    /// Change counters and the stored ATM set, for the in-memory view.
    pub view: Arc<dyn ViewSource>,
    /// Client registrations.
    pub clients: Arc<dyn ClientRecords>,
    /// Supported channel combinations.
    pub channels: Arc<dyn ChannelRecords>,
    /// Wait-time estimates.
    pub wait_times: Arc<dyn WaitTimeRecords>,
    /// The ATM set.
    pub atms: Arc<dyn AtmRecords>,
    /// Signing keys, as stored (see [`Store::with_key_encryption`]).
    pub keys: Arc<dyn SigningKeyRecords>,
    /// Sealing stored signing keys in place.
    pub vault: Arc<dyn KeyVault>,
    /// Issued-token records.
    pub tokens: Arc<dyn TokenArchive>,
    /// What the store holds.
    pub inventory: Arc<dyn StoreInventory>,
    /// Imports run against the store, by outcome.
    pub imports: Arc<dyn ImportLog>,
}

impl Store {
    /// `backend` in every role.
    pub fn of<B>(backend: B) -> Self
    where
        B: StoreLifecycle
            + ViewSource
            + ClientRecords
            + ChannelRecords
            + WaitTimeRecords
            + AtmRecords
            + SigningKeyRecords
            + TokenArchive
            + StoreInventory
            + ImportLog
            + KeyVault
            + 'static,
    {
        let backend = Arc::new(backend);
        Self {
            lifecycle: backend.clone(),
            view: backend.clone(),
            clients: backend.clone(),
            channels: backend.clone(),
            wait_times: backend.clone(),
            atms: backend.clone(),
            keys: backend.clone(),
            vault: backend.clone(),
            tokens: backend.clone(),
            imports: backend.clone(),
            inventory: backend,
        }
    }

    /// This store with its signing keys sealed under `key` (or, without one, stored
    /// plain, and any sealed key refused with a one-line reason, never skipped), after
    /// sealing every key still stored plain. Every process that opens a store goes
    /// through here, so a key encryption key given once seals the store's keys.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the keys cannot be read or sealed.
    pub async fn with_key_encryption(mut self, key: Option<KeyEncryptionKey>) -> Result<Self, StoreUnavailable> {
        let key = key.map(Arc::new);
        if let Some(key) = &key {
            let sealed = crate::key_seal::seal_plain_keys(self.keys.as_ref(), self.vault.as_ref(), key).await?;
            if sealed > 0 {
                tracing::info!(sealed, "signing keys stored plain were encrypted at rest");
                if let Err(error) = self.vault.scrub().await {
                    tracing::warn!(%error, "the plain copies of the sealed keys may remain in the database's free space");
                }
            }
        }
        self.keys = Arc::new(SealedKeys::new(Arc::clone(&self.keys), key));
        Ok(self)
    }

    /// Opens the database named by `url`: `sqlite://path/to/file.db`, or
    /// `postgres://user@host:port/database` (also `postgresql://`).
    ///
    /// # Errors
    /// [`StoreUnavailable`] for an unsupported URL or a database that cannot be opened.
    pub async fn open(url: &str) -> Result<Self, StoreUnavailable> {
        match Backend::of_url(url) {
            Some(Backend::Sqlite) => Ok(Self::of(SqliteStore::connect(url).await?)),
            Some(Backend::Postgres) => Ok(Self::of(PostgresStore::connect(url).await?)),
            None => Err(StoreUnavailable::new(
                "unsupported database URL: expected sqlite://… or postgres://… (postgresql://…)",
            )),
        }
    }
}
