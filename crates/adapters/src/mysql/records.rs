//! What the MariaDB store writes in its own dialect: sets of rows as multi-row `VALUES`
//! statements (`sql::many_rows`, with `ON DUPLICATE KEY UPDATE`), a row lock
//! for each kind of writer to take turns on, a consistent snapshot for reading the ATM
//! set, purges in bounded batches, and `OPTIMIZE TABLE` to scrub.

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::branch::WaitTimeEstimate;
use domain::ports::{AtmKey, StoreUnavailable};
use domain::token::IssuedToken;
use sqlx::mysql::MySqlQueryResult;
use sqlx::{Acquire as _, Executor as _, MySql, MySqlPool, QueryBuilder};

use super::{MysqlDialect, unavailable};
use crate::sql::many_rows::{self, ROWS_PER_STATEMENT};
use crate::sql::{Meaning, Placeholders, Retries, RowsAffected, SqlDialect, Syntax, retry};

/// Token records deleted per statement by a purge: each batch is its own short
/// transaction, so a purge of millions of records never holds many row locks or one long
/// transaction.
const PURGE_ROWS_PER_STATEMENT: u64 = 500;

/// After each batch a purge waits this many times as long as the batch took, so it takes
/// at most a third of the server's time and the token writer's commits go on between
/// batches. Unpaced, batches of 5,000 took the server whole: authorize's p99 went from
/// 7 ms to 322 ms while 1.8 million records were purged (`bench/purge`,
/// docs/benchmarks.md), with no lock waited for; the server's log and CPU were the
/// contention.
const PURGE_PAUSE_FACTOR: u32 = 2;

/// The row lock every write of the ATM set takes first, as on PostgreSQL: two writers
/// take turns, and the second reads the set after the first committed (a locking read
/// opens no snapshot; the edit's first plain read, after it, does).
const LOCK_ATM_SET: &str = "SELECT id FROM atm_set WHERE id = 1 FOR UPDATE";

/// State applies take turns on the log's one row.
const LOCK_ATM_STATES: &str = "SELECT id FROM atm_state_log WHERE id = 1 FOR UPDATE";
/// The row lock every write of wait times takes first: the topic's change counter, which
/// each of their writes (the trigger) locks anyway, so plain-SQL writers take the same
/// turns. Readers are never blocked (InnoDB's reads take no locks).
const LOCK_WAIT_TIMES: &str = "SELECT revision FROM change_log WHERE topic = 'wait_times' FOR UPDATE";

/// The row lock revocations take first: the counter their trigger moves for each token
/// row, taken before any token row so that two revocations at once (a client's tokens
/// and one of them) take turns instead of deadlocking.
const LOCK_REVOCATIONS: &str = "SELECT revision FROM change_log WHERE topic = 'revocations' FOR UPDATE";

/// The row lock key rotations take turns on, the same way.
const LOCK_SIGNING_KEYS: &str = "SELECT revision FROM change_log WHERE topic = 'signing_keys' FOR UPDATE";

/// Runs the bounded DELETE `batch` makes until it deletes fewer than
/// [`PURGE_ROWS_PER_STATEMENT`] rows, each batch its own transaction (run again if it
/// loses a conflict), each that deleted rows followed by a pause of
/// [`PURGE_PAUSE_FACTOR`] times its length. The rows deleted.
async fn purge_in_batches<'q>(
    pool: &MySqlPool,
    operation: &'static str,
    batch: impl Fn() -> sqlx::query::Query<'q, MySql, sqlx::mysql::MySqlArguments> + Send + Sync,
) -> Result<u64, StoreUnavailable> {
    let mut purged = 0;
    loop {
        let started = std::time::Instant::now();
        let batch = &batch;
        let deleted = retry::<MysqlDialect, _, _>(Retries::STORE, operation, move || async move {
            batch().execute(pool).await.map_err(unavailable)
        })
        .await?
        .rows_affected();
        purged += deleted;
        // Paced after every statement that deleted something, the last of a client's
        // too: many clients with a few expired records each are as many statements.
        if deleted > 0 {
            tokio::time::sleep(started.elapsed() * PURGE_PAUSE_FACTOR).await;
        }
        if deleted < PURGE_ROWS_PER_STATEMENT {
            return Ok(purged);
        }
    }
}

