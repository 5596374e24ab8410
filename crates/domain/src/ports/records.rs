//! The store as operators change it. Each port is one role a store plays; a database
//! adapter implements them all, and the operators' services (`crate::services`) hold the
//! rules that span them.

use async_trait::async_trait;

use super::StoreUnavailable;
use crate::atm_catalog::StoredAtm;
use crate::atm_closure::AtmClosure;
use crate::atm_feed::ChangeLog;
use crate::atm_state::{AtmId, AtmState, AtmStateEvent};
use crate::branch::WaitTimeEstimate;
use crate::client::{ChannelScope, ClientChanges, ClientId, ClientRegistration, ClientStatus};
use crate::outage::{OutageId, PlannedOutage};
use crate::posted::EventTime;
use crate::queue::event::QueueEvent;
use crate::store_contents::StoreContents;
use crate::system::{AssertionId, SystemChanges, SystemId, SystemRegistration};
use crate::token::{IssuedToken, OpaqueToken, SigningKey, TokenId, TokenRecord};

/// Registered client applications.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ClientRecords: Send + Sync {
    /// Adds `client`, registered at `now`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. A client id already
    /// registered is `Ok(false)`, and nothing changes.
    async fn insert(&self, client: &ClientRegistration, now: i64) -> Result<bool, StoreUnavailable>;

    /// Every registration, ordered by client id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn all(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable>;

    /// Sets the status of `client_id`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An unknown client id is
    /// `Ok(false)`.
    async fn set_status(&self, client_id: &ClientId, status: ClientStatus) -> Result<bool, StoreUnavailable>;

    /// Replaces the lists of `client_id` that `addresses` gives; the others stay.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An unknown client id is
    /// `Ok(false)`.
    async fn change(&self, client_id: &ClientId, addresses: &ClientChanges) -> Result<bool, StoreUnavailable>;
}

/// The (country, business, channel) combinations the wait-time operation supports.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ChannelRecords: Send + Sync {
    /// Adds `scope`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An already supported
    /// combination is `Ok(false)`.
    async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable>;

    /// Every supported combination, ordered.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn all(&self) -> Result<Vec<ChannelScope>, StoreUnavailable>;
}

/// Decides, from what a store holds when it has locked it for writing, what to write:
/// [`WaitTimeRecords::edit`]'s and [`AtmRecords::edit`]'s `plan`. A store may call it
/// more than once, each time with what it read again (a transaction that lost a conflict
/// is run again whole): it must decide from what it is given alone.
pub type EditPlan<'a, Found, Edit> = dyn FnMut(&Found) -> Edit + Send + 'a;

/// Branches' estimated wait times.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WaitTimeRecords: Send + Sync {
    /// Inserts or replaces `estimates`, all or none.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be written; then none was.
    async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable>;

    /// Reads every stored estimate and writes what `plan` makes of them (inserted or
    /// replaced, all or none; nothing when it returns none), in one step under the
    /// store's write lock for wait times: two edits at once, from any hosts, run one
    /// after the other, the second reading what the first wrote. `plan` is called once.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be read or written; then none was.
    async fn edit<'a>(
        &self,
        plan: &mut EditPlan<'a, Vec<WaitTimeEstimate>, Vec<WaitTimeEstimate>>,
    ) -> Result<(), StoreUnavailable>;

    /// Every branch's current estimate, in no particular order.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn all(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable>;
}

/// The ATM set.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmRecords: Send + Sync {
    /// Replaces the whole set with `atms`, last updated at `now`, all or none. The
    /// caller has checked that (brand, identification) pairs are unique.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then the old set stays.
    async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable>;

    /// The stored set and when it was last updated, in brand then identification order.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn current(&self) -> Result<AtmSetRecord, StoreUnavailable>;

    /// Reads the set and applies what `plan` makes of it (see [`AtmSetEdit`]), last
    /// updated at `now`, in one step under the store's write lock for the set: two edits
    /// at once, from any hosts, run one after the other, the second reading what the
    /// first wrote. `plan` is called once. [`AtmSetEdit::Keep`] writes nothing (the set
    /// keeps its date).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be read or written; then the set is unchanged.
    async fn edit<'a>(
        &self,
        plan: &mut EditPlan<'a, AtmSetRecord, AtmSetEdit>,
        now: i64,
    ) -> Result<(), StoreUnavailable>;
}

/// What to do with the ATM set, as [`AtmRecords::edit`]'s plan decides it.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum AtmSetEdit {
    /// Write nothing.
    #[default]
    Keep,
    /// `upserts` added or replaced (by brand and identification), `removals` deleted.
    Apply {
        /// ATMs to add or replace.
        upserts: Vec<StoredAtm>,
        /// ATMs to delete.
        removals: Vec<AtmKey>,
    },
}

