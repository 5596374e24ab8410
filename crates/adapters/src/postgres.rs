//! The PostgreSQL store: one database for every instance of the service, on as many
//! hosts as the bank runs. The same contract as the SQLite store (the contract tests
//! run against both); what differs is the SQL, the connection and how token records
//! are kept over time:
//!
//! - Token records are partitioned by the hour they expire in, so purging a day-old
//!   hour drops a partition instead of deleting rows one by one ([`PostgresStore::prepare`]
//!   makes the partitions of the coming hours ahead of time).
//! - The group commit writes a batch of token records as one `INSERT … SELECT FROM
//!   UNNEST(…)` statement, which is one transaction and one commit, with
//!   `synchronous_commit` on whatever the server's default.

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
use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{AssertSqlSafe, Executor as _, PgPool};

use crate::rows::{self, AtmRow, ClientRow, SigningKeyRow, TokenRow, WaitTimeRow};
use crate::store::{AtmSet, ChangeFeed, KeyVault, Notice, Revisions, StoreLifecycle, ViewSource};

/// Connections per instance. The request paths do not use the pool (they read the
/// in-memory view); its users are the group commit, the view's refresher, readiness
/// probes and maintenance. Three instances take 24 of PostgreSQL's default 100.
const POOL_SIZE: u32 = 8;

/// How long a caller waits for a pooled connection (including opening one): the fault
/// issue bounds every store wait on a request path at about 2 s.
const CONNECT_WAIT: Duration = Duration::from_secs(2);

/// Rows per statement when a set is written in chunks (ATMs): each row's values travel
/// as arrays, so this bounds one statement's size (500 OBIE records are about 300 KB).
const ROWS_PER_STATEMENT: usize = 500;

/// Token partitions are one hour of expiry each.
pub const TOKEN_PARTITION_SECONDS: i64 = 3600;

/// How far ahead [`PostgresStore::prepare`] makes token partitions: the longest token
/// lifetime the service accepts (one day) and two hours more, so an upkeep run missed
/// leaves nothing in the default partition.
const TOKEN_PARTITIONS_AHEAD_SECONDS: i64 = 86_400 + 2 * 3600;

/// How long partition upkeep (creating or dropping one) waits for the table lock it
/// needs: it takes the parent table's lock for a moment, and while it waits, token
/// inserts queue behind it. Past this it gives up and the next upkeep tries again.
const PARTITION_LOCK_WAIT: &str = "SET LOCAL lock_timeout = '200ms'";

/// Rows deleted per statement from the default partition (tokens that fell outside
/// every hourly partition), so no purge holds many row locks or writes a burst of WAL.
const DEFAULT_PARTITION_PURGE_ROWS: i64 = 10_000;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

fn unavailable(error: sqlx::Error) -> StoreUnavailable {
    StoreUnavailable::new(error)
}

/// The name of the token partition for the hour starting at `start` (Unix seconds).
fn partition_name(start: i64) -> String {
    format!("issued_tokens_h{start}")
}

/// The start of the hour `name` holds, for a token partition's name.
fn partition_start(name: &str) -> Option<i64> {
    name.strip_prefix("issued_tokens_h")?.parse().ok()
}

/// A PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
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
        Ok(Self { pool })
    }

    /// The token partitions that exist, by the start of their hour.
    async fn token_partitions(&self) -> Result<Vec<i64>, StoreUnavailable> {
        let names: Vec<(String,)> = sqlx::query_as(
            "SELECT child.relname::text FROM pg_inherits \
             JOIN pg_class child ON child.oid = pg_inherits.inhrelid \
             WHERE pg_inherits.inhparent = 'issued_tokens'::regclass",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        Ok(names.iter().filter_map(|(name,)| partition_start(name)).collect())
    }

    /// How many records the token partition `name` holds, for the purge's report: the
    /// planner's count once (auto)vacuum or analyze has seen the partition, which is
    /// exact for a partition nobody writes to any more (an expired hour) and costs
    /// nothing; otherwise counted, which is cheap for a partition analyze has not reached.
    async fn partition_rows(&self, name: &str) -> Result<u64, StoreUnavailable> {
        let (estimate,): (f32,) = sqlx::query_as("SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)")
            .bind(name)
            .fetch_one(&self.pool)
            .await
            .map_err(unavailable)?;
        if estimate >= 0.0 {
            return Ok(estimate as u64);
        }
        let (rows,): (i64,) = sqlx::query_as(AssertSqlSafe(format!("SELECT count(*) FROM {name}")))
            .fetch_one(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(rows as u64)
    }

    /// Runs `statement` (DDL on a token partition) in its own transaction, waiting at most
    /// [`PARTITION_LOCK_WAIT`] for its lock; whether it ran.
    /// The statement is made of the partition's name and bounds only, which are numbers.
    async fn partition_ddl(&self, statement: String) -> Result<bool, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute(PARTITION_LOCK_WAIT).await.map_err(unavailable)?;
        match transaction.execute(AssertSqlSafe(statement.clone())).await {
            Ok(_) => {}
            // 55P03: lock_not_available. Busy now; the next upkeep tries again.
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("55P03") => {
                tracing::info!(%statement, "token partition upkeep deferred: the table is busy");
                return Ok(false);
            }
            Err(error) => return Err(unavailable(error)),
        }
        transaction.commit().await.map_err(unavailable)?;
        Ok(true)
    }
}

