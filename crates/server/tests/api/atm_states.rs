//! The ATMs' states through the real service: the monitoring's state events applied in
//! `at` order, each refusal told, `Unknown` past the freshness window, pages that follow
//! the ATM pages and revalidate, and the states served by another instance.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use time::format_description::well_known::Rfc3339;

use crate::helpers::{Session, TestApp};
use crate::systems::{post_events_to, seconds_from_now as at, system_token};

async fn post_states(app: &TestApp, token: &str, events: &[Value]) -> reqwest::Response {
    post_events_to(app, "/api/v1/atms/state-events", token, events).await
}

/// An app whose ATM states turn `Unknown` a minute after their newest event.
async fn app_with_a_minutes_window() -> TestApp {
    TestApp::builder()
        .settings(|settings| {
            settings.view.refresh_interval_ms = 50;
            settings.catalog.atm_state_fresh_minutes = 1;
        })
        .start()
        .await
}

fn state(id: &str, atm: &str, seconds: f64, state: &str, unavailable: &[&str]) -> Value {
    json!({"eventId": id, "atmId": atm, "at": at(seconds), "state": state, "unavailableServices": unavailable})
}

/// The first `n` ATM identifications of the set, in page order.
async fn atm_ids(app: &TestApp, session: &Session, n: usize) -> Vec<String> {
    let page: Value = app.get_atms(session, "/api/v1/atms", &[]).await.json().await.unwrap();
    let ids: Vec<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|brand| brand["ATM"].as_array().unwrap().iter())
        .map(|atm| atm["Identification"].as_str().unwrap().to_owned())
        .take(n)
        .collect();
    assert_eq!(ids.len(), n, "the demo set has {n} ATMs on its first page");
    ids
}

/// The states of `ids`, by id.
pub(crate) async fn states_of(app: &TestApp, session: &Session, ids: &[&str]) -> Vec<Value> {
    let query: Vec<String> = ids.iter().map(|id| format!("atmId={id}")).collect();
    let answer = app.get_atms(session, &format!("/api/v1/atms/state?{}", query.join("&")), &[]).await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    body["data"].as_array().unwrap().clone()
}

#[tokio::test]
async fn state_events_apply_in_at_order_and_each_refusal_is_told() {
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 50).start().await;
    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let session = app.session().await;
    let ids = atm_ids(&app, &session, 2).await;
    let (a, b) = (ids[0].as_str(), ids[1].as_str());
    let events = [
        state("s-2", a, -10.0, "InService", &["CashDeposits"]),
        state("s-1", a, -20.0, "OutOfService", &[]),
        json!({"eventId": "s-3", "atmId": b, "at": at(-5.0), "state": "OutOfService",
            "reason": "Safe jammed", "expectedBackAt": at(3600.0)}),
        state("s-4", "NO-SUCH-ATM", -5.0, "InService", &[]),
        state("s-5", a, -5.0, "Broken", &[]),
        state("s-6", a, -5.0, "InService", &["Teleport"]),
        state("s-7", a, -90_000.0, "InService", &[]),
        json!({"eventId": "s-8", "atmId": a, "state": "InService"}),
    ];
    let answer = post_states(&app, &token, &events).await;
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["cache-control"], "no-store");
    let body: Value = answer.json().await.unwrap();
    assert_eq!((body["accepted"].as_u64(), body["duplicates"].as_u64()), (Some(3), Some(0)), "{body}");
    let refused: Vec<(u64, &str, &str)> = body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["index"].as_u64().unwrap(), r["code"].as_str().unwrap(), r["location"].as_str().unwrap()))
        .collect();
    assert_eq!(
        refused,
        [
            (3, "unknownAtm", "events[3].atmId"),
            (4, "unknownState", "events[4].state"),
            (5, "unknownService", "events[5].unavailableServices"),
            (6, "tooOld", "events[6].at"),
            (7, "missingField", "events[7].at"),
        ]
    );

    // A resent event, and one older than the newest applied, change nothing.
    let late = [state("s-1", a, -1.0, "OutOfService", &[]), state("s-9", a, -15.0, "OutOfService", &[])];
    let body: Value = post_states(&app, &token, &late).await.json().await.unwrap();
    assert_eq!((body["accepted"].as_u64(), body["duplicates"].as_u64()), (Some(0), Some(1)), "{body}");
    assert_eq!(body["superseded"], json!([{"index": 1, "eventId": "s-9"}]));

    tokio::time::sleep(Duration::from_millis(200)).await;
    let shown = states_of(&app, &session, &[b, a]).await;
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[0]["atmId"], a, "in the ATM pages' order, whatever the order asked");
    assert_eq!((&shown[0]["state"], &shown[0]["unavailableServices"]), (&json!("Limited"), &json!(["CashDeposits"])));
    let since = |seconds: f64| at(seconds)[..16].to_owned();
    assert!(shown[0]["since"].as_str().unwrap().starts_with(&since(-10.0)), "since s-2: {}", shown[0]);
    assert_eq!(shown[1]["state"], "OutOfService");
    assert_eq!(shown[1]["reason"], "Safe jammed");
    assert!(shown[1]["expectedBackAt"].is_string() && shown[1]["since"].is_string(), "{}", shown[1]);
}

