//! Wiring adapters into services and services into an HTTP server. The binary and the
//! tests start the service the same way: `Application::build(settings)`, then
//! `.port()`, then `.run_until_stopped()`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::http::header::HeaderValue;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use adapters::client_assertion::ClientAssertions;
use adapters::dpop::{DpopProofs, LocalReplays, SharedReplays};
use adapters::formats::shown::quoted;
use adapters::jwt::{Ed25519Keys, JwtTokens};
use adapters::key_seal::{KeyEncryptionKey, KeyFileError};
use adapters::local_limits::LocalLimits;
use adapters::redis_limits::{RedisLimits, SharedOrLocal};
use adapters::redis_link::{PROBE_EVERY, RedisNews, RedisProbe};
use adapters::store::{Store, StoreLifecycle};
use adapters::store_copy::{self, CopyError, CopyReport};
use adapters::store_watch::{ServiceSignals, StoreHealth, StoreWatch};
use adapters::system::{RandomIds, SystemClock};
use adapters::view::{StoreView, ViewSettings};
use domain::ports::{
    AtmChangeRecords, AtmStateRecords, Clock, IdGenerator, ProofNonces, ProofReplays, QueueEventRecords,
    RequestLimiter, StoreUnavailable, SystemRecords, TokenLedger,
};
use domain::posted::{EventTime, OLDEST_MINUTES};
use domain::queue::live::LiveQueues;
use domain::services::access::ChannelAccess;
use domain::services::atm_closures::ClosureAdmin;
use domain::services::atm_feed::AtmFeedService;
use domain::services::atm_states::AtmStateService;
use domain::services::atms::AtmLocator;
use domain::services::authorize::TokenService;
use domain::services::bearer::BearerCheck;
use domain::services::clients::ClientAdmin;
use domain::services::demo::{DemoData, DemoFeed, DemoLoadError, DemoOutcome, DemoTargets, demo_feed_interval};
use domain::services::dpop::DpopCheck;
use domain::services::imports::DataImport;
use domain::services::keys::{KeyManagement, KeyManagementError, PublishedKeys};
use domain::services::origins::OriginPolicy;
use domain::services::outages::{OutageAdmin, StatusMonitor};
use domain::services::queue_events::{LiveQueueFeed, QueueEventService};
use domain::services::revocation::RevocationService;
use domain::services::systems::{SystemAdmin, SystemBearer, SystemTokenService};
use domain::services::token_records::TokenRecords;
use domain::services::wait_times::WaitTimeService;
use domain::status::HealthBounds;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use secrecy::ExposeSecret as _;

use api::AppState;
use api::caller::TrustedProxies;
use api::middleware::Observer;
use api::readiness::Readiness;

use crate::settings::{Settings, TlsFiles};

/// The Redis `--redis-url` names, what its uses hear of it, and the uses the probe asks
/// of it ([`probe_redis`]).
struct SharedRedis<'a> {
    url: &'a str,
    news: Arc<RedisNews>,
    probes: Vec<Arc<dyn RedisProbe>>,
}

/// The DPoP proof check: proofs remembered in the limits' Redis when one is set (this
/// instance's own cache standing in while it cannot answer), else in this process; and
/// nonces made from the signing keys when `--dpop-nonce` asks for them.
fn proof_check(
    settings: &Settings,
    jwt: &Arc<JwtTokens>,
    clock: Arc<dyn Clock>,
    redis: Option<&mut SharedRedis<'_>>,
) -> Result<Arc<DpopCheck>, StartupError> {
    let window = settings.tokens.dpop_window();
    let replays: Arc<dyn ProofReplays> = match redis {
        Some(redis) => {
            let shared = Arc::new(
                SharedReplays::new(redis.url, window.replay_ttl(), Arc::clone(&redis.news))
                    .map_err(StartupError::Limits)?,
            );
            redis.probes.push(shared.clone());
            shared
        }
        None => Arc::new(LocalReplays::new(window.replay_ttl())),
    };
    let nonces = settings.tokens.dpop_nonce.then(|| Arc::clone(jwt) as Arc<dyn ProofNonces>);
    Ok(Arc::new(DpopCheck::new(Arc::new(DpopProofs), replays, nonces, clock, window)))
}

/// The request limits: counted by this instance, or in the Redis `--redis-url` names
/// (by this instance while it cannot answer). The local count is returned too, for its
/// sweeper ([`spawn_rate_limit_sweeper`]).
fn request_limiter(settings: &Settings, redis: Option<&mut SharedRedis<'_>>) -> Result<RequestLimits, StartupError> {
    let rates = settings.limits.rates();
    let local = Arc::new(LocalLimits::new(&rates));
    let Some(redis) = redis else {
        return Ok(RequestLimits { limiter: local.clone(), local });
    };
    let counts = RedisLimits::new(redis.url, &rates).map_err(|e| StartupError::Limits(e.to_string()))?;
    let shared = Arc::new(SharedOrLocal::new(counts, local.clone(), Arc::clone(&redis.news)));
    redis.probes.push(shared.clone());
    Ok(RequestLimits { limiter: shared, local })
}

