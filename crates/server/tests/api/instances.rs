//! Several instances on one PostgreSQL (or MariaDB) store, as a bank runs them behind a load
//! balancer: a change made anywhere is in force everywhere at once, and every instance
//! answers alike. These tests make a PostgreSQL database of their own whatever store the
//! suite runs on (they need `TEST_POSTGRES_URL`; without it they are ignored, and counted so in
//! cargo's summary, except under `CI=true`, where they fail).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::{TestApp, demo_authorize_query};

/// An interval no test waits for: only a change notice can explain a change seen sooner.
const SLOW_POLL: Duration = Duration::from_secs(30);

fn slow_poll(settings: &mut server::settings::Settings) {
    settings.view.refresh_interval_ms = u64::try_from(SLOW_POLL.as_millis()).unwrap();
}

/// How long after `since` `check` first held, trying every 5 ms for at most 5 s.
async fn held_after<F, Fut>(since: Instant, mut check: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    while since.elapsed() < Duration::from_secs(5) {
        if check().await {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// A token issued by `first` and working on `second`, then revoked with the CLI: its
/// session, and when the revocation was committed.
async fn revoked_through_the_cli(first: &TestApp, second: &TestApp) -> (crate::helpers::Session, Instant) {
    let issued = first.authorize(&demo_authorize_query()).await;
    let sid = issued.headers()["sid"].to_str().unwrap().to_owned();
    let body: Value = issued.json().await.unwrap();
    let session = crate::helpers::Session { token: body["access_token"].as_str().unwrap().to_owned(), sid };
    assert_eq!(second.wait_times(&session, &["00001"]).await.status(), 200, "a token from one works on another");
    let revoke = crate::binary::branch_atm_command()
        .args(["--database-url", &first.database_url, "tokens", "revoke", body["opaque_token"].as_str().unwrap()])
        .output()
        .unwrap();
    assert!(revoke.status.success(), "{}", String::from_utf8_lossy(&revoke.stderr));
    (session, Instant::now())
}

/// How long after `since` `app` first served `minutes` for `branch`.
async fn minutes_served_after(
    app: &TestApp,
    session: &crate::helpers::Session,
    branch: &str,
    minutes: &str,
    since: Instant,
) -> Option<Duration> {
    held_after(since, || async {
        let body: Value = app.wait_times(session, &[branch]).await.json().await.unwrap();
        body["branches"][0]["timeTaken"] == minutes
    })
    .await
}

#[tokio::test]
async fn a_revocation_made_through_the_cli_is_in_force_on_another_instance_at_once() {
    let Some(first) = TestApp::builder().on_backend("postgres").settings(slow_poll).try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).settings(slow_poll).start().await;
    let (session, revoked) = revoked_through_the_cli(&first, &second).await;
    let refused = held_after(revoked, || async { second.wait_times(&session, &["00001"]).await.status() == 401 }).await;
    eprintln!("figure: a CLI revocation refused on another instance after {refused:?} (poll every {SLOW_POLL:?})");
    assert!(refused.is_some_and(|after| after < Duration::from_secs(1)), "in force at once: {refused:?}");
    // The issuing instance hears of it by its own notice, as independently.
    let on_first = held_after(revoked, || async { first.wait_times(&session, &["00001"]).await.status() == 401 }).await;
    assert!(on_first.is_some_and(|after| after < Duration::from_secs(1)), "in force at once: {on_first:?}");
}

/// RFC 7009 from an app: the same bound as a CLI revocation, on every instance.
#[tokio::test]
async fn a_revocation_an_app_asks_of_one_instance_is_in_force_on_another_at_once() {
    let Some(first) = TestApp::builder().on_backend("postgres").settings(slow_poll).try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).settings(slow_poll).start().await;
    let session = first.session().await;
    assert_eq!(second.wait_times(&session, &["00001"]).await.status(), 200);
    let answer = first.revoke(&[("token", &session.token), ("client_id", crate::helpers::CLIENT)]).await;
    assert_eq!(answer.status(), 200);
    let revoked = Instant::now();
    assert_eq!(first.wait_times(&session, &["00001"]).await.status(), 401, "at once where it was asked");
    let refused = held_after(revoked, || async { second.wait_times(&session, &["00001"]).await.status() == 401 }).await;
    eprintln!("figure: an app's revocation refused on another instance after {refused:?} (poll every {SLOW_POLL:?})");
    assert!(refused.is_some_and(|after| after < Duration::from_secs(1)), "in force at once: {refused:?}");
}

#[tokio::test]
async fn a_wait_time_written_on_one_instances_store_is_served_by_another_at_once() {
    let Some(first) = TestApp::builder().on_backend("postgres").settings(slow_poll).try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).settings(slow_poll).start().await;
    let session = first.session().await;
    let upsert = "INSERT INTO branch_wait_times (branch_id, minutes, estimated_at) VALUES ('00009', 51, 1800000000) \
                  ON CONFLICT (branch_id) DO UPDATE SET minutes = excluded.minutes, estimated_at = excluded.estimated_at";
    assert_eq!(adapters::testing::execute_sql(&first.database_url, upsert).await, Ok(1));
    let served = minutes_served_after(&second, &session, "00009", "51", Instant::now()).await;
    eprintln!("figure: a plain-SQL wait time served by another instance after {served:?}");
    assert!(served.is_some_and(|after| after < Duration::from_secs(1)), "served at once: {served:?}");
}