impl MysqlDialect {
    /// Begins a transaction and takes the row lock `lock` in it.
    async fn begin_holding(&self, lock: &'static str) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute(lock).await.map_err(unavailable)?;
        Ok(transaction)
    }
}

#[async_trait]
impl SqlDialect for MysqlDialect {
    type Database = MySql;

    const SYSTEM: &'static str = "mysql";
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    /// InnoDB has no partial index: the revoked ones are kept apart, in `revoked_tokens`
    /// (filled by a trigger when a token's `revoked_at` is set), so that every new token
    /// is not entered in an index of revocations.
    const REVOKED_LIVE: &'static str = "SELECT jti FROM revoked_tokens WHERE expires_at >= $1";
    const MIGRATIONS: &'static str = super::BACKEND.name;
    const SYNTAX: Syntax = Syntax {
        placeholders: Placeholders::Positional,
        upsert: |_keys| "ON DUPLICATE KEY UPDATE".to_owned(),
        proposed: |column| format!("VALUES({column})"),
        skip_duplicates: "",
    };

    fn meaning(error: &sqlx::Error) -> Meaning {
        super::meaning(error)
    }

    fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    async fn begin_key_rotation(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.begin_holding(LOCK_SIGNING_KEYS).await
    }

    async fn begin_revocation(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.begin_holding(LOCK_REVOCATIONS).await
    }

    /// A plain transaction: the primary key makes a second writer of an id wait.
    async fn begin_event_append(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.pool.begin().await.map_err(unavailable)
    }

    async fn begin_state_apply(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.begin_holding(LOCK_ATM_STATES).await
    }

    async fn begin_wait_time_edit(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.begin_holding(LOCK_WAIT_TIMES).await
    }

    #[tracing::instrument(skip_all, fields(estimates = estimates.len()))]
    async fn write_wait_times(
        transaction: &mut sqlx::Transaction<'static, MySql>,
        estimates: &[WaitTimeEstimate],
    ) -> Result<(), StoreUnavailable> {
        many_rows::write_in_chunks::<MySql, _>(&mut **transaction, estimates, |chunk| many_rows::upsert_wait_times(&Self::SYNTAX, chunk))
            .await
            .map_err(unavailable)
    }

    async fn begin_atm_edit(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.begin_holding(LOCK_ATM_SET).await
    }

    #[tracing::instrument(skip_all, fields(atms = atms.len()))]
    async fn write_atms(
        transaction: &mut sqlx::Transaction<'static, MySql>,
        atms: &[StoredAtm],
    ) -> Result<(), StoreUnavailable> {
        many_rows::write_in_chunks::<MySql, _>(&mut **transaction, atms, |chunk| many_rows::upsert_atms(&Self::SYNTAX, chunk))
            .await
            .map_err(unavailable)
    }

    #[tracing::instrument(skip_all, fields(removals = keys.len()))]
    async fn delete_atms(
        transaction: &mut sqlx::Transaction<'static, MySql>,
        keys: &[AtmKey],
    ) -> Result<(), StoreUnavailable> {
        for chunk in keys.chunks(ROWS_PER_STATEMENT) {
            QueryBuilder::<MySql>::new("DELETE FROM atms WHERE (brand_name, identification) IN ")
                .push_tuples(chunk, |mut key, (brand, identification)| {
                    key.push_bind(brand.as_str()).push_bind(identification.as_str());
                })
                .build()
                .execute(&mut **transaction)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }

    async fn begin_atm_read(&self) -> Result<sqlx::Transaction<'static, MySql>, StoreUnavailable> {
        self.pool.begin_with("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY").await.map_err(unavailable)
    }

