//! ATMs as they are now: the state events the bank's ATM monitoring posts, the state
//! they leave each ATM in, and the state an app is shown.
//!
//! An ATM's stored state is the one its newest event (by `at`, ties by event id) gives;
//! an older event changes nothing. What is shown adds the clock: a state not heard of
//! for the freshness window, or never, is `Unknown`, because old news must never read as
//! `InService`.

use std::fmt;

use serde_json::{Map, Value};
use smol_str::SmolStr;

use crate::atm::AtmService;
use crate::posted::{self, EventFields, EventId, EventRefusal, EventTime};
use crate::text::first_hidden;

/// An ATM as the monitoring names it: its OBIE `Identification` (1 to 35 characters,
/// none hidden). Every ATM of the set with that identification, of any brand, is meant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AtmId(SmolStr);

impl AtmId {
    /// The longest one, in characters (OBIE's `Max35Text`).
    pub const LONGEST: usize = 35;

    /// Parses one: 1 to 35 characters, none of them hidden ([`crate::text`]).
    pub fn parse(raw: &str) -> Option<Self> {
        let length = raw.chars().count();
        ((1..=Self::LONGEST).contains(&length) && first_hidden(raw).is_none()).then(|| Self(SmolStr::new(raw)))
    }

    /// The identification as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AtmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the monitoring reports of a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reported {
    /// It serves, maybe without some services.
    InService,
    /// It serves nothing.
    OutOfService,
}

impl Reported {
    /// Its name on the wire and in the stores.
    pub fn name(self) -> &'static str {
        match self {
            Self::InService => "InService",
            Self::OutOfService => "OutOfService",
        }
    }

    /// The state named `name`, if any.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "InService" => Some(Self::InService),
            "OutOfService" => Some(Self::OutOfService),
            _ => None,
        }
    }
}

/// Why a machine is not fully in service, as an app may show it: at most 140
/// characters, no control character.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reason(SmolStr);

impl Reason {
    /// The longest one, in characters.
    pub const LONGEST: usize = 140;

    /// Parses one: 1 to 140 characters, no control character.
    pub fn parse(raw: &str) -> Option<Self> {
        let length = raw.chars().count();
        ((1..=Self::LONGEST).contains(&length) && !raw.chars().any(char::is_control)).then(|| Self(SmolStr::new(raw)))
    }

    /// The text as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A set of [`AtmService`]s, as their bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Services(pub u32);

impl Services {
    /// Whether `service` is in the set.
    pub fn contains(self, service: AtmService) -> bool {
        self.0 & service.bit() != 0
    }

    /// The services, in the code list's order.
    pub fn iter(self) -> impl Iterator<Item = AtmService> {
        AtmService::ALL.iter().copied().filter(move |service| self.contains(*service))
    }

    /// Their OBIE names, as a JSON array.
    pub fn to_json(self) -> Value {
        Value::Array(self.iter().map(|service| Value::from(service.name())).collect())
    }
}

/// One state event, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtmStateEvent {
    /// Its id: a resent id is a duplicate.
    pub id: EventId,
    /// The machine.
    pub atm: AtmId,
    /// When the monitoring saw it, by its clock.
    pub at: EventTime,
    /// In service or not.
    pub state: Reported,
    /// The services it cannot give now.
    pub unavailable: Services,
    /// Why, for people.
    pub reason: Option<Reason>,
    /// When it is expected back in full service.
    pub expected_back_at: Option<EventTime>,
}

impl AtmStateEvent {
    /// The order events of one ATM apply in: by `at`, ties by id.
    pub fn order_key(&self) -> (EventTime, &str) {
        (self.at, self.id.as_str())
    }

