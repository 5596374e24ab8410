//! The service's published status and planned outages: the operators' commands on
//! outages ([`OutageAdmin`]) and what the discovery operations read
//! ([`ServiceDiscovery`], served by [`StatusMonitor`]).

use std::sync::{Arc, RwLock};

use crate::outage::{self, OutageDuration, OutageId, PlannedOutage};
use crate::ports::{Clock, HealthSignals, IdGenerator, OutageRecords, StoreUnavailable};
use crate::status::{HealthBounds, ServiceStatus, assess, next_status};
use crate::text::Explanation;

/// How far ahead an outage should be announced: the Consumer Data Right asks data
/// holders for at least a week's notice of a planned outage. A shorter notice is
/// accepted (an urgent fix is still better announced than not) and the operator warned.
pub const NOTICE_SECONDS: i64 = 7 * 86_400;

/// Why an outage was not scheduled.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleOutageError {
    /// It would be over already: announcing it tells nobody anything.
    #[error("the outage would already be over (it ends before now)")]
    AlreadyOver,
    /// The store could not take it.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// An outage scheduled, and whether it was announced with less notice than
/// [`NOTICE_SECONDS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// What was stored.
    pub outage: PlannedOutage,
    /// It starts within [`NOTICE_SECONDS`] of now (or has started).
    pub short_notice: bool,
}

/// The operators' commands on planned outages.
pub struct OutageAdmin {
    outages: Arc<dyn OutageRecords>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl OutageAdmin {
    /// Commands on `outages`, at `clock`'s time, with ids from `ids`.
    pub fn new(outages: Arc<dyn OutageRecords>, clock: Arc<dyn Clock>, ids: Arc<dyn IdGenerator>) -> Self {
        Self { outages, clock, ids }
    }

    /// Schedules an outage starting at `starts_at` (seconds since the epoch). One that
    /// has started but not ended is accepted (an outage under way, announced late).
    ///
    /// # Errors
    /// [`ScheduleOutageError::AlreadyOver`] for one that would have ended;
    /// [`ScheduleOutageError::Unavailable`] when it could not be stored.
    pub async fn schedule(
        &self,
        starts_at: i64,
        duration: OutageDuration,
        partial: bool,
        explanation: Explanation,
    ) -> Result<Scheduled, ScheduleOutageError> {
        let now = self.clock.unix_now();
        let outage = PlannedOutage { id: self.ids.outage_id(), starts_at, duration, partial, explanation };
        if outage.is_over(now) {
            return Err(ScheduleOutageError::AlreadyOver);
        }
        self.outages.schedule(&outage, now).await?;
        Ok(Scheduled { short_notice: starts_at < now.saturating_add(NOTICE_SECONDS), outage })
    }

    /// The outages not over yet, soonest first.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they cannot be read.
    pub async fn list(&self) -> Result<Vec<PlannedOutage>, StoreUnavailable> {
        self.outages.not_over(self.clock.unix_now()).await
    }

    /// Cancels the outage `id`: `false` when there is none of that id.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be removed.
    pub async fn cancel(&self, id: &OutageId) -> Result<bool, StoreUnavailable> {
        self.outages.cancel(id).await
    }
}

/// What the discovery operations read (`GET /v1/discovery/status`, `…/outages`): the
/// status as last derived, and the planned outages not over.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait ServiceDiscovery: Send + Sync {
    /// The service's status as last derived (at most one refresh old).
    fn status(&self) -> ServiceStatus;

    /// The planned outages not over now, soonest first.
    fn planned_outages(&self) -> Vec<PlannedOutage>;
}

/// What the monitor last derived.
struct Derived {
    status: ServiceStatus,
    outages: Vec<PlannedOutage>,
}

/// Derives the status each refresh ([`StatusMonitor::derive`], run by the server every
/// `--refresh-interval-ms`, as is [`StatusMonitor::read_outages`]) from the health
/// signals and the outages stored, and keeps it for the discovery operations, which read
/// it without waiting on anything. While the store cannot be read, the outages last read
/// are kept.
pub struct StatusMonitor {
    signals: Arc<dyn HealthSignals>,
    outages: Arc<dyn OutageRecords>,
    clock: Arc<dyn Clock>,
    bounds: HealthBounds,
    derived: RwLock<Derived>,
}

impl StatusMonitor {
    /// A monitor that starts `OK` with no outages known; call [`Self::refresh`] before
    /// serving.
    pub fn new(
        signals: Arc<dyn HealthSignals>,
        outages: Arc<dyn OutageRecords>,
        clock: Arc<dyn Clock>,
        bounds: HealthBounds,
    ) -> Self {
        let now = clock.unix_now();
        let status = next_status(None, assess(&healthy(), &bounds, &[], now), now);
        Self { signals, outages, clock, bounds, derived: RwLock::new(Derived { status, outages: Vec::new() }) }
    }

    /// Reads the outages stored, keeping the last ones read when the store cannot answer.
    /// It may wait as long as the store makes it (a locked SQLite file: up to ten
    /// seconds), so the server runs it apart from [`Self::derive`].
    pub async fn read_outages(&self) {
        let now = self.clock.unix_now();
        match self.outages.not_over(now).await {
            Ok(outages) => self.derived_mut().outages = outages,
            Err(error) => tracing::debug!(%error, "planned outages not read: the last ones read are kept"),
        }
    }

