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
    /// The cursor was not one this feed gives.
    #[error("not a cursor of this feed")]
    BadCursor,
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
                let head = self.atms.catalog().await?.feed_head();
                FeedCursor { store: tail.store.clone(), position: Position::Snapshot { head, after: None } }
            }
        };
        if cursor.store != tail.store {
            return Err(FeedError::Expired);
        }
        let store = cursor.store;
        match cursor.position {
            Position::Snapshot { head, after } => {
                if head < tail.floor {
                    return Err(FeedError::Expired);
                }
                let catalog = self.atms.catalog().await?;
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
                    return Err(FeedError::BadCursor);
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
