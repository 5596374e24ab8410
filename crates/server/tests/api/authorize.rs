//! GET /api/v1/authorize, through the real service: tokens, sessions, registrations and
//! an outage. How its parameters and headers are read and refused is tested in process,
//! on mocks (`crates/api/tests/handlers.rs`).

use serde_json::Value;

use crate::helpers::{TestApp, UUID, assert_security_headers, assert_token_error, demo_authorize_query};

fn without(name: &str) -> Vec<(&'static str, &'static str)> {
    demo_authorize_query().into_iter().filter(|(key, _)| *key != name).collect()
}

fn with(name: &'static str, value: &'static str) -> Vec<(&'static str, &'static str)> {
    let mut query = without(name);
    query.push((name, value));
    query
}

#[tokio::test]
async fn a_registered_client_gets_a_visitor_token_with_a_session() {
    let app = TestApp::builder().start().await;
    let response = app.authorize(&demo_authorize_query()).await;

    assert_eq!(response.status(), 200);
    assert_security_headers(&response);
    let headers = response.headers().clone();
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["uuid"], UUID);
    let sid = headers["sid"].to_str().unwrap().to_owned();
    assert!(sid.len() >= 22);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], "1800");
    assert_eq!(body["scope"], "visitor");
    assert!(body["opaque_token"].as_str().unwrap().len() >= 22, "at least 128 bits");
    assert_eq!(body["access_token"].as_str().unwrap().split('.').count(), 3, "a compact JWS");
}

#[tokio::test]
async fn two_calls_open_two_sessions_with_distinct_tokens() {
    let app = TestApp::builder().start().await;
    let (first, second) = (app.session().await, app.session().await);
    assert_ne!(first.sid, second.sid);
    assert_ne!(first.token, second.token);
}

#[tokio::test]
async fn redirect_uri_must_be_registered_exactly() {
    let app = TestApp::builder().start().await;
    let registered = with("redirect_uri", "https://demo.bank.example.mx/mobile/callback");
    assert_eq!(app.authorize(&registered).await.status(), 200);
    let other = with("redirect_uri", "https://demo.bank.example.mx/mobile/callback/../evil");
    assert_token_error(app.authorize(&other).await, 400, "invalidRequest", Some("redirect_uri")).await;
}

#[tokio::test]
async fn unknown_clients_and_registration_mismatches_are_401() {
    let app = TestApp::builder().start().await;
    for query in [with("client_id", "nobody"), with("channelId", "WEB"), with("countryCode", "US")] {
        assert_token_error(app.authorize(&query).await, 401, "unAuthorized", None).await;
    }
}

#[tokio::test]
async fn a_token_that_cannot_be_stored_is_not_handed_out_and_the_answer_is_a_500() {
    let app = TestApp::builder().start().await;
    app.outage.take_down();

    let response = app.authorize(&demo_authorize_query()).await;
    assert!(response.headers().get("sid").is_none());
    let body = assert_token_error(response, 500, "serverUnavailable", None).await;
    let details = body["details"].as_str().unwrap();
    assert!(!details.contains("issued_tokens") && !details.contains("sqlite"), "nothing internal: {details}");
    assert!(body.get("access_token").is_none());

    app.outage.bring_back();
    // The writer tries the store again a second after a failed write (before that it
    // refuses at once, sparing callers the wait on a store that is down).
    let back = std::time::Instant::now();
    let resumed = crate::helpers::eventually(|| async {
        (app.authorize(&demo_authorize_query()).await.status() == 200).then_some(())
    })
    .await;
    assert!(resumed.is_some(), "issuance resumes with the store");
    assert!(back.elapsed() < std::time::Duration::from_millis(1_500), "within about a second: {:?}", back.elapsed());
}
