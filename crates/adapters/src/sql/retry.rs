//! Write transactions run again, whole, when they lost to another transaction at once.
//!
//! A serialization failure or a deadlock (PostgreSQL's 40001 and 40P01, MariaDB's 1213,
//! which a Galera cluster also answers when a commit fails certification against one
//! committed on another node; SQLite's `SQLITE_BUSY_SNAPSHOT`) rolls the transaction back
//! and says the same work may succeed if it is begun again. Every write transaction of
//! the SQL stores runs inside [`SqlStore::retrying`]: from its `begin` to its commit, so
//! a rerun reads again what it decides on (an edit's plan sees what the winner wrote).
//! Anything else is returned at once. Attempts are bounded in number and in time, each
//! pause drawn at random up to a limit that doubles ("full jitter"), so two losers do not
//! meet again in step. A transaction still losing when the bounds are reached is
//! answered as the store being unavailable (an outage to a request, a failed command to
//! an operator), never as data the store refused.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use domain::ports::{EditPlan, StoreUnavailable};

use tracing::Instrument as _;

use super::{Meaning, SqlDialect, SqlStore, db_span};

/// How many times, and for how long, a transaction that lost a conflict is run again.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retries {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// No rerun begins later than this after the first attempt lost: a write that takes
    /// long (an import of a large set) may still run again.
    pub within: Duration,
    /// The longest pause before the second attempt; each later one may be twice as long.
    pub first_pause: Duration,
}

impl Retries {
    /// The stores' bounds: 6 attempts, the reruns within 2 s of the first loss, pauses up
    /// to 5, 10, 20, 40, 80 ms.
    /// Conflicts end in milliseconds (the winner commits), so a sixth loss in a row is a
    /// store in trouble, and a caller (a request) should hear so well inside its deadline.
    pub(crate) const STORE: Self =
        Self { attempts: 6, within: Duration::from_secs(2), first_pause: Duration::from_millis(5) };

    /// The pause before attempt `attempt` (2 for the first rerun): at random, up to
    /// `first_pause` doubled `attempt - 2` times.
    fn pause_before(&self, attempt: u32) -> Duration {
        let limit = self.first_pause.saturating_mul(1 << attempt.saturating_sub(2).min(16));
        limit.mul_f64(rand::random::<f64>())
    }
}

/// Whether `error` is a conflict its dialect `D` says a rerun may win.
fn lost_a_conflict<D: SqlDialect>(error: &StoreUnavailable) -> bool {
    error.0.downcast_ref::<sqlx::Error>().is_some_and(|error| matches!(D::meaning(error), Meaning::Conflict))
}

impl<D: SqlDialect> SqlStore<D> {
    /// Runs the write `attempt` (a transaction's begin, statements and commit, or one
    /// statement) until it does not lose a conflict, within [`Retries::STORE`].
    /// `operation` (`"{operation} {table}"`) names its span ([`db_span`]) and its count
    /// in the metrics (`branch_atm_store_retries_total`,
    /// `branch_atm_store_conflicts_lost_total`).
    pub(crate) async fn retrying<T, Attempt: Future<Output = Result<T, StoreUnavailable>>>(
        &self,
        operation: &'static str,
        attempt: impl FnMut() -> Attempt,
    ) -> Result<T, StoreUnavailable> {
        retry::<D, T, _>(Retries::STORE, operation, attempt).instrument(db_span(D::SYSTEM, operation)).await
    }
}

/// [`SqlStore::retrying`] within `bounds`.
pub(crate) async fn retry<D: SqlDialect, T, Attempt: Future<Output = Result<T, StoreUnavailable>>>(
    bounds: Retries,
    operation: &'static str,
    mut attempt: impl FnMut() -> Attempt,
) -> Result<T, StoreUnavailable> {
    let started = Instant::now();
    let mut first_lost = None;
    let mut attempts = 1;
    loop {
        let error = match attempt().await {
            Err(error) if lost_a_conflict::<D>(&error) => error,
            done => return done,
        };
        let lost_since = *first_lost.get_or_insert_with(Instant::now);
        let pause = bounds.pause_before(attempts + 1);
        if attempts >= bounds.attempts || lost_since.elapsed() + pause > bounds.within {
            metrics::counter!("branch_atm_store_conflicts_lost_total", "operation" => operation).increment(1);
            tracing::warn!(operation, attempts, "a write lost a conflict every time it ran: {error}");
            return Err(StoreUnavailable::new(format!(
                "{operation} lost a conflict with other writers {attempts} times in {} ms: {}",
                started.elapsed().as_millis(),
                error.0
            )));
        }
        metrics::counter!("branch_atm_store_retries_total", "operation" => operation).increment(1);
        tracing::debug!(operation, attempts, "a write lost a conflict; running it again: {error}");
        tokio::time::sleep(pause).await;
        attempts += 1;
    }
}

