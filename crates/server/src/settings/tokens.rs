//! The access tokens `serve` issues and the key set that verifies them.

use std::time::Duration;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::SettingsError;

/// Longest token lifetime accepted: a pre-login token is not a session of a day.
const MAX_TOKEN_TTL_SECONDS: u32 = 86_400;
/// Longest JWKS cache lifetime accepted: a day.
const MAX_JWKS_MAX_AGE_SECONDS: u32 = 86_400;

/// Access tokens and the JWKS.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Tokens {
    /// Access-token lifetime in seconds, 1 to 86400 (docs/contract.md: 1800).
    #[arg(long, value_name = "N", default_value_t = 1800)]
    pub token_ttl_seconds: u32,
    /// How long verifiers may cache the JWKS, in seconds, up to 86400; `keys rotate` lets
    /// a new key sign only this long plus one refresh interval after publishing it.
    #[arg(long, value_name = "S", default_value_t = 300)]
    pub jwks_max_age_seconds: u32,
}

impl Tokens {
    /// Access-token lifetime.
    pub fn token_lifetime(&self) -> Duration {
        Duration::from_secs(u64::from(self.token_ttl_seconds))
    }

    /// How long verifiers may cache the JWKS.
    pub fn jwks_max_age(&self) -> Duration {
        Duration::from_secs(u64::from(self.jwks_max_age_seconds))
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        if !(1..=MAX_TOKEN_TTL_SECONDS).contains(&self.token_ttl_seconds) {
            return Err(SettingsError(format!("token-ttl-seconds must be from 1 to {MAX_TOKEN_TTL_SECONDS}")));
        }
        if self.jwks_max_age_seconds > MAX_JWKS_MAX_AGE_SECONDS {
            return Err(SettingsError(format!("jwks-max-age-seconds must be from 0 to {MAX_JWKS_MAX_AGE_SECONDS}")));
        }
        Ok(())
    }
}
