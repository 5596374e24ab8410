//! The `branch-atm` binary as the tests run it: hermetic, so the settings of whoever runs
//! the tests (a `BRANCH_ATM_LISTEN` exported because 8080 was taken, a
//! `BRANCH_ATM_DATABASE_URL` pointing at a real store) never reach a test's process.
//! Shared by the test binaries through `#[path]`.

use std::process::Command;

/// The binary under test.
pub const BINARY: &str = env!("CARGO_BIN_EXE_branch-atm");

/// A command running the binary with none of the caller's `BRANCH_ATM_*` (nor
/// OpenTelemetry's `OTEL_*`) variables:
/// a test sets the ones it means.
pub fn branch_atm_command() -> Command {
    let mut command = Command::new(BINARY);
    for (name, _) in std::env::vars_os() {
        let name_upper = name.to_string_lossy().to_ascii_uppercase();
        if name_upper.starts_with("BRANCH_ATM_") || name_upper.starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command
}