    /// Reads one event from its JSON object, without looking at its date's age.
    ///
    /// # Errors
    /// An [`EventRefusal`] naming the first field that is missing or not valid.
    pub fn from_json(value: &Value) -> Result<Self, EventRefusal> {
        let fields = EventFields::of(value)?;
        let atm = AtmId::parse(fields.text("atmId")?)
            .ok_or_else(|| fields.invalid("atmId", "1 to 35 characters, none of them hidden"))?;
        let at = fields.at()?;
        let state = Reported::parse(fields.text("state")?)
            .ok_or_else(|| fields.refuse("unknownState", "state", "state must be InService or OutOfService".into()))?;
        let mut unavailable = Services::default();
        match fields.optional("unavailableServices") {
            None => {}
            Some(Value::Array(codes)) => {
                for code in codes {
                    let service = code.as_str().and_then(AtmService::parse).ok_or_else(|| {
                        fields.refuse(
                            "unknownService",
                            "unavailableServices",
                            format!("{code} is not an OBIE ATM 2.3 ATMServices code (CashWithdrawal, CashDeposits, …)"),
                        )
                    })?;
                    unavailable.0 |= service.bit();
                }
            }
            Some(_) => return Err(fields.invalid("unavailableServices", "an array of ATMServices codes")),
        }
        let reason = fields
            .optional_text("reason")?
            .map(|raw| {
                Reason::parse(raw).ok_or_else(|| fields.invalid("reason", "1 to 140 characters, no control character"))
            })
            .transpose()?;
        let expected_back_at = fields.optional_time("expectedBackAt")?;
        if expected_back_at.is_some_and(|back| back < at) {
            return Err(fields.invalid("expectedBackAt", "a date-time no earlier than at"));
        }
        Ok(Self { id: fields.id().clone(), atm, at, state, unavailable, reason, expected_back_at })
    }

    /// The live rule on an event's date ([`posted::check_age`]).
    ///
    /// # Errors
    /// An [`EventRefusal`] on `at`, `tooOld` or `aheadOfClock`.
    pub fn check_age(&self, now: EventTime) -> Result<(), EventRefusal> {
        posted::check_age(&self.id, self.at, now)
    }

    /// The event as the wire writes it: the object [`AtmStateEvent::from_json`] reads.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("eventId".into(), self.id.as_str().into());
        object.insert("atmId".into(), self.atm.as_str().into());
        object.insert("at".into(), self.at.to_string().into());
        object.insert("state".into(), self.state.name().into());
        object.insert("unavailableServices".into(), self.unavailable.to_json());
        if let Some(reason) = &self.reason {
            object.insert("reason".into(), reason.as_str().into());
        }
        if let Some(back) = self.expected_back_at {
            object.insert("expectedBackAt".into(), back.to_string().into());
        }
        Value::Object(object)
    }
}

/// An ATM's state as stored: what its newest event said, since when, and when it was
/// last heard of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtmState {
    /// In service or not.
    pub state: Reported,
    /// The services it cannot give.
    pub unavailable: Services,
    /// Why, for people.
    pub reason: Option<Reason>,
    /// When it is expected back in full service.
    pub expected_back_at: Option<EventTime>,
    /// When this state (the reported state and the unavailable services) began: the
    /// `at` of the first event of the run of events that reported it.
    pub since: EventTime,
    /// The newest applied event's `at` and id: an event ordered before it changes nothing.
    pub heard: (EventTime, EventId),
}

impl AtmState {
    /// When it is shown `Unknown` from: its newest event's time and the window.
    pub fn stale_from(&self, fresh_minutes: f64) -> EventTime {
        self.heard.0.plus_minutes(fresh_minutes)
    }

    /// The state `event` leaves an ATM in whose state was `before`; `None` when the
    /// event is ordered before the newest applied one ([`AtmStateEvent::order_key`]) and
    /// so changes nothing. A state goes on (keeps its `since`) while events report it
    /// again within `fresh_minutes` of each other; after a longer silence, in which it
    /// was shown `Unknown`, it begins anew.
    pub fn after(before: Option<&Self>, event: &AtmStateEvent, fresh_minutes: f64) -> Option<Self> {
        if let Some(before) = before
            && event.order_key() <= (before.heard.0, before.heard.1.as_str())
        {
            return None;
        }
        let same = before.filter(|b| {
            b.state == event.state
                && b.unavailable == event.unavailable
                && event.at <= b.heard.0.plus_minutes(fresh_minutes)
        });
        Some(Self {
            state: event.state,
            unavailable: event.unavailable,
            reason: event.reason.clone(),
            expected_back_at: event.expected_back_at,
            since: same.map_or(event.at, |b| b.since),
            heard: (event.at, event.id.clone()),
        })
    }
}

/// The state an app is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shown {
    /// In service, every service available.
    InService,
    /// In service with some services unavailable.
    Limited,
    /// Out of service.
    OutOfService,
    /// Not heard of for the freshness window, or never.
    Unknown,
    /// Its announced closure date has come.
    Closed,
}

impl Shown {
    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::InService => "InService",
            Self::Limited => "Limited",
            Self::OutOfService => "OutOfService",
            Self::Unknown => "Unknown",
            Self::Closed => "Closed",
        }
    }
}

