//! Closures announced ahead (`atms closure`, `atms closures`): the 84 days' notice, and
//! an ATM that must be in the set.

use std::sync::Arc;

use time::Date;

use crate::atm_closure::{AtmClosure, ClosureRefusal, check_notice};
use crate::atm_state::AtmId;
use crate::ports::{AtmClosureRecords, AtmRecords, Clock, StoreUnavailable};
use crate::text::Explanation;

/// Why a closure was not announced; nothing was stored.
#[derive(Debug, thiserror::Error)]
pub enum AnnounceClosureError {
    /// The rules refuse it.
    #[error(transparent)]
    Refused(#[from] ClosureRefusal),
    /// The store could not be read or written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The operators' commands on closures.
pub struct ClosureAdmin {
    closures: Arc<dyn AtmClosureRecords>,
    atms: Arc<dyn AtmRecords>,
    clock: Arc<dyn Clock>,
}

impl ClosureAdmin {
    /// Commands on `closures` of the set in `atms`, at `clock`'s time.
    pub fn new(closures: Arc<dyn AtmClosureRecords>, atms: Arc<dyn AtmRecords>, clock: Arc<dyn Clock>) -> Self {
        Self { closures, atms, clock }
    }

    /// Announces that `atm` closes on `closes_on`, replacing a closure announced for it
    /// before: at least [`NOTICE_DAYS`](crate::atm_closure::NOTICE_DAYS) days ahead, or
    /// with the reason for less in `short_notice`.
    ///
    /// # Errors
    /// [`AnnounceClosureError::Refused`] for a date passed, too little notice, or an ATM
    /// not in the set; [`AnnounceClosureError::Unavailable`] when it could not be stored.
    pub async fn announce(
        &self,
        atm: AtmId,
        closes_on: Date,
        explanation: Explanation,
        short_notice: Option<Explanation>,
    ) -> Result<AtmClosure, AnnounceClosureError> {
        let now = self.clock.unix_now();
        check_notice(closes_on, now, short_notice.is_some())?;
        let closure = AtmClosure { atm, closes_on, explanation, short_notice, announced_at: now };
        if !self.closures.announce(&closure).await? {
            return Err(ClosureRefusal::UnknownAtm(closure.atm).into());
        }
        Ok(closure)
    }

    /// Cancels the closure announced for `atm`: `false` when there is none.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be removed.
    pub async fn cancel(&self, atm: &AtmId) -> Result<bool, StoreUnavailable> {
        self.closures.cancel(atm, self.clock.unix_now()).await
    }

    /// Every closure announced, soonest first, each with whether it is in effect now.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    pub async fn list(&self) -> Result<Vec<(AtmClosure, bool)>, StoreUnavailable> {
        let now = self.clock.unix_now();
        let mut closures = self.atms.current().await?.closures;
        closures.sort_by(|a, b| (a.closes_on, &a.atm).cmp(&(b.closes_on, &b.atm)));
        Ok(closures
            .into_iter()
            .map(|closure| {
                let closed = closure.in_effect(now);
                (closure, closed)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use time::macros::date;

    use super::*;
    use crate::ports::{MockAtmClosureRecords, MockAtmRecords};
    use crate::testing::clock_at;

    /// 2026-11-28T12:00:00Z.
    const NOW: i64 = 1_795_867_200;

    fn admin(closures: MockAtmClosureRecords) -> ClosureAdmin {
        ClosureAdmin::new(Arc::new(closures), Arc::new(MockAtmRecords::new()), Arc::new(clock_at(NOW)))
    }

    fn said(text: &str) -> Explanation {
        Explanation::parse(text).unwrap()
    }

    #[tokio::test]
    async fn a_closure_with_its_notice_is_stored_and_one_without_is_refused_before_the_store_is_asked() {
        let mut closures = MockAtmClosureRecords::new();
        closures
            .expect_announce()
            .withf(|closure| closure.atm.as_str() == "A1" && closure.announced_at == NOW)
            .times(1)
            .returning(|_| Ok(true));
        let admin = admin(closures);
        let atm = AtmId::parse("A1").unwrap();
        let stored = admin.announce(atm.clone(), date!(2027 - 02 - 20), said("Moving"), None).await.unwrap();
        assert_eq!(stored.closes_on, date!(2027 - 02 - 20), "84 days after 2026-11-28");
        let refused = admin.announce(atm, date!(2027 - 02 - 19), said("Moving"), None).await.unwrap_err();
        assert!(matches!(refused, AnnounceClosureError::Refused(ClosureRefusal::ShortNotice { days: 83, .. })));
    }

    #[tokio::test]
    async fn an_atm_the_set_does_not_hold_is_named_in_the_refusal() {
        let mut closures = MockAtmClosureRecords::new();
        closures.expect_announce().returning(|_| Ok(false));
        let atm = AtmId::parse("ZZ9").unwrap();
        let refused =
            admin(closures).announce(atm, date!(2026 - 11 - 29), said("Gone"), Some(said("Fire"))).await.unwrap_err();
        assert_eq!(refused.to_string(), "no ATM of the set has Identification ZZ9");
    }
}
