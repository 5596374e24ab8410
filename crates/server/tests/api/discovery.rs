//! The public status and planned outages (GET /api/v1/discovery/status and …/outages),
//! and the operators' `outages` commands that feed them.

use domain::outage::{OutageDuration, OutageId, PlannedOutage};
use domain::text::Explanation;
use reqwest::Response;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::{branch_atm, fresh_database, stderr, stdout};
use crate::helpers::{TestApp, assert_security_headers, eventually, now};

const STATUS: &str = "/api/v1/discovery/status";
const OUTAGES: &str = "/api/v1/discovery/outages";

async fn get(app: &TestApp, path: &str) -> Response {
    app.http.get(format!("{}{path}", app.address)).send().await.unwrap()
}

async fn status(app: &TestApp) -> Value {
    get(app, STATUS).await.json().await.unwrap()
}

async fn outages(app: &TestApp) -> Vec<Value> {
    let body: Value = get(app, OUTAGES).await.json().await.unwrap();
    body["data"]["outages"].as_array().unwrap().clone()
}

/// `at` as the wire writes it (RFC 3339, UTC).
fn utc(at: i64) -> String {
    OffsetDateTime::from_unix_timestamp(at).unwrap().format(&Rfc3339).unwrap()
}

/// The status once its `status` field is `expected`, if it becomes so within 5 s.
async fn eventually_status(app: &TestApp, expected: &str) -> Option<Value> {
    eventually(|| async {
        let body = status(app).await;
        (body["data"]["status"] == expected).then_some(body)
    })
    .await
}

fn is_public(response: &Response) {
    assert_eq!(response.headers()["access-control-allow-origin"], "*", "any page may read it");
    assert_eq!(response.headers()["cache-control"], "public, max-age=2");
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_security_headers(response);
}

#[tokio::test]
async fn a_healthy_service_says_ok_to_anyone_without_credentials() {
    let app = TestApp::builder().start().await;
    // From a page of an origin no client registered, with no credentials at all.
    let response = app
        .http
        .get(format!("{}{STATUS}", app.address))
        .header("Origin", "https://status.example.org")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    is_public(&response);
    let body: Value = response.json().await.unwrap();
    let data = body["data"].as_object().unwrap();
    assert_eq!(data["status"], "OK");
    for absent in ["explanation", "detectionTime", "expectedResolutionTime"] {
        assert!(!data.contains_key(absent), "{absent} is not sent with OK: {body}");
    }
    let updated = OffsetDateTime::parse(data["updateTime"].as_str().unwrap(), &Rfc3339).unwrap();
    assert!(updated.unix_timestamp() <= now() && updated.unix_timestamp() > now() - 60, "{body}");
    assert_eq!(body["links"]["self"], format!("{}{STATUS}", app.settings.http.public_base_url()));
    assert_eq!(body["meta"], serde_json::json!({}));

    let response = get(&app, OUTAGES).await;
    assert_eq!(response.status(), 200);
    is_public(&response);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"], serde_json::json!({"outages": []}), "nothing planned on a new store");
    assert_eq!(body["links"]["self"], format!("{}{OUTAGES}", app.settings.http.public_base_url()));
    assert_eq!(body["meta"], serde_json::json!({}));
}

#[tokio::test]
async fn the_discovery_resources_answer_get_and_head_only() {
    let app = TestApp::builder().start().await;
    for path in [STATUS, OUTAGES] {
        for method in [reqwest::Method::POST, reqwest::Method::PUT, reqwest::Method::DELETE] {
            let response = app.http.request(method.clone(), format!("{}{path}", app.address)).send().await.unwrap();
            assert_eq!(response.status(), 405, "{method} {path}");
            assert_eq!(response.headers()["allow"], "GET, HEAD");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["code"], "methodNotAllowed", "{body}");
        }
        let head = app.http.head(format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(head.status(), 200, "HEAD {path}");
    }
}

