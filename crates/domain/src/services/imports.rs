//! Loading the bank's data: wait-time estimates and the ATM set.

use std::collections::HashMap;
use std::sync::Arc;

use crate::atm_catalog::StoredAtm;
use crate::branch::{BranchId, WaitTimeEstimate};
use crate::ports::{AtmRecords, Clock, StoreUnavailable, WaitTimeRecords};

/// Why wait times were not imported; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ImportWaitTimesError {
    /// A branch is given twice: which one would win is anyone's guess, so neither does.
    /// Positions count from 0 in the order given.
    #[error("branch {branch} is given twice (at {first} and {again})")]
    DuplicateBranch {
        /// The branch.
        branch: BranchId,
        /// Where it was first given.
        first: usize,
        /// Where it was given again.
        again: usize,
    },
    /// The store could not be written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Imports of the bank's data.
pub struct DataImport {
    wait_times: Arc<dyn WaitTimeRecords>,
    atms: Arc<dyn AtmRecords>,
    clock: Arc<dyn Clock>,
}

impl DataImport {
    /// Imports into `wait_times` and `atms`, dated by `clock`.
    pub fn new(wait_times: Arc<dyn WaitTimeRecords>, atms: Arc<dyn AtmRecords>, clock: Arc<dyn Clock>) -> Self {
        Self { wait_times, atms, clock }
    }

    /// Inserts or replaces `estimates`, all or none; other branches keep theirs.
    ///
    /// # Errors
    /// See [`ImportWaitTimesError`].
    pub async fn wait_times(&self, estimates: &[WaitTimeEstimate]) -> Result<usize, ImportWaitTimesError> {
        let mut seen = HashMap::with_capacity(estimates.len());
        for (again, row) in estimates.iter().enumerate() {
            if let Some(first) = seen.insert(row.estimate.branch, again) {
                return Err(ImportWaitTimesError::DuplicateBranch { branch: row.estimate.branch, first, again });
            }
        }
        self.wait_times.upsert(estimates).await?;
        Ok(estimates.len())
    }

    /// Replaces the whole ATM set with `atms`, last updated now; returns how many ATMs
    /// it holds. `atms` come validated and in stored form from the file's reader at the
    /// edge, which also refuses an identification given twice within a brand; they are
    /// never validated again.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written; then the old set stays.
    pub async fn atms(&self, atms: &[StoredAtm]) -> Result<usize, StoreUnavailable> {
        self.atms.replace(atms, self.clock.unix_now()).await?;
        Ok(atms.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::branch::{BranchWaitTime, WaitTime};
    use crate::ports::{MockAtmRecords, MockWaitTimeRecords};
    use crate::testing::clock_at;

    fn estimate(branch: &str) -> WaitTimeEstimate {
        WaitTimeEstimate {
            estimate: BranchWaitTime {
                branch: BranchId::parse(branch).unwrap(),
                wait: WaitTime::from_minutes(5).unwrap(),
            },
            estimated_at: 0,
        }
    }

    #[tokio::test]
    async fn a_branch_given_twice_writes_nothing() {
        let mut wait_times = MockWaitTimeRecords::new();
        wait_times.expect_upsert().never();
        let import = DataImport::new(Arc::new(wait_times), Arc::new(MockAtmRecords::new()), Arc::new(clock_at(0)));
        let result = import.wait_times(&[estimate("00001"), estimate("00002"), estimate("00001")]).await;
        assert!(matches!(result, Err(ImportWaitTimesError::DuplicateBranch { first: 0, again: 2, .. })));
    }

    #[tokio::test]
    async fn an_atm_set_is_dated_by_the_clock() {
        let mut atms = MockAtmRecords::new();
        atms.expect_replace().withf(|atms, now| atms.is_empty() && *now == 1_234).times(1).returning(|_, _| Ok(()));
        let import = DataImport::new(Arc::new(MockWaitTimeRecords::new()), Arc::new(atms), Arc::new(clock_at(1_234)));
        assert_eq!(import.atms(&[]).await.unwrap(), 0);
    }
}
