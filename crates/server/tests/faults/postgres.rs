//! PostgreSQL stopped, and crashed, under the service's load (`servers`). A PostgreSQL
//! server of the test's own (`initdb` into a temporary folder, on a free loopback port)
//! is stopped and started, so no other test's server is touched. Needs PostgreSQL's
//! server programs (Debian's `postgresql` package; `.ci/run` installs it): without them
//! the tests say so and pass, except under `CI=true`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::harness::{cannot_run, run};
use crate::servers::{self, PrivateServer};

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
    fn make() -> Result<Self, String> {
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
        server.start()?;
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

    fn start(&self) -> Result<(), String> {
        let log = self.folder.path().join("server.log").display().to_string();
        let options = format!("-p {} -k {} -c listen_addresses=127.0.0.1", self.port, self.folder.path().display());
        self.run("pg_ctl", &["-D", &self.data(), "-l", &log, "-o", &options, "-w", "start"])
    }

    /// Stops it: `fast` ends every session and shuts down cleanly, `immediate` is a
    /// crash (no shutdown checkpoint; the next start recovers from the WAL).
    fn stop_in(&self, mode: &str) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", mode, "-w", "stop"]).unwrap();
    }
}

impl PrivateServer for PrivatePostgres {
    fn kind(&self) -> &'static str {
        "PostgreSQL"
    }

    /// The URL of its `postgres` database.
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn stop(&self) {
        self.stop_in("fast");
    }

    fn crash(&self) {
        self.stop_in("immediate");
    }

    fn start_again(&self) -> Result<(), String> {
        self.start()
    }

    fn sends_change_notices(&self) -> bool {
        true
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
    match PrivatePostgres::make() {
        Ok(server) => Some(server),
        Err(why) => {
            cannot_run(&format!("a PostgreSQL server of the test's own: {why}"));
            None
        }
    }
}

/// The fault issue's promises, on PostgreSQL (`servers`).
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs PostgreSQL's programs (initdb, pg_ctl) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn postgresql_stopped_fails_readiness_at_once_serves_reads_from_memory_and_recovers_by_itself() {
    let Some(postgres) = private_postgres() else { return };
    run(servers::stopped_fails_readiness_at_once_serves_reads_from_memory_and_recovers_by_itself(&postgres));
}

/// PostgreSQL crashing (`pg_ctl stop -m immediate`, no checkpoint) under a flood of
/// token requests (`servers`).
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs PostgreSQL's programs (initdb, pg_ctl) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn every_token_answered_while_postgresql_crashes_and_restarts_is_in_the_store() {
    let Some(postgres) = private_postgres() else { return };
    run(servers::every_token_answered_while_the_server_crashes_and_restarts_is_in_the_store(&postgres));
}

/// The published status while PostgreSQL is stopped and after it is back (`servers`).
#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs PostgreSQL's programs (initdb, pg_ctl) for a server of its own; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn the_status_leaves_ok_while_postgresql_is_stopped_and_returns_by_itself() {
    let Some(postgres) = private_postgres() else { return };
    run(servers::the_status_leaves_ok_while_the_server_is_stopped_and_returns_by_itself(&postgres));
}
