//! The ATM set ready to serve: records serialized once, a stable order, and a spatial
//! index for near-me search.
//!
//! Pages are cut from records already in their wire form (OBIE ATM 2.3 JSON), so a page
//! costs about what copying its bytes costs. Near-me search walks an R*-tree of points
//! on the unit sphere: Euclidean (chord) distance there orders ATMs exactly as
//! great-circle distance does, anywhere on Earth, so the nearest come first without
//! sorting the set.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::num::NonZeroU32;
use std::sync::Arc;

use rstar::primitives::GeomWithData;
use rstar::{PointDistance as _, RTree};

use crate::atm::{Accessibility, AtmService};
use crate::atm_closure::{AtmClosure, HeldClosure};

/// Mean Earth radius in metres (IUGG), for distances.
const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// Half the Earth's circumference: no radius needs to be larger.
pub const MAX_RADIUS_KM: f64 = 20_037.5;

/// A point to search from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeoPoint {
    latitude: f64,
    longitude: f64,
}

impl GeoPoint {
    /// A point, if latitude is within ±90 and longitude within ±180 degrees.
    pub fn new(latitude: f64, longitude: f64) -> Option<Self> {
        (latitude.abs() <= 90.0 && longitude.abs() <= 180.0).then_some(Self { latitude, longitude })
    }

    fn unit_vector(self) -> [f64; 3] {
        let (lat, lon) = (self.latitude.to_radians(), self.longitude.to_radians());
        [lat.cos() * lon.cos(), lat.cos() * lon.sin(), lat.sin()]
    }
}

/// Great-circle distance in metres between two unit vectors (from their chord).
fn metres_between(a: [f64; 3], b: [f64; 3]) -> f64 {
    let chord = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
    2.0 * (chord / 2.0).min(1.0).asin() * EARTH_RADIUS_M
}

/// The squared chord of a great-circle distance of `km`.
fn squared_chord(km: f64) -> f64 {
    let angle = km * 1000.0 / EARTH_RADIUS_M;
    (2.0 * (angle / 2.0).sin()).powi(2)
}

/// The page a listing asks for, as the caller wrote it: a page number from 1, or a value
/// that is none (`0`, `-1`, `x`). Either is refused past the set's last page, whose
/// number only the set knows ([`PageRequest::within`], the one range check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageRequest(Option<NonZeroU32>);

impl PageRequest {
    /// The first page.
    pub const FIRST: Self = Self(Some(NonZeroU32::MIN));

    /// Page `number`; 0 is no page.
    pub fn number(number: u32) -> Self {
        Self(NonZeroU32::new(number))
    }

    /// A page as a query writes it: decimal digits only, at most nine, from 1.
    pub fn parse(raw: &str) -> Self {
        let digits = !raw.is_empty() && raw.len() <= 9 && raw.bytes().all(|b| b.is_ascii_digit());
        Self(digits.then(|| raw.parse().ok()).flatten().and_then(NonZeroU32::new))
    }

    /// Whether it is a page number (it may still be past the last page).
    pub fn is_number(self) -> bool {
        self.0.is_some()
    }

    /// The page number, or 1 for a value that is none (for cutting and tagging what
    /// [`Self::within`] then refuses).
    pub fn or_first(self) -> u32 {
        self.0.map_or(1, NonZeroU32::get)
    }

    /// The page number, when it is one of `last_page` pages.
    ///
    /// # Errors
    /// [`PageOutOfRange`] past the last page, or when it is no page number.
    pub fn within(self, last_page: u32) -> Result<u32, PageOutOfRange> {
        match self.0 {
            Some(page) if page.get() <= last_page => Ok(page.get()),
            page => Err(PageOutOfRange { page: page.map_or(0, NonZeroU32::get), last_page }),
        }
    }
}

impl Default for PageRequest {
    fn default() -> Self {
        Self::FIRST
    }
}

/// What a listing asks for; every part but the page's range already checked by the
/// caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AtmQuery {
    /// The page.
    pub page: PageRequest,
    /// Sort by distance from here, nearest first (ATMs without coordinates are left out).
    pub near: Option<GeoPoint>,
    /// Only ATMs within this many km of `near`.
    pub radius_km: Option<f64>,
    /// Only ATMs offering this service.
    pub service: Option<AtmService>,
    /// Only ATMs with this accessibility feature.
    pub accessibility: Option<Accessibility>,
    /// Only ATMs whose state offers this service now (the caller's `keep` of
    /// [`AtmCatalog::page_where`] decides which).
    pub available: Option<AtmService>,
}

