//! Token records partitioned by the hour they expire in: purging a day-old hour drops a
//! partition instead of deleting rows one by one (no dead rows, almost no WAL), whatever
//! the volume. Upkeep makes the partitions of the coming hours ahead of time; a token
//! expiring outside them lands in the default partition, which is purged row by row.

use domain::ports::StoreUnavailable;
use sqlx::{AssertSqlSafe, Executor as _};

use super::PostgresDialect;
use super::unavailable;

/// Token partitions are one hour of expiry each.
pub const TOKEN_PARTITION_SECONDS: i64 = 3600;

/// How far ahead [`PostgresDialect::make_token_partitions`] makes token partitions: the
/// longest token lifetime the service accepts (one day) and two hours more, so an upkeep
/// run missed leaves nothing in the default partition.
const TOKEN_PARTITIONS_AHEAD_SECONDS: i64 = 86_400 + 2 * 3600;

/// How long partition upkeep (creating or dropping one) waits for the table lock it
/// needs: it takes the parent table's lock for a moment, and while it waits, token
/// inserts queue behind it. Past this it gives up and the next upkeep tries again.
const PARTITION_LOCK_WAIT: &str = "SET LOCAL lock_timeout = '200ms'";

/// Rows deleted per statement from the default partition (tokens that fell outside
/// every hourly partition), so no purge holds many row locks or writes a burst of WAL.
const DEFAULT_PARTITION_PURGE_ROWS: i64 = 10_000;

/// The advisory lock one instance's token-partition upkeep holds at a time ("branch\0p").
const UPKEEP_LOCK: i64 = 0x6272_616e_6368_0070;

/// What a statement of partition upkeep came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ddl {
    /// It ran.
    Done,
    /// The table was busy: left for the next upkeep.
    Busy,
    /// Another instance's upkeep did the same at the same moment.
    DoneElsewhere,
}

/// The name of the token partition for the hour starting at `start` (Unix seconds).
fn partition_name(start: i64) -> String {
    format!("issued_tokens_h{start}")
}

/// The start of the hour `name` holds, for a token partition's name.
fn partition_start(name: &str) -> Option<i64> {
    name.strip_prefix("issued_tokens_h")?.parse().ok()
}

impl PostgresDialect {
    /// Makes the token partitions of every hour from the current one to
    /// [`TOKEN_PARTITIONS_AHEAD_SECONDS`] ahead that do not exist yet. A token expiring
    /// outside them still lands in the default partition.
    #[tracing::instrument(skip(self))]
    pub(super) async fn make_token_partitions(&self, now: i64) -> Result<(), StoreUnavailable> {
        // Another instance at it makes them: either way they are there or on their way.
        self.one_upkeep_at_a_time(self.make_partitions_now(now)).await?;
        Ok(())
    }

    /// Runs `upkeep` unless another instance runs token-partition upkeep at this moment
    /// (`None` then: that one does the work). Instances started together, or purging
    /// on the same hour, would otherwise make, empty and drop the same partitions at
    /// once, and PostgreSQL answers such races with errors ("relation … already exists",
    /// or an internal "could not find tuple for parent"), not with waiting. The lock is a
    /// transaction's advisory lock: it ends with the transaction, also when this process
    /// dies or its connection breaks.
    async fn one_upkeep_at_a_time<T>(
        &self,
        upkeep: impl std::future::Future<Output = Result<T, StoreUnavailable>>,
    ) -> Result<Option<T>, StoreUnavailable> {
        let mut guard = self.pool.begin().await.map_err(unavailable)?;
        let (mine,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_xact_lock($1)")
            .bind(UPKEEP_LOCK)
            .fetch_one(&mut *guard)
            .await
            .map_err(unavailable)?;
        if !mine {
            tracing::debug!("token partition upkeep: another instance is at it");
            return Ok(None);
        }
        let outcome = upkeep.await;
        // Ends the lock; a failure here ends it too, with the connection.
        let _ = guard.rollback().await;
        outcome.map(Some)
    }

    async fn make_partitions_now(&self, now: i64) -> Result<(), StoreUnavailable> {
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
                Ok(Ddl::Done | Ddl::DoneElsewhere) => {}
                Ok(Ddl::Busy) => break,
                // The default partition already holds tokens of that hour (upkeep did
                // not run for a day): they stay there and are purged row by row.
                Err(error) => {
                    tracing::warn!(%error, start, "a token partition could not be made");
                }
            }
        }
        Ok(())
    }

    /// Drops every hourly partition whose whole hour ended by `before`, then deletes the
    /// expired rows of the default partition in small batches. Tokens of the hour
    /// `before` falls in are kept until a later purge drops that hour.
    #[tracing::instrument(skip(self))]
    pub(super) async fn purge_token_partitions(&self, before: i64) -> Result<u64, StoreUnavailable> {
        Ok(self.one_upkeep_at_a_time(self.purge_partitions_now(before)).await?.unwrap_or(0))
    }

    async fn purge_partitions_now(&self, before: i64) -> Result<u64, StoreUnavailable> {
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
            // Another instance purging the same hour at once empties and drops it
            // itself: its rows are its to count.
            if self.partition_ddl(format!("TRUNCATE {name}")).await? == Ddl::Done
                && self.partition_ddl(format!("DROP TABLE IF EXISTS {name}")).await? != Ddl::Busy
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
        let estimate: Option<(f32,)> = sqlx::query_as("SELECT reltuples FROM pg_class WHERE oid = to_regclass($1)")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(unavailable)?;
        // Gone: another instance's purge dropped it, and counts its rows.
        let Some((estimate,)) = estimate else { return Ok(0) };
        if estimate >= 0.0 {
            return Ok(estimate as u64);
        }
        match sqlx::query_as::<_, (i64,)>(AssertSqlSafe(format!("SELECT count(*) FROM {name}"))).fetch_one(&self.pool).await {
            Ok((rows,)) => Ok(rows as u64),
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("42P01") => Ok(0),
            Err(error) => Err(unavailable(error)),
        }
    }

    /// Runs `statement` (DDL on a token partition) in its own transaction, waiting at most
    /// [`PARTITION_LOCK_WAIT`] for its lock; whether it ran.
    /// The statement is made of the partition's name and bounds only, which are numbers.
    async fn partition_ddl(&self, statement: String) -> Result<Ddl, StoreUnavailable> {
        let mut transaction = self.pool.begin().await.map_err(unavailable)?;
        transaction.execute(PARTITION_LOCK_WAIT).await.map_err(unavailable)?;
        match transaction.execute(AssertSqlSafe(statement.clone())).await {
            Ok(_) => {}
            Err(sqlx::Error::Database(error)) => match error.code().as_deref() {
                // lock_not_available: busy now; the next upkeep tries again.
                Some("55P03") => {
                    tracing::info!(%statement, "token partition upkeep deferred: the table is busy");
                    return Ok(Ddl::Busy);
                }
                // duplicate_table, or unique_violation in the catalog (two sessions
                // creating one table at once, IF NOT EXISTS notwithstanding), or
                // undefined_table: another instance's upkeep did the same at the same
                // moment. Nothing is wrong with the store.
                Some("42P07" | "23505" | "42P01") => {
                    tracing::debug!(%statement, "token partition upkeep: another instance did it at the same moment");
                    return Ok(Ddl::DoneElsewhere);
                }
                _ => return Err(unavailable(sqlx::Error::Database(error))),
            },
            Err(error) => return Err(unavailable(error)),
        }
        transaction.commit().await.map_err(unavailable)?;
        Ok(Ddl::Done)
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
