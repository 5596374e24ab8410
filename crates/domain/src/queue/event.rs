//! A branch queue system's events as it posts them: each read from one JSON object, and
//! refused with a code, the field and a reason when it is not valid.

use std::fmt;

use serde_json::{Map, Value};
use smol_str::SmolStr;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::branch::BranchId;

/// When an event happened: microseconds since the Unix epoch, in UTC. Microseconds
/// because PostgreSQL keeps no finer time, and every store must give back what it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventTime(i64);

impl EventTime {
    /// The time `micros` microseconds after the Unix epoch.
    pub fn from_unix_micros(micros: i64) -> Self {
        Self(micros)
    }

    /// The time `seconds` after the Unix epoch.
    pub fn from_unix_seconds(seconds: u64) -> Self {
        Self(i64::try_from(seconds).unwrap_or(i64::MAX / 1_000_000).saturating_mul(1_000_000))
    }

    /// Microseconds since the Unix epoch.
    pub fn unix_micros(self) -> i64 {
        self.0
    }

    /// Minutes from `earlier` to this time (negative if `earlier` is later).
    pub fn minutes_since(self, earlier: Self) -> f64 {
        (self.0 - earlier.0) as f64 / 60e6
    }

    /// This time moved by `minutes`.
    pub fn plus_minutes(self, minutes: f64) -> Self {
        Self(self.0.saturating_add((minutes * 60e6) as i64))
    }

    /// The UTC day it falls on, as days since the Unix epoch.
    pub fn utc_day(self) -> i64 {
        self.0.div_euclid(86_400_000_000)
    }

    /// Parses an RFC 3339 date-time (any offset, fractions of a second allowed).
    fn parse(raw: &str) -> Option<Self> {
        let at = OffsetDateTime::parse(raw, &Rfc3339).ok()?;
        i64::try_from(at.unix_timestamp_nanos() / 1_000).ok().map(Self)
    }
}

impl fmt::Display for EventTime {
    /// RFC 3339 in UTC with microseconds, as the per-ticket file writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000)
            .map_err(|_| fmt::Error)?
            .format(&Rfc3339)
            .map_err(|_| fmt::Error)?;
        f.write_str(&at)
    }
}

/// Text a queue system names things with: printable ASCII (space to `~`), of a bounded
/// length. No character outside it can reorder or hide what an operator reads.
fn printable(raw: &str, longest: usize) -> bool {
    !raw.is_empty() && raw.len() <= longest && raw.bytes().all(|b| (b' '..=b'~').contains(&b))
}

