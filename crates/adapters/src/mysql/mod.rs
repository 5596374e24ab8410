//! The MariaDB store (MySQL's protocol, sqlx's MySQL driver): one database for every
//! instance of the service, as PostgreSQL's is, for a bank whose digital channels run
//! MariaDB. The same contract as the other stores (the contract tests run against each).
//!
//! What a MariaDB store is made of:
//! - this file: the connection (a pool, strict mode, a binary collation), the check that
//!   the server keeps what it acknowledges, what MariaDB's errors mean, and its test
//!   server;
//! - `records`: what MariaDB writes in its own dialect (`SqlDialect`): many rows as
//!   multi-row `VALUES … ON DUPLICATE KEY UPDATE`, a row lock for each kind of writer to
//!   take turns on, purges in bounded batches, `OPTIMIZE TABLE` to scrub;
//! - `migrations/mysql`: its schema, with the triggers that move the change counters;
//! - every other statement is shared with the other SQL stores, rendered with `?`
//!   placeholders and `ON DUPLICATE KEY UPDATE`: `MysqlStore` is
//!   `SqlStore<MysqlDialect>`, whose roles are `src/sql/roles/`.
//!
//! MariaDB has no change notices (no LISTEN/NOTIFY): instances find changes by polling
//! the change counters, every `--refresh-interval-ms`.

use std::str::FromStr;
use std::time::Duration;

use domain::ports::StoreUnavailable;
use sqlx::mysql::{MySqlConnectOptions, MySqlDatabaseError, MySqlPoolOptions};
use sqlx::{Connection as _, Executor as _, MySqlConnection, MySqlPool};

use crate::registry::Backend;
use crate::sql::{Meaning, SqlStore};
use crate::store::Store;

mod records;

/// Connections per instance, as on PostgreSQL: the request paths do not use the pool.
/// Three instances take 24 of MariaDB's default 151.
const POOL_SIZE: u32 = 8;

/// How long a caller waits for a pooled connection (including opening one): the fault
/// issue bounds every store wait on a request path at about 2 s.
const CONNECT_WAIT: Duration = Duration::from_secs(2);

/// What every connection sets first. Strict mode for every table, whatever the server's
/// default: a value too long for its column is refused, never stored cut short. A
/// transaction waits at most 60 s for a row lock (an import waiting for another's turn,
/// as SQLite's imports do), and a connection left idle in a transaction by a process that
/// hung is closed by the server after 30 s, releasing its locks (PostgreSQL's
/// `idle_in_transaction_session_timeout`).
const SESSION: &str = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES'), \
                       innodb_lock_wait_timeout = 60, idle_transaction_timeout = 30";

/// A MariaDB database as a store: every role in the shared statements
/// (`src/sql/roles/`), with what MariaDB writes its own way ([`MysqlDialect`]).
pub(crate) type MysqlStore = SqlStore<MysqlDialect>;

/// MariaDB's part of its store: the pool, and what MariaDB writes in its own dialect
/// (`records.rs`).
#[derive(Debug, Clone)]
pub(crate) struct MysqlDialect {
    pool: MySqlPool,
}

impl MysqlStore {
    /// Connects to the database at `url` (`mysql://user:password@host:3306/database`, or
    /// `mariadb://…`, with any of sqlx's MySQL URL parameters, such as `ssl-mode`).
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the URL is not a MariaDB URL, the server cannot be reached,
    /// or the server is not MariaDB or would lose commits it acknowledged
    /// ([`ServerSettings::refusal`]).
    pub async fn connect(url: &str) -> Result<Self, StoreUnavailable> {
        // sqlx's MySQL driver reads any scheme; `mariadb://` names the same server.
        let options = MySqlConnectOptions::from_str(url)
            .map_err(unavailable)?
            .charset("utf8mb4")
            .collation("utf8mb4_nopad_bin");
        // The server's kind and settings first, on a connection of its own: the pool's
        // connections set MariaDB's session variables, which another server refuses.
        let mut first = MySqlConnection::connect_with(&options).await.map_err(unavailable)?;
        let settings = ServerSettings::read(&mut first).await.map_err(unavailable)?;
        let _ = first.close().await;
        if let Some(refusal) = settings.refusal() {
            return Err(StoreUnavailable::new(refusal));
        }
        let session = if settings.galera { GALERA_SESSION } else { SESSION };
        let pool = MySqlPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_WAIT)
            .idle_timeout(Duration::from_secs(600))
            .max_lifetime(Duration::from_secs(1800))
            .after_connect(move |connection, _| Box::pin(async move { connection.execute(session).await.map(drop) }))
            .connect_with(options)
            .await
            .map_err(unavailable)?;
        Ok(SqlStore::new(MysqlDialect { pool }))
    }
}

