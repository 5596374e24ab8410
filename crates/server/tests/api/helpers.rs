//! Starting the app the way the binary does, and calling it the way a bank app does.

use std::sync::Arc;

use adapters::store::Store;
use adapters::testing::postgres::TestDatabase;
use adapters::testing::{OutageSwitch, forge_token, with_outage_switch};
use domain::ports::Clock;
use domain::token::AccessClaims;
use reqwest::{RequestBuilder, Response};
use serde_json::Value;
use server::settings::Settings;
use server::startup::Application;

/// A request UUID.
pub const UUID: &str = "3fa85f64-5717-4562-b3fc-2c963f66afa6";
/// The demo client.
pub const CLIENT: &str = "demo-mobile-app";
/// The wait-time path.
pub const WAIT_TIME_PATH: &str = "/api/v1/open-banking/channels/branch/waittime/retrieve";

/// A new store for one test, of the backend the suite runs on (`STORE_UNDER_TEST`,
/// `sqlite` by default; `crate::store`), and what keeps it alive.
pub async fn fresh_database() -> (String, Option<Kept>) {
    let fresh = crate::store::fresh_store().await;
    (fresh.url.clone(), Some(Kept(Box::new(fresh))))
}

/// What keeps a test's store alive (its folder, its database, its handle) until the
/// test ends: a fresh store of the backend under test, or a PostgreSQL database of a
/// test of PostgreSQL's own.
pub struct Kept(#[allow(dead_code)] Box<dyn std::any::Any + Send + Sync>);

/// A running application on its own new database.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub address: String,
    /// The database URL, for reaching behind the API (as the CLI does).
    pub database_url: String,
    /// The settings it was started with.
    pub settings: Settings,
    /// An HTTP client.
    pub http: reqwest::Client,
    /// Keeps the database folder alive.
    pub folder: tempfile::TempDir,
    /// Keeps the store alive (and drops a PostgreSQL database) until the test ends.
    pub _database: Option<Kept>,
    /// Takes the app's store down and brings it back.
    pub outage: OutageSwitch,
    /// The metrics listener's port, when the settings name one.
    pub metrics_port: Option<u16>,
}

/// A token and the session it opened.
pub struct Session {
    /// The access token.
    pub token: String,
    /// The `sid` header of the authorize response.
    pub sid: String,
}

impl TestApp {
    /// The app on a store with the demo data set, default settings.
    pub async fn with_demo() -> Self {
        Self::start(true, |_| {}).await
    }

    /// The app on a store with the demo data set, after `configure` adjusted the settings.
    pub async fn with_demo_and(configure: impl FnOnce(&mut Settings)) -> Self {
        Self::start(true, configure).await
    }

    /// The app on a new store with nothing in it but its signing key.
    pub async fn empty() -> Self {
        Self::start(false, |_| {}).await
    }

    /// The app on the existing store at `database_url` (which outlives it), without
    /// demo data.
    pub async fn on_store(database_url: &str) -> Self {
        Self::on_store_and(database_url, |_| {}).await
    }

    /// As [`TestApp::on_store`], after `configure` adjusted the settings.
    pub async fn on_store_and(database_url: &str, configure: impl FnOnce(&mut Settings)) -> Self {
        Self::run(tempfile::tempdir().unwrap(), database_url.to_owned(), None, false, configure).await
    }

    /// The app on a new PostgreSQL database of its own, with the demo data, after
    /// `configure`, whatever store the suite runs on; `None` (said) without a server.
    pub async fn on_postgres_and(configure: impl FnOnce(&mut Settings)) -> Option<Self> {
        let database = TestDatabase::create("a test of PostgreSQL's own").await?;
        let url = database.url.clone();
        let run = |settings: &mut Settings| {
            settings.demo_data = true;
            configure(settings);
        };
        Some(Self::run(tempfile::tempdir().unwrap(), url, Some(Kept(Box::new(database))), true, run).await)
    }

    /// The app on a store with the demo data set, telling the time by `clock` (which the
    /// test moves) instead of the system's.
    pub async fn with_demo_on_clock(clock: Arc<dyn Clock>) -> Self {
        Self::with_demo_on_clock_and(clock, |_| {}).await
    }

