//! The access tokens `serve` issues and the key set that verifies them.

use std::time::Duration;

use clap::{ArgAction, Args};
use domain::services::dpop::ProofWindow;
use serde::{Deserialize, Serialize};

use super::SettingsError;

/// Longest token lifetime accepted: a pre-login token is not a session of a day.
const MAX_TOKEN_TTL_SECONDS: u32 = 86_400;
/// Longest JWKS cache lifetime accepted: a day.
const MAX_JWKS_MAX_AGE_SECONDS: u32 = 86_400;
/// Longest DPoP proof window accepted: five minutes (RFC 9449 §11.1 asks for a short
/// one; every proof of the window is remembered).
const MAX_DPOP_PROOF_SECONDS: u32 = 300;
/// Largest clock skew accepted for DPoP proofs: a minute.
const MAX_DPOP_SKEW_SECONDS: u32 = 60;

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
    /// How old a DPoP proof may be, by its `iat`, in seconds, 1 to 300: an app makes a
    /// proof for each call, so a minute covers a slow network and one retry.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub dpop_proof_max_age_seconds: u32,
    /// How far ahead of this server's clock a DPoP proof's `iat` may be, in seconds, 0 to
    /// 60: a phone's clock running a little fast.
    #[arg(long, value_name = "S", default_value_t = 5)]
    pub dpop_clock_skew_seconds: u32,
    /// Require a server nonce in every DPoP proof (RFC 9449 §8): a proof without a
    /// recent one is answered with `use_dpop_nonce` and a `DPoP-Nonce` to retry with.
    /// Nonces are made from the signing keys, so every instance on one store accepts
    /// every other's.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub dpop_nonce: bool,
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

    /// How long a DPoP proof is good for.
    pub fn dpop_window(&self) -> ProofWindow {
        ProofWindow {
            max_age: Duration::from_secs(u64::from(self.dpop_proof_max_age_seconds)),
            skew: Duration::from_secs(u64::from(self.dpop_clock_skew_seconds)),
        }
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        if !(1..=MAX_DPOP_PROOF_SECONDS).contains(&self.dpop_proof_max_age_seconds) {
            return Err(SettingsError(format!(
                "dpop-proof-max-age-seconds must be from 1 to {MAX_DPOP_PROOF_SECONDS}"
            )));
        }
        if self.dpop_clock_skew_seconds > MAX_DPOP_SKEW_SECONDS {
            return Err(SettingsError(format!("dpop-clock-skew-seconds must be from 0 to {MAX_DPOP_SKEW_SECONDS}")));
        }
        if !(1..=MAX_TOKEN_TTL_SECONDS).contains(&self.token_ttl_seconds) {
            return Err(SettingsError(format!("token-ttl-seconds must be from 1 to {MAX_TOKEN_TTL_SECONDS}")));
        }
        if self.jwks_max_age_seconds > MAX_JWKS_MAX_AGE_SECONDS {
            return Err(SettingsError(format!("jwks-max-age-seconds must be from 0 to {MAX_JWKS_MAX_AGE_SECONDS}")));
        }
        Ok(())
    }
}
