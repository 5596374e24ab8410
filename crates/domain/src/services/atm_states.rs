//! ATMs as they are now: state events posted by the bank's ATM monitoring (`POST
//! /api/v1/atms/state-events`), and the state every ATM of the set is shown in (`GET
//! /api/v1/atms/state`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::atm_catalog::{AtmCatalog, PageRequest};
use crate::atm_closure::HeldClosure;
use crate::atm_state::{AtmId, AtmStateEvent, AtmStates, HeldState, Shown, shown};
use crate::ports::{AtmDirectory, AtmStateDirectory, AtmStateRecords, Clock, StateOutcome};
use crate::posted::{EventId, EventTime};
use crate::services::atms::ListAtmsError;
use crate::services::posts::{PostEventsError, RejectedEvent, event_now, read_each};
use crate::system::SystemId;

/// The most ATMs one state request may name (`atmId`, issue 45).
pub const MOST_ATM_IDS: usize = 100;

/// What became of a post's state events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostedStates {
    /// Events stored now and applied to their ATM's state, durable.
    pub accepted: usize,
    /// Events stored now that changed nothing: their ATM had heard newer news (by
    /// index and id).
    pub superseded: Vec<(usize, EventId)>,
    /// Events whose id was stored already: nothing changed.
    pub duplicates: usize,
    /// Events refused, in order: nothing of them was stored.
    pub rejected: Vec<RejectedEvent>,
}

/// One ATM of a state page.
#[derive(Debug, Clone, PartialEq)]
pub struct StateItem<'a> {
    /// The ATM's identification.
    pub atm: &'a str,
    /// What it is shown as.
    pub shown: Shown,
    /// Since when, RFC 3339 (`None`: never heard of).
    pub since: Option<&'a str>,
    /// Its held state, unless it is shown `Unknown` or `Closed` (for its services,
    /// reason and expected return).
    pub state: Option<&'a HeldState>,
    /// Its closure, announced or in effect.
    pub closure: Option<&'a HeldClosure>,
}

/// The catalog entries of a page: a run of the set, or the ATMs a request named.
#[derive(Debug, Clone)]
enum Entries {
    Run(std::ops::Range<usize>),
    Named(Vec<usize>),
}

/// A page of the ATMs' states, in the ATM pages' order.
#[derive(Debug, Clone)]
pub struct StatePage {
    catalog: Arc<AtmCatalog>,
    states: Arc<AtmStates>,
    entries: Entries,
    now: EventTime,
    fresh_minutes: f64,
    /// How many ATMs the request names, over all pages.
    pub total: usize,
    /// This page's number.
    pub number: u32,
    /// The last page's number (1 when there is none).
    pub last_page: u32,
}

impl StatePage {
    /// The page's ATMs, in order.
    pub fn items(&self) -> impl Iterator<Item = StateItem<'_>> {
        let indexes: Box<dyn Iterator<Item = usize> + '_> = match &self.entries {
            Entries::Run(run) => Box::new(run.clone()),
            Entries::Named(named) => Box::new(named.iter().copied()),
        };
        indexes.filter_map(|index| {
            let entry = self.catalog.entry(index)?;
            let (atm, closure) = (entry.identification(), entry.closure());
            if let Some(closed) = closure.filter(|_| self.catalog.is_closed(index)) {
                return Some(StateItem { atm, shown: Shown::Closed, since: Some(&closed.since), state: None, closure });
            }
            let held = self.states.get(atm);
            let shown = shown(held.map(|held| &held.state), self.now, self.fresh_minutes);
            let (since, state) = match held {
                None => (None, None),
                Some(held) if shown == Shown::Unknown => (Some(&*held.stale_since), None),
                Some(held) => (Some(&*held.since), Some(held)),
            };
            Some(StateItem { atm, shown, since, state, closure })
        })
    }

    /// A digest of what the page's bytes depend on but its items' shown states: the set
    /// (its fingerprint covers LastUpdated), the states held, and the page's place.
    /// With the shown states (which the clock alone may turn `Unknown`), equal digests
    /// give equal pages.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (self.catalog.fingerprint(), self.states.fingerprint(), self.total, self.number, self.last_page)
            .hash(&mut hasher);
        hasher.finish()
    }

    /// When what the page shows last changed, in seconds: the set's date or the newest
    /// event applied, the later.
    pub fn last_updated(&self) -> i64 {
        let newest = self.states.newest().map_or(i64::MIN, |at| at.unix_micros().div_euclid(1_000_000));
        self.catalog.last_updated().max(newest)
    }
}

/// The ATM monitoring's operation.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmStateIntake: Send + Sync {
    /// Reads, checks and applies `events` (1 to `MOST_EVENTS` JSON values) posted by
    /// `system`.
    ///
    /// # Errors
    /// [`PostEventsError`]: nothing was stored.
    async fn post(&self, system: &SystemId, events: &[Value]) -> Result<PostedStates, PostEventsError>;
}

