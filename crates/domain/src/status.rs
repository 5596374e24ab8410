//! The service's status as its callers are told it (shaped like the Australian Consumer
//! Data Right's `GET /discovery/status`), derived from what the service observes of
//! itself and the outages operators planned, never typed in by hand.
//!
//! [`assess`] is a pure function of the observed [`HealthFacts`], the planned outages
//! and the time; [`next_status`] carries the moment the current state began
//! (`detectionTime`) from one assessment to the next, so the status a caller reads is
//! `next_status(previous, assess(facts, outages, now), now)`.

use std::time::Duration;

use crate::outage::PlannedOutage;

/// The service's condition, with CDR's names on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceCondition {
    /// Everything works.
    Ok,
    /// Part of the service fails (tokens cannot be issued while reads are answered from
    /// memory; the checks shared across instances are lost; the data held is going stale).
    PartialFailure,
    /// The service cannot answer: its store has been out past the staleness bound.
    Unavailable,
    /// A planned outage is under way.
    ScheduledOutage,
}

impl ServiceCondition {
    /// The wire value (CDR: `OK`, `PARTIAL_FAILURE`, `UNAVAILABLE`, `SCHEDULED_OUTAGE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::PartialFailure => "PARTIAL_FAILURE",
            Self::Unavailable => "UNAVAILABLE",
            Self::ScheduledOutage => "SCHEDULED_OUTAGE",
        }
    }
}

/// What an instance observes of itself, gathered by the adapters each refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthFacts {
    /// The store answered its latest probe (readiness's own, bounded to half a second).
    pub store_answers: bool,
    /// How long ago the store last answered a refresh of the data held in memory.
    pub data_age: Duration,
    /// The last write of token records failed and none has succeeded since: tokens
    /// cannot be issued.
    pub token_writes_failing: bool,
    /// Redis, where the request limits are counted and DPoP proofs marked used across
    /// instances, does not answer: each instance checks on its own.
    pub shared_checks_lost: bool,
}

/// The bounds the facts are read against, from the service's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthBounds {
    /// How often the data held is refreshed (`--refresh-interval-ms`).
    pub refresh_interval: Duration,
    /// How long the data held is served without the store (`--max-staleness-ms`).
    pub max_staleness: Duration,
}

impl HealthBounds {
    /// Data older than this is going stale: three refreshes were missed (one may fail
    /// on a busy store without anyone noticing) and changes are later than callers are
    /// promised ([`FRESHNESS_PROMISE`]). At a short refresh interval, three missed
    /// refreshes are a busy moment, not a failure: a 100 ms interval is past three after
    /// 300 ms, which keeps every promise.
    pub fn going_stale_after(&self) -> Duration {
        (self.refresh_interval * 3).max(FRESHNESS_PROMISE).min(self.max_staleness)
    }
}

/// How soon data written while the service runs is served, by default (the contract).
pub const FRESHNESS_PROMISE: Duration = Duration::from_secs(2);

/// What the observed facts and the plan say now, before `detectionTime` is carried over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// The condition.
    pub condition: ServiceCondition,
    /// Why, in words for people; `None` when the condition is `OK`.
    pub explanation: Option<String>,
    /// When full service is expected back (the planned outage's end), if known.
    pub expected_resolution: Option<i64>,
    /// When the state began, when the state itself says so (a planned outage's start),
    /// so that every instance says the same.
    pub began_at: Option<i64>,
}

/// Why the service is unavailable.
pub const STORE_UNAVAILABLE: &str =
    "The service cannot reach its data store: tokens, wait times and ATMs are not served.";
/// Why tokens cannot be issued.
pub const TOKENS_UNAVAILABLE: &str = "New visitor tokens cannot be issued: the data store does not answer. Wait \
     times and ATMs are answered from data held in memory, and tokens already issued keep working.";
/// Why the data is going stale.
pub const DATA_GOING_STALE: &str =
    "Changes to wait times, ATMs and registrations are late: the data store has not answered recently.";
/// Why the request limits and DPoP proofs' single use are per instance.
pub const CHECKS_PER_INSTANCE: &str = "Request limits, and that a DPoP proof is used only once, are checked by each \
     server on its own: Redis, which shares them across servers, does not answer.";