/// The request limits as [`request_limiter`] makes them.
struct RequestLimits {
    /// What requests are counted by.
    limiter: Arc<dyn RequestLimiter>,
    /// This instance's own count, for its sweeper.
    local: Arc<LocalLimits>,
}

/// How long requests in flight may take to finish once the drain period is over (the
/// fault issue: exit within the drain period plus 15 s).
const SHUTDOWN_GRACE_SECONDS: u64 = 15;

/// How long a TLS connection may take from its accept to the end of its handshake before
/// the server closes it: actix-tls's default, made explicit. A TLS 1.3 handshake is about
/// one and a half round trips, so this leaves room for round trips of up to two seconds,
/// and a connection that never sends its ClientHello is gone after it (issue 30).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(3);

/// Most TLS handshakes each worker has under way at once; past it the listener stops
/// accepting until one ends. actix-tls's default, 256, let 600-1,500 connections that
/// never send a ClientHello fill every worker's places and hold each new client back until
/// they timed out: 5.5 s of waiting for about 8 s (issue 30). A pending handshake costs
/// a socket and about 12 kB (1,000 silent connections grew the process 12 MB; the test
/// `api::tls::silent_connections_…` prints it), so 2,048 a worker bounds them to about
/// 25 MB a worker, while a flood must now keep more than 2,048 × workers silent
/// connections open (more than 1,365 new ones a second on two workers) to delay anyone.
pub const MAX_PENDING_TLS_HANDSHAKES: usize = 2_048;

/// Connections the kernel queues for the listener before it accepts them. The standard
/// library's bind asks for 128, so a burst of more than 128 connections arriving faster
/// than the accept thread took them had the next SYNs dropped and their clients retrying
/// a second later (issue 30's test saw it); 4,096 is Linux's default cap
/// (`net.core.somaxconn` since 5.4), which lowers a larger request to itself.
const LISTEN_BACKLOG: u32 = 4_096;

