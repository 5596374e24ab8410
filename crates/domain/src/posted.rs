//! What the bank's systems post, whatever it is about: an event's id and time, the
//! window its time must fall in, and the field-by-field reading that refuses an event
//! with a code, the field and a reason. Queue events ([`crate::queue::event`]) and ATM
//! state events ([`crate::atm_state`]) are read with it.

use std::fmt;

use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

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
    /// Only a time RFC 3339 can write back in UTC (years 0000 to 9999) is one: an offset
    /// can carry a date's last hour past 9999.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        // 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in Unix seconds.
        const WRITABLE: std::ops::RangeInclusive<i64> = -62_167_219_200..=253_402_300_799;
        let at = OffsetDateTime::parse(raw, &Rfc3339).ok()?;
        if !WRITABLE.contains(&at.unix_timestamp()) {
            return None;
        }
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

/// Text a system names things with: printable ASCII (space to `~`), of a bounded
/// length. No character outside it can reorder or hide what an operator reads.
pub(crate) fn printable(raw: &str, longest: usize) -> bool {
    !raw.is_empty() && raw.len() <= longest && raw.bytes().all(|b| (b' '..=b'~').contains(&b))
}

macro_rules! printable_name {
    ($(#[$doc:meta])* $name:ident, $longest:expr, $expected:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(::smol_str::SmolStr);

        impl $name {
            /// The longest one accepted, in characters.
            pub const LONGEST: usize = $longest;
            /// What a valid one looks like, for an error's details.
            pub const EXPECTED: &'static str = $expected;

            /// Parses one; anything but 1 to [`Self::LONGEST`] printable ASCII characters is refused.
            pub fn parse(raw: &str) -> Option<Self> {
                $crate::posted::printable(raw, Self::LONGEST).then(|| Self(::smol_str::SmolStr::new(raw)))
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
pub(crate) use printable_name;

printable_name!(
    /// An event's id, unique across every branch and system: a resent id is the same event.
    EventId, 64, "1 to 64 printable ASCII characters"
);

/// Why an event was refused, as the answer lists it: `code` (`missingField`,
/// `invalidField`, `unknownType`, `tooOld`, `aheadOfClock`, or one of the event's own),
/// the field, and a reason.
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

impl EventRefusal {
    /// A refusal with these parts.
    pub fn new(event_id: Option<EventId>, code: &'static str, field: &'static str, details: String) -> Self {
        Self { event_id, code, field, details }
    }
}

/// Checks an event's time against the live window: at most [`OLDEST_MINUTES`] old and
/// [`AHEAD_MINUTES`] ahead of `now` (an offline replay reads events of any date).
///
/// # Errors
/// An [`EventRefusal`] on `at`, `tooOld` or `aheadOfClock`.
pub fn check_age(id: &EventId, at: EventTime, now: EventTime) -> Result<(), EventRefusal> {
    let age = now.minutes_since(at);
    let refuse = |code, details: &str| EventRefusal {
        event_id: Some(id.clone()),
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

/// What a valid date-time looks like, for an error's details.
const TIME_EXPECTED: &str = "an RFC 3339 date-time such as 2026-11-28T12:30:05.250Z";

/// One posted event's JSON object, read field by field: every refusal carries the
/// event's id once it was read.
pub struct EventFields<'a> {
    object: &'a Map<String, Value>,
    id: EventId,
}

impl<'a> EventFields<'a> {
    /// The object `value` must be, and its `eventId`.
    ///
    /// # Errors
    /// A refusal when `value` is not an object or its `eventId` is missing or not valid.
    pub fn of(value: &'a Value) -> Result<Self, EventRefusal> {
        let Some(object) = value.as_object() else {
            return Err(EventRefusal::new(None, "invalidField", "", "an event is a JSON object".to_owned()));
        };
        let raw = match object.get("eventId") {
            None | Some(Value::Null) => {
                return Err(EventRefusal::new(None, "missingField", "eventId", "eventId is required".to_owned()));
            }
            Some(Value::String(raw)) => raw,
            Some(_) => {
                return Err(EventRefusal::new(None, "invalidField", "eventId", "eventId must be a string".to_owned()));
            }
        };
        let id = EventId::parse(raw).ok_or_else(|| {
            EventRefusal::new(None, "invalidField", "eventId", format!("eventId must be {}", EventId::EXPECTED))
        })?;
        Ok(Self { object, id })
    }

    /// The event's id.
    pub fn id(&self) -> &EventId {
        &self.id
    }

    /// A refusal of this event.
    pub fn refuse(&self, code: &'static str, field: &'static str, details: String) -> EventRefusal {
        EventRefusal::new(Some(self.id.clone()), code, field, details)
    }

    /// `field` is not what it must be (`expected`, for the details).
    pub fn invalid(&self, field: &'static str, expected: &str) -> EventRefusal {
        self.refuse("invalidField", field, format!("{field} must be {expected}"))
    }

    /// `field`'s value, `None` when it is absent or null.
    pub fn optional(&self, field: &str) -> Option<&'a Value> {
        self.object.get(field).filter(|value| !value.is_null())
    }

    /// The required string `field`.
    ///
    /// # Errors
    /// `missingField`, or `invalidField` when it is not a string.
    pub fn text(&self, field: &'static str) -> Result<&'a str, EventRefusal> {
        self.optional_text(field)?.ok_or_else(|| self.refuse("missingField", field, format!("{field} is required")))
    }

    /// The string `field`, `None` when it is absent or null.
    ///
    /// # Errors
    /// `invalidField` when it is there but not a string.
    pub fn optional_text(&self, field: &'static str) -> Result<Option<&'a str>, EventRefusal> {
        match self.optional(field) {
            None => Ok(None),
            Some(Value::String(raw)) => Ok(Some(raw)),
            Some(_) => Err(self.refuse("invalidField", field, format!("{field} must be a string"))),
        }
    }

    /// The date-time `field` (RFC 3339, any offset, fractions allowed), `None` when absent.
    ///
    /// # Errors
    /// `invalidField` when it is there but not such a date-time.
    pub fn optional_time(&self, field: &'static str) -> Result<Option<EventTime>, EventRefusal> {
        self.optional_text(field)?
            .map(|raw| EventTime::parse(raw).ok_or_else(|| self.invalid(field, TIME_EXPECTED)))
            .transpose()
    }

    /// The event's `at`, required.
    ///
    /// # Errors
    /// As [`EventFields::text`] and [`EventFields::optional_time`].
    pub fn at(&self) -> Result<EventTime, EventRefusal> {
        let raw = self.text("at")?;
        EventTime::parse(raw).ok_or_else(|| self.invalid("at", TIME_EXPECTED))
    }
}