/// An ATM's identity within a set: (brand name, identification).
pub type AtmKey = (String, String);

/// The ATM set as stored, with the closures announced for it.
#[derive(Debug, Clone, PartialEq)]
pub struct AtmSetRecord {
    /// The ATMs, in brand then identification order.
    pub atms: Vec<StoredAtm>,
    /// When the set was last changed, seconds since the Unix epoch.
    pub last_updated: i64,
    /// Every closure announced and not cancelled, in effect or to come, by ATM id.
    pub closures: Vec<AtmClosure>,
    /// The change feed's head when the set was read: the set is what the feed's changes
    /// up to it made ([`AtmChangeRecords`]).
    pub feed_head: i64,
}

impl AtmSetRecord {
    /// The closures whose ATM would be gone from the set after `upserts` and `removals`:
    /// forgotten with it, in the same step (a closure is only ever of an ATM of the set).
    pub fn closures_left_without_atm(&self, upserts: &[StoredAtm], removals: &[AtmKey]) -> Vec<AtmId> {
        if self.closures.is_empty() || removals.is_empty() {
            return Vec::new();
        }
        let removed: std::collections::HashSet<(&str, &str)> =
            removals.iter().map(|(brand, id)| (brand.as_str(), id.as_str())).collect();
        let remaining: std::collections::HashSet<&str> = (self.atms.iter())
            .filter(|atm| !removed.contains(&(atm.brand.as_str(), atm.identification.as_str())))
            .chain(upserts)
            .map(|atm| atm.identification.as_str())
            .collect();
        self.closures.iter().filter(|c| !remaining.contains(c.atm.as_str())).map(|c| c.atm.clone()).collect()
    }
}

/// The ATMs' change log, which the change feed serves. Its writers append to it in the
/// transactions that make the changes: [`AtmRecords::edit`] (a change per record added,
/// replaced or removed; [`AtmRecords::replace`] instead moves the floor to the head, so
/// every cursor starts again), [`AtmStateRecords::apply`] (a `state` change per ATM whose
/// state changed), [`AtmClosureRecords`] (a `state` change; `upserted` when a closed ATM
/// reopens), and [`AtmChangeRecords::feed_closures_due`]. Each numbers its changes under
/// the log's lock, taken last, so numbers become visible in the order they were given.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmChangeRecords: Send + Sync {
    /// The log's identity, head and floor, and up to `limit` changes numbered above
    /// `after`, by number.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn since(&self, after: i64, limit: usize) -> Result<ChangeLog, StoreUnavailable>;

    /// Appends a `removed` change for every record of each ATM whose closure took effect
    /// by `now` and whose removal the log does not hold yet, under the set's lock: once,
    /// whichever instances ask. How many closures.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then none was.
    async fn feed_closures_due(&self, now: i64) -> Result<u64, StoreUnavailable>;

    /// Forgets the changes appended before `before` (seconds since the epoch), raising
    /// the floor to the highest number forgotten; how many.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn forget_before(&self, before: i64) -> Result<u64, StoreUnavailable>;
}

/// ATM closures announced ahead (`atms closure`). They are read with the set
/// ([`AtmRecords::current`], [`AtmRecords::edit`]'s plan), in the same snapshot.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmClosureRecords: Send + Sync {
    /// Stores `closure`, replacing one announced for its ATM, if an ATM of the set has
    /// its identification: the check and the write in one step under the set's write
    /// lock, so an import at the same time runs wholly before or after it. Dated its
    /// `announced_at` in the change feed.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. No ATM of the set with that
    /// identification is `Ok(false)`, and nothing is stored.
    async fn announce(&self, closure: &AtmClosure) -> Result<bool, StoreUnavailable>;

    /// Removes the closure announced for `atm`, at `now` (seconds since the epoch).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. None announced is `Ok(false)`.
    async fn cancel(&self, atm: &AtmId, now: i64) -> Result<bool, StoreUnavailable>;
}

/// The keys that sign access tokens.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SigningKeyRecords: Send + Sync {
    /// Every key not retired by `retired_after` and not revoked (next, current, and
    /// recently retired ones), newest activation first: the keys to publish and trust.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable>;

    /// Every key the store holds, revoked ones too, newest activation first.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn all(&self) -> Result<Vec<SigningKey>, StoreUnavailable>;

    /// Adds `key`, to sign from its `activates_at`, in one step: the key signing then is
    /// retired at that moment, and keys still waiting to sign at `now` are dropped.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then nothing changed.
    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable>;

    /// Withdraws key `kid` at `now` (from then on it is not [`published`](Self::published),
    /// and a later [`schedule`](Self::schedule) keeps it, to be listed) and, with a
    /// `replacement`, schedules that as [`schedule`](Self::schedule) does, in the same step.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then nothing changed. An unknown
    /// or already revoked key is `Ok(false)`, and nothing changes.
    async fn revoke(&self, kid: &str, now: i64, replacement: Option<SigningKey>) -> Result<bool, StoreUnavailable>;
}

