//! POST /api/v1/open-banking/channels/branch/waittime/retrieve, through the real service:
//! estimates, their refresh and age, the domain's refusals and a stalled body. How its
//! headers and bodies are read and refused is tested in process, on mocks
//! (`crates/api/tests/handlers.rs`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::{TestApp, UUID, assert_error, assert_security_headers};

#[tokio::test]
async fn known_branches_come_back_in_request_order_and_unknown_ones_are_left_out() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let response = app.wait_times(&session, &["00042", "99999", "00001"]).await;

    assert_eq!(response.status(), 200);
    assert_security_headers(&response);
    assert_eq!(response.headers()["uuid"], UUID);
    let body: Value = response.json().await.unwrap();
    let branches = body["branches"].as_array().unwrap();
    let ids: Vec<&str> = branches.iter().map(|b| b["branchId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["00042", "00001"]);
    for branch in branches {
        let minutes = branch["timeTaken"].as_str().unwrap();
        assert!(!minutes.is_empty() && minutes.bytes().all(|b| b.is_ascii_digit()), "{branch}");
        assert!(branch.get("timeTaken ").is_none());
    }
}

#[tokio::test]
async fn a_hundred_branches_are_answered_and_a_hundred_and_one_refused() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let ids: Vec<String> = (1..=101).map(|n| format!("{n:05}")).collect();
    let hundred: Vec<&str> = ids[..100].iter().map(String::as_str).collect();
    let response = app.wait_times(&session, &hundred).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["branches"].as_array().unwrap().len(), 100);

    let all: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_error(app.wait_times(&session, &all).await, 400, "invalidRequest", Some("branches")).await;
}

#[tokio::test]
async fn the_same_branch_twice_is_a_422_at_the_repeat() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let response = app.wait_times(&session, &["00001", "00002", "00001"]).await;
    assert_error(response, 422, "businessValidationFailed", Some("branches[2].branchId")).await;
}

#[tokio::test]
async fn no_known_branch_is_a_404() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let body = assert_error(app.wait_times(&session, &["99998", "99999"]).await, 404, "resourceNotFound", None).await;
    assert_eq!(body["type"], "error");
    assert_eq!(body["uuid"], UUID);
}

#[tokio::test]
async fn an_unsupported_channel_is_a_403() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    for (header, value) in [("countryCode", "US"), ("ChannelId", "KIOSK")] {
        let response = app
            .wait_time_request(&session, &[header])
            .header(header, value)
            .body(r#"{"branches":[{"branchId":"00001"}]}"#)
            .send()
            .await
            .unwrap();
        assert_error(response, 403, "accessNotConfigured", None).await;
    }
}

#[tokio::test]
async fn wait_times_written_while_the_service_runs_are_served_soon_after() {
    let app = spawn_app_fast_refresh().await;
    let session = app.session().await;
    let store = app.store().await;
    let estimate = domain::branch::WaitTimeEstimate {
        estimate: domain::branch::BranchWaitTime {
            branch: domain::branch::BranchId::parse("77777").unwrap(),
            wait: domain::branch::WaitTime::from_minutes(33).unwrap(),
        },
        estimated_at: crate::helpers::now(),
    };
    assert_eq!(app.wait_times(&session, &["77777"]).await.status(), 404);
    store.wait_times.upsert(&[estimate]).await.unwrap();

    let body = crate::helpers::eventually(|| async {
        let response = app.wait_times(&session, &["77777"]).await;
        if response.status() == 200 { response.json::<Value>().await.ok() } else { None }
    })
    .await
    .expect("the new branch is served once the view refreshes");
    assert_eq!(body["branches"][0]["timeTaken"], "33");
}

async fn spawn_app_fast_refresh() -> crate::helpers::TestApp {
    crate::helpers::TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 100).start().await
}

#[tokio::test]
async fn a_body_that_stalls_is_refused_instead_of_waited_for_forever() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = crate::helpers::TestApp::builder()
        .settings(|settings| {
            settings.http.client_request_timeout_ms = 300;
        })
        .start()
        .await;
    let session = app.session().await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nclient_id: demo-mobile-app\r\n\
         uuid: {UUID}\r\nAccept: application/json\r\nContent-Type: application/json\r\ncountryCode: MX\r\n\
         businessCode: GCB\r\nChannelId: MOBILE\r\nsid: {sid}\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 100\r\n\r\n{{\"branches\":",
        path = crate::helpers::WAIT_TIME_PATH,
        sid = session.sid,
        token = session.token,
    );
    let mut stream = tokio::net::TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = String::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_string(&mut answer)).await;
    assert!(read.is_ok(), "answered, not left hanging");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains(r#""location":"body""#), "{answer}");
}

/// The bank's branch systems write wait times with plain SQL, beside the service: the
/// store's triggers count the change, and the service serves it within a refresh.
#[tokio::test]
async fn wait_times_written_with_plain_sql_by_another_system_are_served_within_a_refresh() {
    if !crate::store::other_processes_reach_the_store("plain SQL from another system") {
        return;
    }
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 100).start().await;
    let session = app.session().await;
    assert_eq!(app.wait_times(&session, &["00077"]).await.status(), 200);
    // The same statement in every SQL dialect: what a bank's system would run.
    let update = "UPDATE branch_wait_times SET minutes = 43, estimated_at = 1800000000 WHERE branch_id = '00077'";
    assert_eq!(adapters::testing::execute_sql(&app.database_url, update).await, Ok(1));
    let served = crate::helpers::eventually(|| async {
        let body: Value = app.wait_times(&session, &["00077"]).await.json().await.unwrap();
        (body["branches"][0]["timeTaken"] == "43").then_some(())
    })
    .await;
    assert!(served.is_some(), "the plain-SQL write was served");
}

