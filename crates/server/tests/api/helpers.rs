//! Starting the app the way the binary does, and calling it the way a bank app does.

use std::sync::Arc;

use adapters::store::Store;
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
/// test ends: a fresh store of the backend under test, or of a backend a test is about.
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

/// Which store a [`TestAppBuilder`] starts the app on.
enum StoreChoice {
    /// A new store of the backend the suite runs on (`STORE_UNDER_TEST`).
    UnderTest,
    /// A new store of the backend registered under this name, whatever the suite runs on
    /// (a test of that backend's own behaviour).
    Backend(&'static str),
    /// An existing store at this URL, which outlives the app.
    Existing(String),
}

/// A change a test makes to the settings.
type Configure<'a> = Box<dyn FnOnce(&mut Settings) + 'a>;

/// How a test starts the app: [`TestApp::builder`], then what differs from the default
/// (demo data on a new store of the backend under test, default settings, the system
/// clock), then [`start`](Self::start).
pub struct TestAppBuilder<'a> {
    store: StoreChoice,
    demo_data: bool,
    configure: Vec<Configure<'a>>,
    clock: Option<Arc<dyn Clock>>,
}

impl TestApp {
    /// The app with the demo data set on a new store of the backend under test, default
    /// settings, the system clock: change any of them, then [`TestAppBuilder::start`].
    pub fn builder<'a>() -> TestAppBuilder<'a> {
        TestAppBuilder { store: StoreChoice::UnderTest, demo_data: true, configure: Vec::new(), clock: None }
    }
}

impl<'a> TestAppBuilder<'a> {
    /// Nothing in the store but its signing key.
    pub fn without_demo_data(mut self) -> Self {
        self.demo_data = false;
        self
    }

    /// The demo data set allowed, as `serve` starts by default (on a store that already
    /// holds data, it loads nothing).
    pub fn with_demo_data(mut self) -> Self {
        self.demo_data = true;
        self
    }

    /// `configure` adjusts the settings (after the database URL and demo data are set).
    pub fn settings(mut self, configure: impl FnOnce(&mut Settings) + 'a) -> Self {
        self.configure.push(Box::new(configure));
        self
    }

    /// On the existing store at `database_url` (which outlives the app), without demo
    /// data unless [`with_demo_data`](Self::with_demo_data) says otherwise: another
    /// instance on the same store, or a restart.
    pub fn on_store(mut self, database_url: &str) -> Self {
        self.store = StoreChoice::Existing(database_url.to_owned());
        self.demo_data = false;
        self
    }

    /// On a new store of the backend registered as `name`, whatever the suite runs on: a
    /// test of that backend's own behaviour. Start it with [`try_start`](Self::try_start),
    /// which says why and gives `None` when that backend cannot run here.
    pub fn on_backend(mut self, name: &'static str) -> Self {
        self.store = StoreChoice::Backend(name);
        self
    }

    /// Telling the time by `clock` (which the test moves) instead of the system's.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The running app.
    ///
    /// # Panics
    /// When the store cannot be made or the app does not start.
    pub async fn start(self) -> TestApp {
        self.try_start().await.expect("the store this test asked for (see the line above)")
    }

    /// The running app, or `None` (said) when the backend asked for with
    /// [`on_backend`](Self::on_backend) cannot run here (its server's variable is not set).
    pub async fn try_start(self) -> Option<TestApp> {
        let Self { store, demo_data, configure, clock } = self;
        let (database_url, kept) = match store {
            StoreChoice::UnderTest => fresh_database().await,
            StoreChoice::Backend(name) => {
                let fresh = adapters::testing::fresh_store_url(name).await?;
                (fresh.url.clone(), Some(Kept(Box::new(fresh))))
            }
            StoreChoice::Existing(url) => (url, None),
        };
        let mut settings = Settings::for_database(&database_url);
        settings.catalog.no_demo_data = !demo_data;
        for configure in configure {
            configure(&mut settings);
        }
        let (store, outage) = with_outage_switch(Store::open(&database_url).await.unwrap());
        let mut builder = Application::builder(settings.clone()).store(store);
        if let Some(clock) = clock {
            builder = builder.clock(clock);
        }
        let application = builder.build().await.expect("the app starts");
        let port = application.port();
        let metrics_port = application.metrics_port();
        tokio::spawn(application.run_until_stopped());
        Some(TestApp {
            address: format!("http://127.0.0.1:{port}"),
            database_url,
            settings,
            http: reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap(),
            folder: tempfile::tempdir().unwrap(),
            _database: kept,
            outage,
            metrics_port,
        })
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
        format!("{}/api", self.settings.http.public_base_url())
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

/// Redis, from `TEST_REDIS_URL`, for a test of `what`; `None` (said) without it, a
/// failure under `CI=true`.
pub fn redis_url(what: &str) -> Option<String> {
    match std::env::var("TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(std::env::var("CI").is_err(), "CI must run the tests of {what}: set TEST_REDIS_URL");
            eprintln!("SKIPPED: {what} need Redis: set TEST_REDIS_URL=redis://host:port");
            None
        }
    }
}
