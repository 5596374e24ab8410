//! The ATMs' change feed as apps read it (`GET /api/v1/atms/changes`): without a cursor,
//! a snapshot of the set as served, page by page in the listings' order, then the log
//! after the head the snapshot began at; with one, the log after it. Pages come from the
//! instance's memory (the catalog, the newest changes); an older cursor reads the store.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use crate::atm_catalog::AtmCatalog;
use crate::atm_feed::{ChangeKind, FeedCursor, FeedTail, LoggedChange, Position};
use crate::ports::{AtmChangeRecords, AtmDirectory, AtmFeedDirectory, StoreUnavailable};
use crate::posted::EventTime;

/// Why no page of the feed was given.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The cursor is older than what the store keeps, or of another store: start again
    /// without one.
    #[error("the cursor is older than the changes kept; start again without since")]
    Expired,
    /// The data cannot be served now.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// One change of a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedItem<'a> {
    /// The ATM's `Identification`.
    pub atm: &'a str,
    /// The record's brand (upserted, removed).
    pub brand: Option<&'a str>,
    /// What changed.
    pub kind: ChangeKind,
    /// When.
    pub at: EventTime,
    /// The record (upserted) or the state object (state), as JSON.
    pub body: Option<&'a str>,
}

/// The changes of a page, where they are held.
#[derive(Debug, Clone)]
enum Items {
    /// A run of the catalog's open entries, each `upserted` as of the set's date.
    Snapshot(Arc<AtmCatalog>, Range<usize>),
    /// A run of the changes the instance holds.
    Held(Arc<FeedTail>, Range<usize>),
    /// Changes read from the store.
    Read(Vec<LoggedChange>),
}

/// A page of the feed, and the cursor of the next.
#[derive(Debug, Clone)]
pub struct FeedPage {
    items: Items,
    /// Where the next page starts.
    pub next: FeedCursor,
}

fn item(logged: &LoggedChange) -> FeedItem<'_> {
    let change = &logged.change;
    FeedItem {
        atm: &change.atm,
        brand: change.brand.as_deref(),
        kind: change.kind,
        at: change.at,
        body: change.body.as_deref(),
    }
}

impl FeedPage {
    /// How many changes the page holds.
    pub fn len(&self) -> usize {
        match &self.items {
            Items::Snapshot(_, run) | Items::Held(_, run) => run.len(),
            Items::Read(changes) => changes.len(),
        }
    }

    /// Whether the page holds no change.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The page's changes, in order.
    pub fn items(&self) -> Box<dyn Iterator<Item = FeedItem<'_>> + '_> {
        match &self.items {
            Items::Snapshot(catalog, run) => {
                let at = EventTime::from_unix_micros(catalog.last_updated().saturating_mul(1_000_000));
                Box::new(run.clone().filter_map(move |index| {
                    let entry = catalog.entry(index)?;
                    Some(FeedItem {
                        atm: entry.identification(),
                        brand: Some(catalog.brand_name(entry)),
                        kind: ChangeKind::Upserted,
                        at,
                        body: Some(entry.record_json()),
                    })
                }))
            }
            Items::Held(tail, run) => Box::new(tail.changes[run.clone()].iter().map(|held| item(held))),
            Items::Read(changes) => Box::new(changes.iter().map(item)),
        }
    }
}

/// The apps' read of the feed.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AtmChangeFeed: Send + Sync {
    /// Up to `limit` changes after `since` (from the start without one).
    ///
    /// # Errors
    /// [`FeedError`].
    async fn page(&self, since: Option<FeedCursor>, limit: usize) -> Result<FeedPage, FeedError>;
}

/// The feed, from the instance's catalog and newest changes, and from the store.
pub struct AtmFeedService {
    atms: Arc<dyn AtmDirectory>,
    tail: Arc<dyn AtmFeedDirectory>,
    changes: Arc<dyn AtmChangeRecords>,
}

impl AtmFeedService {
    /// Pages from `atms`' catalog and `tail`, and from `changes` for a cursor older than
    /// the tail.
    pub fn new(
        atms: Arc<dyn AtmDirectory>,
        tail: Arc<dyn AtmFeedDirectory>,
        changes: Arc<dyn AtmChangeRecords>,
    ) -> Self {
        Self { atms, tail, changes }
    }
}