#[tokio::test]
async fn an_atm_not_heard_of_within_the_window_or_ever_is_unknown() {
    let app = app_with_a_minutes_window().await;
    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let session = app.session().await;
    let ids = atm_ids(&app, &session, 3).await;
    let events = [state("f-1", &ids[0], -30.0, "InService", &[]), state("f-2", &ids[1], -61.0, "InService", &[])];
    assert_eq!(post_states(&app, &token, &events).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let shown = states_of(&app, &session, &[&ids[0], &ids[1], &ids[2]]).await;
    let names: Vec<&str> = shown.iter().map(|s| s["state"].as_str().unwrap()).collect();
    assert_eq!(names, ["InService", "Unknown", "Unknown"], "heard 30 s ago, 61 s ago, never");
    let window_end = time::OffsetDateTime::parse(shown[1]["since"].as_str().unwrap(), &Rfc3339).unwrap();
    let passed = (time::OffsetDateTime::now_utc() - window_end).whole_seconds();
    assert!((0..5).contains(&passed), "unknown since the window passed, a second ago: {}", shown[1]);
    assert_eq!(shown[1]["unavailableServices"], json!([]));
    assert!(shown[2].get("since").is_none(), "never heard of: {}", shown[2]);
}

#[tokio::test]
async fn the_state_pages_follow_the_atm_pages_and_revalidate_with_their_etag() {
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 50).start().await;
    let session = app.session().await;
    let atms: Value = app.get_atms(&session, "/api/v1/atms", &[]).await.json().await.unwrap();
    let first = app.get_atms(&session, "/api/v1/atms/state", &[]).await;
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].to_str().unwrap().to_owned();
    let body: Value = first.json().await.unwrap();
    assert_eq!(body["meta"]["TotalResults"], atms["meta"]["TotalResults"], "every ATM of the set");
    assert!(body["links"]["Next"].as_str().unwrap().ends_with("/api/v1/atms/state?page=2"), "{}", body["links"]);
    let again = app.get_atms(&session, "/api/v1/atms/state", &[("If-None-Match", &tag)]).await;
    assert_eq!(again.status(), 304);

    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let id = atm_ids(&app, &session, 1).await.remove(0);
    assert_eq!(post_states(&app, &token, &[state("e-1", &id, -1.0, "OutOfService", &[])]).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let changed = app.get_atms(&session, "/api/v1/atms/state", &[("If-None-Match", &tag)]).await;
    assert_eq!(changed.status(), 200, "a state changed: a new tag");
    let past = app.get_atms(&session, "/api/v1/atms/state?page=999", &[]).await;
    assert_eq!(past.status(), 400);
    let many: Vec<String> = (0..101).map(|n| format!("atmId=A{n}")).collect();
    let too_many = app.get_atms(&session, &format!("/api/v1/atms/state?{}", many.join("&")), &[]).await;
    assert_eq!(too_many.status(), 400);
}

