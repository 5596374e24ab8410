//! The in-memory store: every role a [`Store`] plays, kept in this process's memory
//! behind one lock. For tests, demos (`--database-url memory:`), and as the template to
//! copy when adding a backend (`docs/architecture.md`, "Adding a store"): each port below is implemented
//! the plainest way that keeps its contract.
//!
//! **One process only.** Nothing is written anywhere: another process (the CLI run
//! beside a server) opens another, empty store, and everything is gone when the process
//! ends. Within one process, `memory:NAME` names one store, shared by every
//! [`Store::open`] of that URL for as long as one of them is held (so a test can open the
//! app's store a second time, as the CLI would); `memory:` alone is a new, empty store at
//! each open.
//!
//! The change counters move as [`Revisions`] says: a write that changes a topic's data
//! adds one to that topic's counter, under the same lock as the change, so a reader never
//! sees one without the other.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::atm_closure::AtmClosure;
use domain::atm_feed::{AtmChange, ChangeLog, LoggedChange, set_changes, state_changes};
use domain::atm_state::{AtmId, AtmState, AtmStateEvent};
use domain::branch::{BranchId, WaitTimeEstimate};
use domain::client::{ChannelScope, ClientChanges, ClientId, ClientRegistration, ClientStatus};
use domain::ports::{
    AtmChangeRecords, AtmClosureRecords, AtmKey, AtmRecords, AtmSetEdit, ChannelRecords, ClientRecords, EditPlan, ImportKind, ImportLog, ImportOutcome,
    ImportTally, OutageRecords, QueueEventRecords, AtmStateRecords, StateOutcome, ReceivedEvent, SigningKeyRecords, StoreInventory, StoreUnavailable,
    SystemRecords, TokenArchive, WaitTimeRecords,
};
use domain::outage::{OutageId, PlannedOutage};
use domain::posted::EventTime;
use domain::queue::event::QueueEvent;
use domain::system::{AssertionId, SystemChanges, SystemId, SystemRegistration};
use domain::store_contents::StoreContents;
use domain::token::{IssuedToken, OpaqueToken, SigningKey, TokenId, TokenRecord};

use crate::registry::Backend;
use crate::store::{AtmSet, KeyVault, Revisions, Store, StoreLifecycle, ViewSource};

/// The in-memory store, registered under the `memory:` scheme.
pub const BACKEND: Backend = Backend {
    name: "memory",
    schemes: &["memory"],
    example: "memory:NAME",
    shared_across_processes: false,
    open: |url| Box::pin(std::future::ready(MemoryStore::open(url).map(Store::of))),
    #[cfg(feature = "testing")]
    testing: crate::testing::TestSupport { fresh: fresh_for_a_test, execute_sql: None },
};

/// A store of its own for one test, named so that the test can open it again by URL.
#[cfg(feature = "testing")]
fn fresh_for_a_test() -> crate::registry::Opening<'static, Option<crate::testing::FreshStore>> {
    let url = format!("memory:test-{}", uuid::Uuid::new_v4().simple());
    // A named store lives while a handle on it does: the fresh store keeps this one.
    let fresh = MemoryStore::open(&url).ok().map(|store| crate::testing::FreshStore::new(url, store));
    Box::pin(std::future::ready(fresh))
}