    #[tracing::instrument(skip_all, fields(tokens = tokens.len()))]
    async fn record_tokens(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        // On a connection of its own, not through the pool's executor (a stream per
        // statement, 11,000 instructions more a batch, `bench/run --callgrind`).
        let mut connection = self.pool.acquire().await.map_err(unavailable)?;
        if tokens.len() <= ROWS_PER_STATEMENT {
            // One statement (none for no records) is its own transaction, all or none:
            // without BEGIN and COMMIT, a group commit is one round trip, not three.
            return many_rows::write_in_chunks::<MySql, _>(&mut *connection, tokens, many_rows::insert_tokens)
                .await
                .map_err(unavailable);
        }
        let mut transaction = connection.begin().await.map_err(unavailable)?;
        many_rows::write_in_chunks::<MySql, _>(&mut *transaction, tokens, many_rows::insert_tokens).await.map_err(unavailable)?;
        // Durable when it returns: InnoDB flushes its log at each commit (the server's
        // settings are checked when the store is opened).
        transaction.commit().await.map_err(unavailable)
    }

    /// Deletes exactly the records that expired before `before`, client by client (the
    /// index on `(client_id, expires_at)`; the table has none on expiry alone, to keep
    /// token writes light), in batches of [`PURGE_ROWS_PER_STATEMENT`], each client's
    /// oldest first, paced by [`PURGE_PAUSE_FACTOR`]; then the revocations of those records.
    async fn purge_expired_tokens(&self, before: i64) -> Result<u64, StoreUnavailable> {
        let pool = &self.pool;
        // A loose scan of the index: one step per client, not per record.
        let clients: Vec<(String,)> =
            sqlx::query_as("SELECT DISTINCT client_id FROM issued_tokens").fetch_all(pool).await.map_err(unavailable)?;
        let mut purged = 0;
        for (client,) in &clients {
            purged += purge_in_batches(pool, "DELETE token_records", move || {
                sqlx::query(
                    "DELETE FROM issued_tokens WHERE client_id = ? AND expires_at < ? ORDER BY expires_at LIMIT ?",
                )
                .bind(client.as_str())
                .bind(before)
                .bind(PURGE_ROWS_PER_STATEMENT)
            })
            .await?;
        }
        purge_in_batches(pool, "DELETE revoked_tokens", move || {
            sqlx::query("DELETE FROM revoked_tokens WHERE expires_at < ? ORDER BY expires_at LIMIT ?")
                .bind(before)
                .bind(PURGE_ROWS_PER_STATEMENT)
        })
        .await?;
        Ok(purged)
    }

    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        // OPTIMIZE TABLE rebuilds an InnoDB table from its live rows (ALTER TABLE …
        // FORCE), so the old versions of a resealed key leave its pages. Copies already in
        // the redo or undo log, the binary log or a backup are beyond the service's reach.
        // It answers with rows, not an error, when the rebuild fails (a lock wait, a full
        // disk): a scrub that did not happen must not be reported as done.
        let said: Vec<(String, String, String, String)> =
            sqlx::query_as("OPTIMIZE TABLE signing_keys").fetch_all(&self.pool).await.map_err(unavailable)?;
        match said.last() {
            Some((_, _, kind, text)) if kind == "status" && text == "OK" => Ok(()),
            _ => {
                let said: Vec<String> = said.into_iter().map(|(_, _, kind, text)| format!("{kind}: {text}")).collect();
                Err(StoreUnavailable::new(format!("OPTIMIZE TABLE signing_keys did not rebuild it: {}", said.join("; "))))
            }
        }
    }
}

impl RowsAffected for MySqlQueryResult {
    fn rows_affected(&self) -> u64 {
        MySqlQueryResult::rows_affected(self)
    }
}