#[async_trait]
impl StoreLifecycle for PostgresStore {
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

    /// Makes the token partitions of every hour from the current one to
    /// [`TOKEN_PARTITIONS_AHEAD_SECONDS`] ahead that do not exist yet. A token expiring
    /// outside them still lands in the default partition.
    #[tracing::instrument(skip(self))]
    async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable> {
        let existing = self.token_partitions().await?;
        let first = now.div_euclid(TOKEN_PARTITION_SECONDS) * TOKEN_PARTITION_SECONDS;
        let last = now + TOKEN_PARTITIONS_AHEAD_SECONDS;
        for start in (first..=last).step_by(TOKEN_PARTITION_SECONDS as usize) {
            if existing.contains(&start) {
                continue;
            }
            let statement = format!(
                "CREATE TABLE IF NOT EXISTS {} PARTITION OF issued_tokens FOR VALUES FROM ({start}) TO ({})",
                partition_name(start),
                start + TOKEN_PARTITION_SECONDS
            );
            match self.partition_ddl(statement).await {
                Ok(true) => {}
                Ok(false) => break,
                // The default partition already holds tokens of that hour (upkeep did
                // not run for a day): they stay there and are purged row by row.
                Err(error) => {
                    tracing::warn!(%error, start, "a token partition could not be made");
                }
            }
        }
        Ok(())
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait]
impl ViewSource for PostgresStore {
    async fn revisions(&self) -> Result<Revisions, StoreUnavailable> {
        let rows: Vec<(String, i64)> = sqlx::query_as("SELECT topic, revision FROM change_log")
            .fetch_all(&self.pool)
            .await
            .map_err(unavailable)?;
        Ok(Revisions::from_topics(rows))
    }

    #[tracing::instrument(skip(self))]
    async fn atms(&self) -> Result<AtmSet, StoreUnavailable> {
        // One snapshot for both reads, so the set and its date belong together.
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").await.map_err(unavailable)?;
        let (last_updated,): (i64,) = sqlx::query_as("SELECT last_updated FROM atm_set WHERE id = 1")
            .fetch_one(&mut *transaction)
            .await
            .map_err(unavailable)?;
        let found: Vec<AtmRow> = sqlx::query_as(
            "SELECT brand_name, identification, record, services, accessibility, latitude, longitude \
             FROM atms ORDER BY brand_name, identification",
        )
        .fetch_all(&mut *transaction)
        .await
        .map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)?;
        let atms = found.into_iter().map(rows::atm).collect::<Result<_, _>>()?;
        Ok(AtmSet { atms, last_updated })
    }

    async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
        let mut listener = PgListener::connect_with(&self.pool).await.map_err(unavailable)?;
        listener.listen(CHANGES_CHANNEL).await.map_err(unavailable)?;
        Ok(Some(Box::new(Listening(listener))))
    }
}

/// The channel the change triggers notify (`migrations/postgres`, second migration).
const CHANGES_CHANNEL: &str = "branch_atm_changes";

/// LISTEN on [`CHANGES_CHANNEL`], on a connection of its own that sqlx makes again
/// (and listens on again) when it is lost.
struct Listening(PgListener);

#[async_trait]
impl ChangeFeed for Listening {
    async fn next(&mut self) -> Result<Notice, StoreUnavailable> {
        match self.0.try_recv().await.map_err(unavailable)? {
            Some(_) => {
                // A burst of writes is one reload: take what has arrived with it.
                while self.0.next_buffered().is_some() {}
                Ok(Notice::Changed)
            }
            None => Ok(Notice::Reconnected),
        }
    }
}