macro_rules! queue_name {
    ($(#[$doc:meta])* $name:ident, $longest:expr, $expected:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(SmolStr);

        impl $name {
            /// The longest one accepted, in characters.
            pub const LONGEST: usize = $longest;
            /// What a valid one looks like, for an error's details.
            pub const EXPECTED: &'static str = $expected;

            /// Parses one; anything but 1 to [`Self::LONGEST`] printable ASCII characters is refused.
            pub fn parse(raw: &str) -> Option<Self> {
                printable(raw, Self::LONGEST).then(|| Self(SmolStr::new(raw)))
            }

            /// The text as given.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

queue_name!(
    /// An event's id, unique across every branch and system: a resent id is the same event.
    EventId, 64, "1 to 64 printable ASCII characters"
);
queue_name!(
    /// A ticket as the branch's dispenser prints it (`A042`). Dispensers count again each
    /// day, so a ticket id names one ticket only until it is served or given up.
    TicketId, 32, "1 to 32 printable ASCII characters"
);
queue_name!(
    /// A counter (a desk, a window) of the branch.
    CounterId, 32, "1 to 32 printable ASCII characters"
);

/// What happened in a branch's queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QueueEventKind {
    /// A customer took a ticket and joined the queue.
    TicketIssued {
        /// The ticket.
        ticket: TicketId,
    },
    /// A counter called a ticket: its wait ended and its service began.
    TicketCalled {
        /// The ticket.
        ticket: TicketId,
        /// The counter that called it.
        counter: CounterId,
    },
    /// The service of a called ticket ended; its counter is free.
    ServiceEnded {
        /// The ticket.
        ticket: TicketId,
    },
    /// A customer gave up before being called.
    TicketCancelled {
        /// The ticket.
        ticket: TicketId,
    },
    /// A counter began taking tickets.
    CounterOpened {
        /// The counter.
        counter: CounterId,
    },
    /// A counter stopped taking tickets (it finishes the service it is giving).
    CounterClosed {
        /// The counter.
        counter: CounterId,
    },
}

impl QueueEventKind {
    /// The `type` the wire gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::TicketIssued { .. } => "TicketIssued",
            Self::TicketCalled { .. } => "TicketCalled",
            Self::ServiceEnded { .. } => "ServiceEnded",
            Self::TicketCancelled { .. } => "TicketCancelled",
            Self::CounterOpened { .. } => "CounterOpened",
            Self::CounterClosed { .. } => "CounterClosed",
        }
    }

    /// The kind the `type` `name` gives, its ticket and counter read by `ticket` and
    /// `counter` when it has them (and only then); `None` for a name of no kind. One
    /// reading for the wire and the stores alike.
    ///
    /// # Errors
    /// What `ticket` or `counter` fails with.
    pub fn read<E>(
        name: &str,
        ticket: impl Fn() -> Result<TicketId, E>,
        counter: impl Fn() -> Result<CounterId, E>,
    ) -> Option<Result<Self, E>> {
        let kind = || -> Result<Self, E> {
            Ok(match name {
                "TicketIssued" => Self::TicketIssued { ticket: ticket()? },
                "TicketCalled" => Self::TicketCalled { ticket: ticket()?, counter: counter()? },
                "ServiceEnded" => Self::ServiceEnded { ticket: ticket()? },
                "TicketCancelled" => Self::TicketCancelled { ticket: ticket()? },
                "CounterOpened" => Self::CounterOpened { counter: counter()? },
                _ => Self::CounterClosed { counter: counter()? },
            })
        };
        let known =
            ["TicketIssued", "TicketCalled", "ServiceEnded", "TicketCancelled", "CounterOpened", "CounterClosed"];
        known.contains(&name).then(kind)
    }

    /// Where it falls among events of the same instant: a counter opens before it calls,
    /// a ticket is issued before it is called, a service ends before its counter calls
    /// the next one, and a counter closes last. Every instance orders ties alike.
    fn rank(&self) -> u8 {
        match self {
            Self::CounterOpened { .. } => 0,
            Self::TicketIssued { .. } => 1,
            Self::ServiceEnded { .. } => 2,
            Self::TicketCancelled { .. } => 3,
            Self::TicketCalled { .. } => 4,
            Self::CounterClosed { .. } => 5,
        }
    }

    /// The ticket it is about, if any.
    pub fn ticket(&self) -> Option<&TicketId> {
        match self {
            Self::TicketIssued { ticket }
            | Self::TicketCalled { ticket, .. }
            | Self::ServiceEnded { ticket }
            | Self::TicketCancelled { ticket } => Some(ticket),
            Self::CounterOpened { .. } | Self::CounterClosed { .. } => None,
        }
    }

    /// The counter it is about, if any.
    pub fn counter(&self) -> Option<&CounterId> {
        match self {
            Self::TicketCalled { counter, .. } | Self::CounterOpened { counter } | Self::CounterClosed { counter } => {
                Some(counter)
            }
            _ => None,
        }
    }
}

/// One event of a branch's queue, valid by construction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QueueEvent {
    /// Its id: a resent id is a duplicate.
    pub id: EventId,
    /// The branch whose queue it is.
    pub branch: BranchId,
    /// When it happened, by the queue system's clock.
    pub at: EventTime,
    /// What happened.
    pub kind: QueueEventKind,
}

/// Why an event was refused, as the answer lists it: `code` (`missingField`,
/// `invalidField`, `unknownType`, `tooOld`, `aheadOfClock`), the field, and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRefusal {
    /// The event's id, when it had a valid one.
    pub event_id: Option<EventId>,
    /// A stable code a system can act on.
    pub code: &'static str,
    /// The field at fault (`branchId`), or empty for the event as a whole.
    pub field: &'static str,
    /// What was wrong, in English.
    pub details: String,
}

/// How far back an event may be dated when it is posted: a day. Older news cannot move a
/// live estimate, and the stores keep the log for that long.
pub const OLDEST_MINUTES: f64 = 24.0 * 60.0;
/// How far ahead of the service's clock an event may be dated: 5 s of clock skew.
pub const AHEAD_MINUTES: f64 = 5.0 / 60.0;