impl AtmQuery {
    /// Whether the query filters by service or accessibility (otherwise every ATM, or
    /// every ATM in the radius, matches).
    fn filters(&self) -> bool {
        self.service.is_some() || self.accessibility.is_some()
    }
}

/// One ATM as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    brand: u32,
    identification: Box<str>,
    record: Box<str>,
    services: u32,
    accessibility: u32,
    position: Option<[u64; 3]>,
    closure: Option<Arc<HeldClosure>>,
}

impl Entry {
    /// The record as OBIE ATM 2.3 JSON (an object).
    pub fn record_json(&self) -> &str {
        &self.record
    }

    /// Its `Identification`.
    pub fn identification(&self) -> &str {
        &self.identification
    }

    /// Its announced closure, if it has one (in effect or to come).
    pub fn closure(&self) -> Option<&HeldClosure> {
        self.closure.as_deref()
    }

    fn matches(&self, query: &AtmQuery) -> bool {
        query.service.is_none_or(|service| self.services & service.bit() != 0)
            && query.accessibility.is_none_or(|feature| self.accessibility & feature.bit() != 0)
            && query.available.is_none_or(|service| self.services & service.bit() != 0)
    }

    fn unit_vector(&self) -> Option<[f64; 3]> {
        self.position.map(|bits| bits.map(f64::from_bits))
    }
}

/// One ATM of a page, with its distance when the listing was near-me.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Index of the entry in the catalog.
    pub entry: usize,
    /// Metres from the search point, rounded.
    pub distance_m: Option<u64>,
}

/// A page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtmPage {
    /// The page's ATMs, in order.
    pub hits: Vec<Hit>,
    /// How many ATMs match the query, over all pages.
    pub total: usize,
    /// This page's number.
    pub page: u32,
    /// The last page's number (1 when nothing matches).
    pub last_page: u32,
}

/// The requested page is past the last one, or no page number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("page {page} is not one of pages 1 to {last_page}")]
pub struct PageOutOfRange {
    /// The page asked for (0 when it was no page number).
    pub page: u32,
    /// The last page there is.
    pub last_page: u32,
}

type Indexed = GeomWithData<[f64; 3], u32>;

/// The most bytes one ATM's record may take as compact OBIE ATM 2.3 JSON: 16 KiB, 29 times
/// the largest record of a real feed (HSBC UK's 780 ATMs: 430 to 561 bytes; docs/adr/0033-page-sizes.md),
/// room for every address field at its longest and several notes of 2,000 characters. It
/// bounds what one ATM costs every caller of a page: a page is at most its page size times
/// this (400 KiB at the default 25 ATMs a page). Imports refuse a record over it, naming
/// the record.
pub const MAX_RECORD_BYTES: usize = 16 * 1024;

/// The most bytes of records one page may carry: 4 MiB, ten times the default page's
/// worst case. Kept by the page size, not by cutting pages by bytes (page numbers would
/// then depend on the records' sizes): no page size may let [`MAX_RECORD_BYTES`]-sized
/// records pass it, so the largest page size is [`MAX_PAGE_SIZE`].
pub const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// The largest page size the byte budget allows: 256 ATMs.
pub const MAX_PAGE_SIZE: usize = MAX_PAGE_BYTES / MAX_RECORD_BYTES;

/// One ATM as stored: its record in wire form (OBIE ATM 2.3 JSON, validated when it was
/// imported) beside what listings select and order by. Made once per import, at the
/// edge that read the record, so loading the set back needs no parsing and no second validation.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAtm {
    /// Its brand's name.
    pub brand: String,
    /// Its identification, unique within the brand.
    pub identification: String,
    /// The record as compact OBIE ATM 2.3 JSON (an object).
    pub record: String,
    /// Its services, as a set of [`AtmService::bit`]s.
    pub services: u32,
    /// Its accessibility features, as a set of [`Accessibility::bit`]s.
    pub accessibility: u32,
    /// Its (latitude, longitude) in degrees, when it has coordinates.
    pub coordinates: Option<(f64, f64)>,
}

