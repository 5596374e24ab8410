//! Planned outages, as operators announce them and the discovery operations publish
//! them (shaped like the Australian Consumer Data Right's `GET /discovery/outages`).
//!
//! Values are parsed, not validated: an [`OutageDuration`] is positive, an
//! [`Explanation`] says something, an [`OutageId`] is a short token a shell
//! passes as it is. Durations are written in the subset of ISO 8601 durations whose
//! length never depends on a calendar: `PnDTnHnMnS` (and `PnW`), whole numbers only.
//! Years and months are refused: "P1M" is 28 to 31 days depending on when it starts.

use std::fmt;

use crate::text::Explanation;

/// Why an operator's outage input was refused; each says what was expected, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutageInputError {
    /// Not an ISO 8601 duration of the subset accepted.
    #[error("the duration must be an ISO 8601 duration such as PT2H or P1DT30M (days, hours, minutes, seconds)")]
    Duration,
    /// A duration of zero (or one too long to be an outage anyone plans).
    #[error("the duration must be longer than zero and at most {} days", OutageDuration::MAX_DAYS)]
    DurationRange,
    /// An id that cannot be one of ours.
    #[error("an outage id is 1 to 64 letters, digits, `-` or `_`")]
    Id,
}

/// The id an outage was scheduled under: 1 to 64 of `[A-Za-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutageId(String);

impl OutageId {
    /// Parses an id as `outages list` prints it.
    ///
    /// # Errors
    /// [`OutageInputError::Id`] for anything else.
    pub fn parse(raw: &str) -> Result<Self, OutageInputError> {
        let valid = !raw.is_empty()
            && raw.len() <= 64
            && raw.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
        if valid { Ok(Self(raw.to_owned())) } else { Err(OutageInputError::Id) }
    }

    /// The id made of `bytes`, as lowercase hex digits (a fresh id from random bytes).
    pub fn from_bytes(bytes: [u8; 5]) -> Self {
        Self(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// The id as stored and printed.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OutageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How long a planned outage lasts: a positive whole number of seconds, at most
/// [`OutageDuration::MAX_DAYS`] days.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct OutageDuration(i64);

impl OutageDuration {
    /// The longest outage accepted, in days: a planned outage longer than a month is a
    /// closure, not maintenance, and a typo (`P300D` for `PT300M`) should be caught.
    pub const MAX_DAYS: i64 = 31;

    /// Parses an ISO 8601 duration of the form `PnW` or `P[nD][T[nH][nM][nS]]`, whole
    /// numbers only (`PT2H`, `P1DT30M`, `PT90M`, `PT45S`).
    ///
    /// # Errors
    /// [`OutageInputError::Duration`] for another form (years, months, fractions,
    /// signs, a bare `P` or `PT`); [`OutageInputError::DurationRange`] for zero or
    /// more than [`Self::MAX_DAYS`] days.
    pub fn parse_iso8601(raw: &str) -> Result<Self, OutageInputError> {
        let body = raw.strip_prefix('P').ok_or(OutageInputError::Duration)?;
        let mut seconds: i64 = 0;
        let mut in_time = false;
        let mut any = false;
        let mut time_any = false;
        let mut weeks = false;
        // The designators allowed next, in order: each at most once.
        let mut order: &[u8] = b"WD";
        let mut digits = String::new();
        for byte in body.bytes() {
            match byte {
                b'0'..=b'9' => digits.push(char::from(byte)),
                b'T' if !in_time && !weeks && digits.is_empty() => {
                    in_time = true;
                    order = b"HMS";
                }
                designator => {
                    let position = order.iter().position(|&d| d == designator).ok_or(OutageInputError::Duration)?;
                    if digits.is_empty() || digits.len() > 9 {
                        return Err(OutageInputError::Duration);
                    }
                    let value: i64 = digits.parse().map_err(|_| OutageInputError::Duration)?;
                    digits.clear();
                    let unit = match designator {
                        b'W' => 7 * 86_400,
                        b'D' => 86_400,
                        b'H' => 3_600,
                        b'M' => 60,
                        _ => 1,
                    };
                    seconds = value
                        .checked_mul(unit)
                        .and_then(|s| seconds.checked_add(s))
                        .ok_or(OutageInputError::DurationRange)?;
                    // A week stands alone (ISO 8601 does not mix weeks with other units).
                    order = if designator == b'W' { b"".as_slice() } else { &order[position + 1..] };
                    any = true;
                    time_any |= in_time;
                    weeks |= designator == b'W';
                }
            }
        }
        if !digits.is_empty() || !any || (in_time && !time_any) {
            return Err(OutageInputError::Duration);
        }
        Self::from_seconds(seconds)
    }

    /// A duration of `seconds`.
    ///
    /// # Errors
    /// [`OutageInputError::DurationRange`] for zero, negative, or more than
    /// [`Self::MAX_DAYS`] days.
    pub fn from_seconds(seconds: i64) -> Result<Self, OutageInputError> {
        if seconds <= 0 || seconds > Self::MAX_DAYS * 86_400 {
            return Err(OutageInputError::DurationRange);
        }
        Ok(Self(seconds))
    }

    /// The length in seconds.
    pub fn seconds(self) -> i64 {
        self.0
    }
}

/// The duration in ISO 8601's `P[nD][T[nH][nM][nS]]` form, the units it has only:
/// `PT2H`, `P1DT30M`, `PT1H0M5S` is written `PT1H5S`.
impl fmt::Display for OutageDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (days, rest) = (self.0 / 86_400, self.0 % 86_400);
        let (hours, minutes, seconds) = (rest / 3_600, rest % 3_600 / 60, rest % 60);
        f.write_str("P")?;
        if days > 0 {
            write!(f, "{days}D")?;
        }
        if rest > 0 {
            f.write_str("T")?;
            for (value, unit) in [(hours, 'H'), (minutes, 'M'), (seconds, 'S')] {
                if value > 0 {
                    write!(f, "{value}{unit}")?;
                }
            }
        }
        Ok(())
    }
}

/// A planned outage: when it starts, how long it lasts, whether only part of the
/// service goes, and what customers are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedOutage {
    /// Its id, for `outages cancel`.
    pub id: OutageId,
    /// When it starts, in seconds since the Unix epoch.
    pub starts_at: i64,
    /// How long it lasts.
    pub duration: OutageDuration,
    /// Only part of the service goes (CDR's `isPartial`).
    pub partial: bool,
    /// What customers are told.
    pub explanation: Explanation,
}