/// Makes new signing keys (the signing adapter knows the algorithm).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait KeyGenerator: Send + Sync {
    /// A fresh key, created at `now`, not yet retired.
    ///
    /// # Errors
    /// [`KeyGenerationFailed`] when the CSPRNG or the encoding fails.
    fn generate(&self, now: i64) -> Result<SigningKey, KeyGenerationFailed>;
}

/// A signing key could not be made.
#[derive(Debug, thiserror::Error)]
#[error("a signing key could not be made: {0}")]
pub struct KeyGenerationFailed(pub String);

/// The coarsest step in which a [`TokenArchive`] purges expired records: an hour, the
/// width of the PostgreSQL store's token partitions.
pub const TOKEN_PURGE_GRANULARITY_SECONDS: i64 = 3600;

/// The records of issued tokens, kept for look-up and revocation.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TokenArchive: Send + Sync {
    /// Makes `tokens` durable, all or none.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be committed; then none was, and none of
    /// the tokens may be handed out. A token id already recorded fails the whole batch.
    async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable>;

    /// The record behind `opaque`, if there is one.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable>;

    /// Revokes the token `token_id` at `now` unless it already is.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. A token already revoked (or
    /// unknown) is `Ok(false)`.
    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable>;

    /// Revokes, at `now`, every token of `client_id` that is neither expired nor revoked.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then none was revoked.
    async fn revoke_live_of(&self, client_id: &ClientId, now: i64) -> Result<u64, StoreUnavailable>;

    /// The ids of revoked tokens that have not expired at `now`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable>;

    /// Every record of a token that has not expired at `now`, revoked or not, ordered by
    /// expiry then token id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable>;

    /// Deletes the records of tokens that expired before `before`; how many. A backend
    /// may delete by whole periods of at most [`TOKEN_PURGE_GRANULARITY_SECONDS`]
    /// (PostgreSQL drops an hour of records at once): a record that expired less than
    /// that before `before` may stay until a later purge. A record expiring at or after
    /// `before` is always kept.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable>;
}

/// What a store holds, by kind.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait StoreInventory: Send + Sync {
    /// Which kinds of operator data the store holds.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn contents(&self) -> Result<StoreContents, StoreUnavailable>;
}

/// What an import loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportKind {
    /// The ATM set (`atms import`).
    Atms,
    /// Wait-time estimates (`waittimes import`).
    WaitTimes,
}

/// How an import ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImportOutcome {
    /// Its changes were written.
    Applied,
    /// It held what was stored; nothing was written.
    Unchanged,
    /// A guard refused it (the shrink guard); nothing was written.
    Refused,
    /// Its file was refused for what it holds; nothing was written.
    Invalid,
    /// The store could not be read or written; nothing was written.
    Failed,
}

impl ImportKind {
    /// Every kind, in a stable order.
    pub const ALL: [Self; 2] = [Self::Atms, Self::WaitTimes];

    /// The name stored and shown in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::Atms => "atms",
            Self::WaitTimes => "wait_times",
        }
    }
}

impl ImportOutcome {
    /// Every outcome, in a stable order.
    pub const ALL: [Self; 5] = [Self::Applied, Self::Unchanged, Self::Refused, Self::Invalid, Self::Failed];

    /// The name stored and shown in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Unchanged => "unchanged",
            Self::Refused => "refused",
            Self::Invalid => "invalid",
            Self::Failed => "failed",
        }
    }
}

/// How many imports of a kind ended one way, and when the last did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportTally {
    /// What they loaded.
    pub kind: ImportKind,
    /// How they ended.
    pub outcome: ImportOutcome,
    /// How many there were.
    pub runs: u64,
    /// When the last ended, seconds since the Unix epoch.
    pub last_at: i64,
}

/// Imports run against the store, counted by kind and outcome, for whoever watches the
/// service (imports are short-lived commands on any host; the store outlives them).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ImportLog: Send + Sync {
    /// Counts one import of `kind` that ended with `outcome` at `at`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn record(&self, kind: ImportKind, outcome: ImportOutcome, at: i64) -> Result<(), StoreUnavailable>;

    /// Every (kind, outcome) counted so far; those never seen are absent.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn tally(&self) -> Result<Vec<ImportTally>, StoreUnavailable>;
}

/// Planned outages, as operators schedule and cancel them (`outages schedule|cancel`).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OutageRecords: Send + Sync {
    /// Stores `outage`, scheduled at `now`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then nothing was.
    async fn schedule(&self, outage: &PlannedOutage, now: i64) -> Result<(), StoreUnavailable>;

    /// Every outage not over at `now` (its end after `now`), soonest first, then by id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn not_over(&self, now: i64) -> Result<Vec<PlannedOutage>, StoreUnavailable>;

    /// Removes the outage `id`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An unknown id is `Ok(false)`.
    async fn cancel(&self, id: &OutageId) -> Result<bool, StoreUnavailable>;
}