    /// As [`TestApp::with_demo_on_clock`], after `configure` adjusted the settings.
    pub async fn with_demo_on_clock_and(clock: Arc<dyn Clock>, configure: impl FnOnce(&mut Settings)) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let (database_url, database) = fresh_database().await;
        Self::run_on(folder, database_url, database, true, configure, Some(clock)).await
    }

    /// Another start on the existing store at `database_url`, as `serve` runs by default
    /// (the demo data set allowed), telling the time by `clock`.
    pub async fn restarted_on_clock(database_url: &str, clock: Arc<dyn Clock>) -> Self {
        Self::run_on(tempfile::tempdir().unwrap(), database_url.to_owned(), None, true, |_| {}, Some(clock)).await
    }

    async fn start(demo_data: bool, configure: impl FnOnce(&mut Settings)) -> Self {
        let folder = tempfile::tempdir().unwrap();
        let (database_url, database) = fresh_database().await;
        Self::run(folder, database_url, database, demo_data, configure).await
    }

    async fn run(
        folder: tempfile::TempDir,
        database_url: String,
        database: Option<Kept>,
        demo_data: bool,
        configure: impl FnOnce(&mut Settings),
    ) -> Self {
        Self::run_on(folder, database_url, database, demo_data, configure, None).await
    }

    async fn run_on(
        folder: tempfile::TempDir,
        database_url: String,
        database: Option<Kept>,
        demo_data: bool,
        configure: impl FnOnce(&mut Settings),
        clock: Option<Arc<dyn Clock>>,
    ) -> Self {
        let mut settings = Settings::for_database(&database_url);
        settings.demo_data = demo_data;
        configure(&mut settings);
        let (store, outage) = with_outage_switch(Store::open(&database_url).await.unwrap());
        let mut builder = Application::builder(settings.clone()).store(store);
        if let Some(clock) = clock {
            builder = builder.clock(clock);
        }
        let application = builder.build().await.expect("the app starts");
        let port = application.port();
        let metrics_port = application.metrics_port();
        tokio::spawn(application.run_until_stopped());
        TestApp {
            address: format!("http://127.0.0.1:{port}"),
            database_url,
            settings,
            http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
            folder,
            _database: database,
            outage,
            metrics_port,
        }
    }
}

/// The demo client's authorize parameters.
pub fn demo_authorize_query() -> Vec<(&'static str, &'static str)> {
    vec![
        ("response_type", "token"),
        ("client_id", CLIENT),
        ("businessCode", "GCB"),
        ("countryCode", "MX"),
        ("channelId", "MOBILE"),
    ]
}

/// The headers of a valid wait-time call, except the ones from the session.
pub fn wait_time_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("client_id", CLIENT),
        ("Accept", "application/json"),
        ("uuid", UUID),
        ("Content-Type", "application/json"),
        ("countryCode", "MX"),
        ("businessCode", "GCB"),
        ("ChannelId", "MOBILE"),
    ]
}

impl TestApp {
    /// GET /api/v1/authorize with `query` and a `uuid` header.
    pub async fn authorize(&self, query: &[(&str, &str)]) -> Response {
        self.http
            .get(format!("{}/api/v1/authorize", self.address))
            .header("uuid", UUID)
            .query(query)
            .send()
            .await
            .unwrap()
    }