/// Why the service did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The store could not be opened, migrated or loaded.
    #[error(transparent)]
    Store(#[from] StoreUnavailable),
    /// The listen address could not be bound.
    #[error("cannot listen: {0}")]
    Listen(#[from] std::io::Error),
    /// The TLS certificate or key could not be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// No signing key could be made current.
    #[error(transparent)]
    Keys(#[from] KeyManagementError),
    /// The key-encryption key could not be read.
    #[error(transparent)]
    KeyFile(#[from] KeyFileError),
    /// The demo data set could not be loaded.
    #[error(transparent)]
    Demo(#[from] DemoLoadError),
    /// A store could not be copied.
    #[error(transparent)]
    Copy(#[from] CopyError),
    /// The Redis URL of the shared request limits and proof replays is not usable.
    #[error("--redis-url: {0}")]
    Limits(String),
    /// The metrics listener could not be started.
    #[error("metrics: {0}")]
    Metrics(String),
}

/// The domain's services for operators, wired to one store ([`open_operators`]).
pub struct Operators {
    /// The service's one clock (a CSV row without `estimatedAt` is estimated now).
    pub clock: Arc<dyn Clock>,
    /// Client applications.
    pub clients: ClientAdmin,
    /// Supported channel combinations.
    pub access: ChannelAccess,
    /// Wait-time and ATM imports.
    pub imports: DataImport,
    /// Signing keys.
    pub keys: KeyManagement,
    /// Issued tokens.
    pub tokens: TokenRecords,
    /// Planned outages.
    pub outages: OutageAdmin,
    /// ATM closures.
    pub closures: ClosureAdmin,
    /// The bank's systems.
    pub systems: SystemAdmin,
    /// The store's lifecycle, to close it when the command is done.
    lifecycle: Arc<dyn StoreLifecycle>,
}

impl Operators {
    /// Closes the store once the command is done: every connection ends, and with it
    /// whatever the driver's threads still held. SQLite's worker thread keeps the span
    /// of the last statement it ran for a moment after answering it, which holds the
    /// command's trace open; closed first, the trace ends before its last spans are sent
    /// (an import's root span was lost otherwise, 1 run in 24 on a busy machine).
    pub async fn close(self) {
        self.lifecycle.close().await;
    }
}

/// The operators' services over the store at `database_url`, migrated first: every
/// command works on a current schema, also on a fresh database file.
///
/// # Errors
/// [`StartupError::Store`] when the store cannot be opened or migrated.
pub async fn open_operators(database_url: &str, key_file: Option<&Path>) -> Result<Operators, StartupError> {
    let store = Store::open(database_url).await?;
    store.lifecycle.migrate().await?;
    let store = with_key_encryption(store, key_file).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    Ok(Operators {
        clients: ClientAdmin::new(Arc::clone(&store.clients), Arc::clone(&store.tokens), Arc::clone(&clock)),
        access: ChannelAccess::new(Arc::clone(&store.channels)),
        imports: DataImport::new(
            Arc::clone(&store.wait_times),
            Arc::clone(&store.atms),
            Arc::clone(&store.imports),
            Arc::clone(&clock),
        ),
        keys: KeyManagement::new(Arc::clone(&store.keys), Arc::new(Ed25519Keys), Arc::clone(&clock)),
        tokens: TokenRecords::new(Arc::clone(&store.tokens), Arc::clone(&clock)),
        outages: OutageAdmin::new(Arc::clone(&store.outages), Arc::clone(&clock), Arc::new(RandomIds)),
        closures: ClosureAdmin::new(Arc::clone(&store.closures), Arc::clone(&store.atms), Arc::clone(&clock)),
        systems: SystemAdmin::new(Arc::clone(&store.systems), Arc::clone(&clock)),
        lifecycle: Arc::clone(&store.lifecycle),
        clock,
    })
}

/// Copies the store at `from_url` (migrated first) into the new, empty store at
/// `to_url`, keys as stored: sealed keys stay sealed and open with the same key file.
/// Like every command, it first checks that the key file (`key_file`) opens every
/// stored key (none is needed when no key is sealed), before it opens the target.
///
/// # Errors
/// [`StartupError::KeyFile`] when the key file cannot be read, [`StartupError::Store`]
/// when either store cannot be opened or a stored key does not open with the key file,
/// [`StartupError::Copy`] when the copy is refused or fails.
pub async fn copy_store(from_url: &str, to_url: &str, key_file: Option<&Path>) -> Result<CopyReport, StartupError> {
    let key = key_file.map(KeyEncryptionKey::from_file).transpose()?;
    let from = Store::open(from_url).await?;
    from.lifecycle.migrate().await?;
    from.check_key_encryption(key).await?;
    let to = Store::open(to_url).await?;
    let copied = store_copy::copy(&from, &to, SystemClock.unix_now()).await;
    from.lifecycle.close().await;
    to.lifecycle.close().await;
    Ok(copied?)
}

/// `store` with its signing keys sealed under the key in `key_file`, or, without one,
/// refusing sealed keys (a one-line error, never a silently new key).
async fn with_key_encryption(store: Store, key_file: Option<&Path>) -> Result<Store, StartupError> {
    let key = key_file.map(KeyEncryptionKey::from_file).transpose()?;
    Ok(store.with_key_encryption(key).await?)
}

/// Migrates, seals the signing keys when a key-encryption key is given, makes sure a
/// key signs tokens, and loads the demo data set when asked to (the domain decides
/// whether the store takes it). Returns the store as the service uses it.
async fn prepare(
    store: Store,
    clock: &Arc<dyn Clock>,
    settings: &Settings,
) -> Result<(Store, Option<DemoOutcome>), StartupError> {
    store.lifecycle.migrate().await?;
    store.lifecycle.prepare(clock.unix_now()).await?;
    let store = with_key_encryption(store, settings.store.key_encryption_key_file.as_deref()).await?;
    let keys = KeyManagement::new(Arc::clone(&store.keys), Arc::new(Ed25519Keys), Arc::clone(clock));
    if let Some(kid) = keys.ensure_current().await? {
        tracing::info!(%kid, "created a signing key");
    }
    let mut demo = None;
    if settings.catalog.demo_data() {
        let targets = DemoTargets {
            inventory: Arc::clone(&store.inventory),
            clients: Arc::clone(&store.clients),
            channels: Arc::clone(&store.channels),
            wait_times: Arc::clone(&store.wait_times),
            atms: Arc::clone(&store.atms),
        };
        let outcome = DemoData::new(targets, Arc::clone(clock)).load_into_new_store().await?;
        match &outcome {
            DemoOutcome::Loaded => tracing::info!("loaded the demo data set into the new store"),
            DemoOutcome::AlreadyLoaded => {
                tracing::info!("the store holds the demo data set from an earlier start: it is served as it is");
            }
            DemoOutcome::Kept(contents) => tracing::info!(
                "the demo data set is not loaded: it goes only into an empty store, and this one holds {contents}"
            ),
        }
        demo = Some(outcome);
        let feed = DemoFeed::new(
            Arc::clone(&store.clients),
            Arc::clone(&store.wait_times),
            Arc::clone(&store.imports),
            Arc::clone(clock),
        );
        if feed.refresh().await? {
            let every = demo_feed_interval(settings.catalog.wait_time_max_age());
            tracing::info!(
                every_seconds = every.as_secs(),
                "the store holds the demo data set: its wait times are dated now, and again while it holds nothing else"
            );
            spawn_demo_feed(feed, every);
        }
    }
    Ok((store, demo))
}

/// Dates the demo's wait times now again every `every`, until the store holds anything
/// else (then the feed stops for good).
fn spawn_demo_feed(feed: DemoFeed, every: Duration) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            match feed.refresh().await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!("the store holds more than the demo data set now: the demo feed stops");
                    return;
                }
                Err(error) => tracing::warn!(%error, "the demo feed could not date the demo's wait times"),
            }
        }
    });
}

