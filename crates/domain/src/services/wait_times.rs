//! Estimated wait time by branch.

use std::sync::Arc;

use async_trait::async_trait;

use crate::branch::{BranchId, BranchWaitTime};
use crate::client::ChannelScope;
use crate::ports::{AccessPolicy, Clock, StoreUnavailable, WaitTimeStore};
use crate::queue::live::LiveQueues;
use crate::token::{AccessClaims, SessionId};

/// The most branches one request may ask for (spec: RetrieveWaitTimeRequest.branches).
pub const MAX_BRANCHES_PER_REQUEST: usize = 100;

/// A wait-time request whose headers and body already parsed.
#[derive(Debug, Clone)]
pub struct WaitTimeQuery {
    /// The country, business and channel from the request headers.
    pub scope: ChannelScope,
    /// The `sid` header.
    pub session: SessionId,
    /// The branches asked for, in order: 1 to [`MAX_BRANCHES_PER_REQUEST`].
    pub branches: Vec<BranchId>,
}

/// Why no wait times were returned; one variant, one status.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveWaitTimesError {
    /// The `sid` is not the session the token was issued in (401).
    #[error("the sid header is not the token's session")]
    SessionMismatch,
    /// The channel combination is not supported, or not the one the token was issued
    /// for (403).
    #[error("the channel, country or business is not supported")]
    AccessNotConfigured,
    /// A branch id appears twice; `index` is its second position (422).
    #[error("branch {branch} is asked for twice")]
    DuplicateBranch {
        /// The position of the repeat in the request.
        index: usize,
        /// The repeated branch.
        branch: BranchId,
    },
    /// None of the branches asked for is known (404).
    #[error("none of the branches is known")]
    NoneKnown,
    /// The store could not be read (500).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// Answers wait-time requests from the store of estimates, fresh ones only.
pub struct WaitTimeService {
    policy: Arc<dyn AccessPolicy>,
    store: Arc<dyn WaitTimeStore>,
    live: Arc<LiveQueues>,
    clock: Arc<dyn Clock>,
    max_age_seconds: i64,
}

impl WaitTimeService {
    /// A service checking `policy` and reading `store`, which answers a branch whose
    /// estimate is older than `max_age` (by `clock`) as unknown: a stale wait sends a
    /// customer to the wrong branch, and is worse than none.
    pub fn new(
        policy: Arc<dyn AccessPolicy>,
        store: Arc<dyn WaitTimeStore>,
        live: Arc<LiveQueues>,
        clock: Arc<dyn Clock>,
        max_age: std::time::Duration,
    ) -> Self {
        let max_age_seconds = i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX);
        Self { policy, store, live, clock, max_age_seconds }
    }
}

/// Estimated wait times: the use case behind POST …/branch/waittime/retrieve.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WaitTimeEnquiry: Send + Sync {
    /// The known branches' estimates, in request order.
    ///
    /// # Errors
    /// See [`RetrieveWaitTimesError`].
    async fn retrieve(
        &self,
        claims: &AccessClaims,
        query: &WaitTimeQuery,
    ) -> Result<Vec<BranchWaitTime>, RetrieveWaitTimesError>;
}

#[async_trait]
impl WaitTimeEnquiry for WaitTimeService {
    async fn retrieve(
        &self,
        claims: &AccessClaims,
        query: &WaitTimeQuery,
    ) -> Result<Vec<BranchWaitTime>, RetrieveWaitTimesError> {
        if claims.session != query.session {
            return Err(RetrieveWaitTimesError::SessionMismatch);
        }
        if !self.policy.is_supported(&query.scope).await? || claims.scope != query.scope {
            return Err(RetrieveWaitTimesError::AccessNotConfigured);
        }
        if let Some(index) = first_repeat(&query.branches) {
            return Err(RetrieveWaitTimesError::DuplicateBranch { index, branch: query.branches[index] });
        }
        let oldest_fresh = self.clock.unix_now().saturating_sub(self.max_age_seconds);
        let imported = (self.store.wait_times(&query.branches).await?.into_iter())
            .filter(|estimate| estimate.estimated_at >= oldest_fresh)
            .map(|estimate| estimate.estimate);
        let known: Vec<BranchWaitTime> = if self.live.none_live() {
            imported.collect()
        } else {
            // A live queue's estimate wins over the imported one, in request order.
            let imported: Vec<BranchWaitTime> = imported.collect();
            (query.branches.iter())
                .filter_map(|branch| {
                    let live = self.live.wait(*branch).map(|wait| BranchWaitTime { branch: *branch, wait });
                    live.or_else(|| imported.iter().find(|known| known.branch == *branch).copied())
                })
                .collect()
        };
        if known.is_empty() {
            return Err(RetrieveWaitTimesError::NoneKnown);
        }
        Ok(known)
    }
}