/// The metrics text of `app`'s own listener.
async fn scrape(app: &TestApp) -> String {
    let port = app.metrics_port.expect("a metrics listener");
    reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.unwrap().text().await.unwrap()
}

/// The value of the sample named exactly `name` (no labels).
fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// The finding: each estimate is stored with its `estimatedAt`, but an estimate three
/// days old was answered as today's wait. Now one older than
/// `--wait-time-max-age-minutes` (60 by default) is answered as unknown, all of them
/// stale is the 404 of no known branch, and the metrics count the stale branches.
#[tokio::test]
async fn an_estimate_older_than_the_maximum_age_is_answered_as_unknown() {
    let clock = Arc::new(domain::testing::ManualClock::at(time::OffsetDateTime::now_utc()));
    let app = TestApp::builder()
        .clock(clock.clone())
        .settings(|settings| {
            settings.observability.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
        })
        .start()
        .await;
    assert_eq!(app.settings.catalog.wait_time_max_age(), Duration::from_secs(3600), "the default: an hour");
    // The demo's estimates were made at start, by the service's clock.
    clock.advance(Duration::from_secs(3600));
    let session = app.session().await;
    assert_eq!(app.wait_times(&session, &["00001", "00002"]).await.status(), 200, "an hour old is served");
    let text = scrape(&app).await;
    assert_eq!(gauge(&text, "branch_atm_wait_time_stale_branches"), Some(0.0), "{text}");
    assert_eq!(gauge(&text, "branch_atm_wait_time_newest_age_seconds"), Some(3600.0));
    assert_eq!(gauge(&text, "branch_atm_wait_time_max_age_seconds"), Some(3600.0));

    clock.advance(Duration::from_secs(1));
    let response = app.wait_times(&session, &["00001", "00002"]).await;
    assert_error(response, 404, "resourceNotFound", None).await;
    let text = scrape(&app).await;
    assert_eq!(gauge(&text, "branch_atm_wait_time_stale_branches"), Some(300.0), "every demo branch: {text}");
    assert_eq!(gauge(&text, "branch_atm_wait_time_newest_age_seconds"), Some(3601.0));

    // A fresh estimate for one branch, from the bank's feed: it alone is served.
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let now = domain::ports::Clock::now(clock.as_ref()).format(&time::format_description::well_known::Rfc3339).unwrap();
    let csv = app.folder.path().join("fresh.csv");
    std::fs::write(&csv, format!("branchId,timeTaken,estimatedAt\n00002,7,{now}\n")).unwrap();
    let import = crate::cli::branch_atm(&app.database_url, &["waittimes", "import", csv.to_str().unwrap()]);
    assert!(import.status.success(), "{}", crate::cli::stderr(&import));
    let served = crate::helpers::eventually(|| async {
        let response = app.wait_times(&session, &["00001", "00002"]).await;
        (response.status() == 200).then_some(())?;
        Some(response.json::<Value>().await.unwrap())
    })
    .await
    .expect("the fresh estimate is served within a refresh");
    assert_eq!(served, serde_json::json!({"branches": [{"branchId": "00002", "timeTaken": "7"}]}));
}

/// The default protects a real deployment, and the demo keeps answering: while the store
/// holds the demo data set and nothing else, each start (and a feed every few minutes)
/// dates the demo's estimates now again; an operator's estimates are never re-dated.
#[tokio::test]
async fn the_demo_answers_days_later_and_an_operators_estimates_are_never_redated() {
    if !crate::store::other_processes_reach_the_store("a second start on the same store") {
        return;
    }
    let clock = Arc::new(domain::testing::ManualClock::at(time::OffsetDateTime::now_utc()));
    let first = TestApp::builder().clock(clock.clone()).start().await;
    clock.advance(Duration::from_secs(3 * 24 * 3600));
    let stale = first.session().await;
    assert_eq!(first.wait_times(&stale, &["00001"]).await.status(), 404, "three days on, before a restart");

    let again = TestApp::builder().on_store(&first.database_url).with_demo_data().clock(clock.clone()).start().await;
    let session = again.session().await;
    let response = again.wait_times(&session, &["00001", "00300"]).await;
    assert_eq!(response.status(), 200, "the restart dated the demo's estimates now");
    assert_eq!(response.json::<Value>().await.unwrap()["branches"].as_array().unwrap().len(), 2);

    // An operator's import (one branch changed): the feed leaves the store alone for good.
    let csv = again.folder.path().join("one.csv");
    std::fs::write(&csv, "branchId,timeTaken,estimatedAt\n00001,12,2026-01-01T00:00:00Z\n").unwrap();
    let import = crate::cli::branch_atm(&again.database_url, &["waittimes", "import", csv.to_str().unwrap()]);
    assert!(import.status.success(), "{}", crate::cli::stderr(&import));
    clock.advance(Duration::from_secs(2 * 3600));
    let later = TestApp::builder().on_store(&first.database_url).with_demo_data().clock(clock.clone()).start().await;
    let session = later.session().await;
    assert_eq!(later.wait_times(&session, &["00001", "00300"]).await.status(), 404, "nothing re-dated");
}
