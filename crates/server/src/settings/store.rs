//! The store and the service's in-memory view of it.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{SecretUrl, SettingsError};

/// Which store every command works on, and how its signing keys are kept (options of
/// every command).
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Store {
    /// Database URL: `sqlite://FILE`, `postgres://…`, `mysql://…` or `memory:NAME`; it may
    /// hold a password, so it is never logged.
    #[arg(long, global = true, value_name = "URL", default_value = "sqlite://data/branch-atm.db")]
    pub database_url: SecretUrl,
    /// File holding the key that encrypts signing keys at rest: 32 bytes, or 64
    /// hexadecimal characters [default: none (keys stored unencrypted)].
    #[arg(long, global = true, value_name = "FILE")]
    pub key_encryption_key_file: Option<PathBuf>,
}

/// How `serve`'s in-memory view keeps up with the store.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct View {
    /// How often the in-memory view polls the store for changes, in ms, 10 to 60000; with
    /// a reload it keeps changes visible within docs/contract.md's 2 seconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub refresh_interval_ms: u64,
    /// How long to serve without hearing from the store before answering 500/503, in ms;
    /// at least twice refresh-interval-ms.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub max_staleness_ms: u64,
}

impl View {
    /// Poll interval of the in-memory view.
    pub fn refresh_interval(&self) -> Duration {
        Duration::from_millis(self.refresh_interval_ms)
    }

    /// How long the view may go without hearing from the store.
    pub fn max_staleness(&self) -> Duration {
        Duration::from_millis(self.max_staleness_ms)
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        if !(10..=60_000).contains(&self.refresh_interval_ms) {
            return Err(SettingsError::new("refresh-interval-ms must be from 10 to 60000"));
        }
        if self.max_staleness_ms < 2 * self.refresh_interval_ms {
            return Err(SettingsError::new("max-staleness-ms must be at least twice refresh-interval-ms"));
        }
        Ok(())
    }
}
