//! Browser apps: CORS for the origins of a client's redirect URIs and those added for it.
//!
//! The headless Chromium test is the proof a browser gives: a page served from a
//! registered origin gets a token, reads `sid`, and calls wait times and ATMs with
//! `fetch`; the same page from another origin cannot. `.ci/run` installs Chromium; where
//! none is installed the test says so and passes only outside CI.

use std::time::{Duration, Instant};

use domain::client::{ClientRegistration, ClientStatus, Origin, RedirectUri};
use reqwest::Method;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::browser::{Browser, chromium_for};
use crate::helpers::{TestApp, WAIT_TIME_PATH, now};

/// The demo web client's redirect URI is on this origin.
const DEMO_WEB_ORIGIN: &str = "https://demo.bank.example.mx";

pub(crate) async fn preflight(app: &TestApp, path: &str, origin: &str, method: &str) -> reqwest::Response {
    app.http
        .request(Method::OPTIONS, format!("{}{path}", app.address))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", method)
        .header("Access-Control-Request-Headers", "authorization,client_id,uuid,sid")
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_preflight_from_a_registered_origin_names_that_origin_the_method_and_the_headers() {
    let app = TestApp::builder().start().await;
    let operations =
        [("/api/v1/authorize", "GET"), ("/api/v1/atms", "GET"), (WAIT_TIME_PATH, "POST"), ("/api/v1/revoke", "POST")];
    for (path, method) in operations {
        let response = preflight(&app, path, DEMO_WEB_ORIGIN, method).await;
        assert_eq!(response.status(), 204, "{path}");
        let headers = response.headers();
        assert_eq!(headers["access-control-allow-origin"], DEMO_WEB_ORIGIN, "{path}");
        assert_eq!(headers["access-control-allow-methods"], method, "{path}");
        let allowed = headers["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
        for name in ["authorization", "dpop", "client_id", "uuid", "sid", "countrycode", "businesscode", "channelid"] {
            assert!(allowed.contains(name), "{name} in {allowed}");
        }
        assert!(headers["access-control-max-age"].to_str().unwrap().parse::<u32>().unwrap() > 0);
        assert!(headers.get_all("vary").iter().any(|v| v == "Origin"));
    }
}

#[tokio::test]
async fn an_unknown_origin_gets_no_cors_header_at_all() {
    let app = TestApp::builder().start().await;
    let response = preflight(&app, WAIT_TIME_PATH, "https://evil.example", "POST").await;
    assert_eq!(response.status(), 405);
    assert!(response.headers().get("access-control-allow-origin").is_none());
    let query = crate::helpers::demo_authorize_query();
    let token =
        app.http.get(format!("{}/api/v1/authorize", app.address)).query(&query).header("uuid", crate::helpers::UUID);
    let response = token.header("Origin", "https://evil.example").send().await.unwrap();
    assert_eq!(response.status(), 200, "the call itself is answered; the browser keeps it from the page");
    assert!(response.headers().get("access-control-allow-origin").is_none());
    assert!(response.headers().get("access-control-expose-headers").is_none());
}

#[tokio::test]
async fn a_registered_origin_reads_the_answer_and_its_headers_only_for_its_own_client() {
    let app = TestApp::builder().start().await;
    let mut query = crate::helpers::demo_authorize_query();
    query.retain(|(name, _)| !["client_id", "channelId"].contains(name));
    query.extend([("client_id", "demo-web-app"), ("channelId", "WEB")]);
    let call = |origin: &'static str| {
        app.http
            .get(format!("{}/api/v1/authorize", app.address))
            .query(&query)
            .header("uuid", crate::helpers::UUID)
            .header("Origin", origin)
    };
    let response = call(DEMO_WEB_ORIGIN).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], DEMO_WEB_ORIGIN);
    let exposed = response.headers()["access-control-expose-headers"].to_str().unwrap().to_ascii_lowercase();
    for name in ["sid", "state", "uuid", "etag", "last-modified", "retry-after", "www-authenticate", "dpop-nonce"] {
        assert!(exposed.contains(name), "{name} in {exposed}");
    }
    // Another origin of the same host is another origin.
    let other = call("https://demo.bank.example.mx:8443").send().await.unwrap();
    assert!(other.headers().get("access-control-allow-origin").is_none());

    // The revocation form names its client in the body: its answer is the page's to
    // read when that client allows the page, and only then.
    let revoke = |client_id: &str| {
        app.http
            .post(format!("{}/api/v1/revoke", app.address))
            .header("Origin", DEMO_WEB_ORIGIN)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("token=no-such-token&client_id={client_id}"))
            .send()
    };
    let own = revoke("demo-web-app").await.unwrap();
    assert_eq!(own.status(), 200);
    assert_eq!(own.headers()["access-control-allow-origin"], DEMO_WEB_ORIGIN);
    let nobodys = revoke("nobody-app").await.unwrap();
    assert_eq!(nobodys.status(), 400);
    assert!(nobodys.headers().get("access-control-allow-origin").is_none());
}

/// Serves `page` to every request on a new loopback port until dropped; the port.
pub(crate) async fn serve_page(page: String) -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let page = page.clone();
            tokio::spawn(async move {
                let mut request = [0_u8; 4096];
                let _ = stream.read(&mut request).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    page.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(page.as_bytes()).await;
            });
        }
    });
    (port, server)
}

