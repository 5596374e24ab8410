//! A database the service runs on, seen through each role it plays.
//!
//! A backend (SQLite, PostgreSQL, in memory: one folder each) implements the domain's
//! record ports (`domain::ports::records`), [`ViewSource`] (what the in-memory view polls
//! and loads, with the change counters it relies on: see [`Revisions`]), [`KeyVault`] and
//! [`StoreLifecycle`] (migrate, ping, prepare, close). [`Store`] holds one backend as all
//! of them, and [`Store::open`] picks the backend registered for the database URL's
//! scheme ([`crate::registry`]). The contract tests in `tests/store_contract.rs` run
//! against every registered backend.

use std::sync::Arc;

use async_trait::async_trait;
use domain::ports::{
    AtmChangeRecords, AtmClosureRecords, AtmRecords, AtmStateRecords, ChannelRecords, ClientRecords, ImportLog,
    OutageRecords, QueueEventRecords, SigningKeyRecords, StoreInventory, StoreUnavailable, SystemRecords, TokenArchive,
    WaitTimeRecords,
};

pub use crate::key_seal::KeyVault;
use crate::key_seal::{KeyEncryptionKey, SealedKeys};

/// Change counters, one per topic: how the in-memory view ([`crate::view`]) learns that
/// what it serves changed, whoever changed it. It reloads a topic whenever that topic's
/// counter differs from the one it loaded with, and only then.
///
/// # The contract every backend keeps
/// - Every committed write to a topic's data, by anyone (this server, another instance,
///   the CLI, the bank's own systems writing plain SQL), moves that topic's counter, in
///   the same transaction as the write: whoever sees the counter moved sees the write.
///   A SQL store does it with triggers (`migrations/`), so that writers outside the
///   service cannot forget it; a store only this process writes does it with each write.
/// - A counter only grows; a new store's counters are all 0.
/// - A write moves only its own topic's counter. A write that changes nothing (a client
///   registered twice, an unknown client id) may move it or not.
/// - What no topic covers moves no counter: issuing token records, purging expired
///   ones, counting imports, planned outages, systems and their assertions (read from
///   the store at each use), queue events.
///
/// The topics, and the writes of each (the contract suite, `tests/store_contract.rs`,
/// makes each of these writes and checks that its topic's counter, and no other, moved):
/// - `clients`: client registrations (`ClientRecords::insert`, `set_status`,
///   `change`).
/// - `access`: supported channel combinations (`ChannelRecords::allow`).
/// - `wait_times`: branch wait times (`WaitTimeRecords::upsert`).
/// - `revocations`: the revocation of token records (`TokenArchive::revoke`,
///   `revoke_live_of`); not their issuing or their purge.
/// - `signing_keys`: signing keys (`SigningKeyRecords::schedule`, [`KeyVault::reseal`]).
/// - `atms`: the ATM set (`AtmRecords::replace`, `apply`). SQL stores count the set's
///   date (`atm_set`), which every change of the set rewrites in its transaction, rather
///   than each ATM row.
/// - `queue_events`: the queue event log (`QueueEventRecords::append` when it stores a new
///   event; not a batch of duplicates, nor `forget_before`). SQL stores count `queue_log`,
///   which an append rewrites in its transaction, rather than each event.
/// - `atm_states`: the ATMs' states (`AtmStateRecords::apply` when it applies an event;
///   not a batch of duplicates and superseded events, nor `forget_before`). SQL stores
///   count `atm_state_log`, rewritten once per such apply.
/// - `atm_closures`: closures announced (`AtmClosureRecords::announce`, and `cancel` when
///   it removes one); also `AtmRecords::edit` when it removes the last ATM of an
///   identification with a closure, which goes with it.
/// - `atm_changes`: the ATMs' change feed (every write above that appends to it:
///   `AtmRecords::edit` changing the set, `apply` changing a state, the closures'
///   writes; `AtmRecords::replace` and `AtmChangeRecords::forget_before`, which move its
///   floor; `feed_closures_due` when a closure is due). SQL stores count
///   `atm_change_log`, rewritten once per such write.
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
    /// The queue event log.
    pub queue_events: i64,
    /// The ATMs' states.
    pub atm_states: i64,
    /// The closures announced.
    pub atm_closures: i64,
    /// The ATMs' change feed.
    pub atm_changes: i64,
}