#[async_trait]
impl ImportLog for PostgresStore {
    async fn record(&self, kind: ImportKind, outcome: ImportOutcome, at: i64) -> Result<(), StoreUnavailable> {
        sqlx::query(
            "INSERT INTO import_runs (kind, outcome, runs, last_at) VALUES ($1, $2, 1, $3) \
             ON CONFLICT (kind, outcome) DO UPDATE SET runs = import_runs.runs + 1, last_at = GREATEST(import_runs.last_at, excluded.last_at)",
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
impl StoreInventory for PostgresStore {
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
impl ClientRecords for PostgresStore {
    async fn insert(&self, client: &ClientRegistration, now: i64) -> Result<bool, StoreUnavailable> {
        let inserted = sqlx::query(
            "INSERT INTO clients (client_id, country_code, business_code, channel_id, redirect_uris, allowed_origins, \
             status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (client_id) DO NOTHING",
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
        let found = sqlx::query("UPDATE clients SET status = $1 WHERE client_id = $2")
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
            "UPDATE clients SET redirect_uris = COALESCE($1, redirect_uris), \
             allowed_origins = COALESCE($2, allowed_origins) WHERE client_id = $3",
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
impl ChannelRecords for PostgresStore {
    async fn allow(&self, scope: &ChannelScope) -> Result<bool, StoreUnavailable> {
        sqlx::query(
            "INSERT INTO supported_channels (country_code, business_code, channel_id) VALUES ($1, $2, $3) \
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
impl WaitTimeRecords for PostgresStore {
    #[tracing::instrument(skip_all, fields(estimates = estimates.len()))]
    async fn upsert(&self, estimates: &[WaitTimeEstimate]) -> Result<(), StoreUnavailable> {
        let branches: Vec<String> = estimates.iter().map(|e| e.estimate.branch.to_string()).collect();
        let minutes: Vec<i64> = estimates.iter().map(|e| i64::from(e.estimate.wait.minutes())).collect();
        let estimated_at: Vec<i64> = estimates.iter().map(|e| e.estimated_at).collect();
        // One statement: all or none without a transaction of our own.
        sqlx::query(
            "INSERT INTO branch_wait_times (branch_id, minutes, estimated_at) \
             SELECT * FROM UNNEST($1::text[], $2::int8[], $3::int8[]) \
             ON CONFLICT (branch_id) DO UPDATE SET minutes = excluded.minutes, estimated_at = excluded.estimated_at",
        )
        .bind(&branches)
        .bind(&minutes)
        .bind(&estimated_at)
        .execute(&self.pool)
        .await
        .map(drop)
        .map_err(unavailable)
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
impl AtmRecords for PostgresStore {
    #[tracing::instrument(skip_all, fields(atms = atms.len()))]
    async fn replace(&self, atms: &[StoredAtm], now: i64) -> Result<(), StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute("DELETE FROM atms").await.map_err(unavailable)?;
        for chunk in atms.chunks(ROWS_PER_STATEMENT) {
            let columns = AtmColumns::of(chunk);
            sqlx::query(
                "INSERT INTO atms (brand_name, identification, record, services, accessibility, latitude, longitude) \
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], \
                 $6::float8[], $7::float8[])",
            )
            .bind(&columns.brands)
            .bind(&columns.ids)
            .bind(&columns.records)
            .bind(&columns.services)
            .bind(&columns.accessibility)
            .bind(&columns.latitudes)
            .bind(&columns.longitudes)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        }
        sqlx::query("UPDATE atm_set SET last_updated = $1 WHERE id = 1")
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
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        let (brands, ids): (Vec<&str>, Vec<&str>) = removals.iter().map(|(b, i)| (b.as_str(), i.as_str())).unzip();
        sqlx::query(
            "DELETE FROM atms WHERE (brand_name, identification) IN \
             (SELECT * FROM UNNEST($1::text[], $2::text[]))",
        )
        .bind(&brands)
        .bind(&ids)
        .execute(&mut *transaction)
        .await
        .map_err(unavailable)?;
        for chunk in upserts.chunks(ROWS_PER_STATEMENT) {
            let columns = AtmColumns::of(chunk);
            sqlx::query(
                "INSERT INTO atms (brand_name, identification, record, services, accessibility, latitude, longitude) \
                 SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::int8[], \
                 $6::float8[], $7::float8[]) \
                 ON CONFLICT (brand_name, identification) DO UPDATE SET record = excluded.record, \
                 services = excluded.services, accessibility = excluded.accessibility, \
                 latitude = excluded.latitude, longitude = excluded.longitude",
            )
            .bind(&columns.brands)
            .bind(&columns.ids)
            .bind(&columns.records)
            .bind(&columns.services)
            .bind(&columns.accessibility)
            .bind(&columns.latitudes)
            .bind(&columns.longitudes)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        }
        sqlx::query("UPDATE atm_set SET last_updated = $1 WHERE id = 1")
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)
    }
}

/// ATMs as one array per column, for `UNNEST`.
struct AtmColumns<'a> {
    brands: Vec<&'a str>,
    ids: Vec<&'a str>,
    records: Vec<&'a str>,
    services: Vec<i64>,
    accessibility: Vec<i64>,
    latitudes: Vec<Option<f64>>,
    longitudes: Vec<Option<f64>>,
}

impl<'a> AtmColumns<'a> {
    fn of(atms: &'a [StoredAtm]) -> Self {
        Self {
            brands: atms.iter().map(|atm| atm.brand.as_str()).collect(),
            ids: atms.iter().map(|atm| atm.identification.as_str()).collect(),
            records: atms.iter().map(|atm| atm.record.as_str()).collect(),
            services: atms.iter().map(|atm| i64::from(atm.services)).collect(),
            accessibility: atms.iter().map(|atm| i64::from(atm.accessibility)).collect(),
            latitudes: atms.iter().map(|atm| atm.coordinates.map(|(lat, _)| lat)).collect(),
            longitudes: atms.iter().map(|atm| atm.coordinates.map(|(_, lon)| lon)).collect(),
        }
    }
}

#[async_trait]
impl SigningKeyRecords for PostgresStore {
    async fn published(&self, retired_after: i64) -> Result<Vec<SigningKey>, StoreUnavailable> {
        let found: Vec<SigningKeyRow> = sqlx::query_as(
            "SELECT kid, private_key, public_key, created_at, activates_at, retired_at FROM signing_keys \
             WHERE retired_at IS NULL OR retired_at > $1 ORDER BY activates_at DESC, kid",
        )
        .bind(retired_after)
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        Ok(found.into_iter().map(rows::signing_key).collect())
    }

    async fn schedule(&self, key: &SigningKey, now: i64) -> Result<(), StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        // Two rotations at once (two hosts' CLIs) take turns: the second sees the first's key.
        transaction.execute("LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE").await.map_err(unavailable)?;
        sqlx::query("DELETE FROM signing_keys WHERE activates_at > $1")
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        // The key signing at `now` (its retirement not yet reached: none, or the
        // activation of a waiting key just dropped) signs until the new one does.
        sqlx::query("UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL OR retired_at > $2")
            .bind(key.activates_at)
            .bind(now)
            .execute(&mut *transaction)
            .await
            .map_err(unavailable)?;
        sqlx::query(
            "INSERT INTO signing_keys (kid, algorithm, private_key, public_key, created_at, activates_at) \
             VALUES ($1, 'EdDSA', $2, $3, $4, $5)",
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
impl KeyVault for PostgresStore {
    async fn reseal(&self, kid: &str, from: &[u8], to: &[u8]) -> Result<bool, StoreUnavailable> {
        let changed = sqlx::query("UPDATE signing_keys SET private_key = $1 WHERE kid = $2 AND private_key = $3")
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
        // An UPDATE leaves the old row version in the table's pages until a vacuum; VACUUM
        // FULL rewrites the (small) table from its live rows. Copies already in the
        // write-ahead log, its archive or a backup are beyond the service's reach.
        self.pool.execute("VACUUM FULL signing_keys").await.map(drop).map_err(unavailable)
    }
}

#[async_trait]
impl TokenArchive for PostgresStore {
    #[tracing::instrument(skip_all, fields(tokens = tokens.len()))]
    async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
        let ids: Vec<&str> = tokens.iter().map(|t| t.token_id.as_str()).collect();
        let opaque: Vec<&str> = tokens.iter().map(|t| t.opaque_token.as_str()).collect();
        let clients: Vec<&str> = tokens.iter().map(|t| t.client_id.as_str()).collect();
        let sessions: Vec<&str> = tokens.iter().map(|t| t.session.as_str()).collect();
        let issued: Vec<i64> = tokens.iter().map(|t| t.issued_at).collect();
        let expires: Vec<i64> = tokens.iter().map(|t| t.expires_at).collect();
        let challenges: Vec<Option<&str>> =
            tokens.iter().map(|t| t.code_challenge.as_ref().map(CodeChallenge::as_str)).collect();
        // One statement outside any explicit transaction: one round trip and one commit
        // for the whole batch, all rows or none.
        sqlx::query(
            "INSERT INTO issued_tokens \
             (jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[], $6::int8[], $7::text[])",
        )
        .bind(&ids)
        .bind(&opaque)
        .bind(&clients)
        .bind(&sessions)
        .bind(&issued)
        .bind(&expires)
        .bind(&challenges)
        .execute(&self.pool)
        .await
        .map(drop)
        .map_err(unavailable)
    }

    async fn find(&self, opaque: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
        let found: Option<TokenRow> = sqlx::query_as(
            "SELECT jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge, revoked_at \
             FROM issued_tokens WHERE opaque_token = $1",
        )
        .bind(opaque.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(unavailable)?;
        found.map(rows::token).transpose()
    }

    async fn revoke(&self, token_id: &TokenId, now: i64) -> Result<bool, StoreUnavailable> {
        let changed = sqlx::query("UPDATE issued_tokens SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL")
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
            "UPDATE issued_tokens SET revoked_at = $1 \
             WHERE client_id = $2 AND revoked_at IS NULL AND expires_at >= $1",
        )
        .bind(now)
        .bind(client_id.as_str())
        .execute(&self.pool)
        .await
        .map(|done| done.rows_affected())
        .map_err(unavailable)
    }

    async fn revoked_live(&self, now: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
        let found: Vec<(String,)> =
            sqlx::query_as("SELECT jti FROM issued_tokens WHERE revoked_at IS NOT NULL AND expires_at >= $1")
                .bind(now)
                .fetch_all(&self.pool)
                .await
                .map_err(unavailable)?;
        Ok(found.into_iter().map(|(jti,)| TokenId::new(jti)).collect())
    }

    async fn live(&self, now: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
        let found: Vec<TokenRow> = sqlx::query_as(
            "SELECT jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge, revoked_at \
             FROM issued_tokens WHERE expires_at >= $1 ORDER BY expires_at, jti",
        )
        .bind(now)
        .fetch_all(&self.pool)
        .await
        .map_err(unavailable)?;
        found.into_iter().map(rows::token).collect()
    }

    /// Drops every hourly partition whose whole hour ended by `before`, then deletes the
    /// expired rows of the default partition in small batches. Tokens of the hour
    /// `before` falls in are kept until a later purge drops that hour.
    #[tracing::instrument(skip(self))]
    async fn purge_expired(&self, before: i64) -> Result<u64, StoreUnavailable> {
        let mut purged = 0;
        for start in self.token_partitions().await? {
            if start + TOKEN_PARTITION_SECONDS > before {
                continue;
            }
            let name = partition_name(start);
            let rows = self.partition_rows(&name).await?;
            // Emptied first, then dropped: TRUNCATE locks only the partition, which no
            // insert routes to any more, and it is where the files are freed (at its
            // commit); the DROP of the empty partition then holds the parent's lock,
            // which token inserts queue behind, for a moment only.
            if self.partition_ddl(format!("TRUNCATE {name}")).await?
                && self.partition_ddl(format!("DROP TABLE IF EXISTS {name}")).await?
            {
                purged += rows;
            }
        }
        loop {
            let deleted = sqlx::query(
                "DELETE FROM issued_tokens_default WHERE ctid IN \
                 (SELECT ctid FROM issued_tokens_default WHERE expires_at < $1 LIMIT $2)",
            )
            .bind(before)
            .bind(DEFAULT_PARTITION_PURGE_ROWS)
            .execute(&self.pool)
            .await
            .map_err(unavailable)?
            .rows_affected();
            purged += deleted;
            if deleted < DEFAULT_PARTITION_PURGE_ROWS as u64 {
                return Ok(purged);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partitions_name_gives_back_the_hour_it_holds() {
        assert_eq!(partition_start(&partition_name(1_800_000_000)), Some(1_800_000_000));
        assert_eq!(partition_start("issued_tokens_default"), None);
    }
}