/// A page that takes a token, reads `sid`, calls both bearer operations, and revokes its
/// token (then finds it refused); its
/// `window.outcome` settles to a JSON summary, or to `{"blocked": …}` when the browser
/// refused to let it read an answer.
fn browser_app_page(api: &str) -> String {
    outcome_page(
        "bank app",
        &format!(
            r#"
  const api = "{api}", uuid = "3fa85f64-5717-4562-b3fc-2c963f66afa6";
    const query = new URLSearchParams({{response_type: "token", client_id: "browser-app", businessCode: "GCB",
      countryCode: "MX", channelId: "WEB"}});
    const token = await fetch(`${{api}}/api/v1/authorize?${{query}}`, {{headers: {{uuid}}}});
    const sid = token.headers.get("sid");
    const access = (await token.json()).access_token;
    const waits = await fetch(`${{api}}/api/v1/open-banking/channels/branch/waittime/retrieve`, {{
      method: "POST",
      headers: {{Authorization: `Bearer ${{access}}`, client_id: "browser-app", uuid, sid, countryCode: "MX",
        businessCode: "GCB", ChannelId: "WEB", Accept: "application/json", "Content-Type": "application/json"}},
      body: JSON.stringify({{branches: [{{branchId: "00001"}}]}})
    }});
    const atms = await fetch(`${{api}}/api/v1/atms`, {{headers: {{Authorization: `Bearer ${{access}}`, client_id: "browser-app"}}}});
    const page = await atms.json();
    // The user leaves: the page revokes its token (RFC 7009), which is refused from then on.
    const revoke = await fetch(`${{api}}/api/v1/revoke`, {{method: "POST",
      body: new URLSearchParams({{token: access, client_id: "browser-app", token_type_hint: "access_token"}})}});
    // Not from the browser's cache: the ATM page it holds is fresh for a minute.
    const after = await fetch(`${{api}}/api/v1/atms`, {{cache: "no-store",
      headers: {{Authorization: `Bearer ${{access}}`, client_id: "browser-app"}}}});
    return JSON.stringify({{token: token.status, sid, waits: waits.status, branch: (await waits.json()).branches,
      atms: atms.status, etag: atms.headers.get("ETag"), brands: page.data.length, revoke: revoke.status,
      after: after.status, challenge: after.headers.get("WWW-Authenticate")}});"#
        ),
    )
}

/// A page whose script runs `body` (the inside of an async function returning a string)
/// and settles `window.outcome` to what it returns, or to `{"blocked": …}` when it
/// throws (the browser refused to let it read an answer).
pub(crate) fn outcome_page(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html><title>{title}</title><script>
window.outcome = (async () => {{
  try {{{body}
  }} catch (error) {{
    return JSON.stringify({{blocked: String(error)}});
  }}
}})();
</script>"#
    )
}

#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs Chromium (apt-get install chromium); cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[tokio::test]
async fn a_page_from_a_registered_origin_calls_every_operation_and_a_page_from_another_cannot() {
    let Some(path) = chromium_for("the browser CORS test") else { return };
    let app = TestApp::builder().start().await;
    let (port, server) = serve_page(browser_app_page(&app.address)).await;
    let registered = format!("http://127.0.0.1:{port}");
    let client = ClientRegistration {
        client_id: domain::client::ClientId::parse("browser-app").unwrap(),
        scope: domain::testing::scope("WEB"),
        redirect_uris: vec![RedirectUri::parse(&format!("{registered}/callback")).unwrap()],
        allowed_origins: vec![Origin::parse("https://partner.example.mx").unwrap()],
        status: ClientStatus::Active,
        dpop: domain::dpop::DpopPolicy::Optional,
    };
    assert!(app.store().await.clients.insert(&client, now()).await.unwrap());
    // The running service sees the new client at its next refresh.
    let deadline = Instant::now() + Duration::from_secs(10);
    while preflight(&app, "/api/v1/atms", &registered, "GET").await.status() != 204 {
        assert!(Instant::now() < deadline, "the new client's origin was not served within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let pages = [registered.clone(), format!("http://localhost:{port}")];
    let outcomes = tokio::task::spawn_blocking(move || {
        let mut browser = Browser::launch(path);
        pages
            .iter()
            .map(|url| {
                let page = browser.open(url);
                browser.wait_until(&page, "window.outcome !== undefined");
                let outcome = browser.evaluate(&page, "window.outcome");
                serde_json::from_str::<Value>(outcome.as_str().unwrap()).unwrap()
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    server.abort();

    let (allowed, other) = (&outcomes[0], &outcomes[1]);
    assert_eq!(allowed["token"], 200, "{allowed}");
    assert!(allowed["sid"].as_str().is_some_and(|sid| sid.len() >= 16), "the page read sid: {allowed}");
    assert_eq!(allowed["waits"], 200, "{allowed}");
    assert_eq!(allowed["branch"][0]["branchId"], "00001", "{allowed}");
    assert_eq!(allowed["atms"], 200, "{allowed}");
    assert!(allowed["etag"].as_str().is_some_and(|tag| tag.starts_with('"')), "the page read ETag: {allowed}");
    assert_eq!(allowed["revoke"], 200, "the page revoked its token: {allowed}");
    assert_eq!(allowed["after"], 401, "and it is refused: {allowed}");
    assert!(allowed["challenge"].as_str().is_some_and(|c| c.contains("invalid_token")), "{allowed}");
    assert!(other["blocked"].as_str().is_some_and(|e| e.contains("Failed to fetch")), "{other}");
}
