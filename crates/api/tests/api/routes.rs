//! Paths and methods: JSON for every unknown path and wrong method, security headers
//! everywhere, health checks.

use serde_json::Value;

use crate::helpers::{TestApp, assert_error, assert_security_headers};

#[tokio::test]
async fn an_unknown_path_is_a_json_404() {
    let app = TestApp::empty().await;
    for path in ["/", "/api", "/api/v2/atms", "/api/v1/authorize/extra"] {
        let response = app.http.get(format!("{}{path}", app.address)).send().await.unwrap();
        assert_error(response, 404, "resourceNotFound", None).await;
    }
}

#[tokio::test]
async fn a_wrong_method_is_a_json_405_with_allow() {
    let app = TestApp::empty().await;
    let cases = [
        (reqwest::Method::POST, "/api/v1/authorize", "GET"),
        (reqwest::Method::DELETE, "/api/health/live", "GET, HEAD"),
        (reqwest::Method::GET, crate::helpers::WAIT_TIME_PATH, "POST"),
        (reqwest::Method::PUT, crate::helpers::WAIT_TIME_PATH, "POST"),
    ];
    for (method, path, allow) in cases {
        let response = app.http.request(method, format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(response.headers()["allow"], allow);
        assert_error(response, 405, "methodNotAllowed", None).await;
    }
}

#[tokio::test]
async fn head_cannot_mint_a_token() {
    let app = TestApp::with_demo().await;
    let query = crate::helpers::demo_authorize_query();
    let response = app
        .http
        .head(format!("{}/api/v1/authorize", app.address))
        .query(&query)
        .header("uuid", crate::helpers::UUID)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "GET");
    assert!(response.headers().get("sid").is_none());
    let contents = app.store().await.inventory.contents().await.unwrap();
    assert!(!contents.token_records, "no token was minted and stored for a body nobody sees");
}

#[tokio::test]
async fn health_checks_answer_with_security_headers() {
    let app = TestApp::empty().await;
    for (path, status) in [("/api/health/live", "up"), ("/api/health/ready", "ready")] {
        let response = app.http.get(format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_security_headers(&response);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], status);
    }
}

#[tokio::test]
async fn the_jwks_publishes_one_ed25519_key_and_no_private_part() {
    let app = TestApp::empty().await;
    let response = app.http.get(format!("{}/api/.well-known/jwks.json", app.address)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_security_headers(&response);
    let body: Value = response.json().await.unwrap();
    let keys = body["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["kty"], "OKP");
    assert_eq!(keys[0]["crv"], "Ed25519");
    assert!(keys[0].get("d").is_none(), "no private key material");
}

#[tokio::test]
async fn an_invalid_uuid_is_not_echoed() {
    let app = TestApp::empty().await;
    let response =
        app.http.get(format!("{}/api/health/live", app.address)).header("uuid", "<script>").send().await.unwrap();
    assert!(response.headers().get("uuid").is_none());
}