impl StoredAtm {
    /// An ATM of `brand` whose validated `record` (compact OBIE ATM 2.3 JSON) lists
    /// `services` and `accessibility` and stands at `coordinates`, if known.
    pub fn new(
        brand: &str,
        identification: &str,
        record: String,
        services: &[AtmService],
        accessibility: &[Accessibility],
        coordinates: Option<(f64, f64)>,
    ) -> Self {
        Self {
            brand: brand.to_owned(),
            identification: identification.to_owned(),
            record,
            services: services.iter().fold(0, |bits, code| bits | code.bit()),
            accessibility: accessibility.iter().fold(0, |bits, code| bits | code.bit()),
            coordinates,
        }
    }
}

/// The ATM set, ready to serve, with the closures announced for it applied: the ATMs
/// whose closure is in effect are kept (a state read names them `Closed`) but listed
/// nowhere.
pub struct AtmCatalog {
    brand_names: Vec<String>,
    /// The open ATMs in brand then identification order, then the closed ones.
    entries: Vec<Entry>,
    /// How many of `entries` are open: the listings' ATMs.
    open: usize,
    /// Indexes of `entries` in identification order (the same identification may be
    /// held by several brands).
    by_identification: Vec<u32>,
    /// The open ATMs with coordinates.
    index: RTree<Indexed>,
    last_updated: i64,
    fingerprint: u64,
    /// When the next closure of an ATM of the set takes effect, if one is to come.
    next_closure: Option<i64>,
    /// The change feed's head when the set was read.
    feed_head: i64,
}

impl std::fmt::Debug for AtmCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtmCatalog")
            .field("brands", &self.brand_names.len())
            .field("atms", &self.entries.len())
            .field("open", &self.open)
            .field("last_updated", &self.last_updated)
            .finish()
    }
}

impl AtmCatalog {
    /// The set of `atms` as stored, indexed in brand then identification order. Each
    /// record's stored JSON becomes its wire form as it is: no parsing, no second copy.
    pub fn from_stored(atms: Vec<StoredAtm>, last_updated: i64) -> Self {
        Self::closing(atms, last_updated, Vec::new(), i64::MIN)
    }

    /// The set of `atms` as stored with `closures` as they stand at `now` (seconds since
    /// the epoch): an ATM whose closure is in effect is closed. The set counts as updated
    /// when its last closure took effect, if that is after `last_updated`: its pages
    /// changed then.
    pub fn closing(atms: Vec<StoredAtm>, last_updated: i64, closures: Vec<AtmClosure>, now: i64) -> Self {
        let closures: HashMap<String, Arc<HeldClosure>> = (closures.into_iter())
            .map(|closure| (closure.atm.as_str().to_owned(), Arc::new(HeldClosure::from(closure))))
            .collect();
        let mut last_updated = last_updated;
        let mut next_closure: Option<i64> = None;
        let mut keyed = Vec::with_capacity(atms.len());
        for atm in atms {
            let closure = closures.get(&atm.identification).cloned();
            let closed = closure.as_ref().is_some_and(|held| {
                let starts_at = held.closure.starts_at();
                if held.closure.in_effect(now) {
                    last_updated = last_updated.max(starts_at);
                } else {
                    next_closure = Some(next_closure.map_or(starts_at, |next| next.min(starts_at)));
                }
                held.closure.in_effect(now)
            });
            let position = atm
                .coordinates
                .and_then(|(lat, lon)| GeoPoint::new(lat, lon))
                .map(|point| point.unit_vector().map(f64::to_bits));
            let entry = Entry {
                brand: 0,
                identification: atm.identification.clone().into_boxed_str(),
                record: atm.record.into_boxed_str(),
                services: atm.services,
                accessibility: atm.accessibility,
                position,
                closure,
            };
            keyed.push((closed, atm.brand, atm.identification, entry));
        }
        keyed.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
        let open = keyed.partition_point(|(closed, ..)| !closed);

        let mut fingerprint = std::collections::hash_map::DefaultHasher::new();
        (last_updated, open).hash(&mut fingerprint);
        let mut brand_names: Vec<String> = Vec::new();
        let mut entries = Vec::with_capacity(keyed.len());
        for (_, brand, _, mut entry) in keyed {
            if brand_names.last() != Some(&brand) {
                brand.hash(&mut fingerprint);
                brand_names.push(brand);
            }
            entry.brand = (brand_names.len() - 1) as u32;
            entry.record.hash(&mut fingerprint);
            entry.closure.as_ref().map(|held| &held.closure).hash(&mut fingerprint);
            entries.push(entry);
        }
        let points = entries[..open]
            .iter()
            .enumerate()
            .filter_map(|(i, entry)| entry.unit_vector().map(|v| GeomWithData::new(v, i as u32)))
            .collect();
        let mut by_identification: Vec<u32> = (0..entries.len() as u32).collect();
        by_identification.sort_by(|&a, &b| entries[a as usize].identification.cmp(&entries[b as usize].identification));
        Self {
            brand_names,
            entries,
            open,
            by_identification,
            index: RTree::bulk_load(points),
            last_updated,
            fingerprint: fingerprint.finish(),
            next_closure,
            feed_head: 0,
        }
    }