/// Everything the store holds. Ordered maps keep each listing in the order its port
/// promises (byte order of the text, as the SQL stores' "C" collation).
#[derive(Default)]
struct State {
    /// The change counters, moved with each change.
    revisions: Revisions,
    /// Registrations by client id.
    clients: BTreeMap<String, ClientRegistration>,
    /// Supported (country, business, channel) combinations.
    channels: BTreeSet<ChannelScope>,
    /// Each branch's latest estimate.
    wait_times: BTreeMap<BranchId, WaitTimeEstimate>,
    /// The ATM set by (brand, identification), and when it last changed.
    atms: BTreeMap<AtmKey, StoredAtm>,
    atms_updated: i64,
    /// Signing keys: next, current and retired.
    keys: Vec<SigningKey>,
    /// Issued-token records by token id.
    tokens: BTreeMap<String, TokenRecord>,
    /// Import counts by (kind, outcome) label.
    imports: BTreeMap<(&'static str, &'static str), ImportTally>,
    /// Planned outages by id.
    outages: BTreeMap<OutageId, PlannedOutage>,
    /// Systems by id.
    systems: BTreeMap<SystemId, SystemRegistration>,
    /// The assertions used, by (system, jti), with their expiry.
    assertions: BTreeMap<(SystemId, String), i64>,
    /// Queue events by id.
    queue_events: BTreeMap<String, ReceivedEvent>,
    /// ATM states by ATM id.
    atm_states: BTreeMap<AtmId, AtmState>,
    /// The ids of the state events applied or superseded, with their `at`.
    atm_state_events: BTreeMap<String, EventTime>,
    /// Closures announced, by ATM id.
    atm_closures: BTreeMap<AtmId, AtmClosure>,
    /// The closed ATMs whose removal the change feed holds.
    removal_fed: BTreeSet<AtmId>,
    /// The change feed.
    feed: Feed,
}

/// The change feed as this store keeps it.
#[derive(Default)]
struct Feed {
    /// The store's identity in cursors.
    store: String,
    /// The last number given.
    head: i64,
    /// Every change above it is kept.
    floor: i64,
    /// The changes kept, by number, each with when it was appended.
    changes: std::collections::VecDeque<(LoggedChange, i64)>,
}

impl State {
    /// Appends `changes` to the feed, written at `now`, and counts it.
    fn append_changes(&mut self, changes: Vec<AtmChange>, now: i64) {
        if changes.is_empty() {
            return;
        }
        for change in changes {
            self.feed.head += 1;
            self.feed.changes.push_back((LoggedChange { seq: self.feed.head, change }, now));
        }
        self.revisions.atm_changes += 1;
    }

    /// Appends, at `now`, `atm`'s state change with `closure`, after the `upserted`
    /// changes of its records when `reopened`.
    fn feed_closure_change(&mut self, atm: &AtmId, closure: Option<&AtmClosure>, reopened: bool, now: i64) {
        let at = EventTime::from_unix_micros(now.saturating_mul(1_000_000));
        let mut changes: Vec<AtmChange> = if reopened {
            self.atms.values().filter(|record| record.identification == atm.as_str()).map(|r| AtmChange::upserted(r, at)).collect()
        } else {
            Vec::new()
        };
        changes.push(AtmChange::state(atm, self.atm_states.get(atm), closure, at));
        self.append_changes(changes, now);
    }
}

impl State {
    /// The ATM set, its date and its closures.
    fn atm_set(&self) -> AtmSet {
        AtmSet {
            atms: self.atms.values().cloned().collect(),
            last_updated: self.atms_updated,
            closures: self.atm_closures.values().cloned().collect(),
            feed_head: self.feed.head,
        }
    }
}

/// Stores opened by name (`memory:NAME`) and still held, so a second open finds the first.
static NAMED: Mutex<BTreeMap<String, Weak<Mutex<State>>>> = Mutex::new(BTreeMap::new());

/// A store in this process's memory (see the module's doc).
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    /// Set by [`StoreLifecycle::close`]: this handle then fails as a closed pool would.
    closed: AtomicBool,
}

impl MemoryStore {
    /// The store `url` names: `memory:` (a new one) or `memory:NAME` (the one of that
    /// name in this process, made empty if none is held).
    ///
    /// # Errors
    /// [`StoreUnavailable`] if `url` is not a `memory:` URL.
    pub fn open(url: &str) -> Result<Self, StoreUnavailable> {
        let name = url
            .strip_prefix("memory:")
            .ok_or_else(|| StoreUnavailable::new(format!("not a memory store URL: {url}")))?
            .trim_start_matches('/');
        let state = if name.is_empty() { new_state() } else { named(name)? };
        Ok(Self { state, closed: AtomicBool::new(false) })
    }

