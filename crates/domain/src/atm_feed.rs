//! The ATMs' change feed (`GET /api/v1/atms/changes`, issue 45): every change of what
//! apps are shown of the ATMs, in the order the store committed it, so an app keeps a
//! copy in step by asking for what came after the last change it read.
//!
//! Writers append changes in the transaction that makes them, each numbered by the
//! store under one lock that every such writer takes last ([ADR 0049]): numbers become
//! visible in the order they were given, so a reader that read up to `n` never finds a
//! smaller number later. A feed read without a cursor starts with a snapshot of the ATM
//! set as served, taken in key order, then the log after the head it began at.
//!
//! [ADR 0049]: ../../../docs/adr/0049-atm-change-feed.md

use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::atm_catalog::StoredAtm;
use crate::atm_closure::AtmClosure;
use crate::atm_state::{AtmId, AtmState, Reported, Services};
use crate::ports::AtmKey;
use crate::posted::EventTime;

/// The most changes one page may hold.
pub const MOST_CHANGES: usize = 1_000;

/// The changes a page holds unless `limit` says otherwise.
pub const DEFAULT_CHANGES: usize = 500;

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// The ATM's record was added or replaced.
    Upserted,
    /// The ATM left the set as served (dropped by an import, or closed).
    Removed,
    /// Its state or closure changed.
    State,
}

impl ChangeKind {
    /// Its name on the wire and in the store.
    pub fn name(self) -> &'static str {
        match self {
            Self::Upserted => "upserted",
            Self::Removed => "removed",
            Self::State => "state",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Upserted, Self::Removed, Self::State].into_iter().find(|kind| kind.name() == name)
    }
}

/// One change, as its writer appends it (the store numbers it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtmChange {
    /// The brand of the record (upserted and removed; a state is every brand's).
    pub brand: Option<String>,
    /// The ATM's `Identification`.
    pub atm: String,
    /// What it did.
    pub kind: ChangeKind,
    /// When it happened.
    pub at: EventTime,
    /// The record, as OBIE ATM 2.3 JSON (upserted), or the state object (state).
    pub body: Option<String>,
}

impl AtmChange {
    /// `atm`'s record added or replaced at `at`.
    pub fn upserted(atm: &StoredAtm, at: EventTime) -> Self {
        Self {
            brand: Some(atm.brand.clone()),
            atm: atm.identification.clone(),
            kind: ChangeKind::Upserted,
            at,
            body: Some(atm.record.clone()),
        }
    }

    /// The record `key` (brand, identification) gone at `at`.
    pub fn removed((brand, atm): &AtmKey, at: EventTime) -> Self {
        Self { brand: Some(brand.clone()), atm: atm.clone(), kind: ChangeKind::Removed, at, body: None }
    }

    /// `atm`'s state now `state` (none heard yet) with `closure`, as the state read shows
    /// an ATM whose state is fresh, at `at`: `Closed` once `closure` is in effect then.
    pub fn state(atm: &AtmId, state: Option<&AtmState>, closure: Option<&AtmClosure>, at: EventTime) -> Self {
        let closed = closure.filter(|closure| closure.in_effect(at.unix_micros().div_euclid(1_000_000)));
        let body = match closed {
            Some(closure) => closed_object(atm, closure),
            None => state_object(atm, state, closure),
        };
        Self { brand: None, atm: atm.as_str().to_owned(), kind: ChangeKind::State, at, body: Some(body.to_string()) }
    }
}

