//! For other crates' tests (the `testing` feature): a store that can be taken down and
//! brought back, tokens signed with a store's real keys but claims of the test's
//! choosing, and a fresh store of any registered backend, picked by name
//! ([`fresh_store_url`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::atm_closure::AtmClosure;
use domain::atm_feed::ChangeLog;
use domain::atm_state::{AtmId, AtmState, AtmStateEvent};
use domain::branch::WaitTimeEstimate;
use domain::client::{ChannelScope, ClientChanges, ClientId, ClientRegistration, ClientStatus};
use domain::outage::{OutageId, PlannedOutage};
use domain::ports::{
    AtmChangeRecords, AtmClosureRecords, AtmRecords, AtmStateRecords, ChannelRecords, ClientRecords, Clock, EditPlan,
    ImportKind, ImportLog, ImportOutcome, ImportTally, OutageRecords, QueueEventRecords, ReceivedEvent,
    SigningKeyRecords, StateOutcome, StoreInventory, StoreUnavailable, SystemRecords, TokenArchive, TokenSigner as _,
    WaitTimeRecords,
};
use domain::posted::EventTime;
use domain::queue::event::QueueEvent;
use domain::store_contents::StoreContents;
use domain::system::{AssertionId, SystemChanges, SystemId, SystemRegistration};
use domain::token::{AccessClaims, IssuedToken, OpaqueToken, SigningKey, TokenId, TokenRecord};

use crate::jwt::JwtTokens;
use crate::registry;
pub use crate::registry::{FreshStore, RunSql, TestSupport};
use crate::store::{AtmSet, KeyVault, Revisions, Store, StoreLifecycle, ViewSource};
use crate::system::SystemClock;

/// Takes a [`Store`] made by [`with_outage_switch`] down and brings it back, as a
/// database restarted under the service would (crates.io's chaos proxy, at the store).
#[derive(Clone, Debug, Default)]
pub struct OutageSwitch(Arc<AtomicBool>);

impl OutageSwitch {
    /// From now on every call to the store fails as an unreachable one would.
    pub fn take_down(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// From now on the store answers again.
    pub fn bring_back(&self) {
        self.0.store(false, Ordering::SeqCst);
    }

    fn check(&self) -> Result<(), StoreUnavailable> {
        if self.0.load(Ordering::SeqCst) {
            return Err(StoreUnavailable::new("the store is down (a test's outage)"));
        }
        Ok(())
    }
}

/// `store` behind a switch that can take it down and bring it back.
pub fn with_outage_switch(store: Store) -> (Store, OutageSwitch) {
    let switch = OutageSwitch::default();
    (Store::of(Switched { inner: store, switch: switch.clone() }), switch)
}

struct Switched {
    inner: Store,
    switch: OutageSwitch,
}

#[async_trait]
impl StoreLifecycle for Switched {
    async fn migrate(&self) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.lifecycle.migrate().await
    }
    async fn ping(&self) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.lifecycle.ping().await
    }
    async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.lifecycle.prepare(now).await
    }
    async fn close(&self) {
        self.inner.lifecycle.close().await;
    }
}

#[async_trait]
impl ViewSource for Switched {
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable> {
        self.switch.check()?;
        self.inner.view.revisions().await
    }
    async fn atms(&self) -> Result<AtmSet, StoreUnavailable> {
        self.switch.check()?;
        self.inner.view.atms().await
    }
    async fn subscribe(&self) -> Result<Option<Box<dyn crate::store::ChangeFeed>>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.view.subscribe().await
    }
}

#[async_trait]
impl ClientRecords for Switched {
    async fn insert(&self, client: &ClientRegistration, now: i64) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.clients.insert(client, now).await
    }
    async fn all(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.clients.all().await
    }
    async fn set_status(&self, client_id: &ClientId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.clients.set_status(client_id, status).await
    }
    async fn change(&self, client_id: &ClientId, addresses: &ClientChanges) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.clients.change(client_id, addresses).await
    }
}

#[async_trait]
impl ChannelRecords for Switched {
    async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.channels.allow(scope).await
    }
    async fn all(&self) -> Result<Vec<ChannelScope>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.channels.all().await
    }
}

#[async_trait]
impl WaitTimeRecords for Switched {
    async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.wait_times.upsert(estimates).await
    }
    async fn all(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.wait_times.all().await
    }
    async fn edit<'a>(
        &self,
        plan: &mut EditPlan<'a, Vec<WaitTimeEstimate>, Vec<WaitTimeEstimate>>,
    ) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.wait_times.edit(plan).await
    }
}