    /// A fresh token for the demo client.
    pub async fn session(&self) -> Session {
        let response = self.authorize(&demo_authorize_query()).await;
        assert_eq!(response.status(), 200);
        let sid = response.headers()["sid"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        Session { token: body["access_token"].as_str().unwrap().to_owned(), sid }
    }

    /// A wait-time POST with every required header, minus those named in `without`.
    pub fn wait_time_request(&self, session: &Session, without: &[&str]) -> RequestBuilder {
        let mut request = self.http.post(format!("{}{WAIT_TIME_PATH}", self.address));
        let bearer = format!("Bearer {}", session.token);
        let mut headers = wait_time_headers();
        headers.push(("Authorization", &bearer));
        headers.push(("sid", &session.sid));
        for (name, value) in headers {
            if !without.iter().any(|skip| skip.eq_ignore_ascii_case(name)) {
                request = request.header(name, value);
            }
        }
        request
    }

    /// Wait times of `branches` with a valid session; the response.
    pub async fn wait_times(&self, session: &Session, branches: &[&str]) -> Response {
        let body = serde_json::json!({
            "branches": branches.iter().map(|id| serde_json::json!({"branchId": id})).collect::<Vec<_>>()
        });
        self.wait_time_request(session, &[]).body(body.to_string()).send().await.unwrap()
    }

    /// The store behind the app, opened separately (as the CLI or another process would).
    pub async fn store(&self) -> Store {
        Store::open(&self.database_url).await.unwrap()
    }

    /// A token signed with the app's real current key, with claims of our choosing:
    /// for tokens the app would never issue (expired, not yet valid, other issuer).
    pub async fn forge(&self, issuer: &str, claims: &AccessClaims) -> String {
        forge_token(&self.store().await, None, issuer, &self.issuer(), claims).await
    }

    /// A token signed with the app's stored key `kid` (retired, say), with our claims.
    pub async fn forge_with_key(&self, kid: &str, claims: &AccessClaims) -> String {
        forge_token(&self.store().await, Some(kid), &self.issuer(), &self.issuer(), claims).await
    }

    /// GET `path_and_query` (under the address) with the demo session's bearer headers.
    pub async fn get_atms(&self, session: &Session, path_and_query: &str, headers: &[(&str, &str)]) -> Response {
        let url = if path_and_query.starts_with("http") {
            path_and_query.to_owned()
        } else {
            format!("{}{path_and_query}", self.address)
        };
        let mut request =
            self.http.get(url).header("Authorization", format!("Bearer {}", session.token)).header("client_id", CLIENT);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// The issuer the app signs as.
    pub fn issuer(&self) -> String {
        format!("{}/api", self.settings.public_base_url)
    }
}

/// Claims like the demo client's, for `sid`, valid from `issued_at` for `lifetime` s.
pub fn demo_claims(sid: &str, issued_at: i64, lifetime: i64) -> AccessClaims {
    domain::testing::claims(CLIENT, sid, issued_at, lifetime)
}

/// Now, seconds since the Unix epoch.
pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Asserts an ErrorResponse: status, `code`, `location`, and the echoed `uuid`.
pub async fn assert_error(response: Response, status: u16, code: &str, location: Option<&str>) -> Value {
    assert_eq!(response.status(), status, "status");
    assert_security_headers(&response);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["location"].as_str(), location, "{body}");
    assert!(body["timestamp"].is_string(), "{body}");
    assert!(body["details"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
    body
}

/// Asserts a token-endpoint error: status, `code`, `location`, and the body's shape.
pub async fn assert_token_error(response: reqwest::Response, status: u16, code: &str, location: Option<&str>) -> Value {
    assert_eq!(response.status(), status);
    assert_security_headers(&response);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["location"].as_str(), location, "{body}");
    assert!(body["timestamp"].is_string() && body["details"].is_string(), "{body}");
    assert!(body.get("type").is_none() && body.get("uuid").is_none(), "token bodies have neither: {body}");
    body
}

/// Asserts the four security headers docs/contract.md puts on every response.
pub fn assert_security_headers(response: &Response) {
    let headers = response.headers();
    assert_eq!(headers["strict-transport-security"], "max-age=31536000; includeSubDomains");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["x-xss-protection"], "0");
    assert_eq!(headers["content-security-policy"], "default-src 'none'; frame-ancestors 'none'");
}

/// Polls `check` every 100 ms for up to 5 s until it returns `Some`: for changes made
/// behind the service, which it serves after its next refresh.
pub async fn eventually<T, F, Fut>(mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..50 {
        if let Some(value) = check().await {
            return Some(value);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    None
}

/// The status of a one-branch wait-time call once it becomes `status`, if it does.
pub async fn eventually_status(app: &TestApp, session: &Session, status: u16) -> bool {
    eventually(|| async { (app.wait_times(session, &["00001"]).await.status() == status).then_some(()) })
        .await
        .is_some()
}
