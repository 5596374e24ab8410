//! Paths and methods: JSON for every unknown path and wrong method, security headers
//! everywhere, health checks.

use serde_json::Value;

use crate::helpers::{TestApp, assert_error, assert_security_headers};

#[tokio::test]
async fn an_unknown_path_is_a_json_404() {
    let app = TestApp::builder().without_demo_data().start().await;
    for path in ["/api", "/api/v2/atms", "/api/v1/authorize/extra", "/index.html"] {
        let response = app.http.get(format!("{}{path}", app.address)).send().await.unwrap();
        assert_error(response, 404, "resourceNotFound", None).await;
    }
}

/// The finding: `/` was a 404 with no pointer to the docs, and `/api/docs` a 308 with
/// nothing to read in a terminal. Both lead to the docs page, and say so in a line.
#[tokio::test]
async fn the_root_and_the_docs_address_lead_to_the_docs_page() {
    let app = TestApp::builder().without_demo_data().start().await;
    for (path, status) in [("/", 307), ("/api/docs", 308)] {
        let response = app.http.get(format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(response.status(), status, "{path}");
        assert_eq!(response.headers()["location"], "/api/docs/", "{path}");
        let said = response.text().await.unwrap();
        assert!(said.contains("/api/docs/") && said.contains("/api/openapi.json"), "{path}: {said}");
    }
    let browser_like = reqwest::Client::new();
    let followed = browser_like.get(format!("{}/", app.address)).send().await.unwrap();
    assert_eq!(followed.status(), 200);
    assert!(followed.text().await.unwrap().contains("swagger"), "the docs page");
}

#[tokio::test]
async fn a_wrong_method_is_a_json_405_with_allow() {
    let app = TestApp::builder().without_demo_data().start().await;
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
    let app = TestApp::builder().start().await;
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
    let app = TestApp::builder().without_demo_data().start().await;
    for (path, status) in [("/api/health/live", "up"), ("/api/health/ready", "ready"), ("/api/health/reads", "ready")] {
        let response = app.http.get(format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_security_headers(&response);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], status);
    }
}

#[tokio::test]
async fn the_jwks_publishes_one_ed25519_key_and_no_private_part() {
    let app = TestApp::builder().without_demo_data().start().await;
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
    let app = TestApp::builder().without_demo_data().start().await;
    let response =
        app.http.get(format!("{}/api/health/live", app.address)).header("uuid", "<script>").send().await.unwrap();
    assert!(response.headers().get("uuid").is_none());
}

/// Sends `request` as raw bytes and reads what comes back until the server closes.
async fn raw_exchange(app: &TestApp, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    let _ = stream.write_all(request).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the server answers and closes");
    String::from_utf8_lossy(&answer).into_owned()
}

/// The HTTP parser's own answers (actix-http writes them below the application, so no
/// middleware sees them; docs/adr/0010-the-http-parsers-own-answers.md) carry no body at all: nothing a browser could
/// sniff, frame or run, which is what the security headers guard. This pins that: if a
/// later actix-http gave them a body, this test says so.
#[tokio::test]
async fn the_parsers_own_400_and_431_have_no_body_and_close_the_connection() {
    let app = TestApp::builder().without_demo_data().start().await;
    let malformed = raw_exchange(&app, b"GET /api/health/live HTTP/1.1\r\nHo st: x\r\n\r\n").await;
    let oversized_head =
        format!("GET /api/health/live HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(200 * 1024));
    let too_large = raw_exchange(&app, oversized_head.as_bytes()).await;
    for (answer, status) in [(malformed, "400"), (too_large, "431")] {
        assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "expected {status}: {answer}");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.to_ascii_lowercase().contains("content-length: 0"), "{head}");
        assert!(body.is_empty(), "no body: {body:?}");
    }
}

/// The finding (issue 32): `HEAD` of `/`, `/api/docs` and the docs page's assets was a
/// 405 or 404 while `GET` worked, so link checkers called the docs missing. RFC 9110
/// §9.3.2: a `GET` resource answers `HEAD` with the same status and headers, no body.
#[tokio::test]
async fn head_of_the_docs_and_their_assets_answers_as_get_does_without_a_body() {
    let app = TestApp::builder().without_demo_data().start().await;
    let page = app.http.get(format!("{}/api/docs/", app.address)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    // Every asset the page loads by a relative address, as a link checker follows them.
    let assets: Vec<String> = html
        .split(['"', '\''])
        .filter(|part| part.starts_with("./") && !part.contains(' '))
        .map(|part| format!("/api/docs/{}", &part[2..]))
        .collect();
    assert!(!assets.is_empty(), "the page loads assets: {html}");
    let paths = ["/", "/api/docs", "/api/docs/", "/api/openapi.json"].into_iter().map(str::to_owned).chain(assets);
    for path in paths {
        let get = app.http.get(format!("{}{path}", app.address)).send().await.unwrap();
        let head = app.http.head(format!("{}{path}", app.address)).send().await.unwrap();
        assert_eq!(head.status(), get.status(), "HEAD {path}");
        for name in ["content-type", "location"] {
            assert_eq!(head.headers().get(name), get.headers().get(name), "HEAD {path}: {name}");
        }
        assert!(head.bytes().await.unwrap().is_empty(), "HEAD {path} has no body");
    }
}