#[async_trait]
impl AtmRecords for Switched {
    async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.atms.replace(atms, now).await
    }
    async fn current(&self) -> Result<AtmSet, StoreUnavailable> {
        self.switch.check()?;
        self.inner.atms.current().await
    }
    async fn edit<'a>(
        &self,
        plan: &mut EditPlan<'a, AtmSet, domain::ports::AtmSetEdit>,
        now: i64,
    ) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.atms.edit(plan, now).await
    }
}

#[async_trait]
impl SigningKeyRecords for Switched {
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.keys.published(retired_after).await
    }
    async fn all(&self) -> Result<Vec<SigningKey>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.keys.all().await
    }
    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.keys.schedule(key, now).await
    }
    async fn revoke(&self, kid: &str, now: i64, replacement: Option<SigningKey>) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.keys.revoke(kid, now, replacement).await
    }
}

#[async_trait]
impl KeyVault for Switched {
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.vault.reseal(kid, from, to).await
    }
    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.vault.scrub().await
    }
}

#[async_trait]
impl TokenArchive for Switched {
    async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.record(tokens).await
    }
    async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.find(opaque).await
    }
    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.revoke(token_id, now).await
    }
    async fn revoke_live_of(&self, client_id: &ClientId, now: i64) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.revoke_live_of(client_id, now).await
    }
    async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.revoked_live(now).await
    }
    async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.live(now).await
    }
    async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.tokens.purge_expired(before).await
    }
}

#[async_trait]
impl StoreInventory for Switched {
    async fn contents(&self) -> Result<StoreContents, StoreUnavailable> {
        self.switch.check()?;
        self.inner.inventory.contents().await
    }
}

#[async_trait]
impl ImportLog for Switched {
    async fn record(&self, kind: ImportKind, outcome: ImportOutcome, at: i64) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.imports.record(kind, outcome, at).await
    }

    async fn tally(&self) -> Result<Vec<ImportTally>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.imports.tally().await
    }
}

#[async_trait]
impl OutageRecords for Switched {
    async fn schedule(&self, outage: &PlannedOutage, now: i64) -> Result<(), StoreUnavailable> {
        self.switch.check()?;
        self.inner.outages.schedule(outage, now).await
    }

    async fn not_over(&self, now: i64) -> Result<Vec<PlannedOutage>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.outages.not_over(now).await
    }

    async fn cancel(&self, id: &OutageId) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.outages.cancel(id).await
    }
}

#[async_trait]
impl SystemRecords for Switched {
    async fn insert(&self, system: &SystemRegistration, now: i64) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.insert(system, now).await
    }

    async fn all(&self) -> Result<Vec<SystemRegistration>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.all().await
    }

    async fn find(&self, id: &SystemId) -> Result<Option<SystemRegistration>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.find(id).await
    }

    async fn set_status(&self, id: &SystemId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.set_status(id, status).await
    }

    async fn change(&self, id: &SystemId, changes: &SystemChanges) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.change(id, changes).await
    }

    async fn use_assertion(
        &self,
        system: &SystemId,
        jti: &AssertionId,
        expires_at: i64,
    ) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.use_assertion(system, jti, expires_at).await
    }

    async fn forget_assertions(&self, now: i64) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.systems.forget_assertions(now).await
    }
}

#[async_trait]
impl QueueEventRecords for Switched {
    async fn append(
        &self,
        system: &SystemId,
        events: &[QueueEvent],
        received_at: EventTime,
    ) -> Result<Vec<bool>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.queue_events.append(system, events, received_at).await
    }

    async fn received_since(&self, since: EventTime) -> Result<Vec<ReceivedEvent>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.queue_events.received_since(since).await
    }

    async fn happened_since(&self, since: EventTime) -> Result<Vec<QueueEvent>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.queue_events.happened_since(since).await
    }

    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.queue_events.forget_before(before).await
    }
}

#[async_trait]
impl AtmStateRecords for Switched {
    async fn apply(
        &self,
        system: &SystemId,
        events: &[AtmStateEvent],
        received_at: EventTime,
        fresh_minutes: f64,
    ) -> Result<Vec<StateOutcome>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.atm_states.apply(system, events, received_at, fresh_minutes).await
    }

    async fn all(&self) -> Result<Vec<(AtmId, AtmState)>, StoreUnavailable> {
        self.switch.check()?;
        self.inner.atm_states.all().await
    }

    async fn forget_before(&self, before: EventTime) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.atm_states.forget_before(before).await
    }
}

#[async_trait]
impl AtmClosureRecords for Switched {
    async fn announce(&self, closure: &AtmClosure) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.closures.announce(closure).await
    }

    async fn cancel(&self, atm: &AtmId, now: i64) -> Result<bool, StoreUnavailable> {
        self.switch.check()?;
        self.inner.closures.cancel(atm, now).await
    }
}