#[async_trait]
impl AtmChangeFeed for AtmFeedService {
    async fn page(&self, since: Option<FeedCursor>, limit: usize) -> Result<FeedPage, FeedError> {
        let limit = limit.max(1);
        let tail = self.tail.tail().await?;
        let cursor = match since {
            Some(cursor) => cursor,
            None => {
                FeedCursor { store: tail.store.clone(), position: Position::Snapshot { head: i64::MAX, after: None } }
            }
        };
        if cursor.store != tail.store {
            return Err(FeedError::Expired);
        }
        let store = cursor.store;
        match cursor.position {
            Position::Snapshot { head, after } => {
                let catalog = self.atms.catalog().await?;
                // The set this page is cut from is what the changes up to its head made;
                // the log resumes from the lower of that and the cursor's head (an
                // instance whose view is behind gives an older set: what it lacks is in
                // the log after its head). Changes replayed twice are harmless.
                let head = head.min(tail.set_head(catalog.feed_head()));
                if head < tail.floor {
                    return Err(FeedError::Expired);
                }
                let start = after.map_or(0, |(brand, atm)| catalog.open_after(&brand, &atm));
                let end = start.saturating_add(limit).min(catalog.len());
                let position = match end.checked_sub(1).and_then(|last| catalog.entry(last)) {
                    Some(last) if end < catalog.len() => Position::Snapshot {
                        head,
                        after: Some((catalog.brand_name(last).to_owned(), last.identification().to_owned())),
                    },
                    _ => Position::Log { after: head },
                };
                Ok(FeedPage { items: Items::Snapshot(catalog, start..end), next: FeedCursor { store, position } })
            }
            Position::Log { after } => {
                if after < tail.floor {
                    return Err(FeedError::Expired);
                }
                if (tail.from..=tail.head).contains(&after) {
                    let start = tail.changes.partition_point(|c| c.seq <= after);
                    let end = start.saturating_add(limit).min(tail.changes.len());
                    let last =
                        end.checked_sub(1).filter(|&last| last >= start).map_or(after, |last| tail.changes[last].seq);
                    let next = FeedCursor { store, position: Position::Log { after: last } };
                    return Ok(FeedPage { items: Items::Held(tail, start..end), next });
                }
                let log = self.changes.since(after, limit).await?;
                if log.store != store || after < log.floor {
                    return Err(FeedError::Expired);
                }
                if after > log.head {
                    // Beyond this store's log: a database restored from an older copy.
                    return Err(FeedError::Expired);
                }
                let last = log.changes.last().map_or(after, |c| c.seq);
                Ok(FeedPage {
                    items: Items::Read(log.changes),
                    next: FeedCursor { store, position: Position::Log { after: last } },
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atm_catalog::StoredAtm;
    use crate::atm_feed::{AtmChange, ChangeLog};
    use crate::ports::{MockAtmChangeRecords, MockAtmDirectory, MockAtmFeedDirectory};

    fn catalog(ids: &[&str], feed_head: i64) -> Arc<AtmCatalog> {
        let atms: Vec<StoredAtm> = ids
            .iter()
            .map(|id| crate::testing::stored_atm("Alfa", &serde_json::json!({"Identification": id})))
            .collect();
        Arc::new(AtmCatalog::from_stored(atms, 1_800_000_000).at_feed_head(feed_head))
    }

    /// A tail of the changes `kinds` numbered from `from + 1`, all above the floor.
    fn tail(from: i64, floor: i64, kinds: &[ChangeKind]) -> FeedTail {
        let at = EventTime::from_unix_micros(0);
        let changes = (from + 1..)
            .zip(kinds)
            .map(|(seq, &kind)| LoggedChange {
                seq,
                change: AtmChange { brand: None, atm: "A1".into(), kind, at, body: None },
            })
            .collect();
        let log = ChangeLog { store: "s1".into(), head: from + kinds.len() as i64, floor, changes };
        FeedTail::of(log, from)
    }

    fn feed(catalog: Arc<AtmCatalog>, tail: FeedTail) -> AtmFeedService {
        let mut atms = MockAtmDirectory::new();
        atms.expect_catalog().returning(move || Ok(Arc::clone(&catalog)));
        let mut held = MockAtmFeedDirectory::new();
        let tail = Arc::new(tail);
        held.expect_tail().returning(move || Ok(Arc::clone(&tail)));
        AtmFeedService::new(Arc::new(atms), Arc::new(held), Arc::new(MockAtmChangeRecords::new()))
    }

    fn snapshot(head: i64) -> FeedCursor {
        FeedCursor { store: "s1".into(), position: Position::Snapshot { head, after: None } }
    }

    #[tokio::test]
    async fn a_snapshot_page_from_an_instance_behind_resumes_the_log_from_its_own_set() {
        // The cursor began at 9 elsewhere; this instance's set is as of 5, and the tail
        // holds a change of the set at 7: the log must resume at 5, not 9.
        let kinds = [ChangeKind::State, ChangeKind::Upserted, ChangeKind::State, ChangeKind::State];
        let page = feed(catalog(&["A1"], 5), tail(5, 0, &kinds)).page(Some(snapshot(9)), 10).await.unwrap();
        assert_eq!(page.next.position, Position::Log { after: 5 });
        assert_eq!(page.items().count(), 1);
    }

    #[tokio::test]
    async fn a_fresh_start_passes_state_changes_past_the_floor_instead_of_answering_410() {
        // The set was read at 5; only states came after (the instance followed them all
        // since it loaded), and retention forgot up to 8.
        let followed = FeedTail { last_set_change: 4, ..tail(8, 8, &[ChangeKind::State; 12]) };
        let page = feed(catalog(&["A1", "A2"], 5), followed).page(None, 1).await.unwrap();
        assert_eq!(page.next.position, Position::Snapshot { head: 20, after: Some(("Alfa".into(), "A1".into())) });
        let changed = FeedTail { last_set_change: 7, ..tail(8, 8, &[ChangeKind::State; 12]) };
        let gone = feed(catalog(&["A1"], 5), changed).page(None, 1).await;
        assert!(matches!(gone, Err(FeedError::Expired)), "a change of the set after 5 was forgotten");
    }
}
