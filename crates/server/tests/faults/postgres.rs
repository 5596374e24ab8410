//! PostgreSQL stopped, and crashed, under the service's load. A PostgreSQL server of
//! the test's own (`initdb` into a temporary folder, on a free loopback port) is
//! stopped and started, so no other test's server is touched. Needs PostgreSQL's
//! server programs (Debian's `postgresql` package; `.ci/run` installs it): without them
//! the tests say so and pass, except under `CI=true`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use adapters::store::Store;
use domain::token::OpaqueToken;

use crate::harness::{AUTHORIZE_QUERY, Service, UUID, cannot_run, flood, run};

/// A PostgreSQL server in a folder of its own, on a free loopback port, stopped (as
/// abruptly as a crash) when dropped.
struct PrivatePostgres {
    folder: tempfile::TempDir,
    programs: PathBuf,
    port: u16,
    /// As root, the server runs as the `postgres` user (it refuses to run as root).
    as_postgres: bool,
}

impl PrivatePostgres {
    /// `initdb` and start, or why not.
    fn start() -> Result<Self, String> {
        let programs = std::fs::read_dir("/usr/lib/postgresql")
            .map_err(|_| "PostgreSQL's server programs are not installed (apt-get install postgresql)".to_owned())?
            .filter_map(Result::ok)
            .map(|version| version.path().join("bin"))
            .filter(|bin| bin.join("initdb").exists())
            .max()
            .ok_or("no initdb under /usr/lib/postgresql")?;
        let as_postgres = nix_is_root();
        let folder = tempfile::tempdir().map_err(|e| e.to_string())?;
        if as_postgres {
            let owned = Command::new("chown").args(["-R", "postgres:"]).arg(folder.path()).status();
            if !owned.is_ok_and(|status| status.success()) {
                return Err("cannot hand the server's folder to the postgres user".into());
            }
        }
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let server = Self { folder, programs, port, as_postgres };
        let data = server.data();
        server.run("initdb", &["-D", &data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])?;
        server.start_again()?;
        Ok(server)
    }

    fn data(&self) -> String {
        self.folder.path().join("data").display().to_string()
    }

    /// Runs one of the server's programs (as `postgres` when we are root).
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let path = self.programs.join(program);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&path);
            command
        } else {
            Command::new(&path)
        };
        let output = command.args(args).stdin(Stdio::null()).output().map_err(|e| format!("{program}: {e}"))?;
        if !output.status.success() {
            return Err(format!("{program} failed: {}", String::from_utf8_lossy(&output.stderr)));
        }
        Ok(())
    }

    /// The URL of its `postgres` database.
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn start_again(&self) -> Result<(), String> {
        let log = self.folder.path().join("server.log").display().to_string();
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1", self.port, self.folder.path().display());
        self.run("pg_ctl", &["-D", &self.data(), "-l", &log, "-o", &options, "-w", "start"])
    }

    /// Stops it: `fast` ends every session and shuts down cleanly, `immediate` is a
    /// crash (no shutdown checkpoint; the next start recovers from the WAL).
    fn stop(&self, mode: &str) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", mode, "-w", "stop"]).unwrap();
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let _ = self.run("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"]);
    }
}

fn nix_is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|output| output.stdout.starts_with(b"0\n"))
}

/// A private server, or `None` when this machine has none to make (said; a failure
/// under `CI=true`).
fn private_postgres() -> Option<PrivatePostgres> {
    match PrivatePostgres::start() {
        Ok(server) => Some(server),
        Err(why) => {
            cannot_run(&format!("a PostgreSQL server of the test's own: {why}"));
            None
        }
    }
}

/// A token and its session id, from the demo client's token request.
async fn session(service: &Service) -> (String, String) {
    let call = service.http.get(format!("{}/api/v1/authorize?{AUTHORIZE_QUERY}", service.address));
    let response = call.header("uuid", UUID).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let sid = response.headers()["sid"].to_str().unwrap().to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    (body["access_token"].as_str().unwrap().to_owned(), sid)
}

