//! The request limits and where they are counted.

use std::num::NonZeroU32;

use clap::Args;
use serde::{Deserialize, Serialize};

use super::{Rate, RateLimits, SecretUrl, SettingsError};

/// Request limits: each a sustained rate per second and a burst above it. The defaults
/// leave room for many users behind one carrier address, far below the ceiling every
/// user of an app shares.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Limits {
    /// Sustained token requests per second per caller address (IPv6: per /64): a user
    /// takes one token per session of up to 30 minutes, so this is thousands of users.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub issue_rate_limit_per_second: u32,
    /// Burst of token requests per caller address above that rate.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub issue_rate_limit_burst: u32,
    /// Sustained token requests per second per client id, over all callers.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub issue_client_rate_limit_per_second: u32,
    /// Burst of token requests per client id above that rate.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub issue_client_rate_limit_burst: u32,
    /// Sustained bearer requests per second per session (token): a person using an app
    /// sends a few a second at most.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub session_rate_limit_per_second: u32,
    /// Burst of bearer requests per session above that rate.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub session_rate_limit_burst: u32,
    /// Sustained bearer requests per second per caller address (IPv6: per /64): room for
    /// many users behind one carrier address, far below the client ceiling.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub caller_rate_limit_per_second: u32,
    /// Burst of bearer requests per caller address above that rate.
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub caller_rate_limit_burst: u32,
    /// Sustained bearer requests (ATMs, wait times) per second per client id, over all
    /// its users.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub rate_limit_per_second: u32,
    /// Burst of bearer requests per client id above that rate.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub rate_limit_burst: u32,
    /// Redis that every instance counts the request limits in (`redis://host:port`), so
    /// they hold across instances [default: none (each instance limits alone)].
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<SecretUrl>,
}

impl Limits {
    /// The limits as the HTTP layer applies them (each at least 1 once checked).
    pub fn rates(&self) -> RateLimits {
        self.checked_rates().unwrap_or_else(|_| RateLimits::unlimited())
    }

    /// No limit a test reaches, counted in this instance.
    pub fn unlimited() -> Self {
        let (per_second, burst) = (Rate::UNLIMITED.per_second.get(), Rate::UNLIMITED.burst.get());
        Self {
            issue_rate_limit_per_second: per_second,
            issue_rate_limit_burst: burst,
            issue_client_rate_limit_per_second: per_second,
            issue_client_rate_limit_burst: burst,
            session_rate_limit_per_second: per_second,
            session_rate_limit_burst: burst,
            caller_rate_limit_per_second: per_second,
            caller_rate_limit_burst: burst,
            rate_limit_per_second: per_second,
            rate_limit_burst: burst,
            redis_url: None,
        }
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        self.checked_rates().map(|_| ())
    }

    fn checked_rates(&self) -> Result<RateLimits, SettingsError> {
        let rate = |per_second: u32, burst: u32, prefix: &str| {
            let positive = |value: u32, what: &str| {
                NonZeroU32::new(value)
                    .ok_or_else(|| SettingsError(format!("{prefix}rate-limit-{what} must be at least 1")))
            };
            Ok::<_, SettingsError>(Rate {
                per_second: positive(per_second, "per-second")?,
                burst: positive(burst, "burst")?,
            })
        };
        Ok(RateLimits {
            issue_per_caller: rate(self.issue_rate_limit_per_second, self.issue_rate_limit_burst, "issue-")?,
            issue_per_client: rate(
                self.issue_client_rate_limit_per_second,
                self.issue_client_rate_limit_burst,
                "issue-client-",
            )?,
            per_session: rate(self.session_rate_limit_per_second, self.session_rate_limit_burst, "session-")?,
            per_caller: rate(self.caller_rate_limit_per_second, self.caller_rate_limit_burst, "caller-")?,
            per_client: rate(self.rate_limit_per_second, self.rate_limit_burst, "")?,
        })
    }
}
