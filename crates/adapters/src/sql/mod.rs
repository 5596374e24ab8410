//! SQL that the SQL stores share, written once.
//!
//! [`SqlStore<D>`] is a SQL database as a store: every role a [`Store`](crate::store::Store)
//! needs, implemented once for any dialect `D` in [`roles`] (one file per role: `impl<D:
//! SqlDialect> ClientRecords for SqlStore<D>` is in `roles/clients.rs`), binding and reading
//! each statement once (rows to values through [`crate::rows`]). The statements themselves
//! are [`Statements`], written once in PostgreSQL's notation and rendered for each backend
//! by its [`Syntax`]: how it numbers placeholders (`$1` or `?`), how it upserts, how it
//! skips a row whose key is stored already. What is truly a backend's own (how it writes
//! many rows at once and in which transaction, how it locks, its upkeep, its change
//! notices, how it frees space, what its errors mean) it writes as [`SqlDialect`], in its
//! own folder, and its folder names its store `SqlStore<ItsDialect>`.
//!
//! Generic code, not a macro (until issue 43 a macro wrote every role for each backend
//! type): a reader and a search find each role's one impl, and what it asks of a driver
//! is in its `where` clause ([`roles`]). A query builder would only pay for itself if the
//! statements differed beyond what [`Syntax`] says; they do not.

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::branch::WaitTimeEstimate;
use domain::ports::{AtmKey, StoreUnavailable};
use domain::token::IssuedToken;

use crate::store::ChangeFeed;

pub(crate) mod many_rows;
pub(crate) mod migrations;
mod retry;
mod roles;
mod statements;

pub(crate) use retry::{Replan, Retries, retry};
pub(crate) use statements::{Placeholders, Statements, Syntax};

/// A SQL database as a store: every role, in the shared statements ([`roles`]), with what
/// its dialect `D` writes its own way. Each SQL backend's folder names its store so
/// (`type SqliteStore = SqlStore<SqliteDialect>`).
#[derive(Clone)]
pub(crate) struct SqlStore<D> {
    /// The backend's own part: its pool and its dialect.
    pub(crate) dialect: D,
    /// The shared statements in `D`'s syntax.
    sql: &'static Statements,
}

impl<D: SqlDialect> SqlStore<D> {
    /// The store on `dialect`'s database, with the shared statements rendered in its syntax
    /// (once per dialect for the process's life: [`Statements::of`]).
    pub(crate) fn new(dialect: D) -> Self {
        Self { dialect, sql: Statements::of::<D>() }
    }
}

/// sqlx's driver for the dialect `D`'s database.
pub(crate) type Db<D> = <D as SqlDialect>::Database;

/// A connection to `D`'s database: what a transaction runs its statements on.
pub(crate) type Connection<D> = <Db<D> as sqlx::Database>::Connection;

/// A row as `D`'s database answers it.
pub(crate) type Row<D> = <Db<D> as sqlx::Database>::Row;

/// How many rows a statement changed, as each driver's result says it (sqlx's drivers each
/// have a `rows_affected` of their own, under no trait).
pub(crate) trait RowsAffected {
    /// Rows inserted, updated or deleted.
    fn rows_affected(&self) -> u64;
}

/// What a driver's error means, as the backend that raised it reads it
/// ([`SqlDialect::meaning`]).
pub(crate) enum Meaning {
    /// The connection failed, or reached a server that cannot take writes: what that
    /// means for an operator (during a failover, say), rather than the protocol step it
    /// broke at.
    Lost(String),
    /// The database answered, refusing the data it was given (too long, not text, a
    /// constraint): never told as an outage.
    RefusedData,
    /// The transaction lost to another at once (a serialization failure, a deadlock, a
    /// failed certification on a Galera cluster) and was rolled back: begun again, the
    /// same work may succeed ([`retry`]). Told as an outage if it never does.
    Conflict,
    /// Anything else the backend recognises as its own: the store did not answer as it
    /// should.
    Failed,
}

/// A driver's error as the domain sees it, read by the backend `D` that raised it
/// ([`SqlDialect::meaning`]); an I/O error the backend does not read otherwise is a lost
/// connection.
pub(crate) fn unavailable<D: SqlDialect>(error: sqlx::Error) -> StoreUnavailable {
    match D::meaning(&error) {
        Meaning::Lost(meaning) => StoreUnavailable::new(meaning),
        Meaning::RefusedData => StoreUnavailable::refused(error),
        // The driver's error is kept as the cause: `retry` reads it again.
        Meaning::Conflict => StoreUnavailable::new(error),
        Meaning::Failed => match &error {
            sqlx::Error::Io(io) => StoreUnavailable::new(format!("no connection to the database: {io}")),
            _ => StoreUnavailable::new(error),
        },
    }
}

