//! A database the service runs on, seen through each role it plays.
//!
//! A backend (the SQLite store today; PostgreSQL next) implements the domain's record
//! ports (`domain::ports::records`), [`ViewSource`] (what the in-memory view polls and
//! loads) and [`StoreLifecycle`] (migrate, ping, close). [`Store`] holds one backend
//! as all of them, and [`Store::open`] picks the backend from the database URL. The
//! contract tests in `tests/store_contract.rs` run against each backend.

use std::sync::Arc;

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::ports::{
    AtmRecords, ChannelRecords, ClientRecords, SigningKeyRecords, StoreInventory, StoreUnavailable, TokenArchive,
    WaitTimeRecords,
};

use crate::sqlite::SqliteStore;

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

/// The ATM set as stored, in brand then identification order: records as their OBIE
/// JSON text (never parsed on loading) beside what listings filter and sort on.
#[derive(Debug, Clone, PartialEq)]
pub struct AtmSet {
    /// The ATMs.
    pub atms: Vec<StoredAtm>,
    /// When the set was last replaced, seconds since the Unix epoch.
    pub last_updated: i64,
}

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

    /// Closes its connections; later calls fail as an unreachable store's would.
    async fn close(&self);
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
    /// Signing keys.
    pub keys: Arc<dyn SigningKeyRecords>,
    /// Issued-token records.
    pub tokens: Arc<dyn TokenArchive>,
    /// What the store holds.
    pub inventory: Arc<dyn StoreInventory>,
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
            tokens: backend.clone(),
            inventory: backend,
        }
    }

    /// Opens the database named by `url`: `sqlite://path/to/file.db`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] for an unsupported URL or a database that cannot be opened.
    pub async fn open(url: &str) -> Result<Self, StoreUnavailable> {
        if url.starts_with("sqlite:") {
            Ok(Self::of(SqliteStore::connect(url).await?))
        } else {
            Err(StoreUnavailable::new("unsupported database URL: expected sqlite://…"))
        }
    }
}