    /// The state, locked; unavailable once this handle is closed.
    fn state(&self) -> Result<MutexGuard<'_, State>, StoreUnavailable> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(StoreUnavailable::new("the in-memory store was closed"));
        }
        // A panic while the lock was held may have left a change half made.
        self.state.lock().map_err(|_| StoreUnavailable::new("the in-memory store was left half-changed"))
    }
}

/// The store named `name` while one handle holds it, or a new one under that name.
fn named(name: &str) -> Result<Arc<Mutex<State>>, StoreUnavailable> {
    let mut named = NAMED.lock().map_err(|_| StoreUnavailable::new("the in-memory stores' list was poisoned"))?;
    named.retain(|_, state| state.strong_count() > 0);
    if let Some(state) = named.get(name).and_then(Weak::upgrade) {
        return Ok(state);
    }
    let state = new_state();
    named.insert(name.to_owned(), Arc::downgrade(&state));
    Ok(state)
}

/// A new, empty store. Its ATM set is dated when it is made, as the SQL stores' first
/// migration dates theirs.
fn new_state() -> Arc<Mutex<State>> {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let made_at = since_epoch.map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX));
    let feed = Feed { store: uuid::Uuid::new_v4().simple().to_string(), ..Feed::default() };
    Arc::new(Mutex::new(State { atms_updated: made_at, feed, ..State::default() }))
}

#[async_trait]
impl StoreLifecycle for MemoryStore {
    /// Nothing to migrate: the state is made as this build defines it.
    async fn migrate(&self) -> Result<(), StoreUnavailable> {
        self.state().map(drop)
    }

    async fn ping(&self) -> Result<(), StoreUnavailable> {
        self.state().map(drop)
    }

    /// Nothing to prepare: no files, no partitions.
    async fn prepare(&self, _now: i64) -> Result<(), StoreUnavailable> {
        self.state().map(drop)
    }

    async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl ViewSource for MemoryStore {
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable> {
        Ok(self.state()?.revisions)
    }

    async fn atms(&self) -> Result<AtmSet, StoreUnavailable> {
        Ok(self.state()?.atm_set())
    }
}

#[async_trait]
impl ClientRecords for MemoryStore {
    /// The registration time is not kept: no port reads it back.
    async fn insert(&self, client: &ClientRegistration, _now: i64) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let id = client.client_id.as_str();
        if state.clients.contains_key(id) {
            return Ok(false);
        }
        state.clients.insert(id.to_owned(), client.clone());
        state.revisions.clients += 1;
        Ok(true)
    }

    async fn all(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable> {
        Ok(self.state()?.clients.values().cloned().collect())
    }

    async fn set_status(&self, client_id: &ClientId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(client) = state.clients.get_mut(client_id.as_str()) else { return Ok(false) };
        client.status = status;
        state.revisions.clients += 1;
        Ok(true)
    }

    async fn change(&self, client_id: &ClientId, addresses: &ClientChanges) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(client) = state.clients.get_mut(client_id.as_str()) else { return Ok(false) };
        if let Some(uris) = &addresses.redirect_uris {
            client.redirect_uris.clone_from(uris);
        }
        if let Some(origins) = &addresses.allowed_origins {
            client.allowed_origins.clone_from(origins);
        }
        if let Some(policy) = addresses.dpop {
            client.dpop = policy;
        }
        state.revisions.clients += 1;
        Ok(true)
    }
}

#[async_trait]
impl ChannelRecords for MemoryStore {
    async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        if !state.channels.insert(scope.clone()) {
            return Ok(false);
        }
        state.revisions.access += 1;
        Ok(true)
    }

    async fn all(&self) -> Result<Vec<ChannelScope>, StoreUnavailable> {
        Ok(self.state()?.channels.iter().cloned().collect())
    }
}

#[async_trait]
impl WaitTimeRecords for MemoryStore {
    async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable> {
        let mut state = self.state()?;
        for estimate in estimates {
            state.wait_times.insert(estimate.estimate.branch, *estimate);
        }
        if !estimates.is_empty() {
            state.revisions.wait_times += 1;
        }
        Ok(())
    }

