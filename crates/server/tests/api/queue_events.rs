//! POST /api/v1/branches/queue-events through the real service: a system's events
//! stored once, refused one by one, turned into the branch's live wait estimate (on
//! every instance), and kept across a restart.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{Session, TestApp};
use crate::systems::{post_events_to, seconds_from_now as at, set_status_in, system_token};

async fn queue_system(app: &TestApp, id: &str) -> String {
    system_token(app, id, "queue:write").await
}

async fn post_events(app: &TestApp, token: &str, events: &[Value]) -> reqwest::Response {
    post_events_to(app, "/api/v1/branches/queue-events", token, events).await
}

fn event(id: &str, branch: &str, kind: &str, seconds: f64, ticket: Option<&str>, counter: Option<&str>) -> Value {
    let mut event = json!({"eventId": id, "branchId": branch, "type": kind, "at": at(seconds)});
    if let Some(ticket) = ticket {
        event["ticket"] = json!(ticket);
    }
    if let Some(counter) = counter {
        event["counter"] = json!(counter);
    }
    event
}

/// A busy branch `branch`: one counter serving for 4 minutes, six people waiting. Ids
/// start with `prefix`.
fn busy_branch(prefix: &str, branch: &str) -> Vec<Value> {
    let mut events = vec![
        event(&format!("{prefix}-open"), branch, "CounterOpened", -600.0, None, Some("1")),
        event(&format!("{prefix}-t0"), branch, "TicketIssued", -300.0, Some("A0"), None),
        event(&format!("{prefix}-c0"), branch, "TicketCalled", -240.0, Some("A0"), Some("1")),
    ];
    for n in 1..=6 {
        let ticket = format!("A{n}");
        events.push(event(
            &format!("{prefix}-t{n}"),
            branch,
            "TicketIssued",
            -200.0 + f64::from(n),
            Some(&ticket),
            None,
        ));
    }
    events
}

async fn minutes_of(app: &TestApp, session: &Session, branch: &str) -> Option<u64> {
    let answer = app.wait_times(session, &[branch]).await;
    if answer.status() != 200 {
        return None;
    }
    let body: Value = answer.json().await.unwrap();
    body["branches"][0]["timeTaken"].as_str().and_then(|m| m.parse().ok())
}

#[tokio::test]
async fn events_are_stored_once_each_refusal_is_told_and_the_branch_is_served_its_live_estimate() {
    let app = TestApp::builder().start().await;
    let token = queue_system(&app, "queue-hq").await;
    let session = app.session().await;
    assert_eq!(app.wait_times(&session, &["54321"]).await.status(), 404, "no estimate before its events");

    let mut events = busy_branch("hq", "54321");
    events.push(json!({"eventId": "bad-1", "branchId": "54321", "type": "TicketLost", "at": at(-1.0)}));
    events.push(event("bad-2", "54321", "TicketIssued", -90_000.0, Some("Z1"), None));
    events.push(event("bad-3", "54321", "TicketIssued", 60.0, Some("Z2"), None));
    events.push(json!({"eventId": "bad-4", "branchId": "54321", "type": "TicketIssued", "at": at(-1.0)}));
    let answer = post_events(&app, &token, &events).await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    assert_eq!((body["accepted"].as_u64(), body["duplicates"].as_u64()), (Some(9), Some(0)), "{body}");
    let rejected: Vec<(u64, &str, &str)> = body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["index"].as_u64().unwrap(), r["code"].as_str().unwrap(), r["location"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rejected,
        [
            (9, "unknownType", "events[9].type"),
            (10, "tooOld", "events[10].at"),
            (11, "aheadOfClock", "events[11].at"),
            (12, "missingField", "events[12].ticket")
        ]
    );

    // Six ahead of one counter, its service 4 minutes in: the branch's wait is live, long.
    let live = minutes_of(&app, &session, "54321").await.expect("a live estimate");
    assert!(live >= 10, "six people ahead at one counter: {live} min");

    // Sent again, and in another order: duplicates, nothing changes.
    let mut again = busy_branch("hq", "54321");
    again.reverse();
    let body: Value = post_events(&app, &token, &again).await.json().await.unwrap();
    assert_eq!((body["accepted"].as_u64(), body["duplicates"].as_u64()), (Some(0), Some(9)), "{body}");
    assert_eq!(minutes_of(&app, &session, "54321").await, Some(live));

    // Late and out of order: the counter's service ended and two were called a while ago.
    let late = vec![
        event("hq-c1", "54321", "TicketCalled", -120.0, Some("A1"), Some("1")),
        event("hq-e0", "54321", "ServiceEnded", -121.0, Some("A0"), None),
        event("hq-c2", "54321", "TicketCalled", -30.0, Some("A2"), Some("2")),
    ];
    let body: Value = post_events(&app, &token, &late).await.json().await.unwrap();
    assert_eq!(body["accepted"], 3, "{body}");
    let shorter = minutes_of(&app, &session, "54321").await.unwrap();
    assert!(shorter < live, "two called, a second counter open: {shorter} < {live}");

    // The counters close: the queue is not live, and the branch has no imported figure.
    let closed = vec![
        event("hq-x1", "54321", "CounterClosed", -1.0, None, Some("1")),
        event("hq-x2", "54321", "CounterClosed", -1.0, None, Some("2")),
    ];
    assert_eq!(post_events(&app, &token, &closed).await.status(), 200);
    assert_eq!(app.wait_times(&session, &["54321"]).await.status(), 404, "the fallback: no imported figure");
}

