//! What `serve` answers from the store: the ATM pages, how old a wait time may be, and
//! whether a new store gets the demo data set.

use std::time::Duration;

use clap::{ArgAction, Args};
use serde::{Deserialize, Serialize};

use domain::atm_catalog::{MAX_PAGE_BYTES, MAX_PAGE_SIZE, MAX_RECORD_BYTES};

use super::SettingsError;

/// Longest wait-time maximum age accepted: a week.
const MAX_WAIT_TIME_MAX_AGE_MINUTES: u32 = 7 * 24 * 60;

/// What the API serves.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Catalog {
    /// Do not load the demo data set into a new store.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_value_t = false, default_missing_value = "true", value_name = "BOOL")]
    pub no_demo_data: bool,
    /// ATMs per page of GET /v1/atms, 1 to 256 (a page carries at most 4 MiB of records;
    /// docs/contract.md's page size).
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub atm_page_size: usize,
    /// A branch whose wait-time estimate is older than this many minutes is answered as
    /// unknown, 1 to 10080: three missed runs of a feed every 15 minutes, and an hour's
    /// wait is already a guess (docs/adr/0028-wait-time-data-fresh-estimates-and-demo.md).
    #[arg(long, value_name = "N", default_value_t = 60)]
    pub wait_time_max_age_minutes: u32,
    /// A branch's queue is live, and its own estimate served, while a counter is open and
    /// its queue system posted an event within this many minutes, 1 to 1440.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub queue_live_minutes: u32,
    /// An ATM whose monitoring sent nothing for this many minutes is shown `Unknown`, 1
    /// to 1440.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub atm_state_fresh_minutes: u32,
    /// The ATMs' change feed keeps changes this many days, 1 to 366: an app whose cursor
    /// is older is told to start again (410).
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub atm_change_retention_days: u32,
}

impl Catalog {
    /// Whether a new store gets the demo data set.
    pub fn demo_data(&self) -> bool {
        !self.no_demo_data
    }

    /// Age past which a wait-time estimate is not served.
    pub fn wait_time_max_age(&self) -> Duration {
        Duration::from_secs(u64::from(self.wait_time_max_age_minutes) * 60)
    }

    /// How long a queue stays live without an event, in minutes.
    pub fn queue_live_minutes(&self) -> f64 {
        f64::from(self.queue_live_minutes)
    }

    /// How long an ATM's state is shown without news, in minutes.
    pub fn atm_state_fresh_minutes(&self) -> f64 {
        f64::from(self.atm_state_fresh_minutes)
    }

    /// How long the change feed keeps a change, in seconds.
    pub fn atm_change_retention_seconds(&self) -> i64 {
        i64::from(self.atm_change_retention_days) * 86_400
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        if !(1..=366).contains(&self.atm_change_retention_days) {
            return Err(SettingsError("atm-change-retention-days must be from 1 to 366".to_owned()));
        }
        if !(1..=1440).contains(&self.queue_live_minutes) {
            return Err(SettingsError("queue-live-minutes must be from 1 to 1440".to_owned()));
        }
        if !(1..=1440).contains(&self.atm_state_fresh_minutes) {
            return Err(SettingsError("atm-state-fresh-minutes must be from 1 to 1440".to_owned()));
        }
        // A page's byte budget (4 MiB) over the largest record (16 KiB): issue 30.
        if !(1..=MAX_PAGE_SIZE).contains(&self.atm_page_size) {
            return Err(SettingsError(format!(
                "atm-page-size must be from 1 to {MAX_PAGE_SIZE} (a page carries at most {} MiB of records of up to \
                 {} KiB)",
                MAX_PAGE_BYTES >> 20,
                MAX_RECORD_BYTES >> 10
            )));
        }
        if !(1..=MAX_WAIT_TIME_MAX_AGE_MINUTES).contains(&self.wait_time_max_age_minutes) {
            return Err(SettingsError(format!(
                "wait-time-max-age-minutes must be from 1 to {MAX_WAIT_TIME_MAX_AGE_MINUTES}"
            )));
        }
        Ok(())
    }
}
