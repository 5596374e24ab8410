//! The MariaDB store on a Galera cluster, written through two nodes at once: certification
//! conflicts on purpose, each write run again until it wins (`sql::retry`).
//!
//! Needs `TEST_GALERA_URLS`: the URLs of a cluster's nodes, each reached directly (not
//! through HAProxy), comma-separated, with a user that may make databases
//! (`deploy/galera start --database-only` prints them; `.ci/run` sets them). Without it
//! the test says it did not run; under `CI=true` that fails it.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use adapters::store::Store;
use adapters::testing::execute_sql;
use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use sqlx::Connection as _;

/// The nodes' URLs, or `None` (said) where no cluster was given.
fn nodes() -> Option<Vec<String>> {
    match std::env::var("TEST_GALERA_URLS") {
        Ok(urls) if !urls.is_empty() => Some(urls.split(',').map(str::to_owned).collect()),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("CI must run the Galera tests: set TEST_GALERA_URLS (.ci/run does, from deploy/galera)")
        }
        _ => {
            eprintln!("SKIPPED: no Galera cluster (TEST_GALERA_URLS, as `deploy/galera start --database-only` prints)");
            None
        }
    }
}

/// `url` with its database replaced by `database`.
fn on_database(url: &str, database: &str) -> String {
    let server = url.rsplit_once('/').map_or(url, |(server, _)| server);
    format!("{server}/{database}")
}

/// The conflicts a node has counted: its commits that failed certification, and its
/// transactions aborted for one replicated from another node.
async fn conflicts(url: &str) -> u64 {
    let mut connection = sqlx::MySqlConnection::connect(url).await.unwrap();
    let counted: Vec<(String, String)> = sqlx::query_as(
        "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
         WHERE VARIABLE_NAME IN ('WSREP_LOCAL_CERT_FAILURES', 'WSREP_LOCAL_BF_ABORTS')",
    )
    .fetch_all(&mut connection)
    .await
    .unwrap();
    assert_eq!(counted.len(), 2, "not a Galera node: {url}");
    counted.iter().map(|(_, value)| value.parse::<u64>().unwrap()).sum()
}

fn estimate(branch: &str, minutes: u32, at: i64) -> WaitTimeEstimate {
    WaitTimeEstimate {
        estimate: BranchWaitTime {
            branch: BranchId::parse(branch).unwrap(),
            wait: WaitTime::from_minutes(minutes).unwrap(),
        },
        estimated_at: at,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_on_two_nodes_conflict_and_every_write_is_run_again_until_it_wins() {
    let Some(nodes) = nodes() else { return };
    let database = format!("branch_atm_galera_{}", uuid::Uuid::new_v4().simple());
    execute_sql(&nodes[0], &format!("CREATE DATABASE {database} CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"))
        .await
        .unwrap();
    let (one, other) = (on_database(&nodes[0], &database), on_database(&nodes[1], &database));
    let first = Store::open(&one).await.unwrap();
    first.lifecycle.migrate().await.unwrap();
    let second = Store::open(&other).await.unwrap();
    let before = conflicts(&one).await + conflicts(&other).await;

    // Round after round, one write on each node at the same moment, each rewriting the
    // same two branches' rows and the wait times' change counter: the nodes certify
    // each other's commits against them, and the loser runs again after the winner.
    const ROUNDS: u32 = 40;
    for round in 0..ROUNDS {
        let mine = [estimate("00001", round, 1_764_000_000), estimate("00042", round, 1_764_000_000)];
        let theirs = [estimate("00001", 100 + round, 1_764_000_000), estimate("00042", 100 + round, 1_764_000_000)];
        let (a, b) = tokio::join!(first.wait_times.upsert(&mine), second.wait_times.upsert(&theirs));
        assert!(a.is_ok() && b.is_ok(), "round {round}: {a:?}, {b:?}");
    }
    let after = conflicts(&one).await + conflicts(&other).await;
    assert!(after > before, "the two nodes' writers met no conflict ({before} before, {after} after): no retry shown");

    // Both nodes hold the same last write, read at once: each read waits for its node to
    // apply what the cluster acknowledged (`wsrep_sync_wait`).
    let (mut mine, mut theirs) = (first.wait_times.all().await.unwrap(), second.wait_times.all().await.unwrap());
    mine.sort_by_key(|estimate| estimate.estimate.branch);
    theirs.sort_by_key(|estimate| estimate.estimate.branch);
    assert_eq!(mine, theirs);
    execute_sql(&nodes[0], &format!("DROP DATABASE {database}")).await.unwrap();
}
