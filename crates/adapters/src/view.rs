//! An in-memory view of the store for the request paths.
//!
//! Per-request SQL through a pool costs about fifteen times what parsing and writing the
//! JSON of a 100-branch request costs (shared/DEPENDENCIES.md), so requests read this
//! view instead. A refresher polls the store's change counters (one tiny query) every
//! `refresh_interval` and reloads only the topics whose counter moved, whoever wrote the
//! change. The view is therefore at most one interval plus one reload stale.
//!
//! When the store cannot be reached the view keeps serving what it last loaded for up to
//! `max_staleness`; past that it answers [`StoreUnavailable`], because it can no longer
//! vouch for its data (the API then says 500 or 503), until the store answers again.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tracing::Instrument as _;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use domain::atm_catalog::AtmCatalog;
use domain::atm_feed::FeedTail;
use domain::atm_state::AtmStates;
use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use domain::client::{ChannelScope, ClientId, ClientRegistration, ClientStatus};
use domain::dpop::DpopPolicy;
use domain::ports::{
    AccessPolicy, AtmDirectory, AtmFeedDirectory, AtmStateDirectory, ClientRegistry, Clock, StoreUnavailable,
    TokenLedger, WaitTimeStore,
};
use domain::token::{IssuedToken, SigningKey, TokenId};
use tokio::sync::Mutex;

use crate::store::{Notice, Revisions, Store};
use crate::token_writer::TokenWriter;

/// Wait times and when each was estimated, indexed by branch id: the id space is five
/// digits, so a dense table of 100,000 slots (1.6 MB) answers any look-up with one
/// array read.
struct WaitTable(Box<[Option<(WaitTime, i64)>]>);

impl WaitTable {
    fn empty() -> Self {
        Self(vec![None; BranchId::SPACE].into_boxed_slice())
    }
}

/// How fresh the wait-time estimates the view holds are, at some moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeFreshness {
    /// Branches whose estimate is older than the maximum age: answered as unknown.
    pub stale: usize,
    /// When the newest estimate was made (seconds since the epoch), if any is held: a
    /// feed that stopped shows as this falling behind.
    pub newest: Option<i64>,
}

/// How long a retired signing key stays published after it stopped signing: the
/// longest a token it signed can live, plus a margin for instances that switch keys up
/// to one refresh later.
fn key_publication_window(token_lifetime: Duration, refresh_interval: Duration) -> i64 {
    (token_lifetime + refresh_interval * 2 + Duration::from_secs(60)).as_secs() as i64
}

/// Counts a reload of `topic` for the metrics.
fn reloaded(topic: &'static str) {
    metrics::counter!("branch_atm_view_reloads_total", "topic" => topic).increment(1);
}

/// How long to wait before listening for change notices again after the feed failed.
const RESUBSCRIBE_AFTER: Duration = Duration::from_secs(1);

/// How the view keeps itself current.
#[derive(Debug, Clone, Copy)]
pub struct ViewSettings {
    /// The access-token lifetime (how long retired signing keys stay published).
    pub token_lifetime: Duration,
    /// How often the store's change counters are polled.
    pub refresh_interval: Duration,
    /// How long the view serves without hearing from the store before it answers
    /// [`StoreUnavailable`].
    pub max_staleness: Duration,
    /// How long after its newest event an ATM's state is shown `Unknown`, in minutes.
    pub atm_state_fresh_minutes: f64,
}

/// What signs and verifies with the store's signing keys: the view hands it every
/// published key whenever they change (the JWT adapter, `crate::jwt::JwtTokens`).
pub trait KeyRing: Send + Sync {
    /// Replaces the keys held with `keys`.
    ///
    /// # Errors
    /// Why a stored key is unusable; the keys held before stay.
    fn install(&self, keys: &[SigningKey]) -> Result<(), String>;
}

/// The registered clients, by id, and the origins the active ones allow.
#[derive(Default)]
struct ClientTable {
    by_id: foldhash::HashMap<ClientId, ClientRegistration>,
    origins: HashSet<String>,
}

impl ClientTable {
    fn of(clients: Vec<ClientRegistration>) -> Self {
        let origins = clients
            .iter()
            .filter(|client| client.status == ClientStatus::Active)
            .flat_map(ClientRegistration::origins)
            .map(|origin| origin.as_str().to_owned())
            .collect();
        Self { by_id: clients.into_iter().map(|c| (c.client_id.clone(), c)).collect(), origins }
    }
}