/// How often the store is readied for the coming hours and expired token records are
/// purged.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// Every hour: readies the store for the coming day's token records (PostgreSQL's
/// partitions), then purges expired ones (the domain keeps them a day after expiry),
/// so the store holds about one day of issuance whatever the load.
fn spawn_store_upkeep(
    lifecycle: Arc<dyn StoreLifecycle>,
    records: TokenRecords,
    systems: Arc<dyn SystemRecords>,
    queue_events: Arc<dyn QueueEventRecords>,
    atm_states: Arc<dyn AtmStateRecords>,
    (changes, retention_seconds): (Arc<dyn AtmChangeRecords>, i64),
    clock: Arc<dyn Clock>,
) {
    let records = Arc::new(records);
    spawn_every(UPKEEP_INTERVAL, move || {
        let (lifecycle, records, clock) = (Arc::clone(&lifecycle), Arc::clone(&records), Arc::clone(&clock));
        let (systems, queue_events, atm_states, changes) =
            (Arc::clone(&systems), Arc::clone(&queue_events), Arc::clone(&atm_states), Arc::clone(&changes));
        async move {
            // A closure that took effect is fed as its ATM's removal by the view that
            // rebuilds its catalog; should that write have failed, it is fed here.
            match changes.feed_closures_due(clock.unix_now()).await {
                Ok(0) => {}
                Ok(fed) => tracing::info!(fed, "fed the removals of ATMs whose closure took effect"),
                Err(error) => tracing::warn!(error = %error, "the removals of closed ATMs could not be fed"),
            }
            // The feed keeps its retention; an app with an older cursor starts again.
            match changes.forget_before(clock.unix_now().saturating_sub(retention_seconds)).await {
                Ok(0) => {}
                Ok(forgotten) => tracing::info!(forgotten, "forgot the ATM changes past the feed's retention"),
                Err(error) => tracing::warn!(error = %error, "old ATM changes could not be forgotten"),
            }
            // Events older than a day are refused when posted and forgotten by the live
            // queues; the log keeps them an hour longer (a late replay finds them).
            let before = EventTime::from_unix_seconds(u64::try_from(clock.unix_now()).unwrap_or_default())
                .plus_minutes(-(OLDEST_MINUTES + 60.0));
            match queue_events.forget_before(before).await {
                Ok(0) => {}
                Ok(forgotten) => tracing::info!(forgotten, "forgot queue events more than a day old"),
                Err(error) => tracing::warn!(error = %error, "old queue events could not be forgotten"),
            }
            // A state event's id is kept as long: a resend within the day is known.
            match atm_states.forget_before(before).await {
                Ok(0) => {}
                Ok(forgotten) => tracing::info!(forgotten, "forgot the ids of ATM state events more than a day old"),
                Err(error) => tracing::warn!(error = %error, "old ATM state event ids could not be forgotten"),
            }
            // An expired assertion is refused for its `exp` before its `jti` is looked up.
            match systems.forget_assertions(clock.unix_now()).await {
                Ok(0) => {}
                Ok(forgotten) => tracing::info!(forgotten, "forgot the expired client assertions"),
                Err(error) => tracing::warn!(error = %error, "expired client assertions could not be forgotten"),
            }
            if let Err(error) = lifecycle.prepare(clock.unix_now()).await {
                tracing::warn!(error = %error, "the store could not be readied for the coming hours");
            }
            match records.purge_expired().await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "purged expired token records"),
                Err(error) => tracing::warn!(error = %error, "expired token records could not be purged"),
            }
        }
    });
}

/// How often every live branch is estimated again (a busy counter's service lengthens
/// with the clock alone), and a failed read of the queue event log is tried again.
const QUEUE_REFRESH_INTERVAL: Duration = Duration::from_secs(5);