/// The state object of `atm`, as `GET /api/v1/atms/state` shows it while `state` is
/// fresh: `Unknown` only when never heard of.
fn state_object(atm: &AtmId, state: Option<&AtmState>, closure: Option<&AtmClosure>) -> Value {
    let mut object = json!({"atmId": atm.as_str()});
    let shown = match state {
        None => "Unknown",
        Some(state) if state.state == Reported::OutOfService => "OutOfService",
        Some(state) if state.unavailable != Services::default() => "Limited",
        Some(_) => "InService",
    };
    object["state"] = json!(shown);
    let services: Vec<&str> =
        state.map(|s| s.unavailable.iter().map(|service| service.name()).collect()).unwrap_or_default();
    object["unavailableServices"] = json!(services);
    if let Some(state) = state {
        object["since"] = json!(state.since.to_string());
        if let Some(back) = state.expected_back_at {
            object["expectedBackAt"] = json!(back.to_string());
        }
        if let Some(reason) = &state.reason {
            object["reason"] = json!(reason.as_str());
        }
    }
    if let Some(closure) = closure {
        object["closure"] =
            json!({"closesOn": closure.closes_on.to_string(), "explanation": closure.explanation.as_str()});
    }
    object
}

/// The state object of an ATM whose `closure` is in effect.
fn closed_object(atm: &AtmId, closure: &AtmClosure) -> Value {
    json!({
        "atmId": atm.as_str(),
        "state": "Closed",
        "unavailableServices": [],
        "since": format!("{}T00:00:00Z", closure.closes_on),
        "closure": {"closesOn": closure.closes_on.to_string(), "explanation": closure.explanation.as_str()},
    })
}

/// A change as the store numbered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedChange {
    /// Its number: the order of the commits.
    pub seq: i64,
    /// The change.
    pub change: AtmChange,
}

/// What the store's change log holds, and the changes a read found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeLog {
    /// The store's identity: a cursor of another store (a copy, a restored one) is not
    /// this one's.
    pub store: String,
    /// The highest number given.
    pub head: i64,
    /// Every change numbered above this is kept; a cursor below it is too old.
    pub floor: i64,
    /// The changes read, by number.
    pub changes: Vec<LoggedChange>,
}

/// The newest changes as an instance holds them, to serve the feed's pages from memory:
/// those numbered above `from`, up to `head`. A cursor below `from` is read from the
/// store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedTail {
    /// The store's identity.
    pub store: String,
    /// Every change above it is kept in the store.
    pub floor: i64,
    /// The changes held are those numbered above this.
    pub from: i64,
    /// The highest number held.
    pub head: i64,
    /// The changes numbered `from + 1 ..= head`, in order (shared: following the log
    /// copies pointers, not records).
    pub changes: Vec<Arc<LoggedChange>>,
    /// The number of the newest change of the set (`upserted`, `removed`) followed, or
    /// the first tail's `from` when none was: no change after it altered the set served.
    pub last_set_change: i64,
}

impl FeedTail {
    /// The most changes an instance holds.
    pub const MOST: usize = 10_000;

    /// The tail `log` gives, read after `from`: its changes (the store may have had more
    /// than were read; the next read follows on from the last).
    pub fn of(log: ChangeLog, from: i64) -> Self {
        let from = from.max(log.floor);
        let head = log.changes.last().map_or(from, |c| c.seq);
        let last_set_change = last_set_change(&log.changes).unwrap_or(from);
        let changes = log.changes.into_iter().map(Arc::new).collect();
        Self { store: log.store, floor: log.floor, from, head, changes, last_set_change }
    }

    /// This tail with `log`'s changes (read after its `head`) added, keeping the newest
    /// [`Self::MOST`]: `None` when `log` is another store's or does not follow on (the
    /// store was replaced, or its floor passed what is held), to be read whole again.
    pub fn followed_by(&self, log: ChangeLog) -> Option<Self> {
        let follows = log.changes.first().is_none_or(|c| c.seq == self.head + 1);
        if log.store != self.store || log.floor > self.head || !follows {
            return None;
        }
        let head = log.changes.last().map_or(self.head, |c| c.seq);
        let last_set_change = last_set_change(&log.changes).unwrap_or(self.last_set_change);
        let mut changes = self.changes.clone();
        changes.extend(log.changes.into_iter().map(Arc::new));
        changes.drain(..changes.len().saturating_sub(Self::MOST));
        let from = changes.first().map_or(head, |c| c.seq - 1).max(log.floor);
        Some(Self { store: log.store, floor: log.floor, from, head, changes, last_set_change })
    }

