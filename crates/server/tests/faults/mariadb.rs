//! MariaDB stopped, and crashed, under the service's load (`servers`), and a server that
//! would lose acknowledged commits refused at start. A MariaDB server of the test's own
//! (`mariadb-install-db` into a temporary folder, `mariadbd` on a free loopback port) is
//! stopped and started by its PID, so no other test's server is touched. Needs
//! MariaDB's server programs (Debian's `mariadb-server` package; `.ci/run` installs
//! it): without them the tests say so and pass, except under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::harness::{cannot_run, run};
use crate::servers::{self, PrivateServer};

/// Where Debian puts the server's programs.
const MARIADBD: &str = "/usr/sbin/mariadbd";
const INSTALL_DB: &str = "/usr/bin/mariadb-install-db";
const CLIENT: &str = "/usr/bin/mariadb";

/// A MariaDB server in a folder of its own, on a free loopback port, killed when dropped.
struct PrivateMariadb {
    folder: tempfile::TempDir,
    port: u16,
    server: Mutex<Option<Child>>,
}

impl PrivateMariadb {
    /// `mariadb-install-db` and start, or why not.
    fn make() -> Result<Self, String> {
        for program in [MARIADBD, INSTALL_DB, CLIENT] {
            if !Path::new(program).exists() {
                return Err(format!("{program} is not installed (apt-get install mariadb-server)"));
            }
        }
        let folder = tempfile::tempdir().map_err(|e| e.to_string())?;
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        // Temporary files in the server's own folder: the system's /tmp is shared with
        // every other test (a bootstrap once failed there, its temporary table gone).
        let tmp = folder.path().join("tmp");
        std::fs::create_dir(&tmp).map_err(|e| e.to_string())?;
        let made = Command::new(INSTALL_DB)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", folder.path().join("data").display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--user=root", "--skip-test-db", "--auth-root-authentication-method=normal"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{INSTALL_DB}: {e}"))?;
        if !made.status.success() {
            return Err(format!("{INSTALL_DB} failed: {}", String::from_utf8_lossy(&made.stderr)));
        }
        let server = Self { folder, port, server: Mutex::new(None) };
        server.start()?;
        server.execute("CREATE DATABASE branch_atm")?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.folder.path().join("data")
    }

    /// Starts `mariadbd` on the folder (with the settings a production server has:
    /// `innodb_flush_log_at_trx_commit = 1`, the default) and waits until it answers.
    fn start(&self) -> Result<(), String> {
        let child = Command::new(MARIADBD)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.data().display()))
            .arg(format!("--socket={}", self.folder.path().join("socket").display()))
            .arg(format!("--pid-file={}", self.folder.path().join("pid").display()))
            .arg(format!("--log-error={}", self.folder.path().join("server.log").display()))
            .arg(format!("--port={}", self.port))
            .arg(format!("--tmpdir={}", self.folder.path().join("tmp").display()))
            .args(["--bind-address=127.0.0.1", "--user=root", "--skip-grant-tables", "--innodb-buffer-pool-size=32M"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{MARIADBD}: {e}"))?;
        *self.server.lock().unwrap() = Some(child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let log = std::fs::read_to_string(self.folder.path().join("server.log")).unwrap_or_default();
        Err(format!("mariadbd did not listen within 30 s: {log}"))
    }

    /// Sends `signal` to the server by its PID and waits for it to end.
    fn signal(&self, signal: &str) {
        if let Some(mut child) = self.server.lock().unwrap().take() {
            let _ = Command::new("kill").args([signal, &child.id().to_string()]).status();
            let _ = child.wait();
        }
    }

    /// Runs one statement on the server, as its administrator, with MariaDB's client.
    fn execute(&self, statement: &str) -> Result<(), String> {
        let ran = Command::new(CLIENT)
            .args(["--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-u", "root"])
            .arg(format!("--port={}", self.port))
            .args(["-e", statement])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{CLIENT}: {e}"))?;
        if !ran.status.success() {
            return Err(format!("{statement}: {}", String::from_utf8_lossy(&ran.stderr)));
        }
        Ok(())
    }
}

impl PrivateServer for PrivateMariadb {
    fn kind(&self) -> &'static str {
        "MariaDB"
    }

    fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/branch_atm", self.port)
    }

    /// SIGTERM: MariaDB closes its connections and shuts down cleanly.
    fn stop(&self) {
        self.signal("-TERM");
    }

    /// SIGKILL: no shutdown work; InnoDB recovers from its redo log at the next start.
    fn crash(&self) {
        self.signal("-KILL");
    }

    fn start_again(&self) -> Result<(), String> {
        self.start()
    }

    fn sends_change_notices(&self) -> bool {
        false
    }
}

impl Drop for PrivateMariadb {
    fn drop(&mut self) {
        self.signal("-KILL");
    }
}

/// A private server, or `None` when this machine has none to make (said; a failure
/// under `CI=true`).
fn private_mariadb() -> Option<PrivateMariadb> {
    match PrivateMariadb::make() {
        Ok(server) => Some(server),
        Err(why) => {
            cannot_run(&format!("a MariaDB server of the test's own: {why}"));
            None
        }
    }
}

/// The fault issue's promises, on MariaDB (`servers`).
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs MariaDB's programs (mariadb-install-db, mariadbd) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn mariadb_stopped_fails_readiness_at_once_serves_reads_from_memory_and_recovers_by_itself() {
    let Some(mariadb) = private_mariadb() else { return };
    run(servers::stopped_fails_readiness_at_once_serves_reads_from_memory_and_recovers_by_itself(&mariadb));
}

/// MariaDB killed (SIGKILL) under a flood of token requests and started again
/// (`servers`): every token answered is in the store after InnoDB's recovery.
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs MariaDB's programs (mariadb-install-db, mariadbd) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn every_token_answered_while_mariadb_crashes_and_restarts_is_in_the_store() {
    let Some(mariadb) = private_mariadb() else { return };
    run(servers::every_token_answered_while_the_server_crashes_and_restarts_is_in_the_store(&mariadb));
}

/// A server that flushes its log once a second (`innodb_flush_log_at_trx_commit = 2`)
/// would lose the last second's acknowledged tokens in a crash: the service refuses to
/// start on it, in one line naming the setting, and starts once it is 1 again.
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs MariaDB's programs (mariadb-install-db, mariadbd) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn a_mariadb_server_that_would_lose_acknowledged_commits_is_refused_in_one_line_at_start() {
    let Some(mariadb) = private_mariadb() else { return };
    run(async move {
        mariadb.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2").unwrap();
        let mut serve = crate::binary::branch_atm_command()
            .args(["--database-url", &mariadb.url(), "serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let asked = Instant::now();
        while serve.try_wait().unwrap().is_none() && asked.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = serve.kill();
        let refused = serve.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "it refused to start, within 20 s: {said}");
        assert_eq!(said.trim_end().lines().count(), 1, "{said}");
        assert!(said.contains("innodb_flush_log_at_trx_commit is 2") && said.contains("needs 1"), "{said}");

        mariadb.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 1").unwrap();
        let service = crate::harness::Service::start(&mariadb.url(), &[]).await;
        assert_eq!(service.ready_status().await, Some(200));
    });
}

/// The published status while MariaDB is stopped and after it is back (`servers`).
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs MariaDB's programs (mariadb-install-db, mariadbd) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn the_status_leaves_ok_while_mariadb_is_stopped_and_returns_by_itself() {
    let Some(mariadb) = private_mariadb() else { return };
    run(servers::the_status_leaves_ok_while_the_server_is_stopped_and_returns_by_itself(&mariadb));
}
