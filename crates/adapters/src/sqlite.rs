//! The SQLite store: the embedded default, one file, no server to run.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::branch::WaitTimeEstimate;
use domain::client::{ChannelScope, ClientAddresses, ClientId, ClientRegistration, ClientStatus};
use domain::ports::{
    AtmKey, AtmRecords, ChannelRecords, ClientRecords, ImportKind, ImportLog, ImportOutcome, ImportTally,
    SigningKeyRecords, StoreInventory, StoreUnavailable, TokenArchive, WaitTimeRecords,
};
use domain::store_contents::StoreContents;
use domain::token::{CodeChallenge, IssuedToken, OpaqueToken, SigningKey, TokenId, TokenRecord};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection as _, QueryBuilder, Sqlite, SqlitePool};

use crate::rows::{self, AtmRow, ClientRow, SigningKeyRow, TokenRow, WaitTimeRow};
use crate::store::{AtmSet, KeyVault, Revisions, StoreLifecycle, ViewSource};

/// Connections in the pool: measured best of 1/2/4/8 on a 2-core machine
/// (shared/DEPENDENCIES.md). The hot paths do not use the pool at all.
const POOL_SIZE: u32 = 4;

/// How long a statement waits for another process's lock (the CLI importing while the
/// service runs) before giving up, and how long a caller waits for a pooled connection:
/// the fault issue bounds every store wait on a request path at about 2 s. (SQLite can
/// still spin longer inside one call when its WAL-index locks are held; callers on a
/// request path put their own deadline around the whole call.)
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Rows per multi-row INSERT: at most 7 parameters a row stays far below SQLite's limit of
/// 32,766 bound parameters.
const ROWS_PER_STATEMENT: usize = 500;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

fn unavailable(error: sqlx::Error) -> StoreUnavailable {
    StoreUnavailable::new(error)
}

/// A SQLite database file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
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
        Ok(Self { pool })
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

impl SqliteStore {
    /// Begins a write transaction: `BEGIN IMMEDIATE` takes the write lock at once (so a
    /// writer waits for another at its start, within the busy timeout), and sqlx refuses
    /// it on a connection it counts as already inside a transaction.
    async fn write(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreUnavailable> {
        self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(unavailable)
    }
}

#[async_trait]
impl StoreLifecycle for SqliteStore {
    #[tracing::instrument(skip(self))]
    async fn migrate(&self) -> Result<(), StoreUnavailable> {
        MIGRATOR.run(&self.pool).await.map_err(StoreUnavailable::new)
    }

    async fn ping(&self) -> Result<(), StoreUnavailable> {
        sqlx::query("SELECT revision FROM change_log LIMIT 1")
            .fetch_optional(&self.pool)
            .await
            .map(drop)
            .map_err(unavailable)
    }