    async fn all(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable> {
        Ok(self.state()?.wait_times.values().copied().collect())
    }

    async fn edit<'a>(
        &self,
        plan: &mut EditPlan<'a, Vec<WaitTimeEstimate>, Vec<WaitTimeEstimate>>,
    ) -> Result<(), StoreUnavailable> {
        // Read, planned and written under the one lock, so that two edits take turns.
        let mut state = self.state()?;
        let writes = plan(&state.wait_times.values().copied().collect());
        for estimate in &writes {
            state.wait_times.insert(estimate.estimate.branch, *estimate);
        }
        if !writes.is_empty() {
            state.revisions.wait_times += 1;
        }
        Ok(())
    }
}

#[async_trait]
impl AtmRecords for MemoryStore {
    async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable> {
        let mut state = self.state()?;
        state.atms = atms.iter().map(|atm| (key_of(atm), atm.clone())).collect();
        state.atms_updated = now;
        state.revisions.atms += 1;
        // A whole new set is no change of the old one: every cursor starts again, a
        // cursor at the head too.
        state.feed.head += 1;
        state.feed.floor = state.feed.head;
        state.revisions.atm_changes += 1;
        Ok(())
    }

    async fn current(&self) -> Result<AtmSet, StoreUnavailable> {
        ViewSource::atms(self).await
    }

    async fn edit<'a>(&self, plan: &mut EditPlan<'a, AtmSet, AtmSetEdit>, now: i64) -> Result<(), StoreUnavailable> {
        // Read, planned and written under the one lock, so that two edits take turns.
        let mut state = self.state()?;
        let found = state.atm_set();
        let AtmSetEdit::Apply { upserts, removals } = plan(&found) else { return Ok(()) };
        for atm in found.closures_left_without_atm(&upserts, &removals) {
            state.atm_closures.remove(&atm);
            state.removal_fed.remove(&atm);
            state.revisions.atm_closures += 1;
        }
        for key in &removals {
            state.atms.remove(key);
        }
        let changes = set_changes(&found.closures, &upserts, &removals, now);
        for atm in upserts {
            state.atms.insert(key_of(&atm), atm);
        }
        state.atms_updated = now;
        state.revisions.atms += 1;
        state.append_changes(changes, now);
        Ok(())
    }
}

#[async_trait]
impl AtmClosureRecords for MemoryStore {
    async fn announce(&self, closure: &AtmClosure) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        if !state.atms.values().any(|atm| atm.identification == closure.atm.as_str()) {
            return Ok(false);
        }
        let now = closure.announced_at;
        // A closed ATM given a date to come is open again (its removal fed or not yet).
        let was_closed = state.atm_closures.get(&closure.atm).is_some_and(|old| old.in_effect(now));
        let reopened = was_closed && !closure.in_effect(now);
        if reopened {
            state.removal_fed.remove(&closure.atm);
        }
        state.atm_closures.insert(closure.atm.clone(), closure.clone());
        state.revisions.atm_closures += 1;
        state.feed_closure_change(&closure.atm, Some(closure), reopened, now);
        Ok(true)
    }

    async fn cancel(&self, atm: &AtmId, now: i64) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(old) = state.atm_closures.remove(atm) else { return Ok(false) };
        state.revisions.atm_closures += 1;
        state.removal_fed.remove(atm);
        let reopened = old.in_effect(now);
        state.feed_closure_change(atm, None, reopened, now);
        Ok(true)
    }
}

#[async_trait]
impl AtmChangeRecords for MemoryStore {
    async fn since(&self, after: i64, limit: usize) -> Result<ChangeLog, StoreUnavailable> {
        let state = self.state()?;
        let feed = &state.feed;
        let start = feed.changes.partition_point(|(logged, _)| logged.seq <= after);
        let changes = feed.changes.range(start..).take(limit).map(|(logged, _)| logged.clone()).collect();
        Ok(ChangeLog { store: feed.store.clone(), head: feed.head, floor: feed.floor, changes })
    }