#[tokio::test]
async fn only_the_monitorings_token_posts_states_and_only_an_apps_token_reads_them() {
    let app = TestApp::builder().start().await;
    let queue = system_token(&app, "queue-hq", "queue:write").await;
    let session = app.session().await;
    let id = atm_ids(&app, &session, 1).await.remove(0);
    let one = [state("x-1", &id, -1.0, "InService", &[])];
    let wrong_scope = post_states(&app, &queue, &one).await;
    assert_eq!(wrong_scope.status(), 403);
    assert!(wrong_scope.headers()["www-authenticate"].to_str().unwrap().contains(r#"scope="atm:write""#));
    assert_eq!(post_states(&app, &session.token, &one).await.status(), 401, "a visitor's token");
    let as_app = Session { token: queue.clone(), sid: session.sid.clone() };
    let system_reads = app.get_atms(&as_app, "/api/v1/atms/state", &[]).await;
    assert_eq!(system_reads.status(), 401, "a system's token does not read the apps' operations");
}

#[tokio::test]
async fn a_state_accepted_by_one_instance_is_served_by_another_and_after_a_restart() {
    let fast = |settings: &mut server::settings::Settings| settings.view.refresh_interval_ms = 100;
    let first = TestApp::builder().settings(fast).start().await;
    let second = TestApp::builder().on_store(&first.database_url).settings(fast).start().await;
    let token = system_token(&first, "atm-monitoring", "atm:write").await;
    let session = second.session().await;
    let id = atm_ids(&second, &session, 1).await.remove(0);
    let posted = Instant::now();
    assert_eq!(post_states(&first, &token, &[state("i-1", &id, -1.0, "OutOfService", &[])]).await.status(), 200);
    loop {
        if states_of(&second, &session, &[&id]).await[0]["state"] == "OutOfService" {
            break;
        }
        assert!(posted.elapsed() < Duration::from_secs(5), "the second instance never served the state");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(second);
    let restarted = TestApp::builder().on_store(&first.database_url).start().await;
    let session = restarted.session().await;
    assert_eq!(states_of(&restarted, &session, &[&id]).await[0]["state"], "OutOfService", "kept in the store");
}

#[tokio::test]
async fn a_page_turns_unknown_with_the_clock_alone_and_its_etag_with_it() {
    let app = app_with_a_minutes_window().await;
    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let session = app.session().await;
    let id = atm_ids(&app, &session, 1).await.remove(0);
    assert_eq!(post_states(&app, &token, &[state("c-1", &id, -57.0, "InService", &[])]).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let path = format!("/api/v1/atms/state?atmId={id}");
    let fresh = app.get_atms(&session, &path, &[]).await;
    let tag = fresh.headers()["etag"].to_str().unwrap().to_owned();
    let body: Value = fresh.json().await.unwrap();
    assert_eq!(body["data"][0]["state"], "InService");
    assert_eq!(app.get_atms(&session, &path, &[("If-None-Match", &tag)]).await.status(), 304);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let later = app.get_atms(&session, &path, &[("If-None-Match", &tag)]).await;
    assert_eq!(later.status(), 200, "no event came, but the page changed");
    let body: Value = later.json().await.unwrap();
    assert_eq!(body["data"][0]["state"], "Unknown");
}

/// The first page's ATMs that list `service`: their identification and coordinates.
pub(crate) async fn atms_offering(app: &TestApp, session: &Session, service: &str) -> Vec<(String, String, String)> {
    let page: Value = app.get_atms(session, "/api/v1/atms", &[]).await.json().await.unwrap();
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|brand| brand["ATM"].as_array().unwrap().iter())
        .filter(|atm| atm["ATMServices"].as_array().is_some_and(|codes| codes.contains(&json!(service))))
        .filter_map(|atm| {
            let point = &atm["Location"]["PostalAddress"]["GeoLocation"]["GeographicCoordinates"];
            let (lat, lon) = (point["Latitude"].as_str()?, point["Longitude"].as_str()?);
            Some((atm["Identification"].as_str()?.to_owned(), lat.to_owned(), lon.to_owned()))
        })
        .collect()
}

#[tokio::test]
async fn near_me_by_availability_lists_only_the_atms_whose_state_offers_the_service_now() {
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 50).start().await;
    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let session = app.session().await;
    let offering = atms_offering(&app, &session, "CashWithdrawal").await;
    assert!(offering.len() >= 4, "the demo's first page has ATMs giving cash: {offering:?}");
    let [(a, lat, lon), (b, ..), (c, ..), (d, ..)] = [0, 1, 2, 3].map(|n| offering[n].clone());
    let events = [
        state("n-1", &a, -5.0, "InService", &[]),
        state("n-2", &b, -5.0, "InService", &["CashWithdrawal"]),
        state("n-3", &c, -5.0, "OutOfService", &[]),
        state("n-4", &d, -1_200.0, "InService", &[]),
    ];
    let body: Value = post_states(&app, &token, &events).await.json().await.unwrap();
    assert_eq!(body["accepted"], 4, "{body}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let near = format!("/api/v1/atms?latitude={lat}&longitude={lon}&available=CashWithdrawal");
    let listed = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|brand| brand["ATM"].as_array().unwrap().iter())
            .map(|atm| atm["Identification"].as_str().unwrap().to_owned())
            .collect()
    };
    let first = app.get_atms(&session, &near, &[]).await;
    assert_eq!(first.status(), 200);
    let tag = first.headers()["etag"].to_str().unwrap().to_owned();
    let page: Value = first.json().await.unwrap();
    assert_eq!(
        listed(&page),
        std::slice::from_ref(&a),
        "limited without it, out of service, unknown, never heard: left out"
    );
    assert_eq!(page["meta"]["TotalResults"], 1);
    assert!(page["link"]["Self"].as_str().unwrap().ends_with("&available=CashWithdrawal"), "{}", page["link"]);
    assert_eq!(app.get_atms(&session, &near, &[("If-None-Match", &tag)]).await.status(), 304);

    assert_eq!(post_states(&app, &token, &[state("n-5", &b, -1.0, "InService", &[])]).await.status(), 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = app.get_atms(&session, &near, &[("If-None-Match", &tag)]).await;
    assert_eq!(after.status(), 200, "b gives cash again: the page changed");
    let page: Value = after.json().await.unwrap();
    let mut now_listed = listed(&page);
    now_listed.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(now_listed, expected);
    let bad = app.get_atms(&session, &format!("/api/v1/atms?latitude={lat}&longitude={lon}&available=Cash"), &[]).await;
    assert_eq!(bad.status(), 400);
}