/// What an app is shown of one ATM's stored state at `now`, with `fresh_minutes` the
/// freshness window: `Unknown` when never heard of, or from [`AtmState::stale_from`] on.
pub fn shown(state: Option<&AtmState>, now: EventTime, fresh_minutes: f64) -> Shown {
    match state {
        None => Shown::Unknown,
        Some(state) if now > state.stale_from(fresh_minutes) => Shown::Unknown,
        Some(state) if state.state == Reported::OutOfService => Shown::OutOfService,
        Some(state) if state.unavailable != Services::default() => Shown::Limited,
        Some(_) => Shown::InService,
    }
}

/// Whether an ATM gives `service` now, as its shown state says: only in service, or
/// limited without it.
pub fn offers_now(state: Option<&AtmState>, now: EventTime, fresh_minutes: f64, service: AtmService) -> bool {
    match shown(state, now, fresh_minutes) {
        Shown::InService => true,
        Shown::Limited => state.is_some_and(|s| !s.unavailable.contains(service)),
        Shown::OutOfService | Shown::Unknown | Shown::Closed => false,
    }
}

/// One ATM's state as an instance holds it: the state, and its times already written as
/// RFC 3339 (formatting a date costs more than the rest of a state page's item).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldState {
    /// The state.
    pub state: AtmState,
    /// `since`, written.
    pub since: Box<str>,
    /// `expected_back_at`, written.
    pub expected_back: Option<Box<str>>,
    /// When it is shown `Unknown` from (its newest event's time and the window), written.
    pub stale_since: Box<str>,
}

/// Every ATM's state as an instance holds it, to serve.
#[derive(Debug, Clone, Default)]
pub struct AtmStates {
    by_atm: std::collections::HashMap<AtmId, HeldState, foldhash::fast::RandomState>,
    newest: Option<EventTime>,
    fingerprint: u64,
}

impl AtmStates {
    /// The states as stored (by ATM id), shown `Unknown` `fresh_minutes` after their
    /// newest event.
    pub fn new(states: Vec<(AtmId, AtmState)>, fresh_minutes: f64) -> Self {
        use std::hash::{Hash as _, Hasher as _};
        let mut fingerprint = std::collections::hash_map::DefaultHasher::new();
        let mut by_atm = std::collections::HashMap::with_capacity_and_hasher(states.len(), Default::default());
        let mut newest = None;
        for (atm, state) in states {
            (&atm, &state).hash(&mut fingerprint);
            newest = newest.max(Some(state.heard.0));
            let held = HeldState {
                since: state.since.to_string().into(),
                expected_back: state.expected_back_at.map(|at| at.to_string().into()),
                stale_since: state.stale_from(fresh_minutes).to_string().into(),
                state,
            };
            by_atm.insert(atm, held);
        }
        Self { by_atm, newest, fingerprint: fingerprint.finish() }
    }

    /// The state of the ATM `identification`, if it was ever heard of.
    pub fn get(&self, identification: &str) -> Option<&HeldState> {
        self.by_atm.get(identification)
    }

    /// When the newest event applied happened.
    pub fn newest(&self) -> Option<EventTime> {
        self.newest
    }

    /// A digest of every state held: equal digests, equal states.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}

impl std::borrow::Borrow<str> for AtmId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(id: &str, at: &str, state: &str, unavailable: &[&str]) -> AtmStateEvent {
        AtmStateEvent::from_json(&json!({"eventId": id, "atmId": "LFFFBC11", "at": at, "state": state,
            "unavailableServices": unavailable}))
        .unwrap()
    }

    fn time(raw: &str) -> EventTime {
        event("t", raw, "InService", &[]).at
    }

    #[test]
    fn an_event_is_read_whole_and_written_back_the_same() {
        let event = AtmStateEvent::from_json(&json!({"eventId": "s-1", "atmId": "LFFFBC11",
            "at": "2026-11-28T12:00:00.5Z", "state": "InService", "unavailableServices": ["CashDeposits", "ATBA"],
            "reason": "Deposit module jammed", "expectedBackAt": "2026-11-28T15:00:00Z"}))
        .unwrap();
        let names: Vec<_> = event.unavailable.iter().map(AtmService::name).collect();
        assert_eq!(names, ["Balance", "CashDeposits"], "in the code list's order, read by either name");
        assert_eq!(event.reason.as_ref().map(Reason::as_str), Some("Deposit module jammed"));
        assert_eq!(AtmStateEvent::from_json(&event.to_json()).unwrap(), event);
    }

