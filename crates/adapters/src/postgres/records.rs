//! What the PostgreSQL store writes in its own dialect: a set of rows as one statement
//! over arrays (`INSERT … SELECT FROM UNNEST(…)`: one round trip, and outside an explicit
//! transaction one commit, all rows or none), `LOCK TABLE` so that two key rotations take
//! turns, a snapshot for reading the ATM set, and `VACUUM FULL` to scrub.

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::branch::WaitTimeEstimate;
use domain::ports::{AtmKey, StoreUnavailable};
use domain::token::{CodeChallenge, IssuedToken};
use sqlx::postgres::PgQueryResult;
use sqlx::{Executor as _, PgPool, Postgres};

use super::{PostgresDialect, unavailable};
use crate::sql::{Meaning, RowsAffected, SqlDialect, Syntax};
use crate::store::ChangeFeed;

/// Taken first by every write of the ATM set: two writers (two `atms import`s, or
/// instances loading the demo set together) take turns instead of both emptying the
/// table and one failing on the other's rows, and an import reads the set after taking
/// it (in READ COMMITTED each statement sees what was committed before it began), so the
/// second of two imports compares its feed with what the first wrote. SQLite's writers
/// take turns on its one write lock.
const LOCK_ATM_SET: &str = "SELECT 1 FROM atm_set WHERE id = 1 FOR UPDATE";

/// State applies take turns on the log's one row.
const LOCK_ATM_STATES: &str = "SELECT 1 FROM atm_state_log WHERE id = 1 FOR UPDATE";
/// Taken first by every write of wait times, for the same reason: SHARE ROW EXCLUSIVE
/// conflicts with itself and with row writes, not with reads, so the service's readers
/// never wait and two writers take turns.
const LOCK_WAIT_TIMES: &str = "LOCK TABLE branch_wait_times IN SHARE ROW EXCLUSIVE MODE";

/// Rows per statement when a set is written in chunks (ATMs): each row's values travel
/// as arrays, so this bounds one statement's size (500 OBIE records are about 300 KB).
const ROWS_PER_STATEMENT: usize = 500;

/// Writes `atms` in chunks of [`ROWS_PER_STATEMENT`], each ATM inserted or, when its key
/// is stored already, updated: one statement for a whole new set (after the table was
/// emptied nothing conflicts) and for a set's changes.
async fn write_atms(connection: &mut sqlx::PgConnection, atms: &[StoredAtm]) -> Result<(), StoreUnavailable> {
    for chunk in atms.chunks(ROWS_PER_STATEMENT) {
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
        .execute(&mut *connection)
        .await
        .map_err(unavailable)?;
    }
    Ok(())
}

#[async_trait]
impl SqlDialect for PostgresDialect {
    type Database = Postgres;

    const SYSTEM: &'static str = "postgresql";
    const SYNTAX: Syntax = Syntax::ON_CONFLICT;
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const MIGRATIONS: &'static str = super::BACKEND.name;

    fn meaning(error: &sqlx::Error) -> Meaning {
        super::meaning(error)
    }

    fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable> {
        self.make_token_partitions(now).await
    }

    async fn begin_key_rotation(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        // Two rotations at once (two hosts' CLIs) take turns: the second sees the first's key.
        transaction.execute("LOCK TABLE signing_keys IN SHARE ROW EXCLUSIVE MODE").await.map_err(unavailable)?;
        Ok(transaction)
    }

    /// A plain transaction: the counter's trigger runs once, at the end of the statement.
    async fn begin_revocation(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        self.pool.begin().await.map_err(unavailable)
    }

    /// A plain transaction: the primary key makes a second writer of an id wait.
    async fn begin_event_append(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        self.pool.begin().await.map_err(unavailable)
    }

    async fn begin_state_apply(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute(LOCK_ATM_STATES).await.map_err(unavailable)?;
        Ok(transaction)
    }

    async fn begin_wait_time_edit(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute(LOCK_WAIT_TIMES).await.map_err(unavailable)?;
        Ok(transaction)
    }

    #[tracing::instrument(skip_all, fields(estimates = estimates.len()))]
    async fn write_wait_times(
        transaction: &mut sqlx::Transaction<'static, Postgres>,
        estimates: &[WaitTimeEstimate],
    ) -> Result<(), StoreUnavailable> {
        let branches: Vec<String> = estimates.iter().map(|e| e.estimate.branch.to_string()).collect();
        let minutes: Vec<i64> = estimates.iter().map(|e| i64::from(e.estimate.wait.minutes())).collect();
        let estimated_at: Vec<i64> = estimates.iter().map(|e| e.estimated_at).collect();
        sqlx::query(
            "INSERT INTO branch_wait_times (branch_id, minutes, estimated_at) \
             SELECT * FROM UNNEST($1::text[], $2::int8[], $3::int8[]) \
             ON CONFLICT (branch_id) DO UPDATE SET minutes = excluded.minutes, estimated_at = excluded.estimated_at",
        )
        .bind(&branches)
        .bind(&minutes)
        .bind(&estimated_at)
        .execute(&mut **transaction)
        .await
        .map(drop)
        .map_err(unavailable)
    }

    async fn begin_atm_edit(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute(LOCK_ATM_SET).await.map_err(unavailable)?;
        Ok(transaction)
    }

    async fn write_atms(
        transaction: &mut sqlx::Transaction<'static, Postgres>,
        atms: &[StoredAtm],
    ) -> Result<(), StoreUnavailable> {
        write_atms(transaction, atms).await
    }

    #[tracing::instrument(skip_all, fields(removals = keys.len()))]
    async fn delete_atms(
        transaction: &mut sqlx::Transaction<'static, Postgres>,
        keys: &[AtmKey],
    ) -> Result<(), StoreUnavailable> {
        let (brands, ids): (Vec<&str>, Vec<&str>) = keys.iter().map(|(b, i)| (b.as_str(), i.as_str())).unzip();
        sqlx::query(
            "DELETE FROM atms WHERE (brand_name, identification) IN \
             (SELECT * FROM UNNEST($1::text[], $2::text[]))",
        )
        .bind(&brands)
        .bind(&ids)
        .execute(&mut **transaction)
        .await
        .map(drop)
        .map_err(unavailable)
    }

    async fn begin_atm_read(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").await.map_err(unavailable)?;
        Ok(transaction)
    }

    #[tracing::instrument(skip_all, fields(tokens = tokens.len()))]
    async fn record_tokens(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
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

    async fn purge_expired_tokens(&self, before: i64) -> Result<u64, StoreUnavailable> {
        self.purge_token_partitions(before).await
    }

    async fn scrub(&self) -> Result<(), StoreUnavailable> {
        // An UPDATE leaves the old row version in the table's pages until a vacuum; VACUUM
        // FULL rewrites the (small) table from its live rows. Copies already in the
        // write-ahead log, its archive or a backup are beyond the service's reach.
        self.pool.execute("VACUUM FULL signing_keys").await.map(drop).map_err(unavailable)
    }

    async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
        self.listen().await.map(Some)
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

impl RowsAffected for PgQueryResult {
    fn rows_affected(&self) -> u64 {
        PgQueryResult::rows_affected(self)
    }
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
