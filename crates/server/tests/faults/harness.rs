//! The real binary, started and stopped as an operator does, and what the fault tests
//! need around it: its log, its commands, and a lock so that one fault runs at a time.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A request UUID.
pub const UUID: &str = "3fa85f64-5717-4562-b3fc-2c963f66afa6";

/// The demo client's token request.
pub const AUTHORIZE_QUERY: &str =
    "response_type=token&client_id=demo-mobile-app&businessCode=GCB&countryCode=MX&channelId=MOBILE";

/// The fault tests measure how fast the service notices and recovers; on a two-core
/// machine two of them at once would measure each other. Each test holds this.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `test` on a fresh runtime while holding [`one_at_a_time`].
pub fn run<F: std::future::Future<Output = ()>>(test: F) {
    let _turn = one_at_a_time();
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(test);
}

/// A test that cannot run here says so; under `CI=true` that is a failure.
pub fn cannot_run(reason: &str) {
    if std::env::var("CI").is_ok_and(|value| value == "true") {
        panic!("this fault test must run in CI but cannot: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// What keeps a fresh store alive, and a folder of the test's own for its files.
pub struct Kept {
    /// A folder of the test's own.
    pub folder: tempfile::TempDir,
    _store: adapters::testing::FreshStore,
}

/// A new, empty store of the backend under test (`crate::store`), and its database URL.
/// A fault test runs the service in a process of its own: on a store no other process
/// reaches (in memory) it cannot run, and says so.
pub async fn fresh_store() -> Option<(Kept, String)> {
    if !crate::store::other_processes_reach_the_store("a fault test (the service runs as a process of its own)") {
        return None;
    }
    let store = crate::store::fresh_store().await;
    let url = store.url.clone();
    Some((Kept { folder: tempfile::tempdir().unwrap(), _store: store }, url))
}

/// For a fault of SQLite's own (its file's disk, its locks): whether to run it, said
/// when not (the PostgreSQL run of the suite has faults of its own, `postgres.rs`).
pub fn sqlite_fault(what: &str) -> bool {
    let backend = crate::store::store_under_test();
    if backend.name != "sqlite" {
        eprintln!("not applicable: {what} is a fault of the SQLite store; this run is on {}", backend.name);
        return false;
    }
    true
}

/// Every request limit of `serve`, by the start of its `BRANCH_ATM_<LIMIT>_PER_SECOND`
/// and `…_BURST` variables.
const LIMITS: [&str; 5] =
    ["RATE_LIMIT", "SESSION_RATE_LIMIT", "CALLER_RATE_LIMIT", "ISSUE_RATE_LIMIT", "ISSUE_CLIENT_RATE_LIMIT"];

/// A `serve` process on loopback, stopped by its PID when dropped.
pub struct Service {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub address: String,
    log: Arc<Mutex<Vec<String>>>,
    /// An HTTP client with keep-alive.
    pub http: reqwest::Client,
}

impl Service {
    /// Starts `branch-atm --database-url <url> serve` on a free loopback port with JSON
    /// logs (at `info` unless `args` say otherwise) and `args` after `serve`, and waits
    /// until it is ready. The request limits are set out of the way (through the
    /// environment, so `args` can still set one): the faults are floods from one caller.
    pub async fn start(database_url: &str, args: &[&str]) -> Self {
        Self::start_with(database_url, args, reqwest::Client::new()).await
    }

    /// As [`Service::start`], calling it with `http` (a client that trusts the
    /// certificate of an instance serving HTTPS, say).
    pub async fn start_with(database_url: &str, args: &[&str], http: reqwest::Client) -> Self {
        let filter = if args.contains(&"--log-filter") { &[][..] } else { &["--log-filter", "info"][..] };
        let mut child = crate::binary::branch_atm_command()
            .args(["--database-url", database_url, "--log-format", "json"])
            .args(filter)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .envs(LIMITS.iter().flat_map(|limit| {
                ["PER_SECOND", "BURST"].map(|part| (format!("BRANCH_ATM_{limit}_{part}"), "1000000000"))
            }))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stdout = child.stdout.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("branch-atm listening on ") {
                    let _ = address_tx.send(address.to_owned());
                }
                lines.lock().unwrap().push(line);
            }
        });
        let address = match address_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(address) => address,
            Err(_) => {
                let _ = child.kill();
                let output = child.wait_with_output().unwrap();
                panic!("the service did not start: {}", String::from_utf8_lossy(&output.stderr));
            }
        };
        let service = Self { child, address, log, http };
        assert!(service.becomes_ready(Duration::from_secs(30)).await, "the service became ready");
        service
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Polls readiness until it is 200, for at most `within`.
    pub async fn becomes_ready(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.ready_status().await == Some(200) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// The status of `GET /api/health/ready`, or `None` if it did not answer in 5 s.
    pub async fn ready_status(&self) -> Option<u16> {
        let probe = self.http.get(format!("{}/api/health/ready", self.address)).timeout(Duration::from_secs(5));
        probe.send().await.ok().map(|response| response.status().as_u16())
    }

    /// One token request: the status, and the body when it is a 200.
    pub async fn authorize(&self) -> Result<(u16, Option<Value>), reqwest::Error> {
        let response = self
            .http
            .get(format!("{}/api/v1/authorize?{AUTHORIZE_QUERY}", self.address))
            .header("uuid", UUID)
            .timeout(Duration::from_secs(30))
            .send()
            .await?;
        let status = response.status().as_u16();
        let body = if status == 200 { Some(response.json().await?) } else { None };
        Ok((status, body))
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        signal(self.pid(), "TERM");
    }

    /// Sends SIGKILL and waits for the process to end.
    pub fn kill(&mut self) {
        signal(self.pid(), "KILL");
        let _ = self.child.wait();
    }

    /// Waits for the process to exit, for at most `within`.
    pub async fn exits_within(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// The log lines written so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            signal(self.pid(), "KILL");
            let _ = self.child.wait();
        }
    }
}