    /// The log's head as far as the set goes, for a catalog read at `catalog_head`: this
    /// tail's head when no change of the set came after the catalog's (only states: the
    /// catalog is the set as of the newest change held), else the catalog's own.
    pub fn set_head(&self, catalog_head: i64) -> i64 {
        if (self.last_set_change..=self.head).contains(&catalog_head) { self.head } else { catalog_head }
    }
}

/// The number of the newest change of the set among `changes`.
fn last_set_change(changes: &[LoggedChange]) -> Option<i64> {
    changes.iter().rev().find(|c| c.change.kind != ChangeKind::State).map(|c| c.seq)
}

/// Where a reader of the feed stands: the opaque `since` of the next page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedCursor {
    /// The store's identity ([`ChangeLog::store`]).
    pub store: String,
    /// Where in the feed.
    pub position: Position,
}

/// A place in the feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// In the snapshot that began at the log's `head`, after the record `after` (brand,
    /// identification) of the set's order; none read yet when `None`.
    Snapshot {
        /// The log's head when the snapshot began: the log is read after it next.
        head: i64,
        /// The last record read.
        after: Option<AtmKey>,
    },
    /// In the log, after change `after`.
    Log {
        /// The last change read.
        after: i64,
    },
}

/// A cursor that is no cursor of this feed's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a cursor of this feed")]
pub struct BadCursor;

/// `text`'s bytes as lower-case hex, written into `out`.
fn push_hex(out: &mut String, text: &str) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in text.bytes() {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> =
        (0..text.len()).step_by(2).map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok()).collect();
    String::from_utf8(bytes?).ok()
}

impl fmt::Display for FeedCursor {
    /// `l.STORE.N` in the log; `s.STORE.HEAD[.BRAND.ID]` (hex) in the snapshot: letters,
    /// digits and dots only, so it goes into a URL as it is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written piece by piece: a page writes one, and `write!`'s machinery cost more
        // than the rest of it.
        let mut text = String::with_capacity(self.store.len() + 96);
        let number = |text: &mut String, n: i64| text.push_str(itoa::Buffer::new().format(n));
        match &self.position {
            Position::Log { after } => {
                text.push_str("l.");
                text.push_str(&self.store);
                text.push('.');
                number(&mut text, *after);
            }
            Position::Snapshot { head, after } => {
                text.push_str("s.");
                text.push_str(&self.store);
                text.push('.');
                number(&mut text, *head);
                if let Some((brand, atm)) = after {
                    text.push('.');
                    push_hex(&mut text, brand);
                    text.push('.');
                    push_hex(&mut text, atm);
                }
            }
        }
        f.write_str(&text)
    }
}

impl FeedCursor {
    /// Reads a cursor as [`FeedCursor`]'s `Display` writes it.
    ///
    /// # Errors
    /// [`BadCursor`] for anything else.
    pub fn parse(raw: &str) -> Result<Self, BadCursor> {
        let parts: Vec<&str> = raw.split('.').collect();
        let number =
            |text: &str| text.parse::<i64>().ok().filter(|n| *n >= 0 && text.bytes().all(|b| b.is_ascii_digit()));
        let store = |text: &str| {
            (!text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_alphanumeric()))
                .then(|| text.to_owned())
        };
        let position = match parts.as_slice() {
            ["l", _, after] => Position::Log { after: number(after).ok_or(BadCursor)? },
            ["s", _, head] => Position::Snapshot { head: number(head).ok_or(BadCursor)?, after: None },
            ["s", _, head, brand, atm] => Position::Snapshot {
                head: number(head).ok_or(BadCursor)?,
                after: Some((unhex(brand).ok_or(BadCursor)?, unhex(atm).ok_or(BadCursor)?)),
            },
            _ => return Err(BadCursor),
        };
        Ok(Self { store: store(parts[1]).ok_or(BadCursor)?, position })
    }
}

