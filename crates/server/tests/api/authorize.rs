//! GET /api/v1/authorize.

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
async fn state_comes_back_unchanged_in_a_header() {
    let app = TestApp::builder().start().await;
    let response = app.authorize(&with("state", "af0ifjsldkj-._~")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["state"], "af0ifjsldkj-._~");
}

#[tokio::test]
async fn each_missing_required_parameter_is_a_400_naming_it() {
    let app = TestApp::builder().start().await;
    for name in ["response_type", "client_id", "businessCode", "countryCode", "channelId"] {
        let response = app.authorize(&without(name)).await;
        assert_token_error(response, 400, "invalidRequest", Some(name)).await;
    }
}

#[tokio::test]
async fn a_missing_or_malformed_uuid_header_is_a_400() {
    let app = TestApp::builder().start().await;
    let url = format!("{}/api/v1/authorize", app.address);
    let missing = app.http.get(&url).query(&demo_authorize_query()).send().await.unwrap();
    assert_token_error(missing, 400, "invalidRequest", Some("uuid")).await;
    let malformed =
        app.http.get(&url).header("uuid", "not-a-uuid").query(&demo_authorize_query()).send().await.unwrap();
    assert_token_error(malformed, 400, "invalidRequest", Some("uuid")).await;
    let uuid = crate::helpers::UUID;
    let twice = app.http.get(&url).header("uuid", uuid).header("uuid", uuid).query(&demo_authorize_query());
    assert_token_error(twice.send().await.unwrap(), 400, "invalidRequest", Some("uuid")).await;
}

#[tokio::test]
async fn malformed_parameters_are_400s_naming_them() {
    let app = TestApp::builder().start().await;
    let cases = [
        ("response_type", "code"),
        ("countryCode", "mex"),
        ("businessCode", "G C B"),
        ("channelId", "MOB/ILE"),
        ("client_id", "demo mobile"),
        ("scope", "visitor admin"),
        ("state", "line\nbreak"),
        ("state", "s\u{b7}"),
    ];
    for (name, value) in cases {
        let response = app.authorize(&with(name, value)).await;
        assert_token_error(response, 400, "invalidRequest", Some(name)).await;
    }
}

#[tokio::test]
async fn a_repeated_parameter_is_a_400() {
    let app = TestApp::builder().start().await;
    let mut query = demo_authorize_query();
    query.push(("client_id", "demo-web-app"));
    assert_token_error(app.authorize(&query).await, 400, "invalidRequest", Some("client_id")).await;
}

#[tokio::test]
async fn unknown_parameters_are_ignored_even_when_repeated() {
    let app = TestApp::builder().start().await;
    let mut query = demo_authorize_query();
    query.extend([("utm_source", "app"), ("utm_source", "web")]);
    assert_eq!(app.authorize(&query).await.status(), 200);
}

#[tokio::test]
async fn pkce_needs_s256_and_a_43_character_challenge() {
    let app = TestApp::builder().start().await;
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let mut good = demo_authorize_query();
    good.extend([("code_challenge", challenge), ("code_challenge_method", "S256")]);
    assert_eq!(app.authorize(&good).await.status(), 200);

    let mut plain = demo_authorize_query();
    plain.extend([("code_challenge", challenge), ("code_challenge_method", "plain")]);
    assert_token_error(app.authorize(&plain).await, 400, "invalidRequest", Some("code_challenge_method")).await;

    let mut no_method = demo_authorize_query();
    no_method.push(("code_challenge", challenge));
    assert_token_error(app.authorize(&no_method).await, 400, "invalidRequest", Some("code_challenge_method")).await;

    let mut lone_method = demo_authorize_query();
    lone_method.push(("code_challenge_method", "S256"));
    assert_eq!(app.authorize(&lone_method).await.status(), 200, "a method without a challenge asks for nothing");
    for invalid in ["", "plain"] {
        let mut lone_invalid = demo_authorize_query();
        lone_invalid.push(("code_challenge_method", invalid));
        let response = app.authorize(&lone_invalid).await;
        assert_token_error(response, 400, "invalidRequest", Some("code_challenge_method")).await;
    }

    let mut short = demo_authorize_query();
    short.extend([("code_challenge", "abc"), ("code_challenge_method", "S256")]);
    assert_token_error(app.authorize(&short).await, 400, "invalidRequest", Some("code_challenge")).await;
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
async fn errors_are_told_in_spanish_when_asked() {
    let app = TestApp::builder().start().await;
    let response = app
        .http
        .get(format!("{}/api/v1/authorize", app.address))
        .header("uuid", UUID)
        .header("Accept-Language", "es-MX,es;q=0.9,en;q=0.5")
        .query(&without("countryCode"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-language"], "es");
    let body = assert_token_error(response, 400, "invalidRequest", Some("countryCode")).await;
    assert!(body["details"].as_str().unwrap().contains("Falta"), "{body}");
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