/// What a SQL backend writes in its own dialect; [`SqlStore`] does the rest.
///
/// Each method is the part of a port's method (named in its doc) that the dialects do
/// differently; its contract is that port method's.
#[async_trait]
pub(crate) trait SqlDialect: Send + Sync + 'static {
    /// sqlx's driver for this database: its arguments are what its statements take
    /// (`IntoArguments`), its connections run migrations, its results count rows.
    type Database: sqlx::Database<
            Arguments: sqlx::IntoArguments<Self::Database>,
            Connection: sqlx::migrate::Migrate,
            QueryResult: RowsAffected,
        >;

    /// How this database phrases what the shared statements need ([`Statements`]).
    const SYNTAX: Syntax;

    /// OpenTelemetry's `db.system.name` of this database, for its spans: what a trace
    /// shows as the database (a test of the server's, `traces.rs`, lists the names it
    /// accepts).
    const SYSTEM: &'static str;

    /// The folder of `migrations/` holding this database's schema, which
    /// `StoreLifecycle::migrate` runs: the backend's registered name (`BACKEND.name`).
    const MIGRATIONS: &'static str;

    /// What ends a SELECT that locks the rows it reads until its transaction ends:
    /// ` FOR UPDATE` on a server; empty for SQLite, whose writers hold the whole database.
    const FOR_UPDATE: &'static str;

    /// The ids of revoked tokens still live at `$1` ([`Statements::revoked_live`]): read
    /// from `issued_tokens` (through a partial index) unless the dialect keeps them apart.
    const REVOKED_LIVE: &'static str = statements::REVOKED_IN_ISSUED_TOKENS;

    /// What `error`, raised by this backend's driver, means: a lost connection, data the
    /// database refused, or another failure, as this database's codes say.
    fn meaning(error: &sqlx::Error) -> Meaning;

    /// The pool the shared statements run on.
    fn pool(&self) -> &sqlx::Pool<Self::Database>;

    /// `StoreLifecycle::prepare`: upkeep ahead of the coming day's writes (PostgreSQL makes
    /// its token partitions); nothing by default.
    async fn prepare(&self, _now: i64) -> Result<(), StoreUnavailable> {
        Ok(())
    }

    /// Begins the transaction a key rotation (`SigningKeyRecords::schedule`) runs in: two
    /// rotations at once (two hosts' CLIs) must take turns, the second seeing the first's key.
    async fn begin_key_rotation(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Begins the transaction a revocation of token records (`TokenArchive::revoke`,
    /// `revoke_live_of`) runs in. Where the change counter's trigger runs for each row,
    /// mid-statement (MariaDB), it takes the counter's row first: otherwise one revocation
    /// holding the counter waits for a token row another holds while that one waits for
    /// the counter, and the server ends one of them as a deadlock.
    async fn begin_revocation(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Begins the transaction every write of wait times runs in (`WaitTimeRecords::upsert`
    /// and `edit`), holding the lock that makes writers of wait times take turns: an
    /// edit reads the rows inside it, so the second of two edits at once reads what the
    /// first wrote. Plain reads are not blocked.
    async fn begin_wait_time_edit(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Inserts or replaces `estimates` (by branch) in `transaction`.
    async fn write_wait_times(
        transaction: &mut sqlx::Transaction<'static, Self::Database>,
        estimates: &[WaitTimeEstimate],
    ) -> Result<(), StoreUnavailable>;

    /// Begins the transaction every write of the ATM set runs in (`AtmRecords::replace`
    /// and `edit`), holding the set's lock, as [`begin_wait_time_edit`](Self::begin_wait_time_edit)
    /// does for wait times. The write that ends it dates the set with [`Statements::date_atm_set`].
    async fn begin_atm_edit(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Inserts `atms` in `transaction`, replacing those stored under the same brand and
    /// identification.
    async fn write_atms(
        transaction: &mut sqlx::Transaction<'static, Self::Database>,
        atms: &[StoredAtm],
    ) -> Result<(), StoreUnavailable>;

    /// Deletes the ATMs `keys` (brand, identification) in `transaction`.
    async fn delete_atms(
        transaction: &mut sqlx::Transaction<'static, Self::Database>,
        keys: &[AtmKey],
    ) -> Result<(), StoreUnavailable>;

    /// Begins the read-only transaction `ViewSource::atms` (and `AtmRecords::current`) reads
    /// the ATM set and its date in: one snapshot, so the two belong together.
    async fn begin_atm_read(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Begins the transaction `QueueEventRecords::append` writes a batch in: on a server a
    /// plain one (an insert of an id another writer has not committed yet waits for that
    /// writer's end); SQLite takes its write lock at once, as its other writes do.
    async fn begin_event_append(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Begins the transaction `AtmStateRecords::apply` reads and writes states in: every
    /// apply in turn (on a server, `atm_state_log`'s row held from the start), so each
    /// reads the state the one before committed.
    async fn begin_state_apply(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// `TokenArchive::record`: many rows, all or none, durable when it returns.
    async fn record_tokens(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable>;

    /// `TokenArchive::purge_expired`.
    async fn purge_expired_tokens(&self, before: i64) -> Result<u64, StoreUnavailable>;

    /// `KeyVault::scrub`.
    async fn scrub(&self) -> Result<(), StoreUnavailable>;

    /// `ViewSource::subscribe`: `None` when changes are only found by polling.
    async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
        Ok(None)
    }
}

/// A CLIENT span of one store statement, `name` being `"{operation} {table}"`, with
/// OpenTelemetry's database attributes (`db.system.name`, `db.operation.name`,
/// `db.collection.name`). At TRACE level: made only beneath a traced request or
/// background task (the server's trace layer), and disabled, at the cost of one check,
/// otherwise.
pub(crate) fn db_span(system: &'static str, name: &'static str) -> tracing::Span {
    let span = tracing::trace_span!(
        "db",
        otel.name = name,
        otel.kind = "client",
        db.system.name = system,
        db.operation.name = tracing::field::Empty,
        db.collection.name = tracing::field::Empty,
    );
    if !span.is_disabled() {
        let (operation, table) = name.split_once(' ').unwrap_or((name, ""));
        span.record("db.operation.name", operation);
        span.record("db.collection.name", table);
    }
    span
}