/// The in-memory view; implements the read ports and the token ledger.
pub struct StoreView {
    store: Store,
    keys: Arc<dyn KeyRing>,
    clock: Arc<dyn Clock>,
    writer: TokenWriter,
    key_window_seconds: i64,
    max_staleness: Duration,
    atm_state_fresh_minutes: f64,
    started: Instant,
    /// Milliseconds after `started` of the last refresh the store answered.
    refreshed_at: AtomicU64,
    seen: Mutex<Option<Revisions>>,
    atms: ArcSwap<AtmCatalog>,
    clients: ArcSwap<ClientTable>,
    channels: ArcSwap<foldhash::HashSet<ChannelScope>>,
    wait_times: ArcSwap<WaitTable>,
    revoked: ArcSwap<foldhash::HashSet<TokenId>>,
    atm_states: ArcSwap<AtmStates>,
    /// The newest changes of the ATMs' feed.
    feed: ArcSwap<FeedTail>,
    /// The queue event log's counter as last seen: the view holds no events, it tells
    /// whoever follows the log ([`StoreView::queue_events_moved`]) that it moved.
    queue_events: tokio::sync::watch::Sender<i64>,
}

impl StoreView {
    /// Loads everything from `store` (signing keys into `keys`) and starts the token
    /// writer. Call [`StoreView::spawn_refresher`] to keep it current.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the first load fails.
    pub async fn load(
        store: Store,
        keys: Arc<dyn KeyRing>,
        clock: Arc<dyn Clock>,
        settings: ViewSettings,
    ) -> Result<Arc<Self>, StoreUnavailable> {
        let view = Arc::new(Self {
            writer: TokenWriter::spawn(Arc::clone(&store.tokens)),
            store,
            keys,
            clock,
            key_window_seconds: key_publication_window(settings.token_lifetime, settings.refresh_interval),
            max_staleness: settings.max_staleness,
            atm_state_fresh_minutes: settings.atm_state_fresh_minutes,
            started: Instant::now(),
            refreshed_at: AtomicU64::new(0),
            seen: Mutex::new(None),
            atms: ArcSwap::from_pointee(AtmCatalog::empty(0)),
            clients: ArcSwap::from_pointee(ClientTable::default()),
            channels: ArcSwap::from_pointee(foldhash::HashSet::default()),
            wait_times: ArcSwap::from_pointee(WaitTable::empty()),
            revoked: ArcSwap::from_pointee(foldhash::HashSet::default()),
            atm_states: ArcSwap::from_pointee(AtmStates::default()),
            feed: ArcSwap::from_pointee(FeedTail::default()),
            queue_events: tokio::sync::watch::Sender::new(0),
        });
        view.refresh().await?;
        Ok(view)
    }

    /// Reloads every topic whose change counter moved since the last refresh.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the store could not be read; the view is unchanged for
    /// the topics that failed and they are retried next time.
    pub async fn refresh(&self) -> Result<(), StoreUnavailable> {
        // A trace of its own (sampled at the configured ratio), whatever asked for it.
        let span = tracing::info_span!(target: domain::TRACE_ROOT, parent: None, "view refresh");
        async {
            let mut seen = self.seen.lock().await;
            self.refresh_from(&mut seen).await
        }
        .instrument(span)
        .await
    }

