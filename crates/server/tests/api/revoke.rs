//! POST /api/v1/revoke (RFC 7009): an app ends its own visitor session, and only its own.

use reqwest::Response;
use serde_json::Value;

use crate::helpers::{CLIENT, Session, TestApp, demo_authorize_query};

impl TestApp {
    /// POST /api/v1/revoke with the form `fields`.
    pub async fn revoke(&self, fields: &[(&str, &str)]) -> Response {
        let form = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        self.http
            .post(format!("{}/api/v1/revoke", self.address))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap()
    }

    /// A fresh demo session and its opaque token.
    async fn session_with_opaque_token(&self) -> (Session, String) {
        let response = self.authorize(&demo_authorize_query()).await;
        let sid = response.headers()["sid"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        let session = Session { token: body["access_token"].as_str().unwrap().to_owned(), sid };
        (session, body["opaque_token"].as_str().unwrap().to_owned())
    }
}

/// The RFC 6749 §5.2 error body of `response`, checked to be one with `status` and `error`.
async fn assert_oauth_error(response: Response, status: u16, error: &str) -> String {
    assert_eq!(response.status(), status);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], error, "{body}");
    assert_eq!(body.as_object().unwrap().len(), 2, "error and error_description: {body}");
    body["error_description"].as_str().unwrap().to_owned()
}

async fn assert_revoked_at_once(app: &TestApp, session: &Session) {
    let refused = app.wait_times(session, &["00001"]).await;
    assert_eq!(refused.status(), 401, "refused at once by the instance that revoked it");
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    assert!(challenge.contains(r#"error="invalid_token""#), "{challenge}");
}

/// The finding: an app could not end its own visitor session; the token stayed valid
/// until it expired. Now it revokes it by the access token or by the opaque token.
#[tokio::test]
async fn an_app_revokes_its_own_token_by_the_access_token_or_the_opaque_token() {
    let app = TestApp::builder().start().await;
    let (session, _) = app.session_with_opaque_token().await;
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200);
    let revoked =
        app.revoke(&[("token", &session.token), ("client_id", CLIENT), ("token_type_hint", "access_token")]).await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(revoked.headers()["cache-control"], "no-store");
    assert!(revoked.text().await.unwrap().is_empty(), "no body");
    assert_revoked_at_once(&app, &session).await;
    assert_eq!(app.get_atms(&session, "/api/v1/atms", &[]).await.status(), 401, "on every bearer operation");

    let (session, opaque) = app.session_with_opaque_token().await;
    assert_eq!(app.revoke(&[("token", &opaque), ("client_id", CLIENT)]).await.status(), 200);
    assert_revoked_at_once(&app, &session).await;
    // Again, and with a hint that is wrong or unknown: the token's shape says what it is.
    for hint in ["refresh_token", "access_token", "whatever"] {
        assert_eq!(
            app.revoke(&[("token", &opaque), ("client_id", CLIENT), ("token_type_hint", hint)]).await.status(),
            200
        );
    }
}

#[tokio::test]
async fn an_unknown_expired_or_tampered_token_is_answered_200_and_nothing_changes() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let expired =
        app.forge(&app.issuer(), &crate::helpers::demo_claims(&session.sid, crate::helpers::now() - 3600, 60)).await;
    let tampered = format!("{}x", session.token);
    for token in ["no-such-opaque-token-AAAAAAAAAA", expired.as_str(), tampered.as_str(), "a.b.c"] {
        let response = app.revoke(&[("token", token), ("client_id", CLIENT)]).await;
        assert_eq!(response.status(), 200, "RFC 7009 §2.2: {token}");
    }
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "the live token is untouched");
}

/// The finding (schemathesis, on PostgreSQL): a token holding a NUL byte was looked up in
/// the store, which cannot hold one, and the failed query was answered 503 as an outage.
/// A value that is no token this service could have issued is no such token: 200,
/// without asking the store.
#[tokio::test]
async fn a_token_no_store_could_hold_is_answered_200_like_any_unknown_token() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let too_long = "A".repeat(4_000);
    for token in ["\0Q/\u{14} \u{f3}", "nul\0inside", "caf\u{e9}", "with space", too_long.as_str()] {
        let response = app.revoke(&[("token", token), ("client_id", CLIENT)]).await;
        assert_eq!(response.status(), 200, "RFC 7009 §2.2: {token:?}");
    }
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "the live token is untouched");
}