    /// An empty catalog, updated at `last_updated` (fingerprinted as a stored empty set is).
    pub fn empty(last_updated: i64) -> Self {
        let mut fingerprint = std::collections::hash_map::DefaultHasher::new();
        last_updated.hash(&mut fingerprint);
        Self {
            brand_names: Vec::new(),
            entries: Vec::new(),
            open: 0,
            by_identification: Vec::new(),
            index: RTree::new(),
            last_updated,
            fingerprint: fingerprint.finish(),
            next_closure: None,
            feed_head: 0,
        }
    }

    /// When the set was last replaced, seconds since the Unix epoch.
    pub fn last_updated(&self) -> i64 {
        self.last_updated
    }

    /// A fingerprint of the whole set (records, brands, closures, LastUpdated): equal
    /// fingerprints, equal sets. Stable for one build of the service.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// How many open ATMs the set holds: those the listings serve, at indexes `0..len`.
    pub fn len(&self) -> usize {
        self.open
    }

    /// How many ATMs the set holds, closed ones too.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set holds no open ATM.
    pub fn is_empty(&self) -> bool {
        self.open == 0
    }

    /// The entry at `index` (from a [`Hit`], or [`Self::with_identification`]).
    pub fn entry(&self, index: usize) -> Option<&Entry> {
        self.entries.get(index)
    }

    /// This catalog, read when the change feed's head was `head`: the set is what the
    /// changes up to it made.
    pub fn at_feed_head(mut self, head: i64) -> Self {
        self.feed_head = head;
        self
    }

    /// The change feed's head when the set was read.
    pub fn feed_head(&self) -> i64 {
        self.feed_head
    }

    /// The index of the first open entry after the record `(brand, identification)` in
    /// the listings' order (whether or not the set still holds it).
    pub fn open_after(&self, brand: &str, identification: &str) -> usize {
        self.entries[..self.open].partition_point(|entry| {
            (self.brand_names[entry.brand as usize].as_str(), entry.identification.as_ref()) <= (brand, identification)
        })
    }

    /// The brand of `entry` (one of this catalog's).
    pub fn brand_name(&self, entry: &Entry) -> &str {
        &self.brand_names[entry.brand as usize]
    }

    /// Whether the entry at `index` is closed (its closure in effect).
    pub fn is_closed(&self, index: usize) -> bool {
        index >= self.open
    }

    /// When the next closure announced for an ATM of the set takes effect (seconds since
    /// the epoch), if one is to come: the catalog is out of date from then on.
    pub fn next_closure(&self) -> Option<i64> {
        self.next_closure
    }

    /// The indexes of the entries whose `Identification` is `identification` (one per
    /// brand that holds it), open or closed, in the catalog's order.
    pub fn with_identification<'a>(&'a self, identification: &'a str) -> impl Iterator<Item = usize> + 'a {
        let key = |&i: &u32| self.entries[i as usize].identification.as_ref();
        let start = self.by_identification.partition_point(|i| key(i) < identification);
        self.by_identification[start..].iter().take_while(move |i| key(i) == identification).map(|&i| i as usize)
    }

    /// The brand name of the entry at `index`.
    pub fn brand_of(&self, index: usize) -> Option<&str> {
        self.entries.get(index).and_then(|entry| self.brand_names.get(entry.brand as usize)).map(String::as_str)
    }

