//! The PostgreSQL store: one database for every instance of the service, on as many
//! hosts as the bank runs. The same contract as the SQLite store (the contract tests
//! run against both); what differs is the connection, how many rows are written at once,
//! how token records are kept over time, and change notices.
//!
//! What a PostgreSQL store is made of:
//! - this file: the connection (a pool, `synchronous_commit = on`);
//! - `records`: what PostgreSQL writes in its own dialect (`SqlDialect`): a set of rows
//!   as one `INSERT … SELECT FROM UNNEST(…)` statement (one transaction, one commit), and
//!   `LOCK TABLE` so that two key rotations take turns;
//! - `partitions`: token records partitioned by the hour they expire in, so purging a
//!   day-old hour drops a partition instead of deleting rows one by one
//!   ([`StoreLifecycle::prepare`](crate::store::StoreLifecycle::prepare) makes the
//!   partitions of the coming hours ahead of time);
//! - `listener`: change notices pushed by the database (LISTEN/NOTIFY), so every
//!   instance reloads at once instead of at its next poll;
//! - `migrations/postgres`: its schema, with the triggers that move the change counters
//!   and notify;
//! - every other statement is shared with the other SQL stores: `PostgresStore` is
//!   `SqlStore<PostgresDialect>`, whose roles are `src/sql/roles/`.

use std::str::FromStr;
use std::time::Duration;

use domain::ports::StoreUnavailable;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::registry::Backend;
use crate::sql::{Meaning, SqlStore};
use crate::store::Store;

mod listener;
mod partitions;
mod records;

pub use partitions::TOKEN_PARTITION_SECONDS;

/// Connections per instance. The request paths do not use the pool (they read the
/// in-memory view); its users are the group commit, the view's refresher, readiness
/// probes and maintenance. Three instances take 24 of PostgreSQL's default 100.
const POOL_SIZE: u32 = 8;

/// How long a caller waits for a pooled connection (including opening one): the fault
/// issue bounds every store wait on a request path at about 2 s.
const CONNECT_WAIT: Duration = Duration::from_secs(2);

/// A PostgreSQL database as a store: every role in the shared statements
/// (`src/sql/roles/`), with what PostgreSQL does its own way ([`PostgresDialect`]).
pub(crate) type PostgresStore = SqlStore<PostgresDialect>;

/// PostgreSQL's part of its store: the pool, and what PostgreSQL writes in its own dialect
/// (`records.rs`), its token partitions (`partitions.rs`) and its change notices
/// (`listener.rs`).
#[derive(Debug, Clone)]
pub(crate) struct PostgresDialect {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/database`, or
    /// `postgresql://…`, with any of libpq's URL parameters sqlx knows, such as
    /// `sslmode`).
    ///
    /// Every connection commits synchronously (`synchronous_commit = on`), whatever the
    /// server's default: a token is answered only once its record is on disk.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the URL is not a PostgreSQL URL or the server cannot be
    /// reached.
    pub async fn connect(url: &str) -> Result<Self, StoreUnavailable> {
        let options = PgConnectOptions::from_str(url).map_err(unavailable)?.application_name("branch-atm").options([
            ("synchronous_commit", "on"),
            // A transaction left open by a process that hung holds its locks for at
            // most this long.
            ("idle_in_transaction_session_timeout", "30s"),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_WAIT)
            .idle_timeout(Duration::from_secs(600))
            .max_lifetime(Duration::from_secs(1800))
            .connect_with(options)
            .await
            .map_err(unavailable)?;
        Ok(SqlStore::new(PostgresDialect { pool }))
    }
}

/// The PostgreSQL store, registered under `postgres:`, `postgresql:`.
pub const BACKEND: Backend = Backend {
    name: "postgres",
    schemes: &["postgres", "postgresql"],
    example: "postgres://user@host:port/database",
    shared_across_processes: true,
    open: |url| Box::pin(async move { Ok(Store::of(PostgresStore::connect(url).await?)) }),
    #[cfg(feature = "testing")]
    testing: crate::testing::TestSupport {
        fresh: || crate::testing::fresh_database_on(&TEST_SERVER),
        execute_sql: Some(execute_sql),
    },
};

/// A driver's error, as PostgreSQL's codes say ([`meaning`]).
pub(crate) fn unavailable(error: sqlx::Error) -> StoreUnavailable {
    crate::sql::unavailable::<PostgresDialect>(error)
}

/// What a lost connection to a PostgreSQL primary means for an operator.
const NO_PRIMARY: &str = "no connection to a primary: the database's address closed the connection before any \
                          server answered (a proxy with no primary behind it, as during a failover)";

/// What an error of PostgreSQL's driver means. A lost connection, or one to a server
/// that cannot take writes, is named by what it means for an operator (during a
/// failover, say) rather than by the protocol step it broke at.
fn meaning(error: &sqlx::Error) -> Meaning {
    match error {
        // A proxy with no server behind it (HAProxy while no node is the primary)
        // accepts the connection and closes it: the driver meets the end of the stream
        // where PostgreSQL's answer to its SSLRequest belongs.
        sqlx::Error::Protocol(text) if text.contains("SSLRequest") => Meaning::Lost(NO_PRIMARY.to_owned()),
        // The same seen a step later: the stream ends where the server's first message
        // belongs.
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => Meaning::Lost(NO_PRIMARY.to_owned()),
        sqlx::Error::Database(database) => match database.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
            // read_only_sql_transaction: a replica, or a primary being demoted.
            Some(postgres) if postgres.code() == "25006" => Meaning::Lost(
                "no connection to a primary: the server is read-only (a replica, as during a failover or switchover)"
                    .to_owned(),
            ),
            Some(postgres) if refuses_the_data(postgres.code()) => Meaning::RefusedData,
            // serialization_failure, deadlock_detected.
            Some(postgres) if matches!(postgres.code(), "40001" | "40P01") => Meaning::Conflict,
            _ => Meaning::Failed,
        },
        _ => Meaning::Failed,
    }
}