/// Reads the queue event log into the live queues each time the view finds its change
/// counter moved (within a view refresh of another instance's append: the log's counter
/// sends no PostgreSQL notice), and re-estimates every live branch on a timer. An idle
/// log costs no query of its own. `unread` when the first read failed.
fn spawn_queue_feed(feed: LiveQueueFeed, mut moved: tokio::sync::watch::Receiver<i64>, mut unread: bool) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(QUEUE_REFRESH_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = moved.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    unread = true;
                }
                _ = ticks.tick() => feed.refresh(),
            }
            if unread {
                match feed.poll().await {
                    Ok(_) => unread = false,
                    Err(error) => tracing::warn!(error = %error, "queue events could not be read; tried again shortly"),
                }
            }
        }
    });
}

/// Runs `task` at once and then every `interval` (a late run delays the next, never
/// bunches them), for as long as the runtime lives.
fn spawn_every<F, Fut>(interval: Duration, mut task: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            task().await;
        }
    });
}

/// How often idle sessions, callers and clients are dropped from the limits' tables.
const RATE_LIMIT_SWEEP: Duration = Duration::from_secs(60);

/// Derives the published status every `interval` (the view's refresh interval), so it
/// follows the service's health within a refresh whether or not anyone asks, and reads
/// the planned outages as often in a task of their own: a read the store holds up (a
/// locked SQLite file spins for seconds) never holds the status back.
fn spawn_status_monitor(monitor: Arc<StatusMonitor>, interval: Duration) {
    let reader = Arc::clone(&monitor);
    spawn_every(interval, move || {
        let reader = Arc::clone(&reader);
        async move { reader.read_outages().await }
    });
    spawn_every(interval, move || {
        let monitor = Arc::clone(&monitor);
        async move { monitor.derive().await }
    });
}

/// Asks Redis of each of its `uses` once, so that their connections are made before the
/// first request needs them, then every [`PROBE_EVERY`] ([`RedisProbe`]). A Redis that
/// does not answer holds the start up by at most
/// [`PROBE_WITHIN`](adapters::redis_link::PROBE_WITHIN) a use.
async fn probe_redis(uses: Vec<Arc<dyn RedisProbe>>) {
    for probed in &uses {
        probed.probe().await;
    }
    let uses = Arc::new(uses);
    spawn_every(PROBE_EVERY, move || {
        let uses = Arc::clone(&uses);
        async move {
            for probed in uses.iter() {
                probed.probe().await;
            }
        }
    });
}

fn spawn_rate_limit_sweeper(limits: Arc<LocalLimits>) {
    spawn_every(RATE_LIMIT_SWEEP, move || {
        limits.forget_idle();
        std::future::ready(())
    });
}

/// The most a TLS certificate chain or key file is read: a chain of a few certificates
/// is a few kilobytes. `/dev/zero` given as a file is refused, not read forever.
const TLS_FILE_MAX_BYTES: u64 = 1 << 20;

/// The PEM file at `path`, a regular file of at most [`TLS_FILE_MAX_BYTES`], or why not,
/// naming it as `what` (`certificate`) and quoting its path; `parse` reads what it holds.
pub(crate) fn read_pem<T, E: std::fmt::Display>(
    what: &str,
    path: &Path,
    parse: impl FnOnce(&[u8]) -> Result<T, E>,
) -> Result<T, String> {
    let refused = |reason: String| format!("{what} {}: {reason}", quoted(&path.to_string_lossy()));
    let pem =
        adapters::key_seal::read_at_most(path, TLS_FILE_MAX_BYTES).map_err(|e| refused(e.to_string()))?.ok_or_else(
            || refused(format!("holds more than {TLS_FILE_MAX_BYTES} bytes, more than any PEM file of ours")),
        )?;
    parse(&pem).map_err(|e| refused(e.to_string()))
}

fn tls_config(files: &TlsFiles) -> Result<rustls::ServerConfig, StartupError> {
    let certs =
        read_pem("certificate", &files.cert, |pem| CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>())
            .map_err(StartupError::Tls)?;
    let key = read_pem("key", &files.key, PrivateKeyDer::from_pem_slice).map_err(StartupError::Tls)?;
    rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| StartupError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| StartupError::Tls(e.to_string()))
}