/// What [`ServerSettings`] is read with first: the server's kind and how it flushes its
/// logs (MySQL answers this too, and is then refused by name).
const SERVER_SETTINGS: &str = "SELECT VERSION(), CAST(@@innodb_flush_log_at_trx_commit AS SIGNED), \
     CAST(@@log_bin AS SIGNED), CAST(@@sync_binlog AS SIGNED)";

/// Then whether it is a Galera node (no row where MariaDB was built without it)...
const WSREP_ON: &str = "SHOW GLOBAL VARIABLES LIKE 'wsrep\\_on'";

/// ...and its cluster as the node sees it.
const WSREP_STATUS: &str = "SHOW GLOBAL STATUS WHERE Variable_name IN \
     ('wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_local_state_comment')";

/// [`SESSION`] on a Galera node, and `wsrep_sync_wait = 1`: each read (and each
/// transaction's start) waits until the node has applied every commit the cluster
/// acknowledged before it. With one writer that changes nothing; just after a failover,
/// the new writer may still be applying the last commits the old one acknowledged, and a
/// token's lookup or an edit's read must see them.
const GALERA_SESSION: &str = "SET SESSION sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES'), \
                              innodb_lock_wait_timeout = 60, idle_transaction_timeout = 30, wsrep_sync_wait = 1";

/// The fewest nodes a Galera node's primary component may have for this service to rely
/// on it rather than on each node's flush at commit: a commit is acknowledged once every
/// node of the component holds it, so with two it is on two hosts. (Three nodes keep a
/// component of two when one is lost: restarts and operators' commands go on.)
const GALERA_NODES: i64 = 2;

/// What a MariaDB server says of itself that decides whether it keeps what it
/// acknowledges ([`SERVER_SETTINGS`]).
#[derive(Debug, Clone)]
pub(crate) struct ServerSettings {
    /// `VERSION()`.
    pub version: String,
    /// `innodb_flush_log_at_trx_commit`.
    pub flush_log_at_trx_commit: i64,
    /// `log_bin`: 1 when the binary log is on.
    pub binary_log: i64,
    /// `sync_binlog`.
    pub sync_binlog: i64,
    /// `wsrep_on`: a Galera node.
    pub galera: bool,
    /// `wsrep_cluster_size`: nodes in the node's component.
    pub cluster_size: Option<i64>,
    /// `wsrep_cluster_status`: `Primary` when the node's component has the majority.
    pub cluster_status: Option<String>,
    /// `wsrep_local_state_comment`: `Synced` when the node has applied what it received.
    pub local_state: Option<String>,
}

impl ServerSettings {
    /// What the server at `connection` says of itself.
    async fn read(connection: &mut MySqlConnection) -> Result<Self, sqlx::Error> {
        let (version, flush_log_at_trx_commit, binary_log, sync_binlog): (String, i64, i64, i64) =
            sqlx::query_as(SERVER_SETTINGS).fetch_one(&mut *connection).await?;
        let mut settings = Self {
            version,
            flush_log_at_trx_commit,
            binary_log,
            sync_binlog,
            galera: false,
            cluster_size: None,
            cluster_status: None,
            local_state: None,
        };
        if !settings.version.contains("MariaDB") {
            return Ok(settings);
        }
        let wsrep: Option<(String, String)> = sqlx::query_as(WSREP_ON).fetch_optional(&mut *connection).await?;
        settings.galera = wsrep.is_some_and(|(_, on)| on.eq_ignore_ascii_case("ON"));
        if !settings.galera {
            return Ok(settings);
        }
        let status: Vec<(String, String)> = sqlx::query_as(WSREP_STATUS).fetch_all(&mut *connection).await?;
        for (name, value) in status {
            match name.to_ascii_lowercase().as_str() {
                "wsrep_cluster_size" => settings.cluster_size = value.parse().ok(),
                "wsrep_cluster_status" => settings.cluster_status = Some(value),
                "wsrep_local_state_comment" => settings.local_state = Some(value),
                _ => {}
            }
        }
        Ok(settings)
    }