/// A bearer call the view answers from memory: the demo session's wait times.
async fn wait_times(service: &Service, token: &str, sid: &str) -> Option<u16> {
    let call = service
        .http
        .post(format!("{}/api/v1/open-banking/channels/branch/waittime/retrieve", service.address))
        .bearer_auth(token)
        .header("sid", sid)
        .header("client_id", "demo-mobile-app")
        .header("uuid", UUID)
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .header("countryCode", "MX")
        .header("businessCode", "GCB")
        .header("ChannelId", "MOBILE")
        .body(r#"{"branches":[{"branchId":"00001"}]}"#)
        .timeout(Duration::from_secs(10))
        .send();
    call.await.ok().map(|response| response.status().as_u16())
}

/// The status of `GET /api/health/reads`.
async fn reads_status(service: &Service) -> Option<u16> {
    let probe = service.http.get(format!("{}/api/health/reads", service.address)).timeout(Duration::from_secs(5));
    probe.send().await.ok().map(|response| response.status().as_u16())
}

/// How long after `since` readiness first answered `want`, polling every 20 ms for at
/// most `within`.
async fn readiness_turns(service: &Service, want: u16, since: Instant, within: Duration) -> Option<Duration> {
    while since.elapsed() < within {
        if service.ready_status().await == Some(want) {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// The fault issue's promises, on PostgreSQL: with the server stopped, readiness fails
/// within a second, bearer calls are answered from memory for the staleness bound and
/// refused after it, token requests are refused fast; once the server is back, the
/// same process serves everything again by itself.
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs PostgreSQL's programs (initdb, pg_ctl) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn postgresql_stopped_fails_readiness_at_once_serves_reads_from_memory_and_recovers_by_itself() {
    let Some(postgres) = private_postgres() else { return };
    run(async move {
        let staleness = Duration::from_secs(4);
        let service = Service::start(&postgres.url(), &["--max-staleness-ms", "4000"]).await;
        let (token, sid) = session(&service).await;
        assert_eq!(wait_times(&service, &token, &sid).await, Some(200));

        postgres.stop("fast");
        let stopped = Instant::now();
        let failed = readiness_turns(&service, 503, stopped, Duration::from_secs(5)).await;
        eprintln!("figure: PostgreSQL stopped: readiness 503 after {failed:?}");
        assert!(failed.is_some_and(|after| after <= Duration::from_secs(1)), "readiness failed within 1 s: {failed:?}");

        // Within the staleness bound the view answers from memory, and says so to a
        // load balancer's fallback (a failover takes every instance's readiness).
        assert_eq!(wait_times(&service, &token, &sid).await, Some(200), "served from memory");
        assert_eq!(reads_status(&service).await, Some(200), "ready for reads");
        // Token requests need the store: refused within the 2 s bound, and once the
        // writer has seen the store fail, at once (one request a second tries it again).
        let asked = Instant::now();
        let (status, _) = service.authorize().await.unwrap();
        let first = asked.elapsed();
        assert_eq!(status, 500);
        assert!(first < Duration::from_millis(2_500), "refused within the bound: {first:?}");
        let asked = Instant::now();
        let (status, _) = service.authorize().await.unwrap();
        let next = asked.elapsed();
        eprintln!("figure: PostgreSQL stopped: token requests refused with {status} in {first:?}, then {next:?}");
        assert_eq!(status, 500);
        assert!(next < Duration::from_millis(200), "then at once: {next:?}");
        // The log an operator reads during the outage: one ERROR line a second for the
        // refused token requests, whole, then one line with the count of the others.
        let refused_at = Instant::now();
        for _ in 0..100 {
            assert_eq!(service.authorize().await.unwrap().0, 500);
        }
        let within = refused_at.elapsed();
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let log = service.log();
        let whole = log.iter().filter(|line| line.contains("token issuance failed: the service could not answer"));
        let whole = whole.count();
        let counted: u64 = (log.iter())
            .filter(|line| line.contains("token issuance failed: ") && line.contains("more requests within a second"))
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter_map(|line| line["fields"]["more"].as_u64())
            .sum();
        eprintln!("figure: 102 refused token requests in {within:?}: {whole} whole ERROR lines, {counted} counted");
        assert_eq!(whole as u64 + counted, 102, "every refusal is in the log, whole or counted");
        assert!(whole as u128 <= 2 + within.as_millis() / 1000, "one whole line a second: {whole} in {within:?}");
        assert!(!log.iter().any(|line| line.contains("SSLRequest")), "causes, not protocol bytes");

        // Past the bound the view no longer vouches for its data.
        tokio::time::sleep(staleness.saturating_sub(stopped.elapsed()) + Duration::from_millis(500)).await;
        assert_eq!(wait_times(&service, &token, &sid).await, Some(500), "stale data is not served");
        assert_eq!(reads_status(&service).await, Some(503), "nor offered for reads");

        postgres.start_again().unwrap();
        let back = Instant::now();
        let ready = readiness_turns(&service, 200, back, Duration::from_secs(15)).await;
        eprintln!("figure: PostgreSQL started again: readiness 200 after {ready:?}");
        assert!(ready.is_some(), "the service recovered by itself");
        assert_eq!(wait_times(&service, &token, &sid).await, Some(200));
        let (status, body) = service.authorize().await.unwrap();
        assert_eq!(status, 200, "tokens are issued again");
        let log = service.log();
        let listener = |words: &str| log.iter().filter(|line| line.contains(words)).count();
        let lost =
            listener("lost the store's change notices") + listener("cannot listen for the store's change notices");
        assert_eq!(lost, 1, "the loss said once, not at every attempt");
        let back = crate::harness::eventually_logged(&service, "listening for the store's change notices again").await;
        assert!(back, "a line when the change listener is back");
        let opaque = body.unwrap()["opaque_token"].as_str().unwrap().to_owned();
        let store = Store::open(&postgres.url()).await.unwrap();
        assert!(store.tokens.find(&OpaqueToken::new(opaque)).await.unwrap().is_some(), "and stored");
    });
}

/// PostgreSQL crashing (`pg_ctl stop -m immediate`, no checkpoint) and coming back under
/// a flood of token requests: requests during the outage may fail, but every token the
/// service answered is in the store after PostgreSQL's recovery, and the service issues
/// tokens again without being restarted.
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs PostgreSQL's programs (initdb, pg_ctl) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn every_token_answered_while_postgresql_crashes_and_restarts_is_in_the_store() {
    let Some(postgres) = private_postgres() else { return };
    run(async move {
        let service = Service::start(&postgres.url(), &[]).await;
        let during = flood(&service, 16, async {
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            postgres.stop("immediate");
            // Longer than a token's 2 s deadline, so the outage is seen by some requests
            // (a shorter one is ridden out by the pool's reconnecting).
            tokio::time::sleep(Duration::from_millis(3_000)).await;
            postgres.start_again().unwrap();
            // Long enough to see the writer recover under the same flood.
            tokio::time::sleep(Duration::from_millis(3_000)).await;
        })
        .await;
        eprintln!(
            "figure: PostgreSQL crashed and restarted under an authorize flood: {:?}, {} unanswered",
            during.statuses, during.unanswered
        );
        assert!(during.count(500) > 0, "the outage was seen: {during:?}");
        assert_eq!(during.unanswered, 0, "every request was answered: {during:?}");
        let (status, _) = service.authorize().await.unwrap();
        assert_eq!(status, 200, "issuing again after the restart");

        let store = Store::open(&postgres.url()).await.unwrap();
        let mut missing = 0;
        for opaque in &during.issued {
            if store.tokens.find(&OpaqueToken::new(opaque.clone())).await.unwrap().is_none() {
                missing += 1;
            }
        }
        assert_eq!(missing, 0, "{missing} of {} answered tokens are not in the store", during.issued.len());
    });
}
