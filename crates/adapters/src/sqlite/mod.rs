//! The SQLite store: the embedded default, one file, no server to run.
//!
//! What a SQLite store is made of:
//! - this file: the connection (a pool on one file, WAL, `synchronous = FULL`) and the
//!   file's mode;
//! - `records`: what SQLite writes in its own dialect (`SqlDialect`): many rows as
//!   multi-row `VALUES` in `BEGIN IMMEDIATE` transactions, `VACUUM` to scrub;
//! - `migrations/sqlite`: its schema, with the triggers that move the change counters;
//! - every other statement is shared with the other SQL stores: `SqliteStore` is
//!   `SqlStore<SqliteDialect>`, whose roles are `src/sql/roles/` (`impl<D: SqlDialect>
//!   ClientRecords for SqlStore<D>`, …).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use domain::ports::StoreUnavailable;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection as _, SqlitePool};

use crate::registry::Backend;
use crate::sql::SqlStore;
use crate::store::Store;
#[cfg(feature = "testing")]
use crate::testing::FreshStore;

mod records;

/// Connections in the pool: measured best of 1/2/4/8 on a 2-core machine. The hot paths
/// do not use the pool at all.
const POOL_SIZE: u32 = 4;

/// How long a statement waits for another process's lock (the CLI importing while the
/// service runs) before giving up, and how long a caller waits for a pooled connection:
/// the fault issue bounds every store wait on a request path at about 2 s. (SQLite can
/// still spin longer inside one call when its WAL-index locks are held; callers on a
/// request path put their own deadline around the whole call.)
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Whether an extended result code SQLite answered with says it refused the data it was
/// given: `SQLITE_TOOBIG` (a string or blob over its length limit), `SQLITE_CONSTRAINT`
/// and its extended codes (unique, not null, check…), `SQLITE_MISMATCH` (a datatype
/// mismatch). The primary code is the low byte of the extended one
/// (<https://www.sqlite.org/rescode.html>). Every other code (busy, locked, full, I/O)
/// is the store being unavailable.
pub(crate) fn refuses_the_data(extended_code: i32) -> bool {
    const SQLITE_TOOBIG: i32 = 18;
    const SQLITE_CONSTRAINT: i32 = 19;
    const SQLITE_MISMATCH: i32 = 20;
    matches!(extended_code & 0xff, SQLITE_TOOBIG | SQLITE_CONSTRAINT | SQLITE_MISMATCH)
}

/// Whether an extended result code is SQLite's "the database is locked": `SQLITE_BUSY`
/// and its extended codes, as a write lock held past the busy timeout gives.
pub(crate) fn is_busy(extended_code: i32) -> bool {
    const SQLITE_BUSY: i32 = 5;
    extended_code & 0xff == SQLITE_BUSY
}

/// Whether an extended result code is `SQLITE_BUSY_SNAPSHOT` (517): a transaction that
/// began by reading tried to write after another connection committed since its
/// snapshot, so it must begin again (the stores' writers begin with `BEGIN IMMEDIATE`
/// and never meet it; a deferred one that writes does).
pub(crate) fn lost_its_snapshot(extended_code: i32) -> bool {
    const SQLITE_BUSY_SNAPSHOT: i32 = 517;
    extended_code == SQLITE_BUSY_SNAPSHOT
}

/// The extended result code SQLite answered `error` with, if it is SQLite's answer.
pub(crate) fn result_code(error: &sqlx::Error) -> Option<i32> {
    let sqlx::Error::Database(database) = error else { return None };
    database.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
    database.code()?.parse().ok()
}

/// A driver's error, as SQLite's result codes say (`SqlDialect::meaning`).
pub(crate) fn unavailable(error: sqlx::Error) -> StoreUnavailable {
    crate::sql::unavailable::<SqliteDialect>(error)
}

/// A SQLite database file as a store: every role in the shared statements
/// (`src/sql/roles/`), with what SQLite writes its own way ([`SqliteDialect`]).
pub(crate) type SqliteStore = SqlStore<SqliteDialect>;

/// SQLite's part of its store: the pool on the file, and what SQLite writes in its own
/// dialect (`records.rs`).
#[derive(Debug, Clone)]
pub(crate) struct SqliteDialect {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating it and its folder if missing) the database file at `url`
    /// (`sqlite://path/to/file.db`).
    ///
    /// Writes are durable when they return: WAL journal with `synchronous = FULL`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the URL is not a SQLite file URL or the file cannot be opened.
    pub async fn connect(url: &str) -> Result<Self, StoreUnavailable> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(unavailable)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(LOCK_WAIT)
            .foreign_keys(true);
        let file = options.get_filename();
        // An in-memory database lives and dies with its one connection, and a connection
        // whose transaction did not end cleanly is closed (see below): it would lose everything.
        if file == Path::new(":memory:") || url.contains("mode=memory") {
            return Err(StoreUnavailable::new("an in-memory SQLite database cannot be a store: give a file"));
        }
        if let Some(folder) = file.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(StoreUnavailable::new)?;
        }
        owner_only(file).map_err(|e| StoreUnavailable::new(format!("{}: {e}", file.display())))?;
        let pool = SqlitePoolOptions::new()
            // A connection whose last transaction did not end in a COMMIT or ROLLBACK that
            // succeeded is closed, never handed out again. SQLite rolls a transaction back
            // by itself when a commit fails for lack of space; sqlx's ROLLBACK then fails,
            // its nesting count stays one too high, and it replayed the count as SAVEPOINTs:
            // the next "commit" only released a savepoint inside a transaction that was
            // never committed, which also kept the write lock. Tokens were answered that
            // were never stored, and every other connection found the database locked
            // until a restart (the fault issue, finding 1). Queued rollbacks have run by
            // the time a connection is acquired: releasing it pings its worker first.
            .before_acquire(|connection, _| Box::pin(async move { Ok(!connection.is_in_transaction()) }))
            .max_connections(POOL_SIZE)
            .idle_timeout(Duration::from_secs(600))
            .max_lifetime(Duration::from_secs(1800))
            .acquire_timeout(LOCK_WAIT)
            .connect_with(options)
            .await
            .map_err(unavailable)?;
        Ok(SqlStore::new(SqliteDialect { pool }))
    }
}