    /// Why this service will not run on this server, if it will not, in one line.
    ///
    /// A token is answered only once its record is committed, and a commit must then
    /// survive what the server is there to survive:
    /// - a single server, its crash: InnoDB writes and flushes its log at each commit only
    ///   with `innodb_flush_log_at_trx_commit` 1 (or 3, which flushes at prepare too; 2
    ///   flushes once a second, 0 leaves it to the OS), and with the binary log on,
    ///   `sync_binlog = 1` keeps the log in step, or a crash can lose commits from
    ///   replicas and point-in-time recovery;
    /// - a Galera node, the loss of nodes: a commit is acknowledged once every node of
    ///   the primary component has it, so a node synced in a primary component of at
    ///   least [`GALERA_NODES`] nodes keeps commits through the loss of all but one node
    ///   if each writes its log at commit (`innodb_flush_log_at_trx_commit` 2, or 1 or
    ///   3; 0 leaves it to the OS, and nodes crashing together would lose it); a node
    ///   alone is a single server.
    ///
    /// The schema is MariaDB's (its collation, its generated columns): MySQL itself is
    /// refused by name rather than failing on a setting it lacks.
    pub(crate) fn refusal(&self) -> Option<String> {
        let Self { version, flush_log_at_trx_commit: flush, binary_log, sync_binlog, .. } = self;
        if !version.contains("MariaDB") {
            return Some(format!(
                "the server at the database URL is not MariaDB (version {version}): this store's schema is MariaDB's; \
                 MySQL is not supported"
            ));
        }
        if self.galera {
            let status = self.cluster_status.as_deref().unwrap_or("unknown");
            let state = self.local_state.as_deref().unwrap_or("unknown");
            if status != "Primary" || state != "Synced" {
                return Some(format!(
                    "the Galera node at the database URL is not synced in its cluster's primary component (it is \
                     {state}, its component {status}): point the URL at the cluster's writer, through a proxy that \
                     sends connections only to a synced node"
                ));
            }
            if self.cluster_size.unwrap_or(0) >= GALERA_NODES {
                return (*flush == 0).then(|| {
                    "the Galera cluster would lose acknowledged commits if its nodes crashed together: \
                     innodb_flush_log_at_trx_commit is 0, which leaves InnoDB's log to the OS; this service needs 2 \
                     (or 1) on every node"
                        .to_owned()
                });
            }
        }
        if !matches!(flush, 1 | 3) {
            let alone = if self.galera { " (a Galera node alone in its primary component is one server)" } else { "" };
            return Some(format!(
                "the MariaDB server would lose acknowledged commits in a crash: innodb_flush_log_at_trx_commit is \
                 {flush}, and this service needs 1{alone} (set it in the server's configuration)"
            ));
        }
        if *binary_log != 0 && *sync_binlog != 1 {
            return Some(format!(
                "the MariaDB server would lose acknowledged commits from its binary log in a crash: sync_binlog is \
                 {sync_binlog} with log_bin on, and this service needs 1 (set it in the server's configuration)"
            ));
        }
        None
    }
}

/// A driver's error, as MariaDB's codes say ([`meaning`]).
pub(crate) fn unavailable(error: sqlx::Error) -> StoreUnavailable {
    crate::sql::unavailable::<MysqlDialect>(error)
}

/// What an error of the MySQL driver means, by MariaDB's error number and SQLSTATE.
fn meaning(error: &sqlx::Error) -> Meaning {
    let sqlx::Error::Database(database) = error else { return Meaning::Failed };
    let Some(mysql) = database.try_downcast_ref::<MySqlDatabaseError>() else { return Meaning::Failed };
    match mysql.number() {
        // ER_OPTION_PREVENTS_STATEMENT (--read-only), ER_READ_ONLY_MODE: a replica.
        1290 | 1836 => Meaning::Lost(
            "no connection to a primary: the server is read-only (a replica, as during a failover or switchover)"
                .to_owned(),
        ),
        // ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED.
        1053 | 1927 => Meaning::Lost("no connection to the database: the server is shutting down".to_owned()),
        // ER_UNKNOWN_COM_ERROR, as a Galera node answers while it is not in the cluster's
        // primary component or not synced ("WSREP has not yet prepared node for
        // application use").
        1047 => Meaning::Lost(
            "no connection to a primary: the Galera node is not synced with its cluster's primary component".to_owned(),
        ),
        // ER_LOCK_DEADLOCK: InnoDB chose this transaction to end a deadlock, or a Galera
        // cluster aborted it for a conflicting one committed on another node (SQLSTATE
        // 40001 both).
        1213 => Meaning::Conflict,
        number if refuses_the_data(number, mysql.code().unwrap_or("")) => Meaning::RefusedData,
        _ => Meaning::Failed,
    }
}