    /// Nothing to prepare: one file, one table of token records.
    async fn prepare(&self, _now: i64) -> Result<(), StoreUnavailable> {
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait]
impl ViewSource for SqliteStore {
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable> {
        let rows: Vec<(String, i64)> = sqlx::query_as("SELECT topic, revision FROM change_log")
            .fetch_all(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(Revisions::from_topics(rows))
    }

    #[tracing::instrument(skip(self))]
    async fn atms(&self) -> Result<AtmSet, StoreUnavailable> {
        let (last_updated,): (i64,) = sqlx::query_as("SELECT last_updated FROM atm_set WHERE id = 1")
            .fetch_one(&self.pool)
            .await
            .map_err(unavailable)?;
        let found: Vec<AtmRow> = sqlx::query_as(
            "SELECT brand_name, identification, record, services, accessibility, latitude, longitude \
             FROM atms ORDER BY brand_name, identification",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        let atms = found.into_iter().map(rows::atm).collect::<Result<_, _>>()?;
        Ok(AtmSet { atms, last_updated })
    }
}

#[async_trait]
impl ImportLog for SqliteStore {
    async fn record(&self, kind: ImportKind, outcome: ImportOutcome, at: i64) -> Result<(), StoreUnavailable> {
        sqlx::query(
            "INSERT INTO import_runs (kind, outcome, runs, last_at) VALUES (?, ?, 1, ?) \
             ON CONFLICT (kind, outcome) DO UPDATE SET runs = import_runs.runs + 1, last_at = MAX(import_runs.last_at, excluded.last_at)",
        )
        .bind(kind.label())
        .bind(outcome.label())
        .bind(at)
        .execute(&self.pool)
        .await
        .map_err(unavailable)?;
        Ok(())
    }

    async fn tally(&self) -> Result<Vec<ImportTally>, StoreUnavailable> {
        let rows: Vec<rows::ImportRunRow> =
            sqlx::query_as("SELECT kind, outcome, runs, last_at FROM import_runs ORDER BY kind, outcome")
                .fetch_all(&self.pool)
                .await
                .map_err(unavailable)?;
        Ok(rows::import_tally(rows))
    }
}

#[async_trait]
impl StoreInventory for SqliteStore {
    async fn contents(&self) -> Result<StoreContents, StoreUnavailable> {
        let (clients, supported_channels, wait_times, atms, token_records): (bool, bool, bool, bool, bool) =
            sqlx::query_as(
                "SELECT EXISTS (SELECT 1 FROM clients), EXISTS (SELECT 1 FROM supported_channels), \
                 EXISTS (SELECT 1 FROM branch_wait_times), EXISTS (SELECT 1 FROM atms), \
                 EXISTS (SELECT 1 FROM issued_tokens)",
            )
            .fetch_one(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(StoreContents { clients, supported_channels, wait_times, atms, token_records })
    }
}

#[async_trait]
impl ClientRecords for SqliteStore {
    async fn insert(&self, client: &ClientRegistration, now: i64) -> Result<bool, StoreUnavailable> {
        let inserted = sqlx::query(
            "INSERT INTO clients (client_id, country_code, business_code, channel_id, redirect_uris, allowed_origins, \
             status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (client_id) DO NOTHING",
        )
        .bind(client.client_id.as_str())
        .bind(client.scope.country.as_str())
        .bind(client.scope.business.as_str())
        .bind(client.scope.channel.as_str())
        .bind(rows::redirect_uris_text(&client.redirect_uris)?)
        .bind(rows::origins_text(&client.allowed_origins)?)
        .bind(rows::status_text(client.status))
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(unavailable)?
        .rows_affected();
        Ok(inserted == 1)
    }

    async fn all(&self) -> Result<Vec<ClientRegistration>, StoreUnavailable> {
        let found: Vec<ClientRow> = sqlx::query_as(
            "SELECT client_id, country_code, business_code, channel_id, redirect_uris, allowed_origins, status \
             FROM clients ORDER BY client_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        found.into_iter().map(rows::client).collect()
    }

    async fn set_status(&self, client_id: &ClientId, status: ClientStatus) -> Result<bool, StoreUnavailable> {
        let found = sqlx::query("UPDATE clients SET status = ? WHERE client_id = ?")
            .bind(rows::status_text(status))
            .bind(client_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(unavailable)?
            .rows_affected();
        Ok(found == 1)
    }

    async fn set_addresses(&self, client_id: &ClientId, addresses: &ClientAddresses) -> Result<bool, StoreUnavailable> {
        let uris = addresses.redirect_uris.as_deref().map(rows::redirect_uris_text).transpose()?;
        let origins = addresses.allowed_origins.as_deref().map(rows::origins_text).transpose()?;
        let found = sqlx::query(
            "UPDATE clients SET redirect_uris = COALESCE(?, redirect_uris), \
             allowed_origins = COALESCE(?, allowed_origins) WHERE client_id = ?",
        )
        .bind(uris)
        .bind(origins)
        .bind(client_id.as_str())
        .execute(&self.pool)
        .await
        .map_err(unavailable)?
        .rows_affected();
        Ok(found == 1)
    }
}

#[async_trait]
impl ChannelRecords for SqliteStore {
    async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
        sqlx::query(
            "INSERT INTO supported_channels (country_code, business_code, channel_id) VALUES (?, ?, ?) \
             ON CONFLICT DO NOTHING",
        )
        .bind(scope.country.as_str())
        .bind(scope.business.as_str())
        .bind(scope.channel.as_str())
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected() == 1)
        .map_err(unavailable)
    }

    async fn all(&self) -> Result<Vec<ChannelScope>, StoreUnavailable> {
        let found: Vec<(String, String, String)> =
            sqlx::query_as("SELECT country_code, business_code, channel_id FROM supported_channels ORDER BY 1, 2, 3")
                .fetch_all(&self.pool)
                .await
                .map_err(unavailable)?;
        found.iter().map(|(country, business, channel)| rows::scope(country, business, channel)).collect()
    }
}

#[async_trait]
impl WaitTimeRecords for SqliteStore {
    #[tracing::instrument(skip_all, fields(estimates = estimates.len()))]
    async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable> {
        let mut transaction = self.write().await?;
        for chunk in estimates.chunks(ROWS_PER_STATEMENT) {
            QueryBuilder::<Sqlite>::new("INSERT INTO branch_wait_times (branch_id, minutes, estimated_at) ")
                .push_values(chunk, |mut row, estimate| {
                    row.push_bind(estimate.estimate.branch.to_string())
                        .push_bind(i64::from(estimate.estimate.wait.minutes()))
                        .push_bind(estimate.estimated_at);
                })
                .push(
                    " ON CONFLICT (branch_id) DO UPDATE SET \
                     minutes = excluded.minutes, estimated_at = excluded.estimated_at",
                )
                .build()
                .execute(&mut *transaction)
                .await
                .map_err(unavailable)?;
        }
        transaction.commit().await.map_err(unavailable)
    }

    #[tracing::instrument(skip(self))]
    async fn all(&self) -> Result<Vec<WaitTimeEstimate>, StoreUnavailable> {
        let found: Vec<WaitTimeRow> = sqlx::query_as("SELECT branch_id, minutes, estimated_at FROM branch_wait_times")
            .fetch_all(&self.pool)
            .await
            .map_err(unavailable)?;
        found.into_iter().map(rows::wait_time).collect()
    }
}

#[async_trait]
impl AtmRecords for SqliteStore {
    #[tracing::instrument(skip_all, fields(atms = atms.len()))]
    async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable> {
        let mut transaction = self.write().await?;
        sqlx::query("DELETE FROM atms").execute(&mut *transaction).await.map_err(unavailable)?;
        for chunk in atms.chunks(ROWS_PER_STATEMENT) {
            QueryBuilder::<Sqlite>::new(
                "INSERT INTO atms (brand_name, identification, record, services, accessibility, latitude, longitude) ",
            )
            .push_values(chunk, |mut row, atm| {
                let (latitude, longitude) = atm.coordinates.unzip();
                row.push_bind(atm.brand.as_str())
                    .push_bind(atm.identification.as_str())
                    .push_bind(atm.record.as_str())
                    .push_bind(i64::from(atm.services))
                    .push_bind(i64::from(atm.accessibility))
                    .push_bind(latitude)
                    .push_bind(longitude);
            })
            .build()
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        }
        sqlx::query("UPDATE atm_set SET last_updated = ? WHERE id = 1")
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)
    }

    async fn current(&self) -> Result<AtmSet, StoreUnavailable> {
        ViewSource::atms(self).await
    }

    #[tracing::instrument(skip_all, fields(upserts = upserts.len(), removals = removals.len()))]
    async fn apply(&self, upserts: &[StoredAtm], removals: &[AtmKey], now: i64) -> Result<(), StoreUnavailable> {
        let mut transaction = self.write().await?;
        for (brand, identification) in removals {
            sqlx::query("DELETE FROM atms WHERE brand_name = ? AND identification = ?")
                .bind(brand)
                .bind(identification)
                .execute(&mut *transaction)
                .await
                .map_err(unavailable)?;
        }
        for chunk in upserts.chunks(ROWS_PER_STATEMENT) {
            QueryBuilder::<Sqlite>::new(
                "INSERT INTO atms (brand_name, identification, record, services, accessibility, latitude, longitude) ",
            )
            .push_values(chunk, |mut row, atm| {
                let (latitude, longitude) = atm.coordinates.unzip();
                row.push_bind(atm.brand.as_str())
                    .push_bind(atm.identification.as_str())
                    .push_bind(atm.record.as_str())
                    .push_bind(i64::from(atm.services))
                    .push_bind(i64::from(atm.accessibility))
                    .push_bind(latitude)
                    .push_bind(longitude);
            })
            .push(
                " ON CONFLICT (brand_name, identification) DO UPDATE SET record = excluded.record, \
                 services = excluded.services, accessibility = excluded.accessibility, \
                 latitude = excluded.latitude, longitude = excluded.longitude",
            )
            .build()
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        }
        sqlx::query("UPDATE atm_set SET last_updated = ? WHERE id = 1")
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)
    }
}

#[async_trait]
impl SigningKeyRecords for SqliteStore {
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
        let found: Vec<SigningKeyRow> = sqlx::query_as(
            "SELECT kid, private_key, public_key, created_at, activates_at, retired_at FROM signing_keys \
             WHERE retired_at IS NULL OR retired_at > ? ORDER BY activates_at DESC, kid",
        )
        .bind(retired_after)
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        Ok(found.into_iter().map(rows::signing_key).collect())
    }

    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
        let mut transaction = self.write().await?;
        sqlx::query("DELETE FROM signing_keys WHERE activates_at > ?")
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        // The key signing at `now` (its retirement not yet reached: none, or the
        // activation of a waiting key just dropped) signs until the new one does.
        sqlx::query("UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL OR retired_at > ?")
            .bind(key.activates_at)
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, public_key, created_at, activates_at) \
             VALUES (?, 'EdDSA', ?, ?, ?, ?)",
        )
        .bind(&key.kid)
        .bind(&key.private_pkcs8)
        .bind(&key.public_key)
        .bind(key.created_at)
        .bind(key.activates_at)
        .execute(&mut *transaction)
        .await
        .map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)
    }
}