#[tokio::test]
async fn a_planned_outage_under_way_is_the_status_with_its_end_as_the_expected_resolution() {
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 100).start().await;
    let started = now() - 60;
    let outage = PlannedOutage {
        id: OutageId::parse("upgrade1").unwrap(),
        starts_at: started,
        duration: OutageDuration::parse_iso8601("PT1H").unwrap(),
        partial: false,
        explanation: Explanation::parse("Database upgrade: the service is unavailable").unwrap(),
    };
    let store = app.store().await;
    store.outages.schedule(&outage, now()).await.unwrap();

    let body = eventually_status(&app, "SCHEDULED_OUTAGE").await.expect("the outage is the status within a refresh");
    let data = &body["data"];
    assert_eq!(data["explanation"], "Database upgrade: the service is unavailable");
    assert_eq!(data["expectedResolutionTime"], utc(started + 3_600), "its end");
    assert_eq!(data["updateTime"], utc(started), "its start: the same on every instance");
    assert!(data.get("detectionTime").is_none(), "CDR: for failures only: {body}");
    let listed = outages(&app).await;
    assert_eq!(listed.len(), 1, "an outage under way is not over: {listed:?}");
    assert_eq!(listed[0]["outageTime"], utc(started));
    assert_eq!(listed[0]["duration"], "PT1H");

    assert!(store.outages.cancel(&outage.id).await.unwrap());
    assert!(eventually_status(&app, "OK").await.is_some(), "a cancelled outage ends the status");
    assert!(outages(&app).await.is_empty());
}

#[tokio::test]
async fn the_status_follows_the_store_down_and_back_by_itself() {
    let app = TestApp::builder()
        .settings(|settings| {
            settings.view.refresh_interval_ms = 100;
            settings.view.max_staleness_ms = 1_500;
        })
        .start()
        .await;
    assert_eq!(status(&app).await["data"]["status"], "OK");

    app.outage.take_down();
    let down = now();
    let partial = eventually_status(&app, "PARTIAL_FAILURE").await.expect("a partial failure within seconds");
    let detected = partial["data"]["detectionTime"].as_str().unwrap().to_owned();
    let detected_at = OffsetDateTime::parse(&detected, &Rfc3339).unwrap().unix_timestamp();
    assert!((down - 1..=down + 3).contains(&detected_at), "{partial}");
    assert!(partial["data"]["explanation"].as_str().unwrap().contains("tokens cannot be issued"), "{partial}");

    let unavailable = eventually_status(&app, "UNAVAILABLE").await.expect("unavailable past the staleness bound");
    assert!(unavailable["data"]["explanation"].as_str().unwrap().contains("cannot reach"), "{unavailable}");

    app.outage.bring_back();
    let back = eventually_status(&app, "OK").await.expect("OK again once the store answers, without a restart");
    assert!(back["data"].get("detectionTime").is_none(), "{back}");
}

#[tokio::test]
async fn outages_scheduled_by_the_cli_are_served_soonest_first_and_leave_when_cancelled() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 100).start().await;
    let (late, soon) = (now() + 30 * 86_400, now() + 3_600);

    let schedule = |start: i64, duration: &str, explanation: &str, partial: bool| {
        let start = utc(start);
        let mut args =
            vec!["outages", "schedule", "--start", &start, "--duration", duration, "--explanation", explanation];
        if partial {
            args.push("--partial");
        }
        branch_atm(&app.database_url, &args)
    };
    let far = schedule(late, "PT2H", "Database upgrade", false);
    assert!(far.status.success(), "{}", stderr(&far));
    assert!(stderr(&far).is_empty(), "a month's notice is no warning: {}", stderr(&far));
    let near = schedule(soon, "PT90M", "Tokens cannot be issued", true);
    assert!(near.status.success(), "{}", stderr(&near));
    assert!(stderr(&near).contains("warning: the outage starts less than 7 days from now"), "{}", stderr(&near));
    assert!(stdout(&near).contains("scheduled"), "{}", stdout(&near));

    let listed = stdout(&branch_atm(&app.database_url, &["outages", "list"]));
    let lines: Vec<Vec<&str>> = listed.lines().map(|line| line.split('\t').collect()).collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert_eq!(lines[0][1..], [utc(soon).as_str(), "PT1H30M", "partial", "Tokens cannot be issued"], "{listed}");
    assert_eq!(lines[1][1..], [utc(late).as_str(), "PT2H", "full", "Database upgrade"], "{listed}");

    let expected = serde_json::json!([
        {"outageTime": utc(soon), "duration": "PT1H30M", "isPartial": true, "explanation": "Tokens cannot be issued"},
        {"outageTime": utc(late), "duration": "PT2H", "explanation": "Database upgrade"},
    ]);
    let served = eventually(|| async {
        let served = Value::Array(outages(&app).await);
        (served == expected).then_some(served)
    })
    .await;
    assert_eq!(served, Some(expected), "served within a refresh, soonest first");
    // Within seconds: a store probe may run slow for a moment on a busy machine.
    assert!(eventually_status(&app, "OK").await.is_some(), "none is under way: {}", status(&app).await);

    let cancel = branch_atm(&app.database_url, &["outages", "cancel", lines[0][0]]);
    assert!(cancel.status.success(), "{}", stderr(&cancel));
    let again = branch_atm(&app.database_url, &["outages", "cancel", lines[0][0]]);
    assert!(!again.status.success(), "an outage is cancelled once");
    assert_eq!(stderr(&again).trim().lines().count(), 1, "{}", stderr(&again));
    let left = eventually(|| async {
        let served = outages(&app).await;
        (served.len() == 1).then_some(served)
    })
    .await;
    assert_eq!(left.unwrap()[0]["explanation"], "Database upgrade", "the cancelled one left within a refresh");
}