    async fn feed_closures_due(&self, now: i64) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let due: Vec<AtmClosure> = (state.atm_closures.values())
            .filter(|closure| closure.in_effect(now) && !state.removal_fed.contains(&closure.atm))
            .cloned()
            .collect();
        let mut changes = Vec::new();
        for closure in &due {
            let at = EventTime::from_unix_micros(closure.starts_at().saturating_mul(1_000_000));
            let records = state.atms.keys().filter(|(_, id)| id == closure.atm.as_str());
            changes.extend(records.map(|key| AtmChange::removed(key, at)));
            state.removal_fed.insert(closure.atm.clone());
        }
        state.append_changes(changes, now);
        Ok(due.len() as u64)
    }

    async fn forget_before(&self, before: i64) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(last) = state.feed.changes.iter().filter(|(_, written)| *written < before).map(|(c, _)| c.seq).max()
        else {
            return Ok(0);
        };
        let held = state.feed.changes.len();
        state.feed.changes.retain(|(logged, _)| logged.seq > last);
        state.feed.floor = state.feed.floor.max(last);
        state.revisions.atm_changes += 1;
        Ok((held - state.feed.changes.len()) as u64)
    }
}

/// An ATM's identity within the set.
fn key_of(atm: &StoredAtm) -> AtmKey {
    (atm.brand.clone(), atm.identification.clone())
}

#[async_trait]
impl SigningKeyRecords for MemoryStore {
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
        let mut keys: Vec<SigningKey> = (self.state()?.keys.iter())
            .filter(|key| key.retired_at.is_none_or(|retired| retired > retired_after) && key.revoked_at.is_none())
            .cloned()
            .collect();
        newest_first(&mut keys);
        Ok(keys)
    }

    async fn all(&self) -> Result<Vec<SigningKey>, StoreUnavailable> {
        let mut keys = self.state()?.keys.clone();
        newest_first(&mut keys);
        Ok(keys)
    }

    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
        let mut state = self.state()?;
        place(&mut state, key, now)?;
        state.revisions.signing_keys += 1;
        Ok(())
    }

    async fn revoke(&self, kid: &str, now: i64, replacement: Option<SigningKey>) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(index) = state.keys.iter().position(|key| key.kid == kid && key.revoked_at.is_none()) else {
            return Ok(false);
        };
        state.keys[index].revoked_at = Some(now);
        if let Some(key) = &replacement
            && let Err(refused) = place(&mut state, key, now)
        {
            state.keys[index].revoked_at = None;
            return Err(refused);
        }
        state.revisions.signing_keys += 1;
        Ok(true)
    }
}

/// Newest activation first, then by id, as the SQL stores list them.
fn newest_first(keys: &mut [SigningKey]) {
    keys.sort_by(|a, b| b.activates_at.cmp(&a.activates_at).then_with(|| a.kid.cmp(&b.kid)));
}

/// Adds `key`, to sign from its activation: keys still waiting at `now` are dropped
/// (revoked ones stay, to be listed), and the one signing then retires at that moment.
/// Checked before anything changes, so that a refused key changes nothing.
fn place(state: &mut State, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
    if state.keys.iter().any(|kept| kept.kid == key.kid && (kept.activates_at <= now || kept.revoked_at.is_some())) {
        return Err(StoreUnavailable::new(format!("a signing key {} is stored already", key.kid)));
    }
    state.keys.retain(|kept| kept.activates_at <= now || kept.revoked_at.is_some());
    // The key signing at `now` (its retirement not yet reached: none, or the
    // activation of a waiting key just dropped) signs until the new one does.
    for kept in &mut state.keys {
        if kept.retired_at.is_none_or(|retired| retired > now) {
            kept.retired_at = Some(key.activates_at);
        }
    }
    state.keys.push(SigningKey { retired_at: None, revoked_at: None, ..key.clone() });
    Ok(())
}

#[async_trait]
impl KeyVault for MemoryStore {
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(key) = state.keys.iter_mut().find(|key| key.kid == kid && key.private_pkcs8 == from) else {
            return Ok(false);
        };
        key.private_pkcs8 = to.to_vec();
        state.revisions.signing_keys += 1;
        Ok(true)
    }

    /// Nothing to scrub: no file ever held the replaced bytes.
    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        self.state().map(drop)
    }
}