#[async_trait]
impl KeyVault for SqliteStore {
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable> {
        let changed = sqlx::query("UPDATE signing_keys SET private_key = ? WHERE kid = ? AND private_key = ?")
            .bind(to)
            .bind(kid)
            .bind(from)
            .execute(&self.pool)
            .await
            .map_err(unavailable)?
            .rows_affected();
        Ok(changed == 1)
    }

    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        // VACUUM rewrites every page from the live rows only; the checkpoint then copies
        // the rewritten pages into the database file and empties the write-ahead log.
        sqlx::query("VACUUM").execute(&self.pool).await.map_err(unavailable)?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.pool).await.map_err(unavailable)?;
        Ok(())
    }
}

#[async_trait]
impl TokenArchive for SqliteStore {
    #[tracing::instrument(skip_all, fields(tokens = tokens.len()))]
    async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        let mut transaction = self.write().await?;
        for chunk in tokens.chunks(ROWS_PER_STATEMENT) {
            QueryBuilder::<Sqlite>::new(
                "INSERT INTO issued_tokens \
                 (jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge) ",
            )
            .push_values(chunk, |mut row, token| {
                row.push_bind(token.token_id.as_str())
                    .push_bind(token.opaque_token.as_str())
                    .push_bind(token.client_id.as_str())
                    .push_bind(token.session.as_str())
                    .push_bind(token.issued_at)
                    .push_bind(token.expires_at)
                    .push_bind(token.code_challenge.as_ref().map(CodeChallenge::as_str));
            })
            .build()
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        }
        transaction.commit().await.map_err(unavailable)
    }

    async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
        let found: Option<TokenRow> = sqlx::query_as(
            "SELECT jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge, revoked_at \
             FROM issued_tokens WHERE opaque_token = ?",
        )
        .bind(opaque.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable)?;
        found.map(rows::token).transpose()
    }

    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
        let changed = sqlx::query("UPDATE issued_tokens SET revoked_at = ? WHERE jti = ? AND revoked_at IS NULL")
            .bind(now)
            .bind(token_id.as_str())
            .execute(&self.pool)
            .await
            .map_err(unavailable)?
            .rows_affected();
        Ok(changed == 1)
    }

    async fn revoke_live_of(&self, client_id: &ClientId, now: i64) -> Result<u64, StoreUnavailable> {
        sqlx::query(
            "UPDATE issued_tokens SET revoked_at = ? \
             WHERE client_id = ? AND revoked_at IS NULL AND expires_at >= ?",
        )
        .bind(now)
        .bind(client_id.as_str())
        .bind(now)
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected())
        .map_err(unavailable)
    }

    async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
        let found: Vec<(String,)> =
            sqlx::query_as("SELECT jti FROM issued_tokens WHERE revoked_at IS NOT NULL AND expires_at >= ?")
                .bind(now)
                .fetch_all(&self.pool)
                .await
                .map_err(unavailable)?;
        Ok(found.into_iter().map(|(jti,)| TokenId::new(jti)).collect())
    }

    async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
        let found: Vec<TokenRow> = sqlx::query_as(
            "SELECT jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge, revoked_at \
             FROM issued_tokens WHERE expires_at >= ? ORDER BY expires_at, jti",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        found.into_iter().map(rows::token).collect()
    }

    /// Deletes exactly the records that expired before `before`.
    async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable> {
        sqlx::query("DELETE FROM issued_tokens WHERE expires_at < ?")
            .bind(before)
            .execute(&self.pool)
            .await
            .map(|done| done.rows_affected())
            .map_err(unavailable)
    }
}