/// Creates a missing database file readable and writable by its owner only (0600,
/// whatever the umask): it holds the signing keys and every client's tokens. SQLite gives
/// the `-wal` and `-shm` files it creates the database file's mode. An existing file
/// that others may read is left as the operator set it (a group may share it on
/// purpose), with a warning.
#[cfg(unix)]
fn owner_only(file: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(file) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            let mode = std::fs::metadata(file)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    file = %file.display(),
                    mode = format!("{mode:o}"),
                    "the store file can be read by other users; it holds the signing keys (chmod 600 it)"
                );
            }
            Ok(())
        }
        Err(error) => Err(error),
    }
}

#[cfg(not(unix))]
fn owner_only(_file: &Path) -> std::io::Result<()> {
    Ok(())
}

/// The SQLite store, registered under `sqlite:`.
pub const BACKEND: Backend = Backend {
    name: "sqlite",
    schemes: &["sqlite"],
    example: "sqlite://path/to/file.db",
    shared_across_processes: true,
    open: |url| Box::pin(async move { Ok(Store::of(SqliteStore::connect(url).await?)) }),
    #[cfg(feature = "testing")]
    testing: crate::testing::TestSupport { fresh: fresh_for_a_test, execute_sql: Some(execute_sql) },
};

/// A store in a new file of its own (in a folder still to be made, as a first start finds
/// it), removed with its folder after the test.
#[cfg(feature = "testing")]
fn fresh_for_a_test() -> crate::registry::Opening<'static, Option<FreshStore>> {
    let folder = crate::testing::TempFolder::create();
    let url = format!("sqlite://{}/nested/store.db", folder.path().display());
    Box::pin(std::future::ready(Some(FreshStore::new(url, folder))))
}

/// Runs `statement` at `url` over a connection of its own, as another system would.
#[cfg(feature = "testing")]
fn execute_sql(url: &str, statement: String) -> crate::registry::Opening<'_, Result<u64, String>> {
    use sqlx::{Connection as _, Executor as _};
    Box::pin(async move {
        let mut connection = sqlx::SqliteConnection::connect(url).await.map_err(|e| e.to_string())?;
        connection.execute(sqlx::AssertSqlSafe(statement)).await.map(|done| done.rows_affected()).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use domain::ports::StoreFailure;
    use sqlx::{Connection as _, Executor as _};

    use super::*;

    #[test]
    fn sqlites_codes_for_data_it_cannot_hold_are_refusals_and_every_other_an_outage() {
        // TOOBIG, CONSTRAINT, MISMATCH; CONSTRAINT_UNIQUE, _NOTNULL, _CHECK, _PRIMARYKEY.
        for refusal in [18, 19, 20, 2067, 1299, 275, 1555] {
            assert!(refuses_the_data(refusal), "{refusal}");
        }
        // ERROR, BUSY, LOCKED, READONLY, IOERR, CORRUPT, FULL, CANTOPEN; BUSY_SNAPSHOT, IOERR_LOCK.
        for outage in [1, 5, 6, 8, 10, 11, 13, 14, 517, 3850] {
            assert!(!refuses_the_data(outage), "{outage}");
        }
    }

    #[tokio::test]
    async fn what_sqlite_refuses_to_hold_is_told_as_refused_data_not_as_an_outage() {
        let mut connection = sqlx::SqliteConnection::connect("sqlite::memory:").await.unwrap();
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)").await.unwrap();
        connection.execute("INSERT INTO t (name) VALUES ('a')").await.unwrap();
        let refused = [
            "INSERT INTO t (name) VALUES ('a')",
            "INSERT INTO t (name) VALUES (NULL)",
            "INSERT INTO t (id, name) VALUES ('x', 'b')",
            "SELECT zeroblob(2000000000)",
        ];
        for statement in refused {
            let error = unavailable(connection.execute(sqlx::AssertSqlSafe(statement)).await.unwrap_err());
            assert_eq!(error.failure(), StoreFailure::RefusedData, "{statement}: {error}");
            assert!(error.to_string().starts_with("the store refused the data: "), "{error}");
        }
        let error = unavailable(connection.execute("SELECT * FROM no_such_table").await.unwrap_err());
        assert_eq!(error.failure(), StoreFailure::Unavailable, "{error}");
    }
}