#[async_trait]
impl TokenArchive for MemoryStore {
    /// Token records are in no topic: recording them moves no counter.
    async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        let mut state = self.state()?;
        // All or none: every id and opaque token is checked before any is kept.
        let mut ids = HashSet::new();
        let mut opaque = HashSet::new();
        for token in tokens {
            if !ids.insert(token.token_id.as_str()) || state.tokens.contains_key(token.token_id.as_str()) {
                return Err(StoreUnavailable::new(format!("token id {} is recorded already", token.token_id.as_str())));
            }
            opaque.insert(token.opaque_token.as_str());
        }
        if opaque.len() < tokens.len() || state.tokens.values().any(|kept| opaque.contains(kept.token.opaque_token.as_str()))
        {
            return Err(StoreUnavailable::new("an opaque token is recorded already"));
        }
        for token in tokens {
            let record = TokenRecord { token: token.clone(), revoked_at: None };
            state.tokens.insert(token.token_id.as_str().to_owned(), record);
        }
        Ok(())
    }

    async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
        let state = self.state()?;
        Ok(state.tokens.values().find(|record| record.token.opaque_token.as_str() == opaque.as_str()).cloned())
    }

    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(record) = state.tokens.get_mut(token_id.as_str()).filter(|record| record.revoked_at.is_none()) else {
            return Ok(false);
        };
        record.revoked_at = Some(now);
        state.revisions.revocations += 1;
        Ok(true)
    }

    async fn revoke_live_of(&self, client_id: &ClientId, now: i64) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let mut revoked = 0;
        for record in state.tokens.values_mut() {
            if record.token.client_id == *client_id && record.revoked_at.is_none() && record.token.expires_at >= now {
                record.revoked_at = Some(now);
                revoked += 1;
            }
        }
        if revoked > 0 {
            state.revisions.revocations += 1;
        }
        Ok(revoked)
    }

    async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
        let state = self.state()?;
        let revoked = state.tokens.values().filter(|record| record.revoked_at.is_some() && record.token.expires_at >= now);
        Ok(revoked.map(|record| record.token.token_id.clone()).collect())
    }

    async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
        let state = self.state()?;
        let mut live: Vec<TokenRecord> =
            state.tokens.values().filter(|record| record.token.expires_at >= now).cloned().collect();
        live.sort_by(|a, b| (a.token.expires_at, a.token.token_id.as_str()).cmp(&(b.token.expires_at, b.token.token_id.as_str())));
        Ok(live)
    }

    /// Deletes exactly the records that expired before `before`; no counter moves (a
    /// revoked token that expired is no longer in the revocations the view serves).
    async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let held = state.tokens.len();
        state.tokens.retain(|_, record| record.token.expires_at >= before);
        Ok((held - state.tokens.len()) as u64)
    }
}

#[async_trait]
impl StoreInventory for MemoryStore {
    async fn contents(&self) -> Result<StoreContents, StoreUnavailable> {
        let state = self.state()?;
        Ok(StoreContents {
            clients: !state.clients.is_empty(),
            supported_channels: !state.channels.is_empty(),
            wait_times: !state.wait_times.is_empty(),
            atms: !state.atms.is_empty(),
            token_records: !state.tokens.is_empty(),
        })
    }
}

#[async_trait]
impl ImportLog for MemoryStore {
    /// Import counts are in no topic: counting one moves no counter.
    async fn record(&self, kind: ImportKind, outcome: ImportOutcome, at: i64) -> Result<(), StoreUnavailable> {
        let mut state = self.state()?;
        let tally = (state.imports.entry((kind.label(), outcome.label())))
            .or_insert(ImportTally { kind, outcome, runs: 0, last_at: at });
        tally.runs += 1;
        // The last time never moves back (a host whose clock is behind).
        tally.last_at = tally.last_at.max(at);
        Ok(())
    }