/// The changes an edit of the set makes, for the feed, at `now` (seconds since the
/// epoch): one per record added or replaced (`upserted`) but of an ATM closed at `now`
/// (listed nowhere), and one per record removed (`removed`), closed or not: a closure
/// that came due a moment ago may not have fed its removal yet, and goes with its ATM.
pub fn set_changes(closures: &[AtmClosure], upserts: &[StoredAtm], removals: &[AtmKey], now: i64) -> Vec<AtmChange> {
    let at = EventTime::from_unix_micros(now.saturating_mul(1_000_000));
    let closed = |atm: &str| closures.iter().any(|closure| closure.atm.as_str() == atm && closure.in_effect(now));
    let upserted = upserts.iter().filter(|atm| !closed(&atm.identification)).map(|atm| AtmChange::upserted(atm, at));
    upserted.chain(removals.iter().map(|key| AtmChange::removed(key, at))).collect()
}

/// The `state` changes of the ATMs whose state an apply changed (`changed`, the state
/// each now has), received at `received_at`, each dated by its newest event: none for an
/// ATM closed then (listed nowhere; its removal is in the feed).
pub fn state_changes(
    changed: &[(&AtmId, AtmState)],
    closures: &[AtmClosure],
    received_at: EventTime,
) -> Vec<AtmChange> {
    let now = received_at.unix_micros().div_euclid(1_000_000);
    changed
        .iter()
        .filter_map(|(atm, state)| {
            let closure = closures.iter().find(|closure| &closure.atm == *atm);
            let closed = closure.is_some_and(|closure| closure.in_effect(now));
            (!closed).then(|| AtmChange::state(atm, Some(state), closure, state.heard.0))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_feeds_each_record_it_changes_but_never_brings_back_a_closed_atm() {
        let atm = |id: &str| crate::testing::stored_atm("Alfa", &json!({"Identification": id}));
        let closure = AtmClosure {
            atm: AtmId::parse("A2").unwrap(),
            closes_on: time::macros::date!(2027 - 03 - 01),
            explanation: crate::text::Explanation::parse("Gone").unwrap(),
            short_notice: None,
            announced_at: 0,
        };
        let midnight = crate::atm_closure::day_start(closure.closes_on);
        let removals = [("Alfa".to_owned(), "A2".to_owned())];
        let told = |now: i64| -> Vec<(ChangeKind, String)> {
            let changes = set_changes(std::slice::from_ref(&closure), &[atm("A1"), atm("A2")], &removals, now);
            changes.into_iter().map(|change| (change.kind, change.atm)).collect()
        };
        let all = [(ChangeKind::Upserted, "A1"), (ChangeKind::Upserted, "A2"), (ChangeKind::Removed, "A2")];
        assert_eq!(told(midnight - 1), all.map(|(kind, id)| (kind, id.to_owned())), "announced: still served");
        let closed = [(ChangeKind::Upserted, "A1"), (ChangeKind::Removed, "A2")];
        assert_eq!(told(midnight), closed.map(|(kind, id)| (kind, id.to_owned())), "closed: not upserted again");
    }

    #[test]
    fn a_cursor_reads_back_as_written_and_nothing_else_is_one() {
        let cursors = [
            FeedCursor { store: "ab12".into(), position: Position::Log { after: 42 } },
            FeedCursor { store: "ab12".into(), position: Position::Snapshot { head: 7, after: None } },
            FeedCursor {
                store: "ab12".into(),
                position: Position::Snapshot { head: 7, after: Some(("Banco Ñ".into(), "A.1".into())) },
            },
        ];
        for cursor in cursors {
            let written = cursor.to_string();
            assert!(written.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.'), "{written}");
            assert_eq!(FeedCursor::parse(&written), Ok(cursor));
        }
        for bad in ["", "l.ab12", "l.ab12.-1", "l.ab12.+1", "x.ab12.1", "s.ab12.1.zz.00", "l..1", "s.ab12.1.41"] {
            assert_eq!(FeedCursor::parse(bad), Err(BadCursor), "{bad:?}");
        }
    }
}