/// The apps' read of the states.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmStateEnquiry: Send + Sync {
    /// Page `page` of the states of every open ATM of the set, or of those `atm_ids`
    /// name (closed ones too, shown `Closed`).
    ///
    /// # Errors
    /// [`ListAtmsError`]: a page past the last, or the data cannot be vouched for.
    async fn page(&self, page: PageRequest, atm_ids: Option<Vec<AtmId>>) -> Result<StatePage, ListAtmsError>;
}

/// Both, against the stores and the instance's view.
pub struct AtmStateService {
    records: Arc<dyn AtmStateRecords>,
    atms: Arc<dyn AtmDirectory>,
    states: Arc<dyn AtmStateDirectory>,
    clock: Arc<dyn Clock>,
    fresh_minutes: f64,
    page_size: usize,
}

impl AtmStateService {
    /// States written to `records`, read from `states`, for the ATMs of `atms`; a state
    /// older than `fresh_minutes` is shown `Unknown`; pages of `page_size` (at least 1).
    pub fn new(
        records: Arc<dyn AtmStateRecords>,
        atms: Arc<dyn AtmDirectory>,
        states: Arc<dyn AtmStateDirectory>,
        clock: Arc<dyn Clock>,
        fresh_minutes: f64,
        page_size: usize,
    ) -> Self {
        Self { records, atms, states, clock, fresh_minutes, page_size: page_size.max(1) }
    }
}

#[async_trait]
impl AtmStateIntake for AtmStateService {
    async fn post(&self, system: &SystemId, events: &[Value]) -> Result<PostedStates, PostEventsError> {
        let now = event_now(self.clock.as_ref());
        let catalog = self.atms.catalog().await?;
        let (valid, mut rejected) = read_each(events, |value| {
            let event = AtmStateEvent::from_json(value)?;
            event.check_age(now)?;
            if catalog.with_identification(event.atm.as_str()).next().is_none() {
                let details = format!("no ATM of the set has Identification {}", event.atm);
                return Err(crate::posted::EventRefusal::new(Some(event.id), "unknownAtm", "atmId", details));
            }
            Ok(event)
        });
        rejected.sort_by_key(|rejected| rejected.index);
        if valid.is_empty() {
            return Ok(PostedStates { rejected, ..PostedStates::default() });
        }
        let (indexes, valid): (Vec<usize>, Vec<AtmStateEvent>) = valid.into_iter().unzip();
        let outcomes = self.records.apply(system, &valid, now, self.fresh_minutes).await?;
        let mut posted = PostedStates { rejected, ..PostedStates::default() };
        for ((index, event), outcome) in indexes.into_iter().zip(valid).zip(outcomes) {
            match outcome {
                StateOutcome::Applied => posted.accepted += 1,
                StateOutcome::Superseded => posted.superseded.push((index, event.id)),
                StateOutcome::Duplicate => posted.duplicates += 1,
            }
        }
        Ok(posted)
    }
}