#[async_trait]
impl AtmChangeRecords for Switched {
    async fn since(&self, after: i64, limit: usize) -> Result<ChangeLog, StoreUnavailable> {
        self.switch.check()?;
        self.inner.changes.since(after, limit).await
    }

    async fn feed_closures_due(&self, now: i64) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.changes.feed_closures_due(now).await
    }

    async fn forget_before(&self, before: i64) -> Result<u64, StoreUnavailable> {
        self.switch.check()?;
        self.inner.changes.forget_before(before).await
    }
}

/// A token signed for `issuer` and `audience` with `store`'s key `kid` (by default the
/// one signing now, by the system clock), with `claims` the service would never issue
/// (expired, not yet valid, another issuer, signed after the key's retirement…).
///
/// # Panics
/// If the store has no such key or cannot be read (a test's set-up is wrong).
#[allow(clippy::expect_used)]
pub async fn forge_token(
    store: &Store,
    kid: Option<&str>,
    issuer: &str,
    audience: &str,
    claims: &AccessClaims,
) -> String {
    let now = SystemClock.unix_now();
    let keys = store.keys.all().await.expect("the store's keys");
    let key = keys
        .into_iter()
        .find(|key| kid.map_or_else(|| key.signs_at(now), |kid| key.kid == kid))
        .expect("the key to forge with");
    // Installed alone, signing whatever the time.
    let key = SigningKey { activates_at: i64::MIN, retired_at: None, revoked_at: None, ..key };
    let signer = JwtTokens::new(issuer, audience, Duration::MAX, Arc::new(SystemClock));
    signer.install(&[key]).expect("a usable key");
    signer.sign(claims).expect("a current key")
}

/// Runs `statement` on the database at `url` over a connection of its own, as a system
/// other than the service (the bank's branch systems, say) would.
///
/// # Errors
/// The driver's error, as text; or that `url` names no backend, or one that takes no SQL.
pub async fn execute_sql(url: &str, statement: &str) -> Result<u64, String> {
    let backend = registry::of_url(url).ok_or_else(|| format!("not a database URL: {url}"))?;
    let execute = (backend.testing.execute_sql).ok_or_else(|| format!("the {} store takes no SQL", backend.name))?;
    execute(url, statement.to_owned()).await
}

/// A new, empty store of the backend registered as `name` (`sqlite`, `postgres`,
/// `memory`…), for a test harness that picks its backend by name; `None` when that
/// backend cannot run here, after saying why (under `CI=true`, PostgreSQL without a
/// server fails instead).
///
/// # Panics
/// If no backend is registered as `name`: the harness is set up wrong.
#[allow(clippy::panic)]
pub async fn fresh_store_url(name: &str) -> Option<FreshStore> {
    let Some(backend) = registry::named(name) else {
        let known: Vec<&str> = crate::BACKENDS.iter().map(|backend| backend.name).collect();
        panic!("no store backend is called {name:?}; the backends are {}", known.join(", "));
    };
    (backend.testing.fresh)().await
}

/// A new folder under the system's temporary folder, removed with all it holds when
/// this is dropped.
pub struct TempFolder(PathBuf);

