//! ATM information: the ATM set as it is served now, cut into pages, filtered and
//! near-me. Whether a caller's copy is still current (HTTP's validators) is the HTTP
//! layer's question; the domain hands it a fingerprint of what it serves.

use std::sync::Arc;

use async_trait::async_trait;

use crate::atm::AtmService;
use crate::atm_catalog::{AtmCatalog, AtmPage, AtmQuery, PageOutOfRange, PageRequest};
use crate::atm_state::{AtmStates, offers_now};
use crate::ports::{AtmDirectory, AtmStateDirectory, Clock, StoreUnavailable};
use crate::posted::EventTime;
use crate::services::posts::event_now;

/// Why no page was returned; one variant, one status.
#[derive(Debug, thiserror::Error)]
pub enum ListAtmsError {
    /// The page is past the last one, or no page number (400).
    #[error(transparent)]
    PageOutOfRange(#[from] PageOutOfRange),
    /// The ATM set cannot be read or vouched for (503).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// The ATM set as served at one moment, in pages of a fixed size. Every page of a
/// snapshot is cut from the same set, so a page and its fingerprint belong together.
#[derive(Debug, Clone)]
pub struct AtmSnapshot {
    catalog: Arc<AtmCatalog>,
    page_size: usize,
    availability: Option<Availability>,
}

/// The ATMs' states at one moment, for a query by what is available now.
#[derive(Debug, Clone)]
pub struct Availability {
    /// The states held.
    pub states: Arc<AtmStates>,
    /// Now.
    pub now: EventTime,
    /// The freshness window, in minutes.
    pub fresh_minutes: f64,
}

impl AtmSnapshot {
    /// `catalog` served in pages of `page_size` ATMs (at least one).
    pub fn new(catalog: Arc<AtmCatalog>, page_size: usize) -> Self {
        Self { catalog, page_size: page_size.max(1), availability: None }
    }

    /// This snapshot, answering queries by availability with `availability`.
    pub fn with_availability(self, availability: Availability) -> Self {
        Self { availability: Some(availability), ..self }
    }

    /// Whether the entry at `index` gives `service` now, by its state (none held: no).
    fn available(&self, index: usize, service: AtmService) -> bool {
        let Some(availability) = &self.availability else { return false };
        let Some(entry) = self.catalog.entry(index) else { return false };
        let state = availability.states.get(entry.identification()).map(|held| &held.state);
        offers_now(state, availability.now, availability.fresh_minutes, service)
    }

    /// The catalog's page for `query`, its state filter applied.
    fn cut(&self, query: &AtmQuery) -> Result<AtmPage, PageOutOfRange> {
        match query.available {
            None => self.catalog.page(query, self.page_size),
            Some(service) => self.catalog.page_where(query, self.page_size, &|index| self.available(index, service)),
        }
    }

    /// A fingerprint of everything in the set that a page's bytes depend on: its
    /// records, brands and LastUpdated. Equal fingerprints, page sizes and queries give
    /// equal pages.
    pub fn fingerprint(&self) -> u64 {
        self.catalog.fingerprint()
    }

    /// ATMs per page.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// When the set was last replaced, seconds since the Unix epoch.
    pub fn last_updated(&self) -> i64 {
        self.catalog.last_updated()
    }

    /// The last page's number for `query`'s filters (1 for an empty set), for telling a
    /// caller which pages there are.
    pub fn last_page(&self, query: &AtmQuery) -> u32 {
        // Past any page: the catalog answers with the last one's number.
        let past = AtmQuery { page: PageRequest::number(u32::MAX), ..query.clone() };
        match self.cut(&past) {
            Ok(page) => page.last_page,
            Err(out_of_range) => out_of_range.last_page,
        }
    }

    /// Refuses at once a page that is no page number, with the last page's number for
    /// `query`'s filters ([`PageRequest::within`]): before the caller's validators are
    /// compared, so no such request is answered 304. A number past the last page is
    /// refused when the page is cut ([`Self::page`]).
    ///
    /// # Errors
    /// [`ListAtmsError::PageOutOfRange`] for a page that is no page number.
    pub fn check_page(&self, query: &AtmQuery) -> Result<(), ListAtmsError> {
        if !query.page.is_number() {
            query.page.within(self.last_page(query))?;
        }
        Ok(())
    }

    /// The page `query` asks for.
    ///
    /// # Errors
    /// [`ListAtmsError::PageOutOfRange`] for a page past the last one.
    pub fn page(&self, query: &AtmQuery) -> Result<AtmListing, ListAtmsError> {
        let page = self.cut(query)?;
        Ok(AtmListing { catalog: Arc::clone(&self.catalog), page })
    }
}

/// A page of ATMs, each with its brand, its stored record and (near-me) its distance.
#[derive(Debug)]
pub struct AtmListing {
    catalog: Arc<AtmCatalog>,
    page: AtmPage,
}

/// One ATM of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtmItem<'a> {
    /// Its brand.
    pub brand: &'a str,
    /// Its OBIE ATM 2.3 record as JSON, as stored.
    pub record: &'a str,
    /// Its distance from the point asked for, in metres (near-me only).
    pub distance_m: Option<u64>,
}

impl AtmListing {
    /// When the set was last replaced, seconds since the Unix epoch.
    pub fn last_updated(&self) -> i64 {
        self.catalog.last_updated()
    }

    /// How many ATMs match, over all pages.
    pub fn total(&self) -> usize {
        self.page.total
    }