    #[test]
    fn each_refusal_names_its_field() {
        let base = json!({"eventId": "s-1", "atmId": "A1", "at": "2026-11-28T12:00:00Z", "state": "InService"});
        let with = |field: &str, value: Value| {
            let mut event = base.clone();
            event[field] = value;
            let refusal = AtmStateEvent::from_json(&event).unwrap_err();
            (refusal.code, refusal.field)
        };
        assert_eq!(with("state", json!("Broken")), ("unknownState", "state"));
        assert_eq!(with("state", Value::Null), ("missingField", "state"));
        assert_eq!(with("unavailableServices", json!(["Teleport"])), ("unknownService", "unavailableServices"));
        assert_eq!(with("unavailableServices", json!("CashWithdrawal")), ("invalidField", "unavailableServices"));
        assert_eq!(with("reason", json!("x".repeat(141))), ("invalidField", "reason"));
        assert_eq!(with("reason", json!("line\nbreak")), ("invalidField", "reason"));
        assert_eq!(with("atmId", json!("x".repeat(36))), ("invalidField", "atmId"));
        assert_eq!(with("atmId", json!("A\u{202e}1")), ("invalidField", "atmId"));
        assert_eq!(with("expectedBackAt", json!("tomorrow")), ("invalidField", "expectedBackAt"));
        assert_eq!(with("expectedBackAt", json!("2026-11-28T11:59:59Z")), ("invalidField", "expectedBackAt"));
        let year_10000 = json!("9999-12-31T23:59:59-01:00");
        assert_eq!(with("expectedBackAt", year_10000), ("invalidField", "expectedBackAt"), "past what RFC 3339 writes");
        assert!(AtmStateEvent::from_json(&base).unwrap().unavailable == Services::default(), "optional");
    }

    #[test]
    fn the_newest_event_wins_and_an_older_one_changes_nothing() {
        let after = |before: Option<&AtmState>, event: &AtmStateEvent| AtmState::after(before, event, 15.0);
        let first = after(None, &event("a", "2026-11-28T12:00:00Z", "InService", &[])).unwrap();
        let out = after(Some(&first), &event("b", "2026-11-28T12:05:00Z", "OutOfService", &[])).unwrap();
        assert_eq!((out.state, out.since), (Reported::OutOfService, time("2026-11-28T12:05:00Z")));
        let late = event("c", "2026-11-28T12:01:00Z", "InService", &[]);
        assert_eq!(after(Some(&out), &late), None, "older than the newest applied");
        let same_instant = event("a0", "2026-11-28T12:05:00Z", "InService", &[]);
        assert_eq!(after(Some(&out), &same_instant), None, "a tie goes to the greater id");
        let again = after(Some(&out), &event("d", "2026-11-28T12:09:00Z", "OutOfService", &[])).unwrap();
        assert_eq!(again.since, time("2026-11-28T12:05:00Z"), "the same state goes on");
        assert_eq!(again.heard.0, time("2026-11-28T12:09:00Z"));
        let after_silence = after(Some(&again), &event("e", "2026-11-28T12:24:01Z", "OutOfService", &[])).unwrap();
        assert_eq!(after_silence.since, time("2026-11-28T12:24:01Z"), "Unknown in between: it begins anew");
    }

    #[test]
    fn what_is_shown_follows_the_state_and_turns_unknown_past_the_window() {
        let limited = AtmState::after(None, &event("a", "2026-11-28T12:00:00Z", "InService", &["CashDeposits"]), 15.0);
        let limited = limited.as_ref();
        let at = |raw| shown(limited, time(raw), 15.0);
        assert_eq!(at("2026-11-28T12:10:00Z"), Shown::Limited);
        assert_eq!(at("2026-11-28T12:15:00Z"), Shown::Limited, "the window's last instant");
        assert_eq!(at("2026-11-28T12:15:01Z"), Shown::Unknown);
        assert_eq!(limited.map(|state| state.stale_from(15.0)), Some(time("2026-11-28T12:15:00Z")));
        assert_eq!(shown(None, time("2026-11-28T12:00:00Z"), 15.0), Shown::Unknown, "never heard of");
        let now = time("2026-11-28T12:01:00Z");
        assert!(offers_now(limited, now, 15.0, AtmService::CashWithdrawal));
        assert!(!offers_now(limited, now, 15.0, AtmService::CashDeposits));
        assert!(!offers_now(None, now, 15.0, AtmService::CashWithdrawal), "unknown offers nothing");
    }
}