/// Stops the server on SIGTERM or SIGINT, losing no request (the fault issue). First the
/// drain: readiness fails so load balancers take the instance out, and every response
/// closes its connection so no keep-alive client sends a request into a connection about
/// to close; the service keeps serving meanwhile. After `drain` (or at a second signal)
/// the server stops accepting and lets the requests in flight finish; a signal during
/// that wait stops it at once.
async fn stop_on_signal(server: ServerHandle, readiness: Arc<Readiness>, drain: Duration) {
    stop_requested().await;
    readiness.start_draining();
    tracing::info!(drain_ms = drain.as_millis() as u64, "stopping: draining before connections are refused");
    tokio::select! {
        () = tokio::time::sleep(drain) => {}
        () = stop_requested() => tracing::info!("a second signal: the rest of the drain period is skipped"),
    }
    tracing::info!("no longer accepting connections; finishing the requests in flight");
    tokio::select! {
        () = server.stop(true) => {}
        () = stop_requested() => {
            tracing::warn!("another signal: stopping without waiting for the requests in flight");
            server.stop(false).await;
        }
    }
}

/// Resolves at the next SIGTERM or SIGINT.
async fn stop_requested() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "SIGTERM cannot be handled; only SIGINT stops the service");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = terminate => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// A built, bound, not yet running service.
pub struct Application {
    port: u16,
    server: Server,
    store: Store,
    readiness: Arc<Readiness>,
    drain: Duration,
    /// The metrics listener and its port, when `--metrics-listen` is given.
    metrics: Option<(Server, u16)>,
    /// What became of the demo data set, when it was asked for.
    demo: Option<DemoOutcome>,
}

/// How an [`Application`] is put together: its settings, and what tests may give it
/// instead of the defaults (a store behind an outage switch, a clock they move, ids
/// they choose).
pub struct ApplicationBuilder {
    settings: Settings,
    store: Option<Store>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl ApplicationBuilder {
    /// Runs on `store` (opened by the caller) instead of the one `settings.store.database_url`
    /// names.
    #[must_use]
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Tells the time with `clock` instead of the system's: the one clock of the whole
    /// service (issuer and verifier, view, retention).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Makes token ids, session ids and opaque tokens with `ids` instead of the CSPRNG.
    #[must_use]
    pub fn ids(mut self, ids: Arc<dyn IdGenerator>) -> Self {
        self.ids = ids;
        self
    }

    /// Opens and prepares the store, loads the in-memory view, binds the listener.
    ///
    /// # Errors
    /// [`StartupError`] says what stopped it.
    pub async fn build(self) -> Result<Application, StartupError> {
        let Self { settings, store, clock, ids } = self;
        let store = match store {
            Some(store) => store,
            None => Store::open(settings.store.database_url.expose_secret()).await?,
        };
        Application::assemble(settings, store, clock, ids).await
    }
}

impl Application {
    /// The service of `settings`, with the system clock and the CSPRNG; see
    /// [`ApplicationBuilder`] for what else a caller may give.
    pub fn builder(settings: Settings) -> ApplicationBuilder {
        ApplicationBuilder { settings, store: None, clock: Arc::new(SystemClock), ids: Arc::new(RandomIds) }
    }

    /// Opens and prepares the store, loads the in-memory view, binds the listener.
    ///
    /// # Errors
    /// [`StartupError`] says what stopped it.
    pub async fn build(settings: Settings) -> Result<Self, StartupError> {
        Self::builder(settings).build().await
    }