/// Sends `signal` (`TERM`, `KILL`) to the process `pid`.
/// Whether a line containing `words` is in `service`'s log within 5 s.
pub async fn eventually_logged(service: &Service, words: &str) -> bool {
    for _ in 0..50 {
        if service.log().iter().any(|line| line.contains(words)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

pub fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// Runs an operator's command on the store at `database_url`.
pub fn cli(database_url: &str, args: &[&str]) -> Output {
    crate::binary::branch_atm_command().arg("--database-url").arg(database_url).args(args).output().unwrap()
}

/// A command's standard output and error, for assertion messages.
pub fn said(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Whether the store knows the token behind `opaque`, asked as an operator asks.
pub fn store_knows(database_url: &str, opaque: &str) -> bool {
    let shown = cli(database_url, &["tokens", "show", opaque]);
    assert!(shown.status.success() || said(&shown).contains("no token has that opaque token"), "{}", said(&shown));
    shown.status.success()
}

/// What a flood of token requests got.
#[derive(Debug, Default)]
pub struct Flood {
    /// The opaque tokens of every 200, in no particular order.
    pub issued: Vec<String>,
    /// How many answers of each status.
    pub statuses: std::collections::BTreeMap<u16, usize>,
    /// Requests that got no answer (connection refused or reset, timed out).
    pub unanswered: usize,
}

impl Flood {
    /// How many answers had `status`.
    pub fn count(&self, status: u16) -> usize {
        self.statuses.get(&status).copied().unwrap_or(0)
    }
}

/// Asks for tokens from `clients` concurrent loops until `stop` resolves.
pub async fn flood(service: &Service, clients: usize, stop: impl std::future::Future<Output = ()>) -> Flood {
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let loops: Vec<_> = (0..clients)
        .map(|_| {
            let (http, address, running) = (service.http.clone(), service.address.clone(), Arc::clone(&running));
            tokio::spawn(async move {
                let mut flood = Flood::default();
                while running.load(std::sync::atomic::Ordering::Relaxed) {
                    let call = http
                        .get(format!("{address}/api/v1/authorize?{AUTHORIZE_QUERY}"))
                        .header("uuid", UUID)
                        .timeout(Duration::from_secs(30))
                        .send();
                    let Ok(response) = call.await else {
                        flood.unanswered += 1;
                        continue;
                    };
                    let status = response.status().as_u16();
                    *flood.statuses.entry(status).or_default() += 1;
                    if status == 200 {
                        match response.json::<Value>().await {
                            Ok(body) => flood.issued.push(body["opaque_token"].as_str().unwrap().to_owned()),
                            Err(_) => flood.unanswered += 1,
                        }
                    }
                }
                flood
            })
        })
        .collect();
    stop.await;
    running.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut total = Flood::default();
    for one in loops {
        let one = one.await.unwrap();
        total.issued.extend(one.issued);
        total.unanswered += one.unanswered;
        for (status, count) in one.statuses {
            *total.statuses.entry(status).or_default() += count;
        }
    }
    total
}