/// The bank's systems, as operators register them (`systems add|update|disable|enable`),
/// and the assertions they have used.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SystemRecords: Send + Sync {
    /// Adds `system`, registered at `now`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An id already registered is
    /// `Ok(false)`, and nothing changes.
    async fn insert(&self, system: &SystemRegistration, now: i64) -> Result<bool, StoreUnavailable>;

    /// Every registration, ordered by id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn all(&self) -> Result<Vec<SystemRegistration>, StoreUnavailable>;

    /// The registration of `id`, read from the store itself (never a copy in memory): a
    /// system disabled on one instance is refused at once on every other.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it cannot be read.
    async fn find(&self, id: &SystemId) -> Result<Option<SystemRegistration>, StoreUnavailable>;

    /// Sets the status of `id`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An unknown id is `Ok(false)`.
    async fn set_status(&self, id: &SystemId, status: ClientStatus) -> Result<bool, StoreUnavailable>;

    /// Replaces what `changes` gives of `id`; the rest stays.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written. An unknown id is `Ok(false)`.
    async fn change(&self, id: &SystemId, changes: &SystemChanges) -> Result<bool, StoreUnavailable>;

    /// Records that `system` used the assertion `jti`, which expires at `expires_at`
    /// (Unix seconds): `Ok(true)` the first time, `Ok(false)` for every later use, from
    /// any instance on the same store, until [`SystemRecords::forget_assertions`] drops it.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then the assertion must be
    /// refused, not accepted.
    async fn use_assertion(
        &self,
        system: &SystemId,
        jti: &AssertionId,
        expires_at: i64,
    ) -> Result<bool, StoreUnavailable>;

    /// Drops the assertions that expired before `now`; how many.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn forget_assertions(&self, now: i64) -> Result<u64, StoreUnavailable>;
}

/// A queue event as the store keeps it: the event, the system that posted it, and when
/// the service received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedEvent {
    /// The event.
    pub event: QueueEvent,
    /// The system that posted it.
    pub system: SystemId,
    /// When the instance that accepted it received it, by its clock.
    pub received_at: EventTime,
}

/// The log of branch queue events the bank's systems post: every accepted event, kept
/// until it is older than the oldest an event may be (a day).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait QueueEventRecords: Send + Sync {
    /// Appends those of `events` whose id is not stored yet, all in one transaction,
    /// durable when this returns: for each event, in order, whether it was new. Two
    /// writers appending the same id at once: exactly one is told it was new. An id
    /// stored already changes nothing, whatever the rest of the event says.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be written; then none was.
    async fn append(
        &self,
        system: &SystemId,
        events: &[QueueEvent],
        received_at: EventTime,
    ) -> Result<Vec<bool>, StoreUnavailable>;

    /// Every event received at or after `since`, by received time and then id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn received_since(&self, since: EventTime) -> Result<Vec<ReceivedEvent>, StoreUnavailable>;

    /// Every event that happened (`at`) at or after `since`, in the order they are
    /// applied ([`QueueEvent::order_key`]).
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn happened_since(&self, since: EventTime) -> Result<Vec<QueueEvent>, StoreUnavailable>;

    /// Drops the events that happened before `before`; how many.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable>;
}

/// What became of one posted state event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateOutcome {
    /// Stored, and its ATM's state is the one it gives.
    Applied,
    /// Stored, but ordered before its ATM's newest applied event: it changed nothing.
    Superseded,
    /// Its id was stored already: nothing changed.
    Duplicate,
}

/// The ATMs' states, and the ids of the state events that made them (kept a day, so a
/// resent event is known).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmStateRecords: Send + Sync {
    /// Stores those of `events` whose id is not stored yet and applies each to its ATM's
    /// state by [`AtmState::after`] with `fresh_minutes` (events of one ATM in
    /// [`AtmStateEvent::order_key`] order), all in one transaction, durable when this returns: for each event, in
    /// the order given, what became of it. Two writers at once each apply to the state
    /// the other committed; an id stored already changes nothing.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be written; then none was.
    async fn apply(
        &self,
        system: &SystemId,
        events: &[AtmStateEvent],
        received_at: EventTime,
        fresh_minutes: f64,
    ) -> Result<Vec<StateOutcome>, StoreUnavailable>;

    /// Every ATM's state, by ATM id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    async fn all(&self) -> Result<Vec<(AtmId, AtmState)>, StoreUnavailable>;

    /// Forgets the ids of the events that happened before `before` (never a state); how
    /// many.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable>;
}