    /// Wires the adapters into the domain's services and those into the HTTP layer.
    async fn assemble(
        settings: Settings,
        store: Store,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Result<Self, StartupError> {
        if settings.observability.metrics_listen.is_some() {
            // Before the store is read: the first load sets gauges too.
            crate::metrics::install().map_err(StartupError::Metrics)?;
        }
        let (store, demo) = prepare(store, &clock, &settings).await?;

        let lifetime = settings.tokens.token_lifetime();
        let public_base_url = settings.http.public_base_url();
        let issuer = format!("{public_base_url}/api");
        let jwt = Arc::new(JwtTokens::new(&issuer, &issuer, lifetime, Arc::clone(&clock)));
        let view_settings = ViewSettings {
            token_lifetime: lifetime,
            refresh_interval: settings.view.refresh_interval(),
            max_staleness: settings.view.max_staleness(),
            atm_state_fresh_minutes: settings.catalog.atm_state_fresh_minutes(),
        };
        let view = StoreView::load(store.clone(), jwt.clone(), Arc::clone(&clock), view_settings).await?;
        view.spawn_refresher(settings.view.refresh_interval());
        view.spawn_listener();
        spawn_store_upkeep(
            Arc::clone(&store.lifecycle),
            TokenRecords::new(Arc::clone(&store.tokens), Arc::clone(&clock)),
            Arc::clone(&store.systems),
            Arc::clone(&store.queue_events),
            Arc::clone(&store.atm_states),
            (Arc::clone(&store.changes), settings.catalog.atm_change_retention_seconds()),
            Arc::clone(&clock),
        );
        let watch = StoreWatch::new(Arc::clone(&store.lifecycle));
        let health = StoreHealth::new(Arc::clone(&watch), Arc::clone(&view));
        let readiness = Arc::new(Readiness::new(Arc::new(health)));
        // One Redis for the limits and the proofs: the status hears of it from both, and
        // from their probes while no request asks.
        let mut redis = settings.limits.redis_url.as_ref().map(|url| SharedRedis {
            url: url.expose_secret(),
            news: Arc::new(RedisNews::new()),
            probes: Vec::new(),
        });
        let RequestLimits { limiter: limits, local: local_limits } = request_limiter(&settings, redis.as_mut())?;
        let proofs = proof_check(&settings, &jwt, Arc::clone(&clock), redis.as_mut())?;
        let redis_news = match redis {
            Some(redis) => {
                probe_redis(redis.probes).await;
                Some(redis.news)
            }
            None => None,
        };
        let signals = ServiceSignals::new(watch, Arc::clone(&view), redis_news);
        let bounds = HealthBounds {
            refresh_interval: settings.view.refresh_interval(),
            max_staleness: settings.view.max_staleness(),
        };
        let monitor =
            Arc::new(StatusMonitor::new(Arc::new(signals), Arc::clone(&store.outages), Arc::clone(&clock), bounds));
        monitor.refresh().await;
        spawn_status_monitor(Arc::clone(&monitor), settings.view.refresh_interval());

        let ledger: Arc<dyn TokenLedger> = view.clone();
        let metrics_clock = Arc::clone(&clock);
        let wait_time_max_age = i64::try_from(settings.catalog.wait_time_max_age().as_secs()).unwrap_or(i64::MAX);
        let dpop_nonces = settings.tokens.dpop_nonce.then(|| Arc::clone(&jwt) as Arc<dyn ProofNonces>);
        let live_queues = Arc::new(LiveQueues::new(settings.catalog.queue_live_minutes()));
        let feed = LiveQueueFeed::new(Arc::clone(&store.queue_events), Arc::clone(&live_queues), Arc::clone(&clock));
        // Listening before the first read: an append between the two is read again.
        let queue_events_moved = view.queue_events_moved();
        let unread = feed.poll().await.inspect_err(|error| {
            tracing::warn!(error = %error, "the queue events of the last day could not be read; tried again shortly");
        });
        spawn_queue_feed(feed, queue_events_moved, unread.is_err());
        let system_tokens = Arc::new(SystemTokenService::new(
            Arc::clone(&store.systems),
            Arc::new(ClientAssertions),
            jwt.clone(),
            Arc::clone(&ids),
            Arc::clone(&clock),
            // RFC 7523 §3: the issuer, or the token endpoint's URL.
            vec![issuer.clone(), format!("{issuer}/v1/token")],
        ));
        let atm_states = Arc::new(AtmStateService::new(
            Arc::clone(&store.atm_states),
            view.clone(),
            view.clone(),
            Arc::clone(&clock),
            settings.catalog.atm_state_fresh_minutes(),
            settings.catalog.atm_page_size,
        ));
        let state = web::Data::new(AppState {
            system_tokens,
            system_bearer: Arc::new(SystemBearer::new(Arc::clone(&store.systems), jwt.clone())),
            queue_events: Arc::new(QueueEventService::new(
                Arc::clone(&store.queue_events),
                Arc::clone(&live_queues),
                Arc::clone(&clock),
            )),
            tokens: Arc::new(TokenService::new(
                view.clone(),
                Arc::clone(&ledger),
                jwt.clone(),
                Arc::clone(&clock),
                ids,
                Arc::clone(&proofs),
                settings.tokens.token_ttl_seconds,
            )),
            revocation: Arc::new(RevocationService::new(
                jwt.clone(),
                Arc::clone(&store.tokens),
                Arc::clone(&ledger),
                view.clone(),
                Arc::clone(&clock),
            )),
            bearer: Arc::new(BearerCheck::new(jwt.clone(), ledger, view.clone(), Arc::clone(&limits), proofs)),
            wait_times: Arc::new(WaitTimeService::new(
                view.clone(),
                view.clone(),
                live_queues,
                Arc::clone(&clock),
                settings.catalog.wait_time_max_age(),
            )),
            atms: Arc::new(AtmLocator::new(view.clone(), settings.catalog.atm_page_size).with_states(
                view.clone(),
                clock,
                settings.catalog.atm_state_fresh_minutes(),
            )),
            atm_state_events: atm_states.clone(),
            atm_states,
            atm_changes: Arc::new(AtmFeedService::new(view.clone(), view.clone(), Arc::clone(&store.changes))),
            keys: Arc::new(PublishedKeys::new(jwt)),
            server_metadata: api::meta::server_metadata(&public_base_url),
            origins: Arc::new(OriginPolicy::new(view.clone())),
            discovery: monitor,
            // Digits only after the static text: always a valid header value.
            jwks_cache_control: HeaderValue::from_str(&format!(
                "public, max-age={}",
                settings.tokens.jwks_max_age_seconds
            ))
            .unwrap_or(HeaderValue::from_static("no-cache")),
            readiness: Arc::clone(&readiness),
            limits,
            proxies: TrustedProxies::new(settings.http.trusted_proxies(), settings.http.forwarded_header),
            public_base_url: public_base_url.clone(),
            body_timeout: settings.http.client_request_timeout(),
            dpop_nonces,
        });
        spawn_rate_limit_sweeper(local_limits);
        crate::memory::spawn_trimmer();

        let metrics = match settings.observability.metrics_listen {
            Some(address) => {
                let view = Arc::clone(&view);
                let gauges = move || {
                    metrics::gauge!("branch_atm_view_age_seconds").set(view.age().as_secs_f64());
                    let now = metrics_clock.unix_now();
                    let freshness = view.wait_time_freshness(now.saturating_sub(wait_time_max_age));
                    metrics::gauge!("branch_atm_wait_time_stale_branches").set(freshness.stale as f64);
                    metrics::gauge!("branch_atm_wait_time_max_age_seconds").set(wait_time_max_age as f64);
                    if let Some(newest) = freshness.newest {
                        let age = now.saturating_sub(newest).max(0);
                        metrics::gauge!("branch_atm_wait_time_newest_age_seconds").set(age as f64);
                    }
                    let dropped = u64::try_from(crate::telemetry::dropped_log_messages()).unwrap_or(u64::MAX);
                    metrics::counter!("branch_atm_log_messages_dropped_total").absolute(dropped);
                };
                let (server, port) = crate::metrics::serve(address, gauges, Arc::clone(&store.imports))
                    .map_err(StartupError::Metrics)?;
                Some((server, port))
            }
            None => None,
        };

        let observer = Observer::new(
            Arc::clone(&readiness),
            crate::access_log::writer(settings.observability.access_log),
            settings.observability.metrics_listen.is_some(),
        );
        let observer = Arc::new(match settings.trace_sampling {
            Some(sampling) => observer.traced(sampling),
            None => observer,
        });
        let well_known = api::well_known_routes(&public_base_url);
        let mut server = HttpServer::new(move || {
            let observer = Arc::clone(&observer);
            App::new()
                .wrap(from_fn(move |request, next| api::middleware::observe(Arc::clone(&observer), request, next)))
                .wrap(api::middleware::security_headers())
                .app_data(state.clone())
                .configure(api::routes)
                .configure(well_known.clone())
                .default_service(web::to(api::not_found))
        })
        .disable_signals()
        .shutdown_timeout(SHUTDOWN_GRACE_SECONDS)
        .client_request_timeout(settings.http.client_request_timeout())
        .tls_handshake_timeout(TLS_HANDSHAKE_TIMEOUT)
        .max_connection_rate(MAX_PENDING_TLS_HANDSHAKES)
        .backlog(LISTEN_BACKLOG);
        if let Some(workers) = settings.http.workers {
            server = server.workers(workers);
        }
        let server = match &settings.http.tls() {
            Some(files) => server.bind_rustls_0_23(settings.http.listen, tls_config(files)?)?,
            None => server.bind(settings.http.listen)?,
        };
        // The port actually bound (another than the setting's when it was 0).
        let port = server.addrs().first().map(std::net::SocketAddr::port).unwrap_or(settings.http.listen.port());
        let server = server.run();
        Ok(Self { port, server, store, readiness, drain: settings.http.shutdown_drain(), metrics, demo })
    }

    /// The store the service runs on, for tools and tests that act behind the API (for
    /// example closing it to see how the service answers an unreachable store).
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// What became of the demo data set: `None` when it was not asked for.
    pub fn demo(&self) -> Option<&DemoOutcome> {
        self.demo.as_ref()
    }

    /// The port it listens on (the real one when built with port 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The port of the metrics listener, when there is one.
    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics.as_ref().map(|(_, port)| *port)
    }

    /// Serves until SIGTERM or SIGINT, drains for the drain period (readiness 503,
    /// `Connection: close` on every response), then stops accepting and lets the
    /// requests in flight finish (up to 15 s).
    ///
    /// # Errors
    /// The server's I/O error, if it fails.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let stopper = tokio::spawn(stop_on_signal(self.server.handle(), self.readiness, self.drain));
        let metrics = self.metrics.map(|(server, _)| {
            let handle = server.handle();
            tokio::spawn(server);
            handle
        });
        let outcome = self.server.await;
        stopper.abort();
        if let Some(metrics) = metrics {
            metrics.stop(false).await;
        }
        outcome
    }
}
