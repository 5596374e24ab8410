//! ATM information: listing pages of the ATM set, filtered and near-me.

use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;

use crate::atm_catalog::{AtmCatalog, AtmPage, AtmQuery, PageOutOfRange};
use crate::ports::{AtmDirectory, StoreUnavailable};

/// Why no page was returned; one variant, one status.
#[derive(Debug, thiserror::Error)]
pub enum ListAtmsError {
    /// The page is past the last one (400).
    #[error(transparent)]
    PageOutOfRange(#[from] PageOutOfRange),
    /// The ATM set cannot be read or vouched for (503).
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// What a conditional request sent (RFC 9110 §13.1), already read from its headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators<'a> {
    /// `If-None-Match`: `*` or the tags sent (their opaque part; compared weakly).
    pub if_none_match: Option<NoneMatch<'a>>,
    /// `If-Modified-Since`, seconds since the Unix epoch.
    pub if_modified_since: Option<i64>,
}

/// An `If-None-Match` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoneMatch<'a> {
    /// `*`: any current representation.
    Any,
    /// These tags.
    Tags(Vec<&'a str>),
}

/// A listing asked for.
#[derive(Debug, Clone)]
pub struct AtmRequest<'a> {
    /// The page, filters and point.
    pub query: AtmQuery,
    /// A digest of everything but the set, the page size and the page number that shapes
    /// the bytes of the answer: the filters as written in its links, the base URL, the
    /// service's version. Equal inputs give an equal tag.
    pub representation: u64,
    /// The request's validators.
    pub validators: Validators<'a>,
}

/// The answer to a listing.
#[derive(Debug)]
pub enum AtmAnswer {
    /// The caller's copy is current (304): the page's tag and the set's LastUpdated.
    NotModified {
        /// The page's strong validator.
        tag: String,
        /// When the set was last replaced, seconds since the Unix epoch.
        last_updated: i64,
    },
    /// A page to send (200).
    Page(AtmListing),
}

/// A page of ATMs, each with its brand, its stored record and (near-me) its distance.
#[derive(Debug)]
pub struct AtmListing {
    catalog: Arc<AtmCatalog>,
    page: AtmPage,
    tag: String,
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
    /// The page's strong validator.
    pub fn tag(&self) -> &str {
        &self.tag
    }

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

/// Lists ATMs in pages of a fixed size, and answers conditional requests.
pub struct AtmLocator {
    directory: Arc<dyn AtmDirectory>,
    page_size: usize,
}

impl AtmLocator {
    /// A locator cutting pages of `page_size` ATMs from `directory`.
    pub fn new(directory: Arc<dyn AtmDirectory>, page_size: usize) -> Self {
        Self { directory, page_size: page_size.max(1) }
    }

    /// The page asked for, or "not modified" when the caller's validators still hold.
    /// The page's tag is known before the page is cut: it is a function of the set (its
    /// fingerprint covers LastUpdated), the query, the page size and the representation.
    ///
    /// # Errors
    /// See [`ListAtmsError`].
    pub async fn list(&self, request: &AtmRequest<'_>) -> Result<AtmAnswer, ListAtmsError> {
        let catalog = self.directory.catalog().await?;
        let tag = self.tag(&catalog, request);
        if not_modified(&request.validators, &tag, catalog.last_updated()) {
            return Ok(AtmAnswer::NotModified { tag, last_updated: catalog.last_updated() });
        }
        let page = catalog.page(&request.query, self.page_size)?;
        Ok(AtmAnswer::Page(AtmListing { catalog, page, tag }))
    }

    fn tag(&self, catalog: &AtmCatalog, request: &AtmRequest<'_>) -> String {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (catalog.fingerprint(), request.representation, self.page_size, request.query.page).hash(&mut hasher);
        format!("{:016x}", hasher.finish())
    }
}

/// RFC 9110 §13.2.2: If-None-Match decides when present (weak comparison); otherwise
/// If-Modified-Since, when the set has not changed since the time given.
fn not_modified(validators: &Validators<'_>, tag: &str, last_updated: i64) -> bool {
    match &validators.if_none_match {
        Some(NoneMatch::Any) => true,
        Some(NoneMatch::Tags(sent)) => sent.contains(&tag),
        None => validators.if_modified_since.is_some_and(|since| last_updated <= since),
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

    fn request(page: u32, validators: Validators<'_>) -> AtmRequest<'_> {
        AtmRequest { query: AtmQuery { page, ..AtmQuery::default() }, representation: 7, validators }
    }

    fn page_of(answer: AtmAnswer) -> AtmListing {
        match answer {
            AtmAnswer::Page(listing) => listing,
            AtmAnswer::NotModified { .. } => panic!("a page was expected"),
        }
    }

    #[tokio::test]
    async fn an_unreadable_set_is_unavailable() {
        let mut directory = MockAtmDirectory::new();
        directory.expect_catalog().returning(|| Err(StoreUnavailable::new("down")));
        let locator = AtmLocator::new(Arc::new(directory), 25);
        assert!(matches!(locator.list(&request(1, Validators::default())).await, Err(ListAtmsError::Unavailable(_))));
    }

    #[tokio::test]
    async fn a_page_past_the_end_of_an_empty_set_is_out_of_range() {
        let locator = locator(AtmCatalog::empty(0));
        let first = page_of(locator.list(&request(1, Validators::default())).await.unwrap());
        assert_eq!((first.total(), first.number(), first.last_page()), (0, 1, 1));
        let past = locator.list(&request(2, Validators::default())).await;
        assert!(matches!(past, Err(ListAtmsError::PageOutOfRange(_))));
    }

    #[tokio::test]
    async fn a_tag_sent_back_is_not_modified_and_any_other_change_is_a_new_page() {
        let locator = locator(AtmCatalog::empty(1_000));
        let tag = page_of(locator.list(&request(1, Validators::default())).await.unwrap()).tag().to_owned();
        let same = Validators { if_none_match: Some(NoneMatch::Tags(vec!["other", &tag])), ..Default::default() };
        assert!(matches!(
            locator.list(&request(1, same)).await.unwrap(),
            AtmAnswer::NotModified { last_updated: 1_000, .. }
        ));
        let stale = Validators { if_none_match: Some(NoneMatch::Tags(vec!["other"])), ..Default::default() };
        assert!(matches!(locator.list(&request(1, stale)).await.unwrap(), AtmAnswer::Page(_)));
        let mut elsewhere = request(1, Validators::default());
        elsewhere.representation = 8;
        assert_ne!(page_of(locator.list(&elsewhere).await.unwrap()).tag(), tag, "the representation is in the tag");
    }

    #[tokio::test]
    async fn if_modified_since_counts_only_without_if_none_match() {
        let locator = locator(AtmCatalog::empty(1_000));
        let since = |at| Validators { if_modified_since: Some(at), ..Default::default() };
        assert!(matches!(locator.list(&request(1, since(1_000))).await.unwrap(), AtmAnswer::NotModified { .. }));
        assert!(matches!(locator.list(&request(1, since(999))).await.unwrap(), AtmAnswer::Page(_)));
        let both = Validators { if_none_match: Some(NoneMatch::Tags(vec!["stale"])), if_modified_since: Some(1_000) };
        assert!(matches!(locator.list(&request(1, both)).await.unwrap(), AtmAnswer::Page(_)));
    }
}