/// The position of the first branch that was already asked for earlier in the list.
///
/// Sorting (id, position) pairs puts each id's occurrences side by side in list order;
/// the earliest second occurrence of any id is the answer. For at most 100 ids this is
/// a few hundred comparisons, cheaper than hashing each id.
fn first_repeat(branches: &[BranchId]) -> Option<usize> {
    let mut sorted: Vec<(BranchId, usize)> = branches.iter().copied().zip(0..).collect();
    sorted.sort_unstable();
    sorted.windows(2).filter(|pair| pair[0].0 == pair[1].0).map(|pair| pair[1].1).min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::branch::WaitTime;
    use crate::branch::WaitTimeEstimate;
    use crate::client::ChannelId;
    use crate::ports::{MockAccessPolicy, MockWaitTimeStore};
    use crate::services::bearer::tests::claims;
    use crate::testing::clock_at;

    /// The time the tests run at, and the age limit they serve under (one hour).
    const NOW: i64 = 1_800_000_000;
    const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

    fn service(policy: MockAccessPolicy, store: MockWaitTimeStore) -> WaitTimeService {
        WaitTimeService::new(
            Arc::new(policy),
            Arc::new(store),
            Arc::new(LiveQueues::new(15.0)),
            Arc::new(clock_at(NOW)),
            MAX_AGE,
        )
    }

    fn ids(raw: &[&str]) -> Vec<BranchId> {
        raw.iter().map(|id| BranchId::parse(id).unwrap()).collect()
    }

    fn query(branches: &[&str]) -> WaitTimeQuery {
        let claims = claims();
        WaitTimeQuery { scope: claims.scope, session: claims.session, branches: ids(branches) }
    }

    fn policy(supported: bool) -> MockAccessPolicy {
        let mut policy = MockAccessPolicy::new();
        policy.expect_is_supported().returning(move |_| Ok(supported));
        policy
    }

    /// A store that knows branch 00001 (5 minutes, estimated just now), 00003 (12
    /// minutes, estimated exactly an hour ago) and 00004 (9 minutes, an hour and a
    /// second ago).
    fn store() -> MockWaitTimeStore {
        let mut store = MockWaitTimeStore::new();
        store.expect_wait_times().returning(|branches| {
            Ok(branches
                .iter()
                .filter_map(|branch| {
                    let (minutes, estimated_at) = match branch.to_string().as_str() {
                        "00001" => (5, NOW),
                        "00003" => (12, NOW - 3600),
                        "00004" => (9, NOW - 3601),
                        _ => return None,
                    };
                    let estimate = BranchWaitTime { branch: *branch, wait: WaitTime::from_minutes(minutes).unwrap() };
                    Some(WaitTimeEstimate { estimate, estimated_at })
                })
                .collect())
        });
        store
    }

    fn untouched_store() -> MockWaitTimeStore {
        let mut store = MockWaitTimeStore::new();
        store.expect_wait_times().never();
        store
    }

    #[tokio::test]
    async fn known_branches_come_back_in_request_order_and_unknown_ones_are_left_out() {
        let service = service(policy(true), store());
        let answer = service.retrieve(&claims(), &query(&["00003", "00002", "00001"])).await.unwrap();
        let pairs: Vec<_> = answer.iter().map(|b| (b.branch.to_string(), b.wait.minutes())).collect();
        assert_eq!(pairs, [("00003".to_string(), 12), ("00001".to_string(), 5)]);
    }

    #[tokio::test]
    async fn a_live_queues_estimate_is_answered_instead_of_the_imported_one() {
        let live = Arc::new(LiveQueues::new(15.0));
        let day = crate::queue::state::tests::events(&[
            (0.0, "CounterOpened", "", "1"),
            (1.0, "TicketIssued", "A1", ""),
            (1.0, "TicketCalled", "A1", "1"),
            (2.0, "TicketIssued", "A2", ""),
            (3.0, "TicketIssued", "A3", ""),
        ]);
        let at = day[0].at.plus_minutes(4.0);
        live.apply(&day, at);
        let branch = BranchId::parse("00001").unwrap();
        let told = live.wait(branch).unwrap();
        assert_ne!(told.minutes(), 5, "the imported figure");
        let service = WaitTimeService::new(
            Arc::new(policy(true)),
            Arc::new(store()),
            Arc::clone(&live),
            Arc::new(clock_at(NOW)),
            MAX_AGE,
        );
        let known = service.retrieve(&claims(), &query(&["00003", "00001", "00002"])).await.unwrap();
        let answered: Vec<(String, u16)> = known.iter().map(|k| (k.branch.to_string(), k.wait.minutes())).collect();
        assert_eq!(answered, [("00003".to_owned(), 12), ("00001".to_owned(), told.minutes())]);
        live.refresh(at.plus_minutes(16.0));
        let fallback = service.retrieve(&claims(), &query(&["00001"])).await.unwrap();
        assert_eq!(fallback[0].wait.minutes(), 5, "no event for 15 minutes: the imported figure again");
    }

    #[tokio::test]
    async fn no_known_branch_is_not_found() {
        let service = service(policy(true), store());
        let result = service.retrieve(&claims(), &query(&["00002"])).await;
        assert!(matches!(result, Err(RetrieveWaitTimesError::NoneKnown)));
    }

    /// The finding: an estimate three days old was answered as today's wait.
    #[tokio::test]
    async fn an_estimate_older_than_the_maximum_age_is_answered_as_unknown() {
        let service = service(policy(true), store());
        let answer = service.retrieve(&claims(), &query(&["00004", "00003", "00001"])).await.unwrap();
        let served: Vec<String> = answer.iter().map(|b| b.branch.to_string()).collect();
        assert_eq!(served, ["00003", "00001"], "an hour old is served, an hour and a second is not");
        let only_stale = service.retrieve(&claims(), &query(&["00004"])).await;
        assert!(matches!(only_stale, Err(RetrieveWaitTimesError::NoneKnown)), "all stale is no branch known");
    }

    #[tokio::test]
    async fn the_same_branch_twice_names_the_second_position() {
        let service = service(policy(true), untouched_store());
        let result = service.retrieve(&claims(), &query(&["00001", "00003", "00001"])).await;
        assert!(matches!(result, Err(RetrieveWaitTimesError::DuplicateBranch { index: 2, .. })));
    }

    #[test]
    fn the_first_repeat_is_the_earliest_second_occurrence_of_any_branch() {
        let ids = |raw: &[&str]| raw.iter().map(|id| BranchId::parse(id).unwrap()).collect::<Vec<_>>();
        assert_eq!(first_repeat(&ids(&["00005", "00003", "00007", "00003", "00005"])), Some(3));
        assert_eq!(first_repeat(&ids(&["00009", "00001", "00009", "00001", "00001"])), Some(2));
        assert_eq!(first_repeat(&ids(&["00002", "00002"])), Some(1));
        assert_eq!(first_repeat(&ids(&["00001", "00002", "00003"])), None);
        assert_eq!(first_repeat(&[]), None);
    }

    #[tokio::test]
    async fn an_unsupported_channel_is_not_configured() {
        let service = service(policy(false), untouched_store());
        let result = service.retrieve(&claims(), &query(&["00001"])).await;
        assert!(matches!(result, Err(RetrieveWaitTimesError::AccessNotConfigured)));
    }

    #[tokio::test]
    async fn a_supported_channel_other_than_the_tokens_is_not_configured() {
        let service = service(policy(true), untouched_store());
        let mut from_web = query(&["00001"]);
        from_web.scope.channel = ChannelId::parse("WEB").unwrap();
        let result = service.retrieve(&claims(), &from_web).await;
        assert!(matches!(result, Err(RetrieveWaitTimesError::AccessNotConfigured)));
    }

    #[tokio::test]
    async fn a_sid_from_another_session_is_refused_before_anything_is_read() {
        let mut unread = MockAccessPolicy::new();
        unread.expect_is_supported().never();
        let service = service(unread, untouched_store());
        let mut other_session = query(&["00001"]);
        other_session.session = SessionId::new("sid-2".into());
        let result = service.retrieve(&claims(), &other_session).await;
        assert!(matches!(result, Err(RetrieveWaitTimesError::SessionMismatch)));
    }
}