#[async_trait]
impl AtmStateEnquiry for AtmStateService {
    async fn page(&self, page: PageRequest, atm_ids: Option<Vec<AtmId>>) -> Result<StatePage, ListAtmsError> {
        let catalog = self.atms.catalog().await?;
        let states = self.states.states().await?;
        let named: Option<Vec<usize>> = atm_ids.map(|ids| {
            let mut named: Vec<usize> = ids.iter().flat_map(|id| catalog.with_identification(id.as_str())).collect();
            named.sort_unstable();
            named.dedup();
            named
        });
        let total = named.as_ref().map_or(catalog.len(), Vec::len);
        let last_page = u32::try_from(total.div_ceil(self.page_size)).unwrap_or(u32::MAX).max(1);
        let number = page.within(last_page)?;
        let first = (number as usize - 1) * self.page_size;
        let entries = match named {
            None => Entries::Run(first..total.min(first + self.page_size)),
            Some(named) => Entries::Named(named.into_iter().skip(first).take(self.page_size).collect()),
        };
        let now = event_now(self.clock.as_ref());
        Ok(StatePage { catalog, states, entries, now, fresh_minutes: self.fresh_minutes, total, number, last_page })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::atm_catalog::StoredAtm;
    use crate::atm_state::AtmState;
    use crate::ports::{MockAtmDirectory, MockAtmStateDirectory, MockAtmStateRecords, StoreUnavailable};
    use crate::testing::ManualClock;

    fn catalog(ids: &[&str]) -> Arc<AtmCatalog> {
        let atms = ids
            .iter()
            .map(|id| StoredAtm::new("Alfa", id, format!(r#"{{"Identification":"{id}"}}"#), &[], &[], None))
            .collect();
        Arc::new(AtmCatalog::from_stored(atms, 1_764_000_000))
    }

    fn directory(ids: &'static [&'static str]) -> Arc<MockAtmDirectory> {
        let mut atms = MockAtmDirectory::new();
        atms.expect_catalog().returning(move || Ok(catalog(ids)));
        Arc::new(atms)
    }

    fn states(held: AtmStates) -> Arc<MockAtmStateDirectory> {
        let mut states = MockAtmStateDirectory::new();
        let held = Arc::new(held);
        states.expect_states().returning(move || Ok(Arc::clone(&held)));
        Arc::new(states)
    }

    fn event(id: &str, atm: &str, at: &str) -> Value {
        json!({"eventId": id, "atmId": atm, "at": at, "state": "OutOfService"})
    }

    #[tokio::test]
    async fn each_event_is_accounted_for_and_an_atm_not_in_the_set_is_refused() {
        let mut records = MockAtmStateRecords::new();
        records
            .expect_apply()
            .withf(|_, events, _, fresh| events.len() == 3 && *fresh == 15.0)
            .times(1)
            .returning(|_, _, _, _| Ok(vec![StateOutcome::Applied, StateOutcome::Superseded, StateOutcome::Duplicate]));
        let service = AtmStateService::new(
            Arc::new(records),
            directory(&["A1", "A2"]),
            states(AtmStates::default()),
            Arc::new(ManualClock::at(time::macros::datetime!(2026-11-28 12:00 UTC))),
            15.0,
            25,
        );
        let events = [
            event("e1", "A1", "2026-11-28T11:59:00Z"),
            event("e2", "ZZ", "2026-11-28T11:59:00Z"),
            event("e3", "A2", "2026-11-28T11:58:00Z"),
            json!({"eventId": "e4"}),
            event("e5", "A1", "2026-11-28T11:50:00Z"),
        ];
        let posted = service.post(&SystemId::parse("atm-mon").unwrap(), &events).await.unwrap();
        assert_eq!((posted.accepted, posted.duplicates), (1, 1));
        assert_eq!(posted.superseded, [(2, EventId::parse("e3").unwrap())], "by its place in the post");
        let refused: Vec<(usize, &str, &str)> =
            posted.rejected.iter().map(|r| (r.index, r.refusal.code, r.refusal.field)).collect();
        assert_eq!(refused, [(1, "unknownAtm", "atmId"), (3, "missingField", "atmId")]);
    }

    #[tokio::test]
    async fn a_post_the_store_cannot_take_stores_nothing() {
        let mut records = MockAtmStateRecords::new();
        records.expect_apply().returning(|_, _, _, _| Err(StoreUnavailable::new("down")));
        let service = AtmStateService::new(
            Arc::new(records),
            directory(&["A1"]),
            states(AtmStates::default()),
            Arc::new(ManualClock::at(time::macros::datetime!(2026-11-28 12:00 UTC))),
            15.0,
            25,
        );
        let result = service.post(&SystemId::parse("m").unwrap(), &[event("e1", "A1", "2026-11-28T11:59:00Z")]).await;
        assert!(matches!(result, Err(PostEventsError::Unavailable(_))));
    }

    #[tokio::test]
    async fn pages_follow_the_set_and_name_what_each_atm_is_shown_as() {
        let heard = AtmStateEvent::from_json(&event("e1", "A2", "2026-11-28T11:59:00Z")).unwrap();
        let old = AtmStateEvent::from_json(&event("e2", "A3", "2026-11-28T11:00:00Z")).unwrap();
        let held = AtmStates::new(
            vec![
                (heard.atm.clone(), AtmState::after(None, &heard, 15.0).unwrap()),
                (old.atm.clone(), AtmState::after(None, &old, 15.0).unwrap()),
            ],
            15.0,
        );
        let service = AtmStateService::new(
            Arc::new(MockAtmStateRecords::new()),
            directory(&["A1", "A2", "A3"]),
            states(held),
            Arc::new(ManualClock::at(time::macros::datetime!(2026-11-28 12:00 UTC))),
            15.0,
            2,
        );
        let first = service.page(PageRequest::FIRST, None).await.unwrap();
        let shown: Vec<(&str, Shown)> = first.items().map(|item| (item.atm, item.shown)).collect();
        assert_eq!(shown, [("A1", Shown::Unknown), ("A2", Shown::OutOfService)]);
        assert_eq!((first.total, first.number, first.last_page), (3, 1, 2));
        let second = service.page(PageRequest::number(2), None).await.unwrap();
        let item = second.items().next().unwrap();
        assert_eq!((item.atm, item.shown, item.state.is_none()), ("A3", Shown::Unknown, true), "heard an hour ago");
        assert_eq!(item.since, Some("2026-11-28T11:15:00Z"), "unknown since the window passed");
        let a2 = first.items().nth(1).unwrap();
        assert_eq!(a2.since, Some("2026-11-28T11:59:00Z"));
        let named = ["A3", "A1", "A3", "none"].map(|id| AtmId::parse(id).unwrap()).to_vec();
        let some = service.page(PageRequest::FIRST, Some(named)).await.unwrap();
        let ids: Vec<&str> = some.items().map(|item| item.atm).collect();
        assert_eq!((ids, some.total), (vec!["A1", "A3"], 2), "in the set's order, once each, unknown ids left out");
        assert!(service.page(PageRequest::number(3), None).await.is_err(), "past the last page");
    }
}