    async fn tally(&self) -> Result<Vec<ImportTally>, StoreUnavailable> {
        Ok(self.state()?.imports.values().copied().collect())
    }
}

/// Planned outages are in no topic: the status monitor reads them each refresh.
#[async_trait]
impl OutageRecords for MemoryStore {
    async fn schedule(&self, outage: &PlannedOutage, _now: i64) -> Result<(), StoreUnavailable> {
        let mut state = self.state()?;
        if state.outages.contains_key(&outage.id) {
            return Err(StoreUnavailable::refused(format!("an outage {} is stored already", outage.id)));
        }
        state.outages.insert(outage.id.clone(), outage.clone());
        Ok(())
    }

    async fn not_over(&self, now: i64) -> Result<Vec<PlannedOutage>, StoreUnavailable> {
        let state = self.state()?;
        Ok(domain::outage::not_over(&state.outages.values().cloned().collect::<Vec<_>>(), now))
    }

    async fn cancel(&self, id: &OutageId) -> Result<bool, StoreUnavailable> {
        Ok(self.state()?.outages.remove(id).is_some())
    }
}

/// Systems are in no topic: every use of one reads the store (`SystemRecords::find`).
#[async_trait]
impl SystemRecords for MemoryStore {
    /// The registration time is not kept: no port reads it back.
    async fn insert(&self, system: &SystemRegistration, _now: i64) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        if state.systems.contains_key(&system.id) {
            return Ok(false);
        }
        state.systems.insert(system.id.clone(), system.clone());
        Ok(true)
    }

    async fn all(&self) -> Result<Vec<SystemRegistration>, StoreUnavailable> {
        Ok(self.state()?.systems.values().cloned().collect())
    }

    async fn find(&self, id: &SystemId) -> Result<Option<SystemRegistration>, StoreUnavailable> {
        Ok(self.state()?.systems.get(id).cloned())
    }

    async fn set_status(&self, id: &SystemId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(system) = state.systems.get_mut(id) else { return Ok(false) };
        system.status = status;
        Ok(true)
    }

    async fn change(&self, id: &SystemId, changes: &SystemChanges) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let Some(system) = state.systems.get_mut(id) else { return Ok(false) };
        if let Some(keys) = &changes.keys {
            system.keys.clone_from(keys);
        }
        if let Some(scopes) = &changes.scopes {
            system.scopes.clone_from(scopes);
        }
        Ok(true)
    }

    async fn use_assertion(
        &self,
        system: &SystemId,
        jti: &AssertionId,
        expires_at: i64,
    ) -> Result<bool, StoreUnavailable> {
        let mut state = self.state()?;
        let key = (system.clone(), jti.as_str().to_owned());
        if state.assertions.contains_key(&key) {
            return Ok(false);
        }
        state.assertions.insert(key, expires_at);
        Ok(true)
    }

    async fn forget_assertions(&self, now: i64) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let held = state.assertions.len();
        state.assertions.retain(|_, expires_at| *expires_at >= now);
        Ok((held - state.assertions.len()) as u64)
    }
}

/// Queue events are in no topic: their readers ask for what came since they last read.
#[async_trait]
impl QueueEventRecords for MemoryStore {
    async fn append(
        &self,
        system: &SystemId,
        events: &[QueueEvent],
        received_at: EventTime,
    ) -> Result<Vec<bool>, StoreUnavailable> {
        // Under the one lock: all or none, and two appends take turns.
        let mut state = self.state()?;
        let mut new = Vec::with_capacity(events.len());
        for event in events {
            let stored = state.queue_events.contains_key(event.id.as_str());
            if !stored {
                let kept = ReceivedEvent { event: event.clone(), system: system.clone(), received_at };
                state.queue_events.insert(event.id.as_str().to_owned(), kept);
            }
            new.push(!stored);
        }
        if new.contains(&true) {
            state.revisions.queue_events += 1;
        }
        Ok(new)
    }