#[tokio::test]
async fn only_a_systems_token_with_the_scope_posts_events_and_a_disabled_systems_token_is_refused_at_once() {
    // (visitor 401, no token 401, another scope 403, disabled 401) {
    let app = TestApp::builder().start().await;
    let token = queue_system(&app, "queue-hq").await;
    let one = [event("e-1", "00001", "CounterOpened", -1.0, None, Some("1"))];
    let session = app.session().await;
    let visitor = post_events(&app, &session.token, &one).await;
    assert_eq!(visitor.status(), 401, "a visitor's token");
    assert!(visitor.headers()["www-authenticate"].to_str().unwrap().contains("invalid_token"));
    let none = app
        .http
        .post(format!("{}/api/v1/branches/queue-events", app.address))
        .json(&json!({"events": one}))
        .send()
        .await
        .unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(post_events(&app, &token, &one).await.status(), 200);

    // A system of the bank's with another scope only: known, but not allowed.
    let atm_token = system_token(&app, "atm-monitoring", "atm:write").await;
    let wrong_scope = post_events(&app, &atm_token, &one).await;
    assert_eq!(wrong_scope.status(), 403);
    let challenge = wrong_scope.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.contains(r#"error="insufficient_scope""#) && challenge.contains("queue:write"), "{challenge}");
    let body: Value = wrong_scope.json().await.unwrap();
    assert_eq!(body["code"], "insufficientScope", "{body}");

    set_status_in(&app, "queue-hq", domain::client::ClientStatus::Disabled).await;
    let refused = post_events(&app, &token, &[event("e-2", "00001", "CounterClosed", -1.0, None, Some("1"))]).await;
    assert_eq!(refused.status(), 401, "refused from the next request on");
    let not_json = app
        .http
        .post(format!("{}/api/v1/branches/queue-events", app.address))
        .bearer_auth(&token)
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), 401, "credentials are checked before the body");
}

/// What a restarted instance does at start: the last day's events read back from the
/// store, the same estimate served.
#[tokio::test]
async fn accepted_events_are_read_back_by_an_instance_started_afterwards() {
    let first = TestApp::builder().start().await;
    let token = queue_system(&first, "queue-hq").await;
    assert_eq!(post_events(&first, &token, &busy_branch("r", "54321")).await.status(), 200);
    let session = first.session().await;
    let before = minutes_of(&first, &session, "54321").await.expect("live");
    let second = TestApp::builder().on_store(&first.database_url).start().await;
    let session = second.session().await;
    let after = minutes_of(&second, &session, "54321").await.expect("the log read back at start");
    assert!(after.abs_diff(before) <= 1, "{before} then {after}");
}

#[tokio::test]
async fn an_event_accepted_by_one_instance_moves_the_estimate_on_another_within_two_seconds() {
    let Some(first) = TestApp::builder().on_backend("postgres").try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).start().await;
    let token = queue_system(&first, "queue-hq").await;
    let session = second.session().await;
    assert_eq!(second.wait_times(&session, &["54321"]).await.status(), 404);
    let posted = Instant::now();
    assert_eq!(post_events(&first, &token, &busy_branch("i", "54321")).await.status(), 200);
    let mut seen = None;
    while posted.elapsed() < Duration::from_secs(5) {
        if minutes_of(&second, &session, "54321").await.is_some() {
            seen = Some(posted.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = seen.expect("the second instance never served the estimate");
    eprintln!("the second instance served the live estimate {} ms after the post", seen.as_millis());
    assert!(seen < Duration::from_secs(2), "{seen:?}");
}