#[test]
fn bad_outage_input_is_refused_in_one_line_and_changes_nothing() {
    // Read before the store is opened: a refused command does not even make its file.
    let folder = tempfile::tempdir().unwrap();
    let untouched = folder.path().join("never.db");
    let args = ["outages", "schedule", "--start", "soon", "--duration", "PT1H", "--explanation", "x"];
    let output = branch_atm(&format!("sqlite://{}", untouched.display()), &args);
    assert!(!output.status.success() && stderr(&output).contains("--start"), "{}", stderr(&output));
    assert!(!untouched.exists(), "the store's file was made for a refused command");
    if !crate::store::other_processes_reach_the_store("the CLI binary") {
        return;
    }
    let fresh = fresh_database();
    let start = utc(now() + 30 * 86_400);
    let past = utc(now() - 7_200);
    let refused: [(&[&str], &str); 9] = [
        (&["--start", "next tuesday", "--duration", "PT2H", "--explanation", "x"], "--start"),
        (&["--start", "2026-13-01T00:00:00Z", "--duration", "PT2H", "--explanation", "x"], "--start"),
        (&["--start", &start, "--duration", "2 hours", "--explanation", "x"], "--duration"),
        (&["--start", &start, "--duration", "P1M", "--explanation", "x"], "--duration"),
        (&["--start", &start, "--duration", "-PT2H", "--explanation", "x"], "--duration"),
        (&["--start", &start, "--duration", "PT0S", "--explanation", "x"], "longer than zero"),
        (&["--start", &start, "--duration", "PT2H", "--explanation", "   "], "--explanation"),
        (&["--start", &start, "--duration", "PT2H", "--explanation", ""], "--explanation"),
        (&["--start", &past, "--duration", "PT1H", "--explanation", "over"], "already be over"),
    ];
    for (args, says) in refused {
        let output = branch_atm(&fresh.url, &[&["outages", "schedule"], args].concat());
        assert!(!output.status.success(), "{args:?} was accepted");
        let reason = stderr(&output);
        assert_eq!(reason.trim().lines().count(), 1, "one line for {args:?}: {reason}");
        assert!(reason.contains(says), "{args:?}: {reason}");
        assert!(stdout(&output).is_empty(), "{args:?}: {}", stdout(&output));
    }
    let cancel = branch_atm(&fresh.url, &["outages", "cancel", "no such id"]);
    assert!(!cancel.status.success());
    assert_eq!(stderr(&cancel).trim().lines().count(), 1, "{}", stderr(&cancel));
    let listed = branch_atm(&fresh.url, &["outages", "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert_eq!(stdout(&listed), "", "nothing was scheduled");
}

/// Issue 42: `outages list` printed an explanation holding a right-to-left override or
/// a line separator as it is, so on screen it read in another order, or over two lines.
/// A language may need a joiner or a mark in a free text, so it is kept and served, and
/// printed escaped.
#[test]
fn outages_list_prints_an_explanations_format_characters_and_line_separators_escaped() {
    if !crate::store::other_processes_reach_the_store("the CLI binary") {
        return;
    }
    let fresh = fresh_database();
    let start = utc(now() + 30 * 86_400);
    let explanation = "Cierre \u{202e}oicivres\u{2028}x";
    let args = ["outages", "schedule", "--start", &start, "--duration", "PT1H", "--explanation", explanation];
    let scheduled = branch_atm(&fresh.url, &args);
    assert!(scheduled.status.success(), "{}", stderr(&scheduled));
    let listed = stdout(&branch_atm(&fresh.url, &["outages", "list"]));
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.ends_with("\tCierre \\u{202e}oicivres\\u{2028}x\n"), "{listed:?}");
    assert!(!listed.contains(['\u{202e}', '\u{2028}']), "{listed:?}");
}

#[tokio::test]
async fn two_instances_on_one_store_publish_the_same_planned_outage_status() {
    let fast = |settings: &mut server::settings::Settings| settings.view.refresh_interval_ms = 100;
    let first = TestApp::builder().settings(fast).start().await;
    let second = TestApp::builder().on_store(&first.database_url).settings(fast).start().await;
    let started = now() - 30;
    let outage = PlannedOutage {
        id: OutageId::parse("both").unwrap(),
        starts_at: started,
        duration: OutageDuration::parse_iso8601("PT30M").unwrap(),
        partial: true,
        explanation: Explanation::parse("Token issuance paused for a key ceremony").unwrap(),
    };
    first.store().await.outages.schedule(&outage, now()).await.unwrap();

    let seen_by_first = eventually_status(&first, "SCHEDULED_OUTAGE").await.expect("the first instance");
    let seen_by_second = eventually_status(&second, "SCHEDULED_OUTAGE").await.expect("the second instance");
    assert_eq!(seen_by_first["data"], seen_by_second["data"], "the same status, to the second");
    assert_eq!(outages(&first).await, outages(&second).await);
}

#[tokio::test]
async fn shared_checks_that_cannot_be_reached_are_a_partial_failure() {
    // Nothing listens on port 1: every count falls back to this instance's own.
    let app = TestApp::builder()
        .settings(|settings| {
            settings.view.refresh_interval_ms = 100;
            settings.limits.redis_url = Some("redis://127.0.0.1:1".parse().unwrap());
        })
        .start()
        .await;
    // No request: the service's own probe finds Redis lost.
    let partial = eventually_status(&app, "PARTIAL_FAILURE").await.expect("the lost limits are published");
    assert_eq!(app.authorize(&crate::helpers::demo_authorize_query()).await.status(), 200, "counted locally");
    let explanation = partial["data"]["explanation"].as_str().unwrap();
    assert!(explanation.contains("Request limits, and that a DPoP proof is used only once"), "{partial}");
    assert!(explanation.contains("checked by each server on its own"), "{partial}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_lost_is_published_and_its_return_found_without_a_restart_on_an_idle_instance() {
    let Some(redis) = crate::helpers::redis_url("the status's Redis signal") else { return };
    let redis = url::Url::parse(&redis).unwrap();
    let target = format!("{}:{}", redis.host_str().unwrap(), redis.port().unwrap_or(6379));
    let line = adapters::testing::TcpLine::to(target).await;
    let app = TestApp::builder()
        .settings(|settings| {
            settings.view.refresh_interval_ms = 100;
            // The same Redis, its password and database kept, through the line.
            let mut through = redis.clone();
            through.set_host(Some("127.0.0.1")).unwrap();
            through.set_port(Some(line.port)).unwrap();
            settings.limits.redis_url = Some(through.as_str().parse().unwrap());
        })
        .start()
        .await;
    assert!(eventually_status(&app, "OK").await.is_some(), "OK while Redis answers");

    line.cut();
    let partial = eventually_status(&app, "PARTIAL_FAILURE").await.expect("the loss is published");
    assert!(partial["data"]["explanation"].as_str().unwrap().contains("Redis"), "{partial}");

    line.mend();
    let back = eventually_status(&app, "OK").await.expect("OK again once Redis answers, without a restart");
    assert!(back["data"].get("detectionTime").is_none(), "{back}");
}