    /// Observes the health signals (within about half a second) and derives the status
    /// from them and the outages last read.
    pub async fn derive(&self) {
        let facts = self.signals.observe().await;
        let now = self.clock.unix_now();
        let mut derived = self.derived_mut();
        let assessment = assess(&facts, &self.bounds, &derived.outages, now);
        let status = next_status(Some(&derived.status), assessment, now);
        if status.condition != derived.status.condition {
            tracing::info!(status = status.condition.as_str(), explanation = ?status.explanation, "service status changed");
        }
        derived.status = status;
    }

    /// What was derived, to change. A panic while it was held leaves a whole value
    /// (each write replaces a field), so a poisoned lock is used as it stands rather than
    /// freezing the status for good.
    fn derived_mut(&self) -> std::sync::RwLockWriteGuard<'_, Derived> {
        self.derived.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What was derived, to read (a poisoned lock as it stands, as [`Self::derived_mut`]).
    fn derived(&self) -> std::sync::RwLockReadGuard<'_, Derived> {
        self.derived.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Self::read_outages`], then [`Self::derive`].
    pub async fn refresh(&self) {
        self.read_outages().await;
        self.derive().await;
    }
}

/// The facts of a service that has just loaded its data.
fn healthy() -> crate::status::HealthFacts {
    crate::status::HealthFacts {
        store_answers: true,
        data_age: std::time::Duration::ZERO,
        token_writes_failing: false,
        shared_checks_lost: false,
    }
}

impl ServiceDiscovery for StatusMonitor {
    fn status(&self) -> ServiceStatus {
        self.derived().status.clone()
    }

    fn planned_outages(&self) -> Vec<PlannedOutage> {
        outage::not_over(&self.derived().outages, self.clock.unix_now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ports::{MockClock, MockHealthSignals, MockIdGenerator, MockOutageRecords};
    use crate::status::{HealthFacts, ServiceCondition};

    const NOW: i64 = 1_800_000_000;

    fn clock() -> Arc<MockClock> {
        Arc::new(crate::testing::clock_at(NOW))
    }

    fn ids() -> Arc<MockIdGenerator> {
        let mut ids = MockIdGenerator::new();
        ids.expect_outage_id().returning(|| OutageId::parse("abc123").unwrap());
        Arc::new(ids)
    }

    fn outage(starts_at: i64) -> PlannedOutage {
        PlannedOutage {
            id: OutageId::parse("abc123").unwrap(),
            starts_at,
            duration: OutageDuration::from_seconds(3_600).unwrap(),
            partial: false,
            explanation: Explanation::parse("Database upgrade").unwrap(),
        }
    }

    #[tokio::test]
    async fn an_outage_announced_a_week_ahead_is_stored_without_warning_and_a_sooner_one_with_one() {
        let mut records = MockOutageRecords::new();
        records.expect_schedule().times(2).returning(|_, _| Ok(()));
        let admin = OutageAdmin::new(Arc::new(records), clock(), ids());
        let explanation = || Explanation::parse("Database upgrade").unwrap();
        let hour = OutageDuration::from_seconds(3_600).unwrap();
        let ahead = admin.schedule(NOW + NOTICE_SECONDS, hour, false, explanation()).await.unwrap();
        assert!(!ahead.short_notice);
        assert_eq!(ahead.outage, outage(NOW + NOTICE_SECONDS));
        assert!(admin.schedule(NOW + 60, hour, false, explanation()).await.unwrap().short_notice);
    }

    #[tokio::test]
    async fn an_outage_already_over_is_refused_and_nothing_is_stored() {
        let mut records = MockOutageRecords::new();
        records.expect_schedule().never();
        let admin = OutageAdmin::new(Arc::new(records), clock(), ids());
        let refused = admin
            .schedule(
                NOW - 7_200,
                OutageDuration::from_seconds(3_600).unwrap(),
                false,
                Explanation::parse("x").unwrap(),
            )
            .await;
        assert!(matches!(refused, Err(ScheduleOutageError::AlreadyOver)));
    }

    #[tokio::test]
    async fn the_monitor_keeps_the_outages_it_read_while_the_store_cannot_be_read() {
        let mut records = MockOutageRecords::new();
        let mut reads = 0;
        records.expect_not_over().returning(move |_| {
            reads += 1;
            if reads == 1 { Ok(vec![outage(NOW - 60)]) } else { Err(StoreUnavailable::new("gone")) }
        });
        let mut signals = MockHealthSignals::new();
        signals.expect_observe().returning(|| HealthFacts {
            store_answers: false,
            data_age: Duration::from_secs(2),
            token_writes_failing: false,
            shared_checks_lost: false,
        });
        let bounds = HealthBounds { refresh_interval: Duration::from_secs(1), max_staleness: Duration::from_secs(10) };
        let monitor = StatusMonitor::new(Arc::new(signals), Arc::new(records), clock(), bounds);
        assert_eq!(monitor.status().condition, ServiceCondition::Ok);
        monitor.refresh().await;
        monitor.refresh().await;
        let status = monitor.status();
        assert_eq!(status.condition, ServiceCondition::ScheduledOutage);
        assert_eq!(status.expected_resolution_time, Some(NOW - 60 + 3_600));
        assert_eq!(monitor.planned_outages(), vec![outage(NOW - 60)]);
    }
}