/// Answers are made of the store's data and the settings instances share, never of the
/// instance (its start time, its own clock of loading): the same ATM page, ETag,
/// Last-Modified and JWKS from an instance started later.
#[tokio::test]
async fn instances_started_at_different_times_answer_alike() {
    let Some(first) = TestApp::builder().on_backend("postgres").try_start().await else { return };
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let second = TestApp::builder().on_store(&first.database_url).start().await;
    let session = first.session().await;
    let (a, b) = (
        first.get_atms(&session, "/api/v1/atms?page=2", &[]).await,
        second.get_atms(&session, "/api/v1/atms?page=2", &[]).await,
    );
    assert_eq!(a.status(), 200);
    for header in ["etag", "last-modified", "cache-control"] {
        assert_eq!(a.headers()[header], b.headers()[header], "{header}");
    }
    assert_eq!(a.text().await.unwrap(), b.text().await.unwrap());
    let jwks = |app: &TestApp| app.http.get(format!("{}/api/.well-known/jwks.json", app.address)).send();
    let (a, b) = (jwks(&first).await.unwrap(), jwks(&second).await.unwrap());
    assert_eq!(a.text().await.unwrap(), b.text().await.unwrap());
}

/// MariaDB sends no change notices: another instance finds a change at its next poll of
/// the change counters. A CLI revocation and a plain-SQL wait time are in force on every
/// instance within one refresh interval (the default, 1 s) and the time a reload takes.
#[tokio::test]
async fn on_mariadb_a_change_made_anywhere_is_in_force_on_another_instance_within_a_poll() {
    let Some(first) = TestApp::builder().on_backend("mysql").try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).start().await;
    let interval = second.settings.view.refresh_interval();
    let session = first.session().await;
    let (revoked_session, revoked) = revoked_through_the_cli(&first, &second).await;
    let refused =
        held_after(revoked, || async { second.wait_times(&revoked_session, &["00001"]).await.status() == 401 }).await;
    eprintln!(
        "figure: MariaDB: a CLI revocation refused on another instance after {refused:?} (poll every {interval:?})"
    );
    assert!(refused.is_some_and(|after| after < interval + Duration::from_millis(500)), "within a poll: {refused:?}");

    let update = "UPDATE branch_wait_times SET minutes = 52, estimated_at = 1800000000 WHERE branch_id = '00001'";
    assert_eq!(adapters::testing::execute_sql(&first.database_url, update).await, Ok(1));
    let served = minutes_served_after(&second, &session, "00001", "52", Instant::now()).await;
    eprintln!("figure: MariaDB: a plain-SQL wait time served by another instance after {served:?}");
    assert!(served.is_some_and(|after| after < interval + Duration::from_millis(500)), "within a poll: {served:?}");
}