/// Whether an error MariaDB answered with says it refused the data it was given: SQLSTATE
/// class 22 (data exception: too long, out of range, a bad date) or 23 (integrity: a
/// duplicate key, a NULL, a failed CHECK), and the refusals MariaDB files under the
/// general `HY000`: ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (1366, bytes that are no UTF-8
/// text) and a failed CHECK as MySQL numbers it (3819). Every other error (a lock wait, a
/// deadlock once its reruns are spent, a full disk, a lost connection, a syntax error) is
/// the store being unavailable.
pub(crate) fn refuses_the_data(number: u16, sqlstate: &str) -> bool {
    sqlstate.starts_with("22") || sqlstate.starts_with("23") || matches!(number, 1366 | 3819)
}

/// The MariaDB store, registered under `mysql:`, `mariadb:`.
pub const BACKEND: Backend = Backend {
    name: "mysql",
    schemes: &["mysql", "mariadb"],
    example: "mysql://user:password@host:3306/database",
    shared_across_processes: true,
    open: |url| Box::pin(async move { Ok(Store::of(MysqlStore::connect(url).await?)) }),
    #[cfg(feature = "testing")]
    testing: crate::testing::TestSupport {
        fresh: || crate::testing::fresh_database_on(&TEST_SERVER),
        execute_sql: Some(execute_sql),
    },
};

/// The MariaDB server tests make databases of their own on: `TEST_MYSQL_URL`, a URL
/// whose user may `CREATE DATABASE` (`mysql://root@127.0.0.1:3306/test`).
#[cfg(feature = "testing")]
pub static TEST_SERVER: crate::testing::TestServer = crate::testing::TestServer {
    variable: "TEST_MYSQL_URL",
    kind: "MariaDB",
    example: "mysql://user:password@host:3306/db",
    create: "CREATE DATABASE {} CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin",
    drop: "DROP DATABASE IF EXISTS {}",
    run: execute_sql,
};