impl QueueEvent {
    /// The order every instance applies events in: by `at`, ties by kind (see
    /// `QueueEventKind::rank`) and then by id.
    pub fn order_key(&self) -> (EventTime, u8, &str) {
        (self.at, self.kind.rank(), self.id.as_str())
    }

    /// Reads one event from a JSON value, without looking at its date's age (an offline
    /// replay reads events of any date; [`QueueEvent::check_age`] is the live rule).
    ///
    /// # Errors
    /// An [`EventRefusal`] naming the first field that is missing or not valid.
    pub fn from_json(value: &Value) -> Result<Self, EventRefusal> {
        let refuse =
            |event_id: Option<EventId>, code, field, details: String| EventRefusal { event_id, code, field, details };
        let Some(object) = value.as_object() else {
            return Err(refuse(None, "invalidField", "", "an event is a JSON object".to_owned()));
        };
        let text = |field: &'static str, id: &Option<EventId>| -> Result<&str, EventRefusal> {
            match object.get(field) {
                None | Some(Value::Null) => {
                    Err(refuse(id.clone(), "missingField", field, format!("{field} is required")))
                }
                Some(Value::String(raw)) => Ok(raw),
                Some(_) => Err(refuse(id.clone(), "invalidField", field, format!("{field} must be a string"))),
            }
        };
        let event_id = EventId::parse(text("eventId", &None)?)
            .ok_or_else(|| refuse(None, "invalidField", "eventId", format!("eventId must be {}", EventId::EXPECTED)))?;
        let id = Some(event_id.clone());
        let invalid = |field: &'static str, expected: &str| {
            refuse(id.clone(), "invalidField", field, format!("{field} must be {expected}"))
        };
        let branch = BranchId::parse(text("branchId", &id)?).map_err(|_| invalid("branchId", "five digits"))?;
        let kind_name = text("type", &id)?;
        let at = EventTime::parse(text("at", &id)?)
            .ok_or_else(|| invalid("at", "an RFC 3339 date-time such as 2026-11-28T12:30:05.250Z"))?;
        let ticket = || TicketId::parse(text("ticket", &id)?).ok_or_else(|| invalid("ticket", TicketId::EXPECTED));
        let counter = || CounterId::parse(text("counter", &id)?).ok_or_else(|| invalid("counter", CounterId::EXPECTED));
        let kind = match QueueEventKind::read(kind_name, ticket, counter) {
            Some(kind) => kind?,
            None => {
                return Err(refuse(
                    id,
                    "unknownType",
                    "type",
                    "type must be TicketIssued, TicketCalled, ServiceEnded, TicketCancelled, CounterOpened or \
                     CounterClosed"
                        .to_owned(),
                ));
            }
        };
        Ok(Self { id: event_id, branch, at, kind })
    }

    /// The live rule on an event's date: at most [`OLDEST_MINUTES`] old and
    /// [`AHEAD_MINUTES`] ahead of `now`.
    ///
    /// # Errors
    /// An [`EventRefusal`] on `at`, `tooOld` or `aheadOfClock`.
    pub fn check_age(&self, now: EventTime) -> Result<(), EventRefusal> {
        let age = now.minutes_since(self.at);
        let refuse = |code, details: &str| EventRefusal {
            event_id: Some(self.id.clone()),
            code,
            field: "at",
            details: details.to_owned(),
        };
        if age > OLDEST_MINUTES {
            return Err(refuse("tooOld", "at is more than 24 hours ago"));
        }
        if -age > AHEAD_MINUTES {
            return Err(refuse("aheadOfClock", "at is more than 5 seconds ahead of the service's clock"));
        }
        Ok(())
    }

    /// The event as the wire and the stores write it: the object [`QueueEvent::from_json`] reads.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("eventId".into(), self.id.as_str().into());
        object.insert("branchId".into(), self.branch.digits().as_str().into());
        object.insert("type".into(), self.kind.name().into());
        object.insert("at".into(), self.at.to_string().into());
        if let Some(ticket) = self.kind.ticket() {
            object.insert("ticket".into(), ticket.as_str().into());
        }
        if let Some(counter) = self.kind.counter() {
            object.insert("counter".into(), counter.as_str().into());
        }
        Value::Object(object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(value: Value) -> Result<QueueEvent, EventRefusal> {
        QueueEvent::from_json(&value)
    }

    #[test]
    fn an_event_is_read_with_its_time_to_the_microsecond_in_any_offset() {
        let event = read(json!({"eventId": "e-1", "branchId": "00042", "type": "TicketCalled",
            "at": "2026-11-28T13:30:05.250001+01:00", "ticket": "A042", "counter": "3"}))
        .unwrap();
        assert_eq!(event.branch, BranchId::parse("00042").unwrap());
        assert_eq!(event.at.to_string(), "2026-11-28T12:30:05.250001Z");
        assert_eq!(event.kind.ticket().map(TicketId::as_str), Some("A042"));
        assert_eq!(event.kind.counter().map(CounterId::as_str), Some("3"));
        assert_eq!(QueueEvent::from_json(&event.to_json()).unwrap(), event, "written and read back");
    }

    #[test]
    fn each_refusal_names_the_field_and_keeps_the_id_once_it_is_valid() {
        let base = json!({"eventId": "e-1", "branchId": "00042", "type": "TicketIssued",
            "at": "2026-11-28T12:30:05Z", "ticket": "A042"});
        let with = |field: &str, value: Value| {
            let mut event = base.clone();
            event[field] = value;
            read(event).unwrap_err()
        };
        let missing_ticket = with("ticket", Value::Null);
        assert_eq!((missing_ticket.code, missing_ticket.field), ("missingField", "ticket"));
        assert_eq!(missing_ticket.event_id.unwrap().as_str(), "e-1");
        let branch = with("branchId", json!("4242"));
        assert_eq!((branch.code, branch.field), ("invalidField", "branchId"));
        let kind = with("type", json!("TicketLost"));
        assert_eq!((kind.code, kind.field), ("unknownType", "type"));
        let at = with("at", json!("2026-11-28 12:30"));
        assert_eq!((at.code, at.field), ("invalidField", "at"));
        let bad_id = with("eventId", json!("e\u{202e}1"));
        assert_eq!((bad_id.code, bad_id.field, bad_id.event_id), ("invalidField", "eventId", None));
        let long_id = with("eventId", json!("x".repeat(65)));
        assert_eq!(long_id.field, "eventId");
        let number = with("ticket", json!(42));
        assert_eq!((number.code, number.field), ("invalidField", "ticket"));
        assert_eq!(read(json!([1])).unwrap_err().code, "invalidField");
    }

    #[test]
    fn a_call_needs_its_counter_and_a_counter_event_needs_no_ticket() {
        let call = read(json!({"eventId": "e", "branchId": "00001", "type": "TicketCalled",
            "at": "2026-11-28T12:00:00Z", "ticket": "A1"}));
        assert_eq!(call.unwrap_err().field, "counter");
        let opened = read(json!({"eventId": "e", "branchId": "00001", "type": "CounterOpened",
            "at": "2026-11-28T12:00:00Z", "counter": "1"}));
        assert_eq!(opened.unwrap().kind, QueueEventKind::CounterOpened { counter: CounterId::parse("1").unwrap() });
    }

    #[test]
    fn an_event_older_than_a_day_or_more_than_five_seconds_ahead_is_refused() {
        let at = |raw: &str| {
            read(json!({"eventId": "e", "branchId": "00001", "type": "CounterOpened", "at": raw, "counter": "1"}))
                .unwrap()
        };
        let now = at("2026-11-28T12:00:00Z").at;
        assert!(at("2026-11-27T12:00:00.000001Z").check_age(now).is_ok());
        assert_eq!(at("2026-11-27T11:59:59.999Z").check_age(now).unwrap_err().code, "tooOld");
        assert!(at("2026-11-28T12:00:05Z").check_age(now).is_ok());
        assert_eq!(at("2026-11-28T12:00:05.001Z").check_age(now).unwrap_err().code, "aheadOfClock");
    }

    #[test]
    fn ties_are_ordered_so_that_a_counter_opens_and_a_ticket_is_issued_before_the_call() {
        let event = |kind: &str, id: &str| {
            read(json!({"eventId": id, "branchId": "00001", "type": kind, "at": "2026-11-28T12:00:00Z",
                "ticket": "A1", "counter": "1"}))
            .unwrap()
        };
        let mut events = [
            event("CounterClosed", "a"),
            event("TicketCalled", "b"),
            event("TicketIssued", "c"),
            event("CounterOpened", "d"),
        ];
        events.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        let names: Vec<_> = events.iter().map(|e| e.kind.name()).collect();
        assert_eq!(names, ["CounterOpened", "TicketIssued", "TicketCalled", "CounterClosed"]);
    }
}