    /// Page `query.page` of `page_size` ATMs matching `query`.
    ///
    /// # Errors
    /// [`PageOutOfRange`] past the last page (page 1 always exists).
    pub fn page(&self, query: &AtmQuery, page_size: usize) -> Result<AtmPage, PageOutOfRange> {
        self.page_where(query, page_size, &|_| true)
    }

    /// Page `query.page` of `page_size` ATMs matching `query` whose entry index `keep`
    /// keeps (what the catalog cannot know: an ATM's state now).
    ///
    /// # Errors
    /// [`PageOutOfRange`] past the last page (page 1 always exists).
    pub fn page_where(
        &self,
        query: &AtmQuery,
        page_size: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Result<AtmPage, PageOutOfRange> {
        let filters = query.filters() || query.available.is_some();
        let page_size = page_size.max(1);
        let offset = (query.page.or_first() as usize - 1).saturating_mul(page_size);
        let (total, hits) = match query.near {
            None => {
                let open = &self.entries[..self.open];
                let matches = |(index, entry): &(usize, &Entry)| entry.matches(query) && keep(*index);
                let total = if filters { open.iter().enumerate().filter(matches).count() } else { open.len() };
                let hits = open
                    .iter()
                    .enumerate()
                    .filter(matches)
                    .skip(offset)
                    .take(page_size)
                    .map(|(entry, _)| Hit { entry, distance_m: None });
                (total, sized(hits, total.saturating_sub(offset).min(page_size)))
            }
            Some(point) => {
                let origin = point.unit_vector();
                let matching =
                    |item: &&Indexed| self.entries[item.data as usize].matches(query) && keep(item.data as usize);
                let limit = query.radius_km.map(squared_chord);
                let hit = |item: &Indexed| Hit {
                    entry: item.data as usize,
                    distance_m: Some(metres_between(origin, *item.geom()).round() as u64),
                };
                // Within a radius, the walk that counts the matches keeps them while they
                // are few, and the page is cut from those; otherwise the page is walked
                // nearest first from the start.
                let within = limit.map(|limit| {
                    let mut kept = Vec::new();
                    let total = self
                        .index
                        .locate_within_distance(origin, limit)
                        .filter(matching)
                        .inspect(|item| {
                            if kept.len() < FEW_WITHIN {
                                kept.push((item.geom().distance_2(&origin), *item));
                            }
                        })
                        .count();
                    (total, (total <= FEW_WITHIN).then_some(kept))
                });
                match within {
                    Some((total, Some(mut kept))) => {
                        let end = total.min(offset.saturating_add(page_size));
                        let nearer = |a: &(f64, &Indexed), b: &(f64, &Indexed)| {
                            a.0.total_cmp(&b.0).then(a.1.data.cmp(&b.1.data))
                        };
                        if end > 0 {
                            kept.select_nth_unstable_by(end - 1, nearer);
                            kept[..end].sort_unstable_by(nearer);
                        }
                        (total, kept.get(offset..end).unwrap_or_default().iter().map(|(_, item)| hit(item)).collect())
                    }
                    _ => {
                        let total = match within {
                            Some((total, _)) => total,
                            None => self.index.iter().filter(matching).count(),
                        };
                        let hits = self
                            .index
                            .nearest_neighbor_iter_with_distance_2(origin)
                            .take_while(|(_, squared)| limit.is_none_or(|limit| *squared <= limit))
                            .map(|(item, _)| item)
                            .filter(matching)
                            .skip(offset)
                            .take(page_size)
                            .map(hit);
                        (total, sized(hits, total.saturating_sub(offset).min(page_size)))
                    }
                }
            }
        };
        let last_page = total.div_ceil(page_size).max(1);
        let last_page = u32::try_from(last_page).unwrap_or(u32::MAX);
        let page = query.page.within(last_page)?;
        Ok(AtmPage { hits, total, page, last_page })
    }
}

/// Up to this many matches within a near-me radius, the walk that counts them keeps them
/// and the page is cut from those (nearest first by sorting what the page needs); more,
/// and each page walks the index nearest first instead. The choice depends on the query
/// only, never on the page, so every page of a query is cut in the same order: by
/// distance, then by the ATMs' order (two ATMs can stand at one address). At 25 km
/// around a city centre of the 100,000-ATM set the walk nearest first was three
/// quarters of the page's cost (callgrind, issue 25).
const FEW_WITHIN: usize = 1024;

/// The hits of a page, in a list made the size the page will have: a filtered iterator
/// cannot tell `collect` its length, and the list grew (and was copied) three times a page.
fn sized(hits: impl Iterator<Item = Hit>, expected: usize) -> Vec<Hit> {
    let mut list = Vec::with_capacity(expected);
    list.extend(hits);
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_decimal_digits_from_1_and_refused_past_the_last() {
        assert_eq!(PageRequest::parse("3"), PageRequest::number(3));
        for none in ["0", "-1", "x", "1.0", "+2", " 1", "9999999999", ""] {
            assert!(!PageRequest::parse(none).is_number(), "{none:?}");
            assert_eq!(PageRequest::parse(none).within(4), Err(PageOutOfRange { page: 0, last_page: 4 }));
        }
        assert_eq!(PageRequest::number(4).within(4), Ok(4));
        assert_eq!(PageRequest::number(5).within(4), Err(PageOutOfRange { page: 5, last_page: 4 }));
    }

    fn atm(id: &str, services: &[&str], at: Option<(&str, &str)>) -> serde_json::Value {
        let mut record = serde_json::json!({
            "Identification": id,
            "ATMServices": services,
            "SupportedCurrencies": ["MXN"],
            "Location": {"PostalAddress": {"Country": "MX"}}
        });
        if let Some((lat, lon)) = at {
            record["Location"]["PostalAddress"]["GeoLocation"] =
                serde_json::json!({"GeographicCoordinates": {"Latitude": lat, "Longitude": lon}});
        }
        record
    }

    fn brand(name: &str, atms: Vec<serde_json::Value>) -> Vec<StoredAtm> {
        atms.iter().map(|record| crate::testing::stored_atm(name, record)).collect()
    }

    /// Zócalo (CDMX), Ángel de la Independencia (~3.3 km west), Puebla (~100 km), and one
    /// without coordinates.
    fn catalog() -> AtmCatalog {
        let mut records = brand("Zeta", vec![atm("Z2", &["Balance"], Some(("19.0414", "-98.2063")))]);
        records.extend(brand(
            "Alfa",
            vec![
                atm("A2", &["CashWithdrawal"], Some(("19.4270", "-99.1677"))),
                atm("A1", &["CashWithdrawal", "Balance"], Some(("19.4326", "-99.1332"))),
                atm("A3", &["Balance"], None),
            ],
        ));
        AtmCatalog::from_stored(records, 1_800_000_000)
    }

    fn ids(catalog: &AtmCatalog, page: &AtmPage) -> Vec<String> {
        page.hits
            .iter()
            .map(|hit| {
                let record: serde_json::Value =
                    serde_json::from_str(catalog.entry(hit.entry).unwrap().record_json()).unwrap();
                record["Identification"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    #[test]
    fn an_imported_atm_is_stored_once_with_what_listings_filter_and_sort_on() {
        let stored = brand("Alfa", vec![atm("A1", &["Balance", "PINChange"], Some(("19.4326", "-99.1332")))]);
        assert_eq!(stored.len(), 1);
        let one = &stored[0];
        assert_eq!((one.brand.as_str(), one.identification.as_str()), ("Alfa", "A1"));
        assert_eq!(one.services, AtmService::Balance.bit() | AtmService::PinChange.bit());
        assert_eq!(one.coordinates, Some((19.4326, -99.1332)));
        let record: serde_json::Value = serde_json::from_str(&one.record).unwrap();
        assert_eq!(record["ATMServices"], serde_json::json!(["Balance", "PINChange"]));
        assert_eq!(record["Location"]["PostalAddress"]["GeoLocation"]["GeographicCoordinates"]["Latitude"], "19.4326");
    }

    #[test]
    fn a_record_is_served_exactly_as_stored() {
        let stored = brand("Alfa", vec![atm("A1", &["Balance"], None)]);
        let catalog = AtmCatalog::from_stored(stored.clone(), 0);
        assert_eq!(catalog.entry(0).unwrap().record_json(), stored[0].record);
    }

    #[test]
    fn the_listing_is_in_brand_then_identification_order_across_pages() {
        let catalog = catalog();
        let first = catalog.page(&AtmQuery { page: PageRequest::number(1), ..AtmQuery::default() }, 3).unwrap();
        assert_eq!(ids(&catalog, &first), ["A1", "A2", "A3"]);
        assert_eq!((first.total, first.last_page), (4, 2));
        let second = catalog.page(&AtmQuery { page: PageRequest::number(2), ..AtmQuery::default() }, 3).unwrap();
        assert_eq!(ids(&catalog, &second), ["Z2"]);
        assert_eq!(catalog.brand_of(second.hits[0].entry), Some("Zeta"));
    }

    #[test]
    fn a_page_past_the_last_is_out_of_range_but_page_one_always_exists() {
        let catalog = catalog();
        assert_eq!(
            catalog.page(&AtmQuery { page: PageRequest::number(3), ..AtmQuery::default() }, 3),
            Err(PageOutOfRange { page: 3, last_page: 2 })
        );
        let nothing =
            AtmQuery { page: PageRequest::number(1), service: Some(AtmService::ChequeDeposits), ..AtmQuery::default() };
        let empty = catalog.page(&nothing, 3).unwrap();
        assert_eq!((empty.total, empty.last_page, empty.hits.len()), (0, 1, 0));
    }

    #[test]
    fn near_me_sorts_by_distance_and_reports_metres() {
        let catalog = catalog();
        let zocalo = GeoPoint::new(19.4326, -99.1332).unwrap();
        let page = catalog
            .page(&AtmQuery { page: PageRequest::number(1), near: Some(zocalo), ..AtmQuery::default() }, 10)
            .unwrap();
        assert_eq!(ids(&catalog, &page), ["A1", "A2", "Z2"], "no coordinates, no place in a near-me listing");
        assert_eq!(page.hits[0].distance_m, Some(0));
        let to_angel = page.hits[1].distance_m.unwrap();
        assert!((3_500..3_800).contains(&to_angel), "{to_angel}");
        let to_puebla = page.hits[2].distance_m.unwrap();
        assert!((100_000..110_000).contains(&to_puebla), "{to_puebla}");
    }

    /// `count` ATMs on a grid around the Zócalo, every third one doubled at the same
    /// coordinates (ATMs side by side at one address), every other one with Balance.
    fn grid(count: usize) -> AtmCatalog {
        let records = (0..count)
            .map(|i| {
                let spot = i - i % 3 / 2;
                let (lat, lon) = (19.40 + (spot % 40) as f64 * 0.002, -99.16 + (spot / 40) as f64 * 0.002);
                let services: &[&str] = if i % 2 == 0 { &["Balance"] } else { &["CashWithdrawal"] };
                atm(&format!("G{i:05}"), services, Some((&format!("{lat:.4}"), &format!("{lon:.4}"))))
            })
            .collect();
        AtmCatalog::from_stored(brand("Grid", records), 1_800_000_000)
    }

    /// Every page of a query in turn, as a client pages through it.
    fn all_pages(catalog: &AtmCatalog, query: &AtmQuery, page_size: usize) -> (Vec<String>, Vec<u64>) {
        let first = catalog.page(query, page_size).unwrap();
        let (mut ids_seen, mut metres) = (Vec::new(), Vec::new());
        for page in 1..=first.last_page {
            let cut = catalog.page(&AtmQuery { page: PageRequest::number(page), ..query.clone() }, page_size).unwrap();
            assert_eq!(cut.total, first.total);
            ids_seen.extend(ids(catalog, &cut));
            metres.extend(cut.hits.iter().map(|hit| hit.distance_m.unwrap()));
        }
        (ids_seen, metres)
    }

    #[test]
    fn near_me_pages_are_cut_alike_from_few_matches_and_from_many() {
        let zocalo = GeoPoint::new(19.4326, -99.1332).unwrap();
        for (count, radius_km, service) in
            [(300, 3.0, None), (300, 50.0, Some(AtmService::Balance)), (3000, 50.0, None), (3000, 2.0, None)]
        {
            let catalog = grid(count);
            let query = AtmQuery {
                page: PageRequest::number(1),
                near: Some(zocalo),
                radius_km: Some(radius_km),
                service,
                ..AtmQuery::default()
            };
            let (paged, metres) = all_pages(&catalog, &query, 7);
            let unbounded = all_pages(&catalog, &AtmQuery { radius_km: None, ..query.clone() }, 7);
            let within = unbounded.1.iter().filter(|&&m| m as f64 <= radius_km * 1000.0 + 1.0).count();
            assert_eq!(paged.len(), within, "{count} ATMs, {radius_km} km: every match once");
            let mut unique = paged.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), paged.len(), "{count} ATMs, {radius_km} km: no ATM on two pages");
            assert!(metres.is_sorted(), "{count} ATMs, {radius_km} km: nearest first across pages");
            assert_eq!(metres[..], unbounded.1[..metres.len()], "the same distances as without a radius");
        }
    }

    #[test]
    fn radius_and_service_filters_narrow_the_total_too() {
        let catalog = catalog();
        let zocalo = GeoPoint::new(19.4326, -99.1332).unwrap();
        let within_10_km =
            AtmQuery { page: PageRequest::number(1), near: Some(zocalo), radius_km: Some(10.0), ..AtmQuery::default() };
        let page = catalog.page(&within_10_km, 10).unwrap();
        assert_eq!((ids(&catalog, &page), page.total), (vec!["A1".to_owned(), "A2".to_owned()], 2));
        let balance = AtmQuery { service: Some(AtmService::Balance), ..within_10_km };
        let page = catalog.page(&balance, 10).unwrap();
        assert_eq!((ids(&catalog, &page), page.total), (vec!["A1".to_owned()], 1));
    }

    #[test]
    fn the_fingerprint_changes_with_the_data_and_with_last_updated() {
        let a = catalog();
        assert_eq!(a.fingerprint(), catalog().fingerprint());
        let later = AtmCatalog::from_stored(brand("Alfa", vec![atm("A1", &[], None)]), 1_800_000_000);
        assert_ne!(a.fingerprint(), later.fingerprint());
        let same_data_later = AtmCatalog::from_stored(brand("Alfa", vec![atm("A1", &[], None)]), 1_800_000_001);
        assert_ne!(later.fingerprint(), same_data_later.fingerprint());
    }

    #[test]
    fn an_atm_is_listed_nowhere_from_its_closure_date_but_still_found_by_its_id() {
        use crate::atm_closure::{AtmClosure, day_start};
        let closes_on = time::macros::date!(2027 - 03 - 01);
        let closure = |id: &str| AtmClosure {
            atm: crate::atm_state::AtmId::parse(id).unwrap(),
            closes_on,
            explanation: crate::text::Explanation::parse("The shop closes").unwrap(),
            short_notice: None,
            announced_at: 0,
        };
        let records = || {
            let mut records = brand("Zeta", vec![atm("Z2", &["Balance"], Some(("19.0414", "-98.2063")))]);
            records.extend(brand("Alfa", vec![atm("A1", &["Balance"], Some(("19.4326", "-99.1332")))]));
            records
        };
        let midnight = day_start(closes_on);
        let before = AtmCatalog::closing(records(), 1_800_000_000, vec![closure("A1")], midnight - 1);
        assert_eq!((before.len(), before.next_closure()), (2, Some(midnight)), "announced: still listed");
        assert!(before.entry(0).unwrap().closure().is_some(), "with its closure");

        let after = AtmCatalog::closing(records(), 1_800_000_000, vec![closure("A1"), closure("nope")], midnight);
        let zocalo = GeoPoint::new(19.4326, -99.1332).unwrap();
        for query in [AtmQuery::default(), AtmQuery { near: Some(zocalo), ..AtmQuery::default() }] {
            let page = after.page(&query, 10).unwrap();
            assert_eq!((ids(&after, &page), page.total), (vec!["Z2".to_owned()], 1), "{query:?}");
        }
        assert_eq!((after.len(), after.next_closure()), (1, None));
        let found: Vec<usize> = after.with_identification("A1").collect();
        assert_eq!(found.len(), 1, "a closed ATM is still found by its id");
        assert!(after.is_closed(found[0]) && !after.is_closed(0));
        assert_eq!(after.last_updated(), midnight, "the set changed when the closure took effect");
        assert_ne!(after.fingerprint(), before.fingerprint());
    }

    #[test]
    fn points_off_the_globe_are_refused() {
        assert!(GeoPoint::new(90.1, 0.0).is_none());
        assert!(GeoPoint::new(0.0, -180.5).is_none());
        assert!(GeoPoint::new(-90.0, 180.0).is_some());
    }
}