    /// Reloads every topic whose counter differs from `seen` (all of them when `seen` is
    /// `None`), and records what it reloaded.
    async fn refresh_from(&self, seen: &mut Option<Revisions>) -> Result<(), StoreUnavailable> {
        let now = self.store.view.revisions().await?;
        let before = *seen;
        let moved = |pick: fn(&Revisions) -> i64| before.is_none_or(|old| pick(&old) != pick(&now));
        // What is recorded as seen only moves when every moved topic reloaded; a failed
        // load leaves the whole refresh to be retried.
        let mut done = before.unwrap_or_default();

        if moved(|r| r.clients) {
            let clients = self.store.clients.all().await?;
            self.clients.store(Arc::new(ClientTable::of(clients)));
            done.clients = now.clients;
            reloaded("clients");
        }
        if moved(|r| r.access) {
            let channels = self.store.channels.all().await?;
            self.channels.store(Arc::new(channels.into_iter().collect()));
            done.access = now.access;
            reloaded("access");
        }
        if moved(|r| r.wait_times) {
            let mut table = WaitTable::empty();
            let rows = self.store.wait_times.all().await?;
            metrics::gauge!("branch_atm_wait_time_entries").set(rows.len() as f64);
            for row in rows {
                table.0[row.estimate.branch.index()] = Some((row.estimate.wait, row.estimated_at));
            }
            self.wait_times.store(Arc::new(table));
            done.wait_times = now.wait_times;
            reloaded("wait_times");
        }
        let unix_now = self.clock.unix_now();
        if moved(|r| r.revocations) {
            let revoked = self.store.tokens.revoked_live(unix_now).await?;
            self.revoked.store(Arc::new(revoked.into_iter().collect()));
            done.revocations = now.revocations;
            reloaded("revocations");
        }
        if moved(|r| r.signing_keys) {
            let keys = self.store.keys.published(unix_now - self.key_window_seconds).await?;
            self.keys.install(&keys).map_err(StoreUnavailable::new)?;
            done.signing_keys = now.signing_keys;
            reloaded("signing_keys");
        }
        // Closures apply over the set: it is loaded again when either changed, or when a
        // closure's date has come.
        let closure_due = self.atms.load().next_closure().is_some_and(|at| unix_now >= at);
        if moved(|r| r.atms) || moved(|r| r.atm_closures) || closure_due {
            let set = self.store.view.atms().await?;
            metrics::gauge!("branch_atm_atms").set(set.atms.len() as f64);
            let catalog =
                AtmCatalog::closing(set.atms, set.last_updated, set.closures, unix_now).at_feed_head(set.feed_head);
            let closed = catalog.len() < catalog.entries();
            self.atms.store(Arc::new(catalog));
            if closed {
                // The feed says `removed` of an ATM once its closure is in effect: written
                // once, by whichever instance sees it first. Not a reason to fail the
                // refresh: the next reload of the set tries again (any instance's), and
                // the server's hourly upkeep.
                if let Err(error) = self.store.changes.feed_closures_due(unix_now).await {
                    tracing::warn!(%error, "the removal of a closed ATM could not be fed; tried again later");
                }
            }
            (done.atms, done.atm_closures) = (now.atms, now.atm_closures);
            reloaded("atms");
        }
        if moved(|r| r.atm_states) {
            let states = self.store.atm_states.all().await?;
            metrics::gauge!("branch_atm_atm_states").set(states.len() as f64);
            self.atm_states.store(Arc::new(AtmStates::new(states, self.atm_state_fresh_minutes)));
            done.atm_states = now.atm_states;
            reloaded("atm_states");
        }
        if moved(|r| r.atm_changes) {
            self.follow_feed().await?;
            done.atm_changes = now.atm_changes;
            reloaded("atm_changes");
        }
        if moved(|r| r.queue_events) {
            self.queue_events.send_replace(now.queue_events);
            done.queue_events = now.queue_events;
        }
        *seen = Some(done);
        self.refreshed_at.store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Reads the feed's changes after those held, or its newest [`FeedTail::MOST`] when
    /// what is held does not follow on (a first load, another store, a floor passed).
    async fn follow_feed(&self) -> Result<(), StoreUnavailable> {
        const READ: usize = 1_000;
        let held = self.feed.load_full();
        let mut tail = (!held.store.is_empty()).then(|| FeedTail::clone(&held));
        // Bounded: a tail that falls this far behind is read whole instead.
        let mut caught_up = false;
        for _ in 0..FeedTail::MOST / READ {
            let Some(current) = &tail else { break };
            let log = self.store.changes.since(current.head, READ).await?;
            caught_up = log.changes.len() < READ;
            tail = current.followed_by(log);
            if caught_up {
                break;
            }
        }
        if !caught_up {
            tail = None;
        }
        let tail = match tail {
            Some(tail) => tail,
            None => {
                let top = self.store.changes.since(i64::MAX, 0).await?;
                let from = top.head.saturating_sub(FeedTail::MOST as i64).max(top.floor);
                FeedTail::of(self.store.changes.since(from, FeedTail::MOST).await?, from)
            }
        };
        self.feed.store(Arc::new(tail));
        Ok(())
    }

    /// Reloads every topic, whatever the change counters say: after notices may have
    /// been lost, or the counters may not have moved as they should (a database restored
    /// from a backup has older counters than the view has seen).
    ///
    /// # Errors
    /// As [`StoreView::refresh`].
    pub async fn reload_all(&self) -> Result<(), StoreUnavailable> {
        let mut seen = self.seen.lock().await;
        *seen = None;
        self.refresh_from(&mut seen).await
    }

    /// Marks a change each time a refresh finds the queue event log's counter moved
    /// (another instance, or this one, stored an event): the log need only be read then.
    pub fn queue_events_moved(&self) -> tokio::sync::watch::Receiver<i64> {
        self.queue_events.subscribe()
    }

    /// How many of the estimates held were made before `oldest_fresh` (seconds since
    /// the epoch), and when the newest was made: for the metrics.
    pub fn wait_time_freshness(&self, oldest_fresh: i64) -> WaitTimeFreshness {
        let table = self.wait_times.load();
        let mut freshness = WaitTimeFreshness { stale: 0, newest: None };
        for (_, estimated_at) in table.0.iter().flatten() {
            freshness.stale += usize::from(*estimated_at < oldest_fresh);
            freshness.newest = freshness.newest.max(Some(*estimated_at));
        }
        freshness
    }

    /// How long ago the store last answered a refresh.
    pub fn age(&self) -> Duration {
        self.started.elapsed().saturating_sub(Duration::from_millis(self.refreshed_at.load(Ordering::Relaxed)))
    }

    /// Whether the last write of token records failed and none has succeeded since.
    pub fn token_writes_failing(&self) -> bool {
        self.writer.is_failing()
    }

    /// Whether the view still vouches for what it holds (the store answered a refresh
    /// within `max_staleness`).
    pub fn is_current(&self) -> bool {
        self.vouch().is_ok()
    }

    /// Fails once the store has not answered a refresh for longer than `max_staleness`.
    fn vouch(&self) -> Result<(), StoreUnavailable> {
        let since =
            self.started.elapsed().saturating_sub(Duration::from_millis(self.refreshed_at.load(Ordering::Relaxed)));
        if since > self.max_staleness {
            return Err(StoreUnavailable::new(format!("the store has not answered for {} ms", since.as_millis())));
        }
        Ok(())
    }

    /// Reloads what changed as soon as the store says something did, when it says so
    /// (PostgreSQL's notices; see [`crate::store::ViewSource::subscribe`]); the poll of
    /// [`StoreView::spawn_refresher`] stays as the safety net. Each time the feed is
    /// established again after a loss, notices sent meanwhile are lost, so everything is
    /// reloaded. With a store that pushes nothing, the task ends at once.
    pub fn spawn_listener(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let view = Arc::clone(self);
        tokio::spawn(async move {
            let mut first = true;
            // Since when the feed is lost, if it is: said once when it goes, once when it
            // is back, not at every attempt in between.
            let mut lost_since: Option<Instant> = None;
            loop {
                let mut feed = match view.store.view.subscribe().await {
                    Ok(Some(feed)) => feed,
                    Ok(None) => return,
                    Err(error) => {
                        if lost_since.is_none() {
                            lost_since = Some(Instant::now());
                            tracing::warn!(%error, "cannot listen for the store's change notices; polling only until they are back");
                        }
                        tokio::time::sleep(RESUBSCRIBE_AFTER).await;
                        continue;
                    }
                };
                // The view was just loaded when the first feed starts: what changed
                // since is caught by the counters. Any later feed follows a loss.
                if first {
                    first = false;
                    if let Err(error) = view.refresh().await {
                        tracing::warn!(%error, "the in-memory view could not be refreshed");
                    }
                } else {
                    view.reload_or_warn().await;
                }
                if let Some(since) = lost_since.take() {
                    let seconds = since.elapsed().as_secs_f64();
                    tracing::info!(
                        after_seconds = seconds,
                        "listening for the store's change notices again; everything reloaded"
                    );
                }
                loop {
                    match feed.next().await {
                        Ok(Notice::Changed) => {
                            if let Err(error) = view.refresh().await {
                                tracing::warn!(%error, "the in-memory view could not be refreshed on a change notice");
                            }
                        }
                        Ok(Notice::Reconnected) => view.reload_or_warn().await,
                        Err(error) => {
                            crate::token_writer::store_error("change_notices");
                            tracing::warn!(%error, "lost the store's change notices; polling only until they are back");
                            lost_since = Some(Instant::now());
                            break;
                        }
                    }
                }
                tokio::time::sleep(RESUBSCRIBE_AFTER).await;
            }
        })
    }

    async fn reload_or_warn(&self) {
        if let Err(error) = self.reload_all().await {
            tracing::warn!(%error, "the in-memory view could not be reloaded");
        }
    }

    /// Refreshes every `interval` until the process ends; failures are logged and
    /// retried at the next tick.
    pub fn spawn_refresher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let view = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // Since when refreshes fail, if they do: said when they start failing and
            // when they succeed again, not at every tick in between (the metric counts
            // each failure).
            let mut failing_since: Option<Instant> = None;
            loop {
                ticks.tick().await;
                match view.refresh().await {
                    Ok(()) => {
                        if let Some(since) = failing_since.take() {
                            let seconds = since.elapsed().as_secs_f64();
                            tracing::info!(after_seconds = seconds, "the in-memory view is refreshed again");
                        }
                    }
                    Err(error) => {
                        crate::token_writer::store_error("view_refresh");
                        if failing_since.is_none() {
                            failing_since = Some(Instant::now());
                            tracing::warn!(error = %error, "the in-memory view could not be refreshed; trying again every refresh interval");
                        }
                    }
                }
            }
        })
    }
}