/// Runs `statement` at `url` over a connection of its own, as another system would.
#[cfg(feature = "testing")]
fn execute_sql(url: &str, statement: String) -> crate::registry::Opening<'_, Result<u64, String>> {
    use sqlx::Connection as _;
    Box::pin(async move {
        let mut connection = sqlx::MySqlConnection::connect(url).await.map_err(|e| e.to_string())?;
        connection.execute(sqlx::AssertSqlSafe(statement)).await.map(|done| done.rows_affected()).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use domain::ports::StoreFailure;
    use sqlx::Connection as _;

    use super::*;

    fn server(version: &str, flush: i64, binary_log: bool, sync_binlog: i64) -> ServerSettings {
        ServerSettings {
            version: version.to_owned(),
            flush_log_at_trx_commit: flush,
            binary_log: i64::from(binary_log),
            sync_binlog,
            galera: false,
            cluster_size: Some(0),
            cluster_status: Some("Disconnected".to_owned()),
            local_state: None,
        }
    }

    fn galera(nodes: i64, state: &str, status: &str, flush: i64) -> ServerSettings {
        ServerSettings {
            galera: true,
            cluster_size: Some(nodes),
            cluster_status: Some(status.to_owned()),
            local_state: Some(state.to_owned()),
            ..server("10.11.19-MariaDB-0+deb12u1", flush, false, 0)
        }
    }

    #[test]
    fn a_server_that_would_lose_acknowledged_commits_or_is_not_mariadb_is_named_with_what_to_change() {
        let mariadb = "10.11.19-MariaDB-0+deb12u1";
        assert_eq!(server(mariadb, 1, false, 0).refusal(), None);
        assert_eq!(server(mariadb, 3, true, 1).refusal(), None, "3 flushes at each commit too");
        let lazy = server(mariadb, 2, false, 0).refusal().unwrap();
        assert!(lazy.contains("innodb_flush_log_at_trx_commit is 2") && !lazy.contains('\n'), "{lazy}");
        assert!(server(mariadb, 0, false, 0).refusal().unwrap().contains("is 0"));
        let binlog = server(mariadb, 1, true, 0).refusal().unwrap();
        assert!(binlog.contains("sync_binlog is 0 with log_bin on"), "{binlog}");
        let mysql = server("8.0.36", 1, true, 1).refusal().unwrap();
        assert!(mysql.contains("not MariaDB (version 8.0.36)") && mysql.contains("MySQL is not supported"), "{mysql}");
    }

    #[test]
    fn a_synced_galera_node_of_two_or_more_is_trusted_if_it_writes_at_commit_and_any_other_node_is_named_with_what_is_wrong() {
        assert_eq!(galera(3, "Synced", "Primary", 2).refusal(), None, "the cluster keeps the commit");
        assert_eq!(galera(2, "Synced", "Primary", 2).refusal(), None, "one of three lost: restarts go on");
        assert_eq!(galera(5, "Synced", "Primary", 1).refusal(), None);
        let lazy = galera(3, "Synced", "Primary", 0).refusal().unwrap();
        assert!(lazy.contains("innodb_flush_log_at_trx_commit is 0") && !lazy.contains('\n'), "{lazy}");
        let alone = galera(1, "Synced", "Primary", 2).refusal().unwrap();
        assert!(alone.contains("is 2") && alone.contains("alone in its primary component"), "{alone}");
        assert_eq!(galera(1, "Synced", "Primary", 1).refusal(), None, "a node alone that flushes at commit");
        let donor = galera(3, "Donor/Desynced", "Primary", 1).refusal().unwrap();
        assert!(donor.contains("not synced") && donor.contains("it is Donor/Desynced, its component Primary"), "{donor}");
        let cut_off = galera(1, "Synced", "non-Primary", 1).refusal().unwrap();
        assert!(cut_off.contains("its component non-Primary") && !cut_off.contains('\n'), "{cut_off}");
    }

    #[test]
    fn data_exceptions_integrity_violations_and_bad_text_are_refusals_and_every_other_error_an_outage() {
        // Too long, out of range, duplicate, NULL, CHECK (MariaDB), bad UTF-8, CHECK (MySQL).
        for (number, state) in [(1406, "22001"), (1264, "22003"), (1062, "23000"), (1048, "23000"), (4025, "23000")]
        {
            assert!(refuses_the_data(number, state), "{number}");
        }
        assert!(refuses_the_data(1366, "HY000") && refuses_the_data(3819, "HY000"));
        // Lock wait, deadlock, disk full, table missing, syntax, too many connections.
        for (number, state) in [(1205, "HY000"), (1213, "40001"), (1021, "HY000"), (1146, "42S02"), (1064, "42000"), (1040, "08004")] {
            assert!(!refuses_the_data(number, state), "{number}");
        }
    }

    /// `OPTIMIZE TABLE` answers a failed rebuild with rows, not an error: a scrub that did
    /// not happen is an error, one that did is `Ok`.
    #[tokio::test]
    async fn a_scrub_that_did_not_rebuild_the_keys_table_is_an_error() {
        use crate::store::{KeyVault, StoreLifecycle};
        let Some(database) = crate::testing::TestDatabase::create(&TEST_SERVER, "MariaDB's scrub").await else {
            return;
        };
        let store = MysqlStore::connect(&database.url).await.unwrap();
        let missing = store.scrub().await.unwrap_err().to_string();
        assert!(missing.contains("did not rebuild it") && missing.contains("Operation failed"), "{missing}");
        store.migrate().await.unwrap();
        store.scrub().await.unwrap();
    }

    /// What MariaDB refuses to hold is told as refused data, and a killed connection as
    /// an outage.
    #[tokio::test]
    async fn what_mariadb_refuses_to_hold_is_told_as_refused_data_and_a_killed_connection_as_an_outage() {
        let Some(database) = crate::testing::TestDatabase::create(&TEST_SERVER, "the classification of MariaDB's errors").await
        else {
            return;
        };
        let store = MysqlStore::connect(&database.url).await.unwrap();
        let mut connection = store.dialect.pool.acquire().await.unwrap();
        connection
            .execute("CREATE TEMPORARY TABLE t (id INTEGER PRIMARY KEY, name VARCHAR(35) NOT NULL CHECK (name <> 'x'))")
            .await
            .unwrap();
        connection.execute("INSERT INTO t VALUES (1, 'A1')").await.unwrap();
        for statement in [
            "INSERT INTO t VALUES (2, REPEAT('y', 36))",
            "INSERT INTO t VALUES (1, 'b')",
            "INSERT INTO t VALUES (3, NULL)",
            "INSERT INTO t VALUES (4, 'x')",
            "INSERT INTO t VALUES (5, X'C328')",
        ] {
            let refused = unavailable(connection.execute(statement).await.unwrap_err());
            assert_eq!(refused.failure(), StoreFailure::RefusedData, "{statement}: {refused}");
        }
        let (id,): (u64,) = sqlx::query_as("SELECT CONNECTION_ID()").fetch_one(&mut *connection).await.unwrap();
        let mut other = sqlx::MySqlConnection::connect(&database.url).await.unwrap();
        other.execute(sqlx::AssertSqlSafe(format!("KILL {id}"))).await.unwrap();
        let gone = unavailable(connection.execute("SELECT 1").await.unwrap_err());
        assert_eq!(gone.failure(), StoreFailure::Unavailable, "{gone}");
        assert!(gone.to_string().starts_with("the store is unavailable: "), "{gone}");
    }
}