/// Whether the SQLSTATE of an error PostgreSQL answered with says it refused the data
/// it was given: class 22, data exception (22021 a byte sequence such as 0x00 that is no
/// UTF-8 text, 22001 a string too long, 22P05 an untranslatable character), and class 23,
/// integrity constraint violation. Every other class (a connection, a lock, a server
/// shutting down, resources) is the store being unavailable.
pub(crate) fn refuses_the_data(sqlstate: &str) -> bool {
    sqlstate.starts_with("22") || sqlstate.starts_with("23")
}

/// The PostgreSQL server tests make databases of their own on: `TEST_POSTGRES_URL`, a
/// URL whose user may `CREATE DATABASE` (`postgres://postgres@127.0.0.1:5432/postgres`).
#[cfg(feature = "testing")]
pub static TEST_SERVER: crate::testing::TestServer = crate::testing::TestServer {
    variable: "TEST_POSTGRES_URL",
    kind: "PostgreSQL",
    example: "postgres://user@host:port/db",
    create: "CREATE DATABASE {}",
    drop: "DROP DATABASE IF EXISTS {} WITH (FORCE)",
    run: execute_sql,
};

/// Runs `statement` at `url` over a connection of its own, as another system would.
#[cfg(feature = "testing")]
fn execute_sql(url: &str, statement: String) -> crate::registry::Opening<'_, Result<u64, String>> {
    use sqlx::{Connection as _, Executor as _};
    Box::pin(async move {
        let mut connection = sqlx::PgConnection::connect(url).await.map_err(|e| e.to_string())?;
        connection.execute(sqlx::AssertSqlSafe(statement)).await.map(|done| done.rows_affected()).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use domain::ports::StoreFailure;
    use sqlx::{Connection as _, Executor as _};

    use super::*;

    #[test]
    fn a_lost_connection_is_named_by_what_it_means_not_by_the_protocol_step() {
        let closed = unavailable(sqlx::Error::Protocol("unexpected response from SSLRequest: 0x00".into()));
        assert!(closed.to_string().contains("no connection to a primary") && !closed.to_string().contains("0x00"));
        let refused = unavailable(sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)));
        assert!(refused.to_string().contains(": no connection to the database: "), "{refused}");
        let cut =
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "expected to read 5 bytes, got 0 bytes at EOF");
        let cut = unavailable(sqlx::Error::Io(cut)).to_string();
        assert!(cut.contains("no connection to a primary") && !cut.contains("5 bytes"), "{cut}");
        let other = unavailable(sqlx::Error::RowNotFound);
        assert!(!other.to_string().contains("no connection"), "{other}");
    }

    #[test]
    fn data_exceptions_and_integrity_violations_are_refusals_and_every_other_class_an_outage() {
        for refusal in ["22021", "22001", "22P05", "22003", "23505", "23502", "23514"] {
            assert!(refuses_the_data(refusal), "{refusal}");
        }
        // A read-only server, a lost connection, a shut-down, a deadlock, a full disk,
        // too many connections, a syntax error.
        for outage in ["25006", "08006", "57P01", "40P01", "53100", "53300", "42601"] {
            assert!(!refuses_the_data(outage), "{outage}");
        }
    }

    /// The finding: an ATM identification holding U+0000, refused by PostgreSQL (22021),
    /// was reported as "the store is unavailable".
    #[tokio::test]
    async fn what_postgresql_refuses_to_hold_is_told_as_refused_data_and_a_lost_connection_as_an_outage() {
        let Some(url) = TEST_SERVER.url("the classification of PostgreSQL's errors") else { return };
        let mut connection = sqlx::PgConnection::connect(&url).await.unwrap();
        let nul = sqlx::query("SELECT $1::text").bind("A1\u{0}").fetch_one(&mut connection).await.unwrap_err();
        let nul = unavailable(nul);
        assert_eq!(nul.failure(), StoreFailure::RefusedData, "{nul}");
        assert!(nul.to_string().starts_with("the store refused the data: ") && nul.to_string().contains("0x00"), "{nul}");
        connection.execute("CREATE TEMPORARY TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(35))").await.unwrap();
        connection.execute("INSERT INTO t VALUES (1, 'A1')").await.unwrap();
        let long = unavailable(connection.execute("INSERT INTO t VALUES (2, repeat('x', 36))").await.unwrap_err());
        assert_eq!(long.failure(), StoreFailure::RefusedData, "{long}");
        let twice = unavailable(connection.execute("INSERT INTO t VALUES (1)").await.unwrap_err());
        assert_eq!(twice.failure(), StoreFailure::RefusedData, "{twice}");
        let gone = connection.execute("SELECT pg_terminate_backend(pg_backend_pid())").await.unwrap_err();
        let gone = unavailable(gone);
        assert_eq!(gone.failure(), StoreFailure::Unavailable, "{gone}");
        assert!(gone.to_string().starts_with("the store is unavailable: "), "{gone}");
    }
}