/// RFC 7009 §2.1: the server checks that the token was issued to the client asking.
#[tokio::test]
async fn another_clients_token_is_not_revoked() {
    let app = TestApp::builder().start().await;
    let (session, opaque) = app.session_with_opaque_token().await;
    for token in [session.token.as_str(), opaque.as_str()] {
        let response = app.revoke(&[("token", token), ("client_id", "demo-web-app")]).await;
        let said = assert_oauth_error(response, 400, "unauthorized_client").await;
        assert_eq!(said, "The token was not issued to this client; it was not revoked.");
    }
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "still valid");
}

#[tokio::test]
async fn a_request_without_a_token_or_a_known_client_is_refused_with_the_rfcs_error_body() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let said = assert_oauth_error(app.revoke(&[("client_id", CLIENT)]).await, 400, "invalid_request").await;
    assert_eq!(said, "The required value token is missing.");
    let said = assert_oauth_error(app.revoke(&[("token", &session.token)]).await, 400, "invalid_request").await;
    assert_eq!(said, "The required value client_id is missing.");
    let twice = app.revoke(&[("token", &session.token), ("token", "x"), ("client_id", CLIENT)]).await;
    assert_oauth_error(twice, 400, "invalid_request").await;
    let unknown = app.revoke(&[("token", &session.token), ("client_id", "nobody-app")]).await;
    assert_eq!(assert_oauth_error(unknown, 400, "invalid_client").await, "client_id names no active client.");
    let json = app
        .http
        .post(format!("{}/api/v1/revoke", app.address))
        .header("Content-Type", "application/json")
        .body(serde_json::json!({"token": session.token, "client_id": CLIENT}).to_string())
        .send()
        .await
        .unwrap();
    let said = assert_oauth_error(json, 400, "invalid_request").await;
    assert!(said.contains("application/x-www-form-urlencoded"), "{said}");
    let get = app.http.get(format!("{}/api/v1/revoke", app.address)).send().await.unwrap();
    assert_eq!(get.headers()["allow"], "POST");
    assert_oauth_error(get, 405, "invalid_request").await;
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "nothing was revoked");
}

/// Limited per caller like the token requests, with whose limits it counts.
#[tokio::test]
async fn revocations_count_against_the_token_requests_limit() {
    let app = TestApp::builder()
        .settings(|settings| {
            (settings.limits.issue_rate_limit_per_second, settings.limits.issue_rate_limit_burst) = (1, 3);
        })
        .start()
        .await;
    let session = app.session().await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(app.revoke(&[("token", "unknown"), ("client_id", CLIENT)]).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429], "one token request and two revocations fill the burst of 3");
    let over = app.revoke(&[("token", &session.token), ("client_id", CLIENT)]).await;
    assert!(over.headers().contains_key("retry-after"));
    assert_oauth_error(over, 429, "temporarily_unavailable").await;
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "a refused request revokes nothing");
}

/// RFC 7009 §2.2.1: when the token could not be revoked the app learns so (503), and
/// assumes it is still valid.
#[tokio::test]
async fn a_revocation_that_cannot_be_written_is_a_503_and_the_token_stays_valid_until_it_can() {
    let app = TestApp::builder().start().await;
    let (session, opaque) = app.session_with_opaque_token().await;
    app.outage.take_down();
    for token in [session.token.as_str(), opaque.as_str()] {
        let response = app.revoke(&[("token", token), ("client_id", CLIENT)]).await;
        assert_eq!(response.headers()["retry-after"], "5");
        let said = assert_oauth_error(response, 503, "temporarily_unavailable").await;
        assert!(!said.contains("sqlite") && !said.contains("issued_tokens"), "nothing internal: {said}");
    }
    app.outage.bring_back();
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "not revoked");
    assert_eq!(app.revoke(&[("token", &opaque), ("client_id", CLIENT)]).await.status(), 200);
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 401);
}