impl PlannedOutage {
    /// When it ends, in seconds since the Unix epoch.
    pub fn ends_at(&self) -> i64 {
        self.starts_at.saturating_add(self.duration.seconds())
    }

    /// Whether it is under way at `now`: started, not ended.
    pub fn is_under_way(&self, now: i64) -> bool {
        self.starts_at <= now && now < self.ends_at()
    }

    /// Whether it is over at `now` (an outage is over at its end).
    pub fn is_over(&self, now: i64) -> bool {
        self.ends_at() <= now
    }
}

/// The outages of `outages` not over at `now`, soonest first (then by id, so every
/// instance lists them in one order).
pub fn not_over(outages: &[PlannedOutage], now: i64) -> Vec<PlannedOutage> {
    let mut upcoming: Vec<PlannedOutage> = outages.iter().filter(|outage| !outage.is_over(now)).cloned().collect();
    upcoming.sort_by(|a, b| a.starts_at.cmp(&b.starts_at).then_with(|| a.id.cmp(&b.id)));
    upcoming
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(raw: &str) -> Result<i64, OutageInputError> {
        OutageDuration::parse_iso8601(raw).map(OutageDuration::seconds)
    }

    #[test]
    fn durations_in_days_hours_minutes_seconds_and_weeks_are_read() {
        assert_eq!(seconds("PT2H"), Ok(7_200));
        assert_eq!(seconds("PT90M"), Ok(5_400));
        assert_eq!(seconds("PT45S"), Ok(45));
        assert_eq!(seconds("P1D"), Ok(86_400));
        assert_eq!(seconds("P1DT2H30M15S"), Ok(86_400 + 9_015));
        assert_eq!(seconds("P2W"), Ok(14 * 86_400));
    }

    #[test]
    fn durations_outside_the_calendar_free_subset_are_refused() {
        for raw in [
            "", "P", "PT", "2H", "pt2h", "PT2", "P1Y", "P1M", "PT1.5H", "PT-1H", "-PT1H", "PT1H2H", "PT1M1H", "P1DT",
            "P1WT1H", "PT 2H", "P1D2D",
        ] {
            assert_eq!(seconds(raw), Err(OutageInputError::Duration), "{raw:?}");
        }
    }

    #[test]
    fn a_zero_or_too_long_duration_is_refused() {
        assert_eq!(seconds("PT0S"), Err(OutageInputError::DurationRange));
        assert_eq!(seconds("P0D"), Err(OutageInputError::DurationRange));
        assert_eq!(seconds("P32D"), Err(OutageInputError::DurationRange));
        assert_eq!(seconds("PT999999999H"), Err(OutageInputError::DurationRange));
        assert_eq!(OutageDuration::from_seconds(-60), Err(OutageInputError::DurationRange));
    }

    #[test]
    fn a_duration_is_written_back_in_its_shortest_iso_form() {
        for (raw, written) in
            [("PT2H", "PT2H"), ("PT90M", "PT1H30M"), ("P1DT0H5S", "P1DT5S"), ("P1W", "P7D"), ("PT61S", "PT1M1S")]
        {
            assert_eq!(OutageDuration::parse_iso8601(raw).map(|d| d.to_string()).as_deref(), Ok(written), "{raw}");
        }
    }

    #[test]
    fn an_outage_is_under_way_from_its_start_until_its_end_and_over_at_its_end() {
        let outage = PlannedOutage {
            id: OutageId::parse("a1").unwrap(),
            starts_at: 1_000,
            duration: OutageDuration::from_seconds(600).unwrap(),
            partial: false,
            explanation: Explanation::parse("upgrade").unwrap(),
        };
        assert!(!outage.is_under_way(999));
        assert!(outage.is_under_way(1_000));
        assert!(outage.is_under_way(1_599));
        assert!(!outage.is_under_way(1_600) && outage.is_over(1_600));
    }

    #[test]
    fn outages_not_over_are_listed_soonest_first() {
        let outage = |id: &str, starts_at| PlannedOutage {
            id: OutageId::parse(id).unwrap(),
            starts_at,
            duration: OutageDuration::from_seconds(100).unwrap(),
            partial: false,
            explanation: Explanation::parse("upgrade").unwrap(),
        };
        let listed = not_over(&[outage("late", 5_000), outage("over", 100), outage("soon", 1_000)], 1_050);
        let ids: Vec<&str> = listed.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["soon", "late"]);
    }

    #[test]
    fn an_id_is_a_short_token() {
        assert!(OutageId::parse("0a1b2c3d4e").is_ok());
        assert_eq!(OutageId::parse(""), Err(OutageInputError::Id));
        assert_eq!(OutageId::parse("a b"), Err(OutageInputError::Id));
        assert_eq!(OutageId::parse(&"a".repeat(65)), Err(OutageInputError::Id));
    }
}