    async fn received_since(&self, since: EventTime) -> Result<Vec<ReceivedEvent>, StoreUnavailable> {
        let state = self.state()?;
        let mut found: Vec<ReceivedEvent> =
            state.queue_events.values().filter(|kept| kept.received_at >= since).cloned().collect();
        // The map is in id order already; a stable sort keeps it within a received time.
        found.sort_by_key(|kept| kept.received_at);
        Ok(found)
    }

    async fn happened_since(&self, since: EventTime) -> Result<Vec<QueueEvent>, StoreUnavailable> {
        let state = self.state()?;
        let mut found: Vec<QueueEvent> =
            state.queue_events.values().filter(|kept| kept.event.at >= since).map(|kept| kept.event.clone()).collect();
        found.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        Ok(found)
    }

    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let held = state.queue_events.len();
        state.queue_events.retain(|_, kept| kept.event.at >= before);
        Ok((held - state.queue_events.len()) as u64)
    }
}

#[async_trait]
impl AtmStateRecords for MemoryStore {
    async fn apply(
        &self,
        _system: &SystemId,
        events: &[AtmStateEvent],
        received_at: EventTime,
        fresh_minutes: f64,
    ) -> Result<Vec<StateOutcome>, StoreUnavailable> {
        // Under the one lock: all or none, and two writers take turns.
        let mut state = self.state()?;
        let mut outcomes = vec![StateOutcome::Duplicate; events.len()];
        let mut in_order: Vec<usize> = (0..events.len()).collect();
        in_order.sort_by(|&a, &b| (&events[a].atm, events[a].order_key()).cmp(&(&events[b].atm, events[b].order_key())));
        let mut applied = Vec::new();
        for index in in_order {
            let event = &events[index];
            if state.atm_state_events.contains_key(event.id.as_str()) {
                continue;
            }
            state.atm_state_events.insert(event.id.as_str().to_owned(), event.at);
            outcomes[index] = match AtmState::after(state.atm_states.get(&event.atm), event, fresh_minutes) {
                Some(after) => {
                    state.atm_states.insert(event.atm.clone(), after);
                    applied.push(&event.atm);
                    StateOutcome::Applied
                }
                None => StateOutcome::Superseded,
            };
        }
        if !applied.is_empty() {
            state.revisions.atm_states += 1;
            applied.sort();
            applied.dedup();
            let changed: Vec<(&AtmId, AtmState)> =
                applied.into_iter().filter_map(|atm| Some((atm, state.atm_states.get(atm)?.clone()))).collect();
            let closures: Vec<AtmClosure> = state.atm_closures.values().cloned().collect();
            let changes = state_changes(&changed, &closures, received_at);
            state.append_changes(changes, received_at.unix_micros().div_euclid(1_000_000));
        }
        Ok(outcomes)
    }

    async fn all(&self) -> Result<Vec<(AtmId, AtmState)>, StoreUnavailable> {
        let state = self.state()?;
        Ok(state.atm_states.iter().map(|(id, kept)| (id.clone(), kept.clone())).collect())
    }

    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable> {
        let mut state = self.state()?;
        let held = state.atm_state_events.len();
        state.atm_state_events.retain(|_, at| *at >= before);
        Ok((held - state.atm_state_events.len()) as u64)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_named_store_is_shared_by_every_open_of_its_url_while_one_is_held() {
        let first = Store::open("memory:shared").await.unwrap();
        first.channels.allow(&domain::testing::scope("WEB")).await.unwrap();
        let second = Store::open("memory:shared").await.unwrap();
        assert_eq!(second.channels.all().await.unwrap().len(), 1, "the second open sees the first's write");
        drop((first, second));
        let later = Store::open("memory:shared").await.unwrap();
        assert!(later.channels.all().await.unwrap().is_empty(), "gone once no handle held it");
    }

    #[tokio::test]
    async fn an_unnamed_store_is_new_at_each_open() {
        let first = Store::open("memory:").await.unwrap();
        first.channels.allow(&domain::testing::scope("WEB")).await.unwrap();
        let second = Store::open("memory:").await.unwrap();
        assert!(second.channels.all().await.unwrap().is_empty());
    }
}