#[async_trait]
impl ClientRegistry for StoreView {
    async fn find(&self, client_id: &ClientId) -> Result<Option<ClientRegistration>, StoreUnavailable> {
        self.vouch()?;
        Ok(self.clients.load().by_id.get(client_id).cloned())
    }

    async fn active_policy(&self, client_id: &ClientId) -> Result<Option<DpopPolicy>, StoreUnavailable> {
        self.vouch()?;
        let clients = self.clients.load();
        Ok(clients
            .by_id
            .get(client_id)
            .filter(|client| client.status == ClientStatus::Active)
            .map(|client| client.dpop))
    }

    async fn origin_registered(&self, origin: &str) -> Result<bool, StoreUnavailable> {
        self.vouch()?;
        Ok(self.clients.load().origins.contains(origin))
    }
}

#[async_trait]
impl AccessPolicy for StoreView {
    async fn is_supported(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
        self.vouch()?;
        Ok(self.channels.load().contains(scope))
    }
}

#[async_trait]
impl WaitTimeStore for StoreView {
    async fn wait_times(&self, branches: &[BranchId]) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable> {
        self.vouch()?;
        let table = self.wait_times.load();
        Ok(branches
            .iter()
            .filter_map(|branch| {
                let (wait, estimated_at) = table.0[branch.index()]?;
                Some(WaitTimeEstimate { estimate: BranchWaitTime { branch: *branch, wait }, estimated_at })
            })
            .collect())
    }
}

