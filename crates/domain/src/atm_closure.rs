//! ATM closures announced ahead (`atms closure`, issue 45). UK access-to-cash rules have a
//! closure announced at least twelve weeks (84 days) before it happens; a shorter notice
//! is accepted only with its reason, which is kept.
//!
//! A closure takes effect at 00:00 UTC of its date, on every instance at once, with no
//! import run that day: from then on the ATM is left out of the listings and shown
//! `Closed`. UTC, not UK time: UK time is never behind UTC, so an ATM never closes
//! before its date begins where it stands (at worst an hour after, in summer).

use std::fmt;

use time::{Date, OffsetDateTime};

use crate::atm_state::AtmId;
use crate::text::Explanation;

/// The notice a closure is announced with unless a reason for less is given: twelve
/// weeks, in days.
pub const NOTICE_DAYS: i64 = 84;

/// A closure as announced.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtmClosure {
    /// The ATM (its OBIE `Identification`): every ATM of the set with it closes.
    pub atm: AtmId,
    /// The first day it is closed.
    pub closes_on: Date,
    /// What customers are told.
    pub explanation: Explanation,
    /// Why it was announced with less than [`NOTICE_DAYS`] days' notice, if it was.
    pub short_notice: Option<Explanation>,
    /// When it was announced, seconds since the Unix epoch.
    pub announced_at: i64,
}

impl AtmClosure {
    /// When it takes effect: 00:00 UTC of its date, seconds since the Unix epoch.
    pub fn starts_at(&self) -> i64 {
        day_start(self.closes_on)
    }

    /// Whether it has taken effect at `now` (seconds since the epoch).
    pub fn in_effect(&self, now: i64) -> bool {
        now >= self.starts_at()
    }
}

/// 00:00 UTC of `day`, seconds since the Unix epoch.
pub fn day_start(day: Date) -> i64 {
    day.midnight().assume_utc().unix_timestamp()
}

/// The UTC day of `at` (seconds since the epoch; a time no date can hold is the nearest
/// day there is).
pub fn day_of(at: i64) -> Date {
    OffsetDateTime::from_unix_timestamp(at).map_or(if at < 0 { Date::MIN } else { Date::MAX }, OffsetDateTime::date)
}

/// Why a closure was not announced. Nothing was stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClosureRefusal {
    /// Its date has passed.
    #[error("{closes_on} has passed (today is {today}, UTC)")]
    Passed {
        /// The date asked for.
        closes_on: Date,
        /// Today, UTC.
        today: Date,
    },
    /// Less than [`NOTICE_DAYS`] days ahead, and no reason given.
    #[error(
        "{closes_on} is {days} days from today; a closure is announced at least {NOTICE_DAYS} days ahead (on or \
         after {earliest}), or with --short-notice REASON"
    )]
    ShortNotice {
        /// The date asked for.
        closes_on: Date,
        /// Days from today to it.
        days: i64,
        /// The first date the notice allows.
        earliest: Date,
    },
    /// No ATM of the set has that identification.
    #[error("no ATM of the set has Identification {0}")]
    UnknownAtm(AtmId),
}

/// Checks that a closure on `closes_on`, announced at `now`, gives its notice: a date
/// today or later, at least [`NOTICE_DAYS`] days ahead unless `short_notice`.
///
/// # Errors
/// [`ClosureRefusal::Passed`] or [`ClosureRefusal::ShortNotice`].
pub fn check_notice(closes_on: Date, now: i64, short_notice: bool) -> Result<(), ClosureRefusal> {
    let today = day_of(now);
    let days = (closes_on - today).whole_days();
    if days < 0 {
        return Err(ClosureRefusal::Passed { closes_on, today });
    }
    if days < NOTICE_DAYS && !short_notice {
        let earliest = today.checked_add(time::Duration::days(NOTICE_DAYS)).unwrap_or(Date::MAX);
        return Err(ClosureRefusal::ShortNotice { closes_on, days, earliest });
    }
    Ok(())
}

/// A closure as an instance holds it, its date already written as the state read shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldClosure {
    /// The closure.
    pub closure: AtmClosure,
    /// `closesOn`: `YYYY-MM-DD`.
    pub closes_on: Box<str>,
    /// The state's `since` once it is in effect: 00:00 UTC of its date, RFC 3339.
    pub since: Box<str>,
}

impl From<AtmClosure> for HeldClosure {
    fn from(closure: AtmClosure) -> Self {
        Self {
            closes_on: closure.closes_on.to_string().into(),
            since: format!("{}T00:00:00Z", closure.closes_on).into(),
            closure,
        }
    }
}

impl fmt::Display for AtmClosure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} closes on {}", self.atm, self.closes_on)
    }
}

#[cfg(test)]
mod tests {
    use time::macros::{date, datetime};

    use super::*;

    #[test]
    fn a_closure_needs_84_days_notice_counted_in_utc_days_unless_a_reason_is_given() {
        let now = datetime!(2026-11-28 23:30 UTC).unix_timestamp();
        let today = date!(2026 - 11 - 28);
        let ahead = |days: i64| today + time::Duration::days(days);
        assert_eq!(
            check_notice(ahead(83), now, false),
            Err(ClosureRefusal::ShortNotice { closes_on: ahead(83), days: 83, earliest: ahead(84) })
        );
        assert_eq!(check_notice(ahead(84), now, false), Ok(()), "exactly twelve weeks");
        assert_eq!(check_notice(ahead(85), now, false), Ok(()));
        assert_eq!(check_notice(ahead(83), now, true), Ok(()), "with its reason");
        assert_eq!(check_notice(today, now, true), Ok(()), "closing today, at once");
        assert_eq!(
            check_notice(ahead(-1), now, true),
            Err(ClosureRefusal::Passed { closes_on: ahead(-1), today }),
            "a date gone is refused even with a reason"
        );
    }

    #[test]
    fn a_closure_takes_effect_at_midnight_utc_of_its_date() {
        let closure = AtmClosure {
            atm: AtmId::parse("A1").unwrap(),
            closes_on: date!(2027 - 03 - 01),
            explanation: Explanation::parse("The branch moves").unwrap(),
            short_notice: None,
            announced_at: 0,
        };
        let midnight = datetime!(2027-03-01 00:00 UTC).unix_timestamp();
        assert!(!closure.in_effect(midnight - 1));
        assert!(closure.in_effect(midnight));
        let held = HeldClosure::from(closure);
        assert_eq!((&*held.closes_on, &*held.since), ("2027-03-01", "2027-03-01T00:00:00Z"));
    }
}
