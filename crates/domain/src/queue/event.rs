//! A branch queue system's events as it posts them: each read from one JSON object, and
//! refused with a code, the field and a reason when it is not valid.

use std::fmt;

use serde_json::{Map, Value};

use crate::branch::BranchId;
use crate::posted::{self, EventFields, EventId, EventRefusal, EventTime, printable_name};

printable_name!(
    /// A ticket as the branch's dispenser prints it (`A042`). Dispensers count again each
    /// day, so a ticket id names one ticket only until it is served or given up.
    TicketId, 32, "1 to 32 printable ASCII characters"
);
printable_name!(
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
        let fields = EventFields::of(value)?;
        let branch =
            BranchId::parse(fields.text("branchId")?).map_err(|_| fields.invalid("branchId", "five digits"))?;
        let kind_name = fields.text("type")?;
        let at = fields.at()?;
        let ticket =
            || TicketId::parse(fields.text("ticket")?).ok_or_else(|| fields.invalid("ticket", TicketId::EXPECTED));
        let counter =
            || CounterId::parse(fields.text("counter")?).ok_or_else(|| fields.invalid("counter", CounterId::EXPECTED));
        let kind = match QueueEventKind::read(kind_name, ticket, counter) {
            Some(kind) => kind?,
            None => {
                return Err(fields.refuse(
                    "unknownType",
                    "type",
                    "type must be TicketIssued, TicketCalled, ServiceEnded, TicketCancelled, CounterOpened or \
                     CounterClosed"
                        .to_owned(),
                ));
            }
        };
        Ok(Self { id: fields.id().clone(), branch, at, kind })
    }

    /// The live rule on an event's date ([`posted::check_age`]).
    ///
    /// # Errors
    /// An [`EventRefusal`] on `at`, `tooOld` or `aheadOfClock`.
    pub fn check_age(&self, now: EventTime) -> Result<(), EventRefusal> {
        posted::check_age(&self.id, self.at, now)
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