impl TempFolder {
    /// A new, empty folder.
    ///
    /// # Panics
    /// If it cannot be made (the machine's temporary folder is not writable).
    #[allow(clippy::expect_used)]
    pub fn create() -> Self {
        let path = std::env::temp_dir().join(format!("branch-atm-test-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&path).expect("a test folder under the temporary folder");
        Self(path)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFolder {
    fn drop(&mut self) {
        // A folder left behind is litter in the temporary folder, not a failed test.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A database server tests may make databases of their own on: PostgreSQL's or MariaDB's,
/// as each backend's folder declares it (its `TEST_SERVER`).
pub struct TestServer {
    /// The variable that names the server: a URL whose user may create and drop
    /// databases (`TEST_POSTGRES_URL`, `TEST_MYSQL_URL`).
    pub variable: &'static str,
    /// What the server is, for the messages (`PostgreSQL`).
    pub kind: &'static str,
    /// A URL of such a server, for the message that says how to run the test.
    pub example: &'static str,
    /// Makes the database `{}`.
    pub create: &'static str,
    /// Drops the database `{}`, closing whatever still uses it where the server can.
    pub drop: &'static str,
    /// Runs one statement at a URL of this server.
    pub run: RunSql,
}

impl TestServer {
    /// The server's URL from [`Self::variable`]. Without it the test cannot run: it says
    /// so and the caller skips, except under `CI=true`, where this fails the test.
    ///
    /// # Panics
    /// Under `CI=true` without the variable.
    #[allow(clippy::panic)]
    pub fn url(&self, what: &str) -> Option<String> {
        let Self { variable, kind, example, .. } = self;
        match std::env::var(variable) {
            Ok(url) if !url.is_empty() => Some(url),
            _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
                panic!("CI must run {what} on {kind}: set {variable} (.ci/run does)")
            }
            _ => {
                eprintln!("SKIPPED: {what} on {kind}: set {variable}={example} to run it");
                None
            }
        }
    }
}

static DATABASES_MADE: AtomicU32 = AtomicU32::new(0);

/// A new, empty database on a [`TestServer`], dropped (with its connections) when this is.
pub struct TestDatabase {
    /// The database's URL.
    pub url: String,
    server: &'static TestServer,
    server_url: String,
    name: String,
}

impl TestDatabase {
    /// A new database on `server`, or `None` (said) when the server's variable is not set.
    ///
    /// # Panics
    /// If the server named cannot be reached or refuses to create a database.
    #[allow(clippy::panic)]
    pub async fn create(server: &'static TestServer, what: &str) -> Option<Self> {
        let server_url = server.url(what)?;
        let name = format!(
            "branch_atm_test_{}_{}_{}",
            std::process::id(),
            DATABASES_MADE.fetch_add(1, Ordering::Relaxed),
            uuid::Uuid::new_v4().simple()
        );
        if let Err(error) = (server.run)(&server_url, server.create.replace("{}", &name)).await {
            panic!("the test {} server at {} makes no database: {error}", server.kind, server.variable);
        }
        let url = database_url(&server_url, &name);
        Some(Self { url, server, server_url, name })
    }
}

/// A store in a new database of its own on `server`, dropped after the test; `None`
/// (said) without that server: what a server-backed backend gives as
/// `TestSupport::fresh`.
pub fn fresh_database_on(server: &'static TestServer) -> registry::Opening<'static, Option<FreshStore>> {
    Box::pin(async move {
        let database = TestDatabase::create(server, "tests").await?;
        Some(FreshStore::new(database.url.clone(), database))
    })
}

/// `server`'s URL with its database replaced by `name`.
fn database_url(server: &str, name: &str) -> String {
    let (address, query) = server.split_once('?').map_or((server, None), |(a, q)| (a, Some(q)));
    let authority_end = address.find("://").map_or(0, |i| i + 3);
    let base = match address[authority_end..].find('/') {
        Some(slash) => &address[..authority_end + slash],
        None => address,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let (run, server_url) = (self.server.run, self.server_url.clone());
        let statement = self.server.drop.replace("{}", &self.name);
        // Drop runs inside the test's runtime, which cannot be blocked on: a thread
        // with a runtime of its own drops the database.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            runtime.block_on(run(&server_url, statement)).ok()
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("the test database {} could not be dropped", self.name);
        }
    }
}

/// A TCP forwarder to a server (a Redis, say) that a test can cut and mend, as a
/// restarted server, a proxy or a failover does to its clients: cut, it closes every
/// connection it carries and closes new ones at once; mended, it carries new ones again.
pub struct TcpLine {
    /// The loopback port it listens on.
    pub port: u16,
    up: Arc<AtomicBool>,
    carried: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl TcpLine {
    /// A line to `target` (`host:port`), carrying connections from now on.
    ///
    /// # Panics
    /// If no loopback port can be had: the test cannot run.
    #[allow(clippy::unwrap_used)]
    pub async fn to(target: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let carried = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (line_up, line_carried) = (up.clone(), carried.clone());
        tokio::spawn(async move {
            while let Ok((mut caller, _)) = listener.accept().await {
                if !line_up.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let target = target.clone();
                let carrying = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut caller, &mut server).await;
                    }
                });
                line_carried.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(carrying.abort_handle());
            }
        });
        Self { port, up, carried }
    }

    /// Closes every connection carried and refuses new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for carrying in self.carried.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..) {
            carrying.abort();
        }
    }

    /// Carries new connections again.
    pub fn mend(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::database_url;

    #[test]
    fn a_test_database_url_keeps_the_servers_address_user_and_parameters() {
        assert_eq!(
            database_url("postgres://postgres@127.0.0.1:5432/test", "t1"),
            "postgres://postgres@127.0.0.1:5432/t1"
        );
        assert_eq!(
            database_url("postgresql://u:p@db:6543?sslmode=require", "t1"),
            "postgresql://u:p@db:6543/t1?sslmode=require"
        );
        assert_eq!(database_url("mysql://root@127.0.0.1:3306", "t1"), "mysql://root@127.0.0.1:3306/t1");
    }
}