/// An edit's plan as each attempt calls it: a rerun plans again from what it reads. The
/// attempts share it behind a lock (one `&mut` cannot go into each attempt's future),
/// never held across an await.
pub(crate) struct Replan<'p, 'a, Found, Edit>(Mutex<&'p mut EditPlan<'a, Found, Edit>>);

impl<'p, 'a, Found, Edit> Replan<'p, 'a, Found, Edit> {
    /// `plan`, to be called by every attempt.
    pub(crate) fn new(plan: &'p mut EditPlan<'a, Found, Edit>) -> Self {
        Self(Mutex::new(plan))
    }

    /// What the plan writes, given what the store holds.
    pub(crate) fn plan(&self, found: &Found) -> Edit {
        (self.0.lock().unwrap_or_else(PoisonError::into_inner))(found)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use domain::ports::StoreFailure;
    use sqlx::Executor;
    use tokio::sync::Barrier;

    use super::*;
    use crate::mysql::{MysqlStore, TEST_SERVER as MYSQL};
    use crate::postgres::{PostgresStore, TEST_SERVER as POSTGRES};
    use crate::sql::{Connection, Db, unavailable};
    use crate::sqlite::SqliteStore;
    use crate::testing::{TempFolder, TestDatabase, TestServer};

    /// Two writers, each adding its `amount` to both rows of `retry_test` in one
    /// transaction, begun together so that each reads before either writes; then, on a
    /// server, each takes its first row and asks for the other's (a deadlock), and on
    /// SQLite, whose writer holds the whole database, the second writes once the first
    /// has committed (a stale snapshot). Either way one loses. Returns each writer's
    /// outcome and how many attempts both made.
    async fn race<D: SqlDialect>(store: &SqlStore<D>, bounds: Retries) -> (Vec<Result<(), StoreUnavailable>>, u32)
    where
        for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
        (i64,): for<'r> sqlx::FromRow<'r, crate::sql::Row<D>>,
        i64: for<'q> sqlx::Encode<'q, Db<D>> + sqlx::Type<Db<D>>,
    {
        let pool = store.dialect.pool();
        pool.execute("CREATE TABLE retry_test (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)").await.unwrap();
        pool.execute("INSERT INTO retry_test (id, n) VALUES (1, 0), (2, 0)").await.unwrap();
        let row_locks = !D::FOR_UPDATE.is_empty();
        let read = Arc::new(Barrier::new(2));
        let held = Arc::new(Barrier::new(2));
        let attempts = Arc::new(AtomicU32::new(0));
        let writer = |amount: i64, first: i64, second: i64| {
            let (read, held, attempts) = (read.clone(), held.clone(), attempts.clone());
            let pool = pool.clone();
            async move {
                let add = D::SYNTAX.render("UPDATE retry_test SET n = n + $1 WHERE id = $2");
                let add = &*Box::leak(add.into_boxed_str());
                let (read, held, attempts, pool) = (&read, &held, &attempts, &pool);
                retry::<D, (), _>(bounds, "UPDATE retry_test", move || async move {
                    let together = attempts.fetch_add(1, Ordering::SeqCst) < 2;
                    let mut transaction = pool.begin().await.map_err(unavailable::<D>)?;
                    let (_,): (i64,) =
                        sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT n FROM retry_test WHERE id = {first}")))
                            .fetch_one(&mut *transaction)
                            .await
                            .map_err(unavailable::<D>)?;
                    if together {
                        read.wait().await;
                    }
                    let (second_on_sqlite, first_on_sqlite) = (!row_locks && amount == 10, !row_locks && amount == 1);
                    if together && second_on_sqlite {
                        held.wait().await;
                    }
                    for (step, row) in [first, second].into_iter().enumerate() {
                        sqlx::query(sqlx::AssertSqlSafe(add))
                            .bind(amount)
                            .bind(row)
                            .execute(&mut *transaction)
                            .await
                            .map_err(unavailable::<D>)?;
                        if together && step == 0 && row_locks {
                            held.wait().await;
                        }
                    }
                    transaction.commit().await.map_err(unavailable::<D>)?;
                    if together && first_on_sqlite {
                        held.wait().await;
                    }
                    Ok(())
                })
                .await
            }
        };
        let (one, ten) = tokio::join!(writer(1, 1, 2), writer(10, 2, 1));
        (vec![one, ten], attempts.load(Ordering::SeqCst))
    }

    /// The rows' values after a race.
    async fn rows<D: SqlDialect>(store: &SqlStore<D>) -> Vec<i64>
    where
        for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
        (i64,): for<'r> sqlx::FromRow<'r, crate::sql::Row<D>>,
    {
        let found: Vec<(i64,)> =
            sqlx::query_as("SELECT n FROM retry_test ORDER BY id").fetch_all(store.dialect.pool()).await.unwrap();
        found.into_iter().map(|(n,)| n).collect()
    }

    /// The retry's two outcomes, on two stores of a backend: both writers win when
    /// reruns are allowed, and with none the loser is told as the store being
    /// unavailable, and nothing of its is stored.
    async fn a_lost_conflict_is_run_again_and_told_as_unavailable_when_it_keeps_losing<D: SqlDialect>(
        store: SqlStore<D>,
        other: SqlStore<D>,
    ) where
        for<'c> &'c mut Connection<D>: Executor<'c, Database = Db<D>>,
        (i64,): for<'r> sqlx::FromRow<'r, crate::sql::Row<D>>,
        i64: for<'q> sqlx::Encode<'q, Db<D>> + sqlx::Type<Db<D>>,
    {
        let (outcomes, attempts) = race(&store, Retries::STORE).await;
        for outcome in &outcomes {
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        assert!(attempts >= 3, "one of the two ran again: {attempts} attempts");
        assert_eq!(rows(&store).await, [11, 11], "each writer's whole transaction stored once");

        let once = Retries { attempts: 1, ..Retries::STORE };
        let (outcomes, attempts) = race(&other, once).await;
        assert_eq!(attempts, 2);
        let lost: Vec<_> = outcomes.iter().filter_map(|outcome| outcome.as_ref().err()).collect();
        assert_eq!(lost.len(), 1, "{outcomes:?}");
        assert_eq!(lost[0].failure(), StoreFailure::Unavailable, "never refused data: {}", lost[0]);
        let told = lost[0].to_string();
        assert!(told.contains("UPDATE retry_test lost a conflict with other writers 1 times"), "{told}");
        let stored = rows(&other).await;
        assert!(stored == [1, 1] || stored == [10, 10], "only the winner's writes: {stored:?}");
    }

    #[tokio::test]
    async fn on_sqlite_a_transaction_whose_snapshot_went_stale_is_run_again() {
        let folder = TempFolder::create();
        let file = |name: &str| format!("sqlite://{}", folder.path().join(name).display());
        let store = SqliteStore::connect(&file("one.db")).await.unwrap();
        let other = SqliteStore::connect(&file("other.db")).await.unwrap();
        a_lost_conflict_is_run_again_and_told_as_unavailable_when_it_keeps_losing(store, other).await;
    }

    /// Two new databases on `server`, each a store by `connect`, or `None` (said) without
    /// that server.
    async fn two_stores_on<D: SqlDialect>(
        server: &'static TestServer,
        connect: impl AsyncFn(&str) -> Result<SqlStore<D>, StoreUnavailable>,
    ) -> Option<(SqlStore<D>, SqlStore<D>, [TestDatabase; 2])> {
        let what = "the retry of a transaction that lost a deadlock";
        let one = TestDatabase::create(server, what).await?;
        let other = TestDatabase::create(server, what).await?;
        Some((connect(&one.url).await.unwrap(), connect(&other.url).await.unwrap(), [one, other]))
    }

    #[tokio::test]
    async fn on_postgres_a_deadlock_is_run_again() {
        let Some((store, other, _databases)) = two_stores_on(&POSTGRES, PostgresStore::connect).await else { return };
        a_lost_conflict_is_run_again_and_told_as_unavailable_when_it_keeps_losing(store, other).await;
    }

    #[tokio::test]
    async fn on_mariadb_a_deadlock_is_run_again() {
        let Some((store, other, _databases)) = two_stores_on(&MYSQL, MysqlStore::connect).await else { return };
        a_lost_conflict_is_run_again_and_told_as_unavailable_when_it_keeps_losing(store, other).await;
    }

    #[test]
    fn each_pause_is_drawn_up_to_a_limit_that_doubles() {
        for attempt in 2..=6 {
            let limit = Retries::STORE.first_pause * (1 << (attempt - 2));
            for _ in 0..100 {
                assert!(Retries::STORE.pause_before(attempt) <= limit);
            }
        }
        let drawn: std::collections::HashSet<_> = (0..20).map(|_| Retries::STORE.pause_before(3)).collect();
        assert!(drawn.len() > 1, "jitter: {drawn:?}");
    }
}