#[async_trait]
impl TokenLedger for StoreView {
    async fn record(&self, token: IssuedToken) -> Result<(), StoreUnavailable> {
        self.writer.record(token).await
    }

    async fn is_revoked(&self, token_id: &TokenId) -> Result<bool, StoreUnavailable> {
        self.vouch()?;
        Ok(self.revoked.load().contains(token_id))
    }

    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
        let revoked = self.store.tokens.revoke(token_id, now).await?;
        if revoked {
            // At once here; the other instances (and this one's next load) read it from
            // the store.
            self.revoked.rcu(|held| {
                let mut held = HashSet::clone(held);
                held.insert(token_id.clone());
                held
            });
        }
        Ok(revoked)
    }
}

#[async_trait]
impl AtmDirectory for StoreView {
    async fn catalog(&self) -> Result<Arc<AtmCatalog>, StoreUnavailable> {
        self.vouch()?;
        Ok(self.atms.load_full())
    }
}

#[async_trait]
impl AtmFeedDirectory for StoreView {
    async fn tail(&self) -> Result<Arc<FeedTail>, StoreUnavailable> {
        self.vouch()?;
        Ok(self.feed.load_full())
    }
}

#[async_trait]
impl AtmStateDirectory for StoreView {
    async fn states(&self) -> Result<Arc<AtmStates>, StoreUnavailable> {
        self.vouch()?;
        Ok(self.atm_states.load_full())
    }
}