/// The condition `facts` show, before any plan is considered: the worst one observed.
fn observed(facts: &HealthFacts, bounds: &HealthBounds) -> (ServiceCondition, Option<&'static str>) {
    if facts.data_age > bounds.max_staleness {
        (ServiceCondition::Unavailable, Some(STORE_UNAVAILABLE))
    } else if !facts.store_answers || facts.token_writes_failing {
        (ServiceCondition::PartialFailure, Some(TOKENS_UNAVAILABLE))
    } else if facts.data_age > bounds.going_stale_after() {
        (ServiceCondition::PartialFailure, Some(DATA_GOING_STALE))
    } else if facts.shared_checks_lost {
        (ServiceCondition::PartialFailure, Some(CHECKS_PER_INSTANCE))
    } else {
        (ServiceCondition::Ok, None)
    }
}

/// The service's condition at `now` (seconds since the Unix epoch) from what it
/// observes and the outages planned:
/// - a full planned outage under way is `SCHEDULED_OUTAGE` whatever is observed (it
///   explains it), its explanation given and its end expected;
/// - a partial planned outage under way is `SCHEDULED_OUTAGE` unless the service is
///   observed `UNAVAILABLE` (worse than what was planned);
/// - otherwise what is observed: `UNAVAILABLE` once the data held is older than the
///   staleness bound, `PARTIAL_FAILURE` while tokens cannot be issued, the data is going
///   stale or the checks shared across instances are lost, else `OK`.
///
/// Of two planned outages under way, the full one wins, then the one ending last.
pub fn assess(facts: &HealthFacts, bounds: &HealthBounds, outages: &[PlannedOutage], now: i64) -> Assessment {
    let (seen, why) = observed(facts, bounds);
    let planned = outages
        .iter()
        .filter(|outage| outage.is_under_way(now))
        .filter(|outage| !outage.partial || seen != ServiceCondition::Unavailable)
        .max_by_key(|outage| (!outage.partial, outage.ends_at()));
    match planned {
        Some(outage) => Assessment {
            condition: ServiceCondition::ScheduledOutage,
            explanation: Some(outage.explanation.as_str().to_owned()),
            expected_resolution: Some(outage.ends_at()),
            began_at: Some(outage.starts_at),
        },
        None => Assessment {
            condition: seen,
            explanation: why.map(str::to_owned),
            expected_resolution: None,
            began_at: None,
        },
    }
}

/// The status callers read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceStatus {
    /// The condition.
    pub condition: ServiceCondition,
    /// Why, when not `OK` (CDR: mandatory then).
    pub explanation: Option<String>,
    /// When the current failure was detected: present for `PARTIAL_FAILURE` and
    /// `UNAVAILABLE` only (CDR), kept while the state lasts.
    pub detection_time: Option<i64>,
    /// When full service is expected back, if known; never for `OK` (CDR).
    pub expected_resolution_time: Option<i64>,
    /// When this status was last changed: the moment the current state began.
    pub update_time: i64,
}