    /// This page's number, from 1.
    pub fn number(&self) -> u32 {
        self.page.page
    }

    /// The last page's number.
    pub fn last_page(&self) -> u32 {
        self.page.last_page
    }

    /// A digest of the page's ATMs, their distances and the totals: with the set's
    /// fingerprint and the representation, what a page filtered by the ATMs' states now
    /// (which the clock alone may change) is tagged by.
    pub fn digest(&self) -> u64 {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (self.page.total, self.page.page, self.page.last_page).hash(&mut hasher);
        for hit in &self.page.hits {
            (hit.entry, hit.distance_m).hash(&mut hasher);
        }
        hasher.finish()
    }

    /// The page's ATMs, in order.
    pub fn items(&self) -> impl Iterator<Item = AtmItem<'_>> {
        self.page.hits.iter().filter_map(|hit| {
            Some(AtmItem {
                brand: self.catalog.brand_of(hit.entry)?,
                record: self.catalog.entry(hit.entry)?.record_json(),
                distance_m: hit.distance_m,
            })
        })
    }
}

/// ATM information: the use case behind GET /v1/atms.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmInformation: Send + Sync {
    /// The ATM set as it is served now; with the ATMs' states too when `by_state` (a
    /// query by what is available now).
    ///
    /// # Errors
    /// [`ListAtmsError::Unavailable`] when the set cannot be read or vouched for.
    async fn snapshot(&self, by_state: bool) -> Result<AtmSnapshot, ListAtmsError>;
}

/// Serves the ATM set the directory holds in pages of a fixed size.
pub struct AtmLocator {
    directory: Arc<dyn AtmDirectory>,
    page_size: usize,
    states: Option<StateSource>,
}

/// Where a locator reads the ATMs' states, its clock and the freshness window.
struct StateSource {
    states: Arc<dyn AtmStateDirectory>,
    clock: Arc<dyn Clock>,
    fresh_minutes: f64,
}

impl AtmLocator {
    /// A locator cutting pages of `page_size` ATMs from `directory`.
    pub fn new(directory: Arc<dyn AtmDirectory>, page_size: usize) -> Self {
        Self { directory, page_size: page_size.max(1), states: None }
    }

    /// This locator, answering queries by availability from `states` as of `clock`,
    /// with the freshness window `fresh_minutes`.
    pub fn with_states(self, states: Arc<dyn AtmStateDirectory>, clock: Arc<dyn Clock>, fresh_minutes: f64) -> Self {
        Self { states: Some(StateSource { states, clock, fresh_minutes }), ..self }
    }
}

#[async_trait]
impl AtmInformation for AtmLocator {
    async fn snapshot(&self, by_state: bool) -> Result<AtmSnapshot, ListAtmsError> {
        let snapshot = AtmSnapshot::new(self.directory.catalog().await?, self.page_size);
        match &self.states {
            Some(source) if by_state => Ok(snapshot.with_availability(Availability {
                states: source.states.states().await?,
                now: event_now(source.clock.as_ref()),
                fresh_minutes: source.fresh_minutes,
            })),
            _ => Ok(snapshot),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::MockAtmDirectory;

    fn locator(catalog: AtmCatalog) -> AtmLocator {
        let catalog = Arc::new(catalog);
        let mut directory = MockAtmDirectory::new();
        directory.expect_catalog().returning(move || Ok(Arc::clone(&catalog)));
        AtmLocator::new(Arc::new(directory), 25)
    }

    fn page(n: u32) -> AtmQuery {
        AtmQuery { page: PageRequest::number(n), ..AtmQuery::default() }
    }

    #[tokio::test]
    async fn an_unreadable_set_is_unavailable() {
        let mut directory = MockAtmDirectory::new();
        directory.expect_catalog().returning(|| Err(StoreUnavailable::new("down")));
        let locator = AtmLocator::new(Arc::new(directory), 25);
        assert!(matches!(locator.snapshot(false).await, Err(ListAtmsError::Unavailable(_))));
    }

    #[tokio::test]
    async fn a_page_past_the_end_of_an_empty_set_is_out_of_range() {
        let snapshot = locator(AtmCatalog::empty(0)).snapshot(false).await.unwrap();
        let first = snapshot.page(&page(1)).unwrap();
        assert_eq!((first.total(), first.number(), first.last_page()), (0, 1, 1));
        assert!(matches!(snapshot.page(&page(2)), Err(ListAtmsError::PageOutOfRange(_))));
        assert_eq!(snapshot.last_page(&page(7)), 1);
        assert!(snapshot.check_page(&page(7)).is_ok(), "a page number past the last is refused when cut");
        assert!(matches!(snapshot.check_page(&page(0)), Err(ListAtmsError::PageOutOfRange(_))));
    }

    #[tokio::test]
    async fn a_snapshot_tells_the_set_it_serves_by_its_fingerprint_and_date() {
        let snapshot = locator(AtmCatalog::empty(1_000)).snapshot(false).await.unwrap();
        let again = locator(AtmCatalog::empty(1_000)).snapshot(false).await.unwrap();
        let later = locator(AtmCatalog::empty(2_000)).snapshot(false).await.unwrap();
        assert_eq!((snapshot.last_updated(), snapshot.page_size()), (1_000, 25));
        assert_eq!(snapshot.fingerprint(), again.fingerprint(), "the same set, the same fingerprint");
        assert_ne!(snapshot.fingerprint(), later.fingerprint(), "LastUpdated is part of it");
    }
}