impl Revisions {
    /// Every topic's name (as `change_log` stores it) and counter.
    pub fn topics(&self) -> [(&'static str, i64); 10] {
        [
            ("clients", self.clients),
            ("access", self.access),
            ("wait_times", self.wait_times),
            ("revocations", self.revocations),
            ("signing_keys", self.signing_keys),
            ("atms", self.atms),
            ("queue_events", self.queue_events),
            ("atm_states", self.atm_states),
            ("atm_closures", self.atm_closures),
            ("atm_changes", self.atm_changes),
        ]
    }

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
                "queue_events" => &mut revisions.queue_events,
                "atm_states" => &mut revisions.atm_states,
                "atm_closures" => &mut revisions.atm_closures,
                "atm_changes" => &mut revisions.atm_changes,
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
    /// The current change counters, which every write to a topic's data moves (the
    /// contract is on [`Revisions`]); the view polls them and reloads what moved.
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
    /// Planned outages.
    pub outages: Arc<dyn OutageRecords>,
    /// The bank's systems and the assertions they used.
    pub systems: Arc<dyn SystemRecords>,
    /// The log of branch queue events.
    pub queue_events: Arc<dyn QueueEventRecords>,
    /// The ATMs' states.
    pub atm_states: Arc<dyn AtmStateRecords>,
    /// The closures announced for the ATM set.
    pub closures: Arc<dyn AtmClosureRecords>,
    /// The ATMs' change feed.
    pub changes: Arc<dyn AtmChangeRecords>,
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
            + OutageRecords
            + SystemRecords
            + QueueEventRecords
            + AtmStateRecords
            + AtmClosureRecords
            + AtmChangeRecords
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
            outages: backend.clone(),
            systems: backend.clone(),
            queue_events: backend.clone(),
            atm_states: backend.clone(),
            closures: backend.clone(),
            changes: backend.clone(),
            inventory: backend,
        }
    }

    /// This store with its signing keys sealed under `key` (or, without one, stored
    /// plain, and any sealed key refused with a one-line reason, never skipped), after
    /// sealing every key still stored plain. Every process that opens a store goes
    /// through here, so a key encryption key given once seals the store's keys, and a
    /// process given another key file (or none, for sealed keys) stops here, before it
    /// has changed anything: every stored key must open first.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if a stored key does not open with `key`, or the keys cannot
    /// be read or sealed.
    pub async fn with_key_encryption(mut self, key: Option<KeyEncryptionKey>) -> Result<Self, StoreUnavailable> {
        let key = key.map(Arc::new);
        let sealed_keys = self.open_keys_with(key.clone()).await?;
        if let Some(key) = &key {
            let sealed = crate::key_seal::seal_plain_keys(self.keys.as_ref(), self.vault.as_ref(), key).await?;
            if sealed > 0 {
                tracing::info!(sealed, "signing keys stored plain were encrypted at rest");
                if let Err(error) = self.vault.scrub().await {
                    tracing::warn!(%error, "the plain copies of the sealed keys may remain in the database's free space");
                }
            }
        }
        self.keys = Arc::new(sealed_keys);
        Ok(self)
    }

    /// Checks, changing nothing, that every stored signing key opens with `key` (or,
    /// without one, that none is sealed): what a process that copies the keys as stored
    /// (`store copy`) must know before it writes them anywhere.
    ///
    /// # Errors
    /// [`StoreUnavailable`] naming the first key that does not open, or when the keys
    /// cannot be read.
    pub async fn check_key_encryption(&self, key: Option<KeyEncryptionKey>) -> Result<(), StoreUnavailable> {
        self.open_keys_with(key.map(Arc::new)).await.map(drop)
    }

    /// The store's keys as `key` opens them, once every stored key has opened.
    async fn open_keys_with(&self, key: Option<Arc<KeyEncryptionKey>>) -> Result<SealedKeys, StoreUnavailable> {
        let sealed_keys = SealedKeys::new(Arc::clone(&self.keys), key);
        sealed_keys.open_all().await?;
        Ok(sealed_keys)
    }
}