/// The status after `assessment` at `now`, given the one before. While the condition
/// stays a failure, the moment it was first detected stays (`detectionTime`), even if
/// its cause changes (Redis lost, then the store); `updateTime` moves whenever the
/// condition or its explanation change. A planned outage's state begins at the outage's
/// start, so every instance says the same.
pub fn next_status(previous: Option<&ServiceStatus>, assessment: Assessment, now: i64) -> ServiceStatus {
    let same_condition = previous.filter(|previous| previous.condition == assessment.condition);
    let unchanged = same_condition.filter(|previous| previous.explanation == assessment.explanation);
    let update_time = match (assessment.began_at, unchanged) {
        (Some(began_at), _) => began_at,
        (None, Some(previous)) => previous.update_time,
        (None, None) => now,
    };
    let failing = matches!(assessment.condition, ServiceCondition::PartialFailure | ServiceCondition::Unavailable);
    let detection_time = failing.then(|| same_condition.and_then(|previous| previous.detection_time).unwrap_or(now));
    ServiceStatus {
        condition: assessment.condition,
        explanation: assessment.explanation,
        detection_time,
        expected_resolution_time: assessment.expected_resolution,
        update_time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outage::{OutageDuration, OutageId};
    use crate::text::Explanation;

    const BOUNDS: HealthBounds =
        HealthBounds { refresh_interval: Duration::from_secs(1), max_staleness: Duration::from_secs(10) };

    fn healthy() -> HealthFacts {
        HealthFacts {
            store_answers: true,
            data_age: Duration::from_millis(300),
            token_writes_failing: false,
            shared_checks_lost: false,
        }
    }

    fn outage(id: &str, starts_at: i64, seconds: i64, partial: bool) -> PlannedOutage {
        PlannedOutage {
            id: OutageId::parse(id).unwrap(),
            starts_at,
            duration: OutageDuration::from_seconds(seconds).unwrap(),
            partial,
            explanation: Explanation::parse(&format!("planned {id}")).unwrap(),
        }
    }

    #[test]
    fn a_healthy_service_with_nothing_planned_is_ok_without_explanation() {
        let assessment = assess(&healthy(), &BOUNDS, &[], 1_000);
        assert_eq!(assessment.condition, ServiceCondition::Ok);
        assert_eq!(assessment.explanation, None);
        let status = next_status(None, assessment, 1_000);
        assert_eq!((status.detection_time, status.expected_resolution_time), (None, None));
        assert_eq!(status.update_time, 1_000);
    }

    #[test]
    fn a_store_that_does_not_answer_is_a_partial_failure_while_reads_are_served_from_memory() {
        let facts = HealthFacts { store_answers: false, data_age: Duration::from_secs(2), ..healthy() };
        let assessment = assess(&facts, &BOUNDS, &[], 1_000);
        assert_eq!(assessment.condition, ServiceCondition::PartialFailure);
        assert_eq!(assessment.explanation.as_deref(), Some(TOKENS_UNAVAILABLE));
    }

    #[test]
    fn failing_token_writes_are_a_partial_failure_even_while_probes_answer() {
        let facts = HealthFacts { token_writes_failing: true, ..healthy() };
        assert_eq!(assess(&facts, &BOUNDS, &[], 1_000).condition, ServiceCondition::PartialFailure);
    }

    #[test]
    fn data_going_stale_and_lost_shared_checks_are_partial_failures() {
        let stale = HealthFacts { data_age: Duration::from_secs(4), ..healthy() };
        assert_eq!(assess(&stale, &BOUNDS, &[], 1_000).explanation.as_deref(), Some(DATA_GOING_STALE));
        let no_redis = HealthFacts { shared_checks_lost: true, ..healthy() };
        let assessment = assess(&no_redis, &BOUNDS, &[], 1_000);
        assert_eq!(assessment.condition, ServiceCondition::PartialFailure);
        assert_eq!(assessment.explanation.as_deref(), Some(CHECKS_PER_INSTANCE));
    }

    #[test]
    fn data_a_few_short_refreshes_late_but_within_the_freshness_promise_is_not_a_failure() {
        // At a 100 ms refresh, a machine busy for half a second misses five refreshes;
        // the data is still far fresher than the 2 s callers are promised.
        let quick = HealthBounds { refresh_interval: Duration::from_millis(100), ..BOUNDS };
        let busy = HealthFacts { data_age: Duration::from_millis(500), ..healthy() };
        assert_eq!(assess(&busy, &quick, &[], 1_000).condition, ServiceCondition::Ok);
        let late = HealthFacts { data_age: Duration::from_millis(2_100), ..healthy() };
        assert_eq!(assess(&late, &quick, &[], 1_000).explanation.as_deref(), Some(DATA_GOING_STALE));
        // A staleness bound within the promise leaves no time for going stale: the data
        // is served until the bound, and then not at all.
        let strict =
            HealthBounds { refresh_interval: Duration::from_millis(100), max_staleness: Duration::from_millis(1_500) };
        let within = HealthFacts { data_age: Duration::from_millis(1_400), ..healthy() };
        assert_eq!(assess(&within, &strict, &[], 1_000).condition, ServiceCondition::Ok);
        let past = HealthFacts { data_age: Duration::from_millis(1_600), ..healthy() };
        assert_eq!(assess(&past, &strict, &[], 1_000).condition, ServiceCondition::Unavailable);
    }

    #[test]
    fn a_store_out_past_the_staleness_bound_makes_the_service_unavailable() {
        let facts = HealthFacts { store_answers: false, data_age: Duration::from_secs(11), ..healthy() };
        let assessment = assess(&facts, &BOUNDS, &[], 1_000);
        assert_eq!(assessment.condition, ServiceCondition::Unavailable);
        assert_eq!(assessment.explanation.as_deref(), Some(STORE_UNAVAILABLE));
    }

    #[test]
    fn the_detection_time_stays_while_the_state_lasts_and_moves_when_it_changes() {
        let down = HealthFacts { store_answers: false, data_age: Duration::from_secs(2), ..healthy() };
        let first = next_status(None, assess(&down, &BOUNDS, &[], 1_000), 1_000);
        assert_eq!(first.detection_time, Some(1_000));
        let later = next_status(Some(&first), assess(&down, &BOUNDS, &[], 1_005), 1_005);
        assert_eq!((later.detection_time, later.update_time), (Some(1_000), 1_000));
        let gone = HealthFacts { data_age: Duration::from_secs(12), ..down };
        let worse = next_status(Some(&later), assess(&gone, &BOUNDS, &[], 1_012), 1_012);
        assert_eq!((worse.condition, worse.detection_time), (ServiceCondition::Unavailable, Some(1_012)));
        let back = next_status(Some(&worse), assess(&healthy(), &BOUNDS, &[], 1_020), 1_020);
        assert_eq!((back.condition, back.detection_time, back.update_time), (ServiceCondition::Ok, None, 1_020));
    }

    #[test]
    fn a_failure_whose_cause_changes_keeps_its_detection_time_and_moves_its_update_time() {
        let no_redis = HealthFacts { shared_checks_lost: true, ..healthy() };
        let first = next_status(None, assess(&no_redis, &BOUNDS, &[], 1_000), 1_000);
        let store_too = HealthFacts { store_answers: false, ..no_redis };
        let worse = next_status(Some(&first), assess(&store_too, &BOUNDS, &[], 1_004), 1_004);
        assert_eq!(worse.condition, ServiceCondition::PartialFailure);
        assert_eq!(worse.explanation.as_deref(), Some(TOKENS_UNAVAILABLE));
        assert_eq!((worse.detection_time, worse.update_time), (Some(1_000), 1_004));
    }

    #[test]
    fn a_planned_outage_under_way_is_a_scheduled_outage_ending_at_its_end() {
        let plan = [outage("upgrade", 1_000, 7_200, false), outage("later", 50_000, 60, false)];
        assert_eq!(assess(&healthy(), &BOUNDS, &plan, 999).condition, ServiceCondition::Ok);
        let during = next_status(None, assess(&healthy(), &BOUNDS, &plan, 1_500), 1_500);
        assert_eq!(during.condition, ServiceCondition::ScheduledOutage);
        assert_eq!(during.explanation.as_deref(), Some("planned upgrade"));
        assert_eq!(during.expected_resolution_time, Some(8_200));
        assert_eq!(during.detection_time, None, "CDR: only for PARTIAL_FAILURE and UNAVAILABLE");
        assert_eq!(during.update_time, 1_000, "the outage's start, the same on every instance");
        assert_eq!(assess(&healthy(), &BOUNDS, &plan, 8_200).condition, ServiceCondition::Ok);
    }

    #[test]
    fn a_full_planned_outage_explains_whatever_is_observed_during_it() {
        let gone = HealthFacts { store_answers: false, data_age: Duration::from_secs(60), ..healthy() };
        let assessment = assess(&gone, &BOUNDS, &[outage("move", 1_000, 3_600, false)], 2_000);
        assert_eq!(assessment.condition, ServiceCondition::ScheduledOutage);
        assert_eq!(assessment.expected_resolution, Some(4_600));
    }

    #[test]
    fn a_partial_planned_outage_explains_a_partial_failure_but_not_an_unavailable_service() {
        let plan = [outage("tokens", 1_000, 3_600, true)];
        let healthy_during = assess(&healthy(), &BOUNDS, &plan, 2_000);
        assert_eq!(healthy_during.condition, ServiceCondition::ScheduledOutage);
        let partial = HealthFacts { store_answers: false, ..healthy() };
        assert_eq!(assess(&partial, &BOUNDS, &plan, 2_000).condition, ServiceCondition::ScheduledOutage);
        let gone = HealthFacts { store_answers: false, data_age: Duration::from_secs(60), ..healthy() };
        assert_eq!(assess(&gone, &BOUNDS, &plan, 2_000).condition, ServiceCondition::Unavailable);
    }

    #[test]
    fn of_two_outages_under_way_the_full_one_is_told() {
        let plan = [outage("part", 1_000, 9_000, true), outage("full", 1_500, 600, false)];
        let assessment = assess(&healthy(), &BOUNDS, &plan, 1_600);
        assert_eq!(assessment.explanation.as_deref(), Some("planned full"));
        assert_eq!(assessment.expected_resolution, Some(2_100));
    }
}
