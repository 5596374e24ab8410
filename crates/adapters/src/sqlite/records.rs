//! What the SQLite store writes in its own dialect: sets of rows as multi-row `VALUES`
//! statements inside one `BEGIN IMMEDIATE` transaction (imports wait their turn for it),
//! and `VACUUM` to scrub.

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::branch::WaitTimeEstimate;
use domain::ports::{AtmKey, StoreUnavailable};
use domain::token::IssuedToken;
use sqlx::sqlite::SqliteQueryResult;
use sqlx::{Sqlite, SqlitePool};

use super::{SqliteDialect, unavailable};
use crate::sql::many_rows;
use crate::sql::{Meaning, RowsAffected, SqlDialect, Syntax};

impl SqliteDialect {
    /// Begins a write transaction: `BEGIN IMMEDIATE` takes the write lock at once (so a
    /// writer waits for another at its start, within the busy timeout), and sqlx refuses
    /// it on a connection it counts as already inside a transaction.
    async fn write(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(unavailable)
    }

    /// Begins a write transaction for an operator's edit (an import), waiting for other
    /// writers up to [`EDIT_LOCK_WAIT`] rather than the request paths' busy timeout: an
    /// import of a large set holds the write lock for as long as it reads and writes the
    /// set, and a second import started meanwhile must wait its turn, not fail.
    async fn write_in_turn(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        let started = std::time::Instant::now();
        loop {
            match self.pool.begin_with("BEGIN IMMEDIATE").await {
                Err(error) if super::result_code(&error).is_some_and(super::is_busy) && started.elapsed() < EDIT_LOCK_WAIT => {}
                begun => return begun.map_err(unavailable),
            }
        }
    }
}

/// How long an edit of the ATM set or of wait times waits for the write lock (another
/// import, on any host sharing the file). The service's own writes (token records) wait
/// `LOCK_WAIT` each time; an import's transaction holds the lock for about what reading
/// and writing its set takes.
const EDIT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

#[async_trait]
impl SqlDialect for SqliteDialect {
    type Database = Sqlite;

    const SYSTEM: &'static str = "sqlite";
    const SYNTAX: Syntax = Syntax::ON_CONFLICT;
    const FOR_UPDATE: &'static str = "";
    const MIGRATIONS: &'static str = super::BACKEND.name;

    fn meaning(error: &sqlx::Error) -> Meaning {
        match super::result_code(error) {
            Some(code) if super::refuses_the_data(code) => Meaning::RefusedData,
            Some(code) if super::lost_its_snapshot(code) => Meaning::Conflict,
            _ => Meaning::Failed,
        }
    }

    fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn begin_key_rotation(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.write().await
    }

    /// The write lock, as every write takes it (the one writer at a time).
    async fn begin_revocation(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.write().await
    }

    /// The write lock, as every write takes it: a batch of events waits for another
    /// writer at its start, within the busy timeout.
    async fn begin_event_append(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.write().await
    }

    /// The write lock, as every write takes it.
    async fn begin_state_apply(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.write().await
    }

    async fn begin_wait_time_edit(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.write_in_turn().await
    }

    #[tracing::instrument(skip_all, fields(estimates = estimates.len()))]
    async fn write_wait_times(
        transaction: &mut sqlx::Transaction<'static, Sqlite>,
        estimates: &[WaitTimeEstimate],
    ) -> Result<(), StoreUnavailable> {
        many_rows::write_in_chunks::<Sqlite, _>(&mut **transaction, estimates, |chunk| many_rows::upsert_wait_times(&Self::SYNTAX, chunk))
            .await
            .map_err(unavailable)
    }

    async fn begin_atm_edit(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.write_in_turn().await
    }

    #[tracing::instrument(skip_all, fields(atms = atms.len()))]
    async fn write_atms(
        transaction: &mut sqlx::Transaction<'static, Sqlite>,
        atms: &[StoredAtm],
    ) -> Result<(), StoreUnavailable> {
        many_rows::write_in_chunks::<Sqlite, _>(&mut **transaction, atms, |chunk| many_rows::upsert_atms(&Self::SYNTAX, chunk))
            .await
            .map_err(unavailable)
    }

    #[tracing::instrument(skip_all, fields(removals = keys.len()))]
    async fn delete_atms(
        transaction: &mut sqlx::Transaction<'static, Sqlite>,
        keys: &[AtmKey],
    ) -> Result<(), StoreUnavailable> {
        for (brand, identification) in keys {
            sqlx::query("DELETE FROM atms WHERE brand_name = $1 AND identification = $2")
                .bind(brand)
                .bind(identification)
                .execute(&mut **transaction)
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }

    /// A deferred transaction: its first read takes a snapshot of the WAL, which the
    /// second read shares.
    async fn begin_atm_read(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.pool.begin().await.map_err(unavailable)
    }

    #[tracing::instrument(skip_all, fields(tokens = tokens.len()))]
    async fn record_tokens(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        let mut transaction = self.write().await?;
        many_rows::write_in_chunks::<Sqlite, _>(&mut *transaction, tokens, many_rows::insert_tokens).await.map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)
    }

    /// Deletes exactly the records that expired before `before`.
    async fn purge_expired_tokens(&self, before: i64) -> Result<u64, StoreUnavailable> {
        sqlx::query("DELETE FROM issued_tokens WHERE expires_at < $1")
            .bind(before)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(unavailable)
    }

    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        // VACUUM rewrites every page from the live rows only; the checkpoint then copies
        // the rewritten pages into the database file and empties the write-ahead log.
        sqlx::query("VACUUM").execute(&self.pool).await.map_err(unavailable)?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.pool).await.map_err(unavailable)?;
        Ok(())
    }
}

impl RowsAffected for SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        SqliteQueryResult::rows_affected(self)
    }
}
