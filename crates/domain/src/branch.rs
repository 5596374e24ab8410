//! Branches and their estimated wait times.

use std::fmt;

use crate::input::Expected;

/// A branch's identifier: exactly five ASCII digits (spec: Branch.branchId).
///
/// Held as the number the digits spell, which is a bijection for fixed-width ids, so
/// `"01234"` and `BranchId` 1234 are the same branch and the id space is `0..=99_999`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchId(u32);

impl BranchId {
    /// How many distinct branch ids exist: five decimal digits.
    pub const SPACE: usize = 100_000;

    /// Parses five ASCII digits; anything else (signs, spaces, other lengths) is refused.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        let bytes = raw.as_bytes();
        if bytes.len() != 5 || !bytes.iter().all(u8::is_ascii_digit) {
            return Err(Expected::FiveDigits);
        }
        let value = bytes.iter().fold(0u32, |acc, digit| acc * 10 + u32::from(digit - b'0'));
        Ok(Self(value))
    }

    /// The id as an index into a table of [`BranchId::SPACE`] slots.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id at `index` of a table of [`BranchId::SPACE`] slots, if it is in range.
    pub fn from_index(index: usize) -> Option<Self> {
        (index < Self::SPACE).then_some(Self(index as u32))
    }
    /// The id's five digits, as the wire writes it, without formatting machinery.
    pub fn digits(self) -> BranchDigits {
        let mut digits = [b'0'; 5];
        let mut rest = self.0;
        for digit in digits.iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        BranchDigits(digits)
    }
}

/// The five ASCII digits of a [`BranchId`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchDigits([u8; 5]);

impl BranchDigits {
    /// The digits as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The digits as text.
    pub fn as_str(&self) -> &str {
        // Only ASCII digits are ever written into the array.
        std::str::from_utf8(&self.0).unwrap_or("00000")
    }
}

impl fmt::Display for BranchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.digits().as_str())
    }
}

/// An estimated wait in whole minutes (spec: BranchInfo.timeTaken, "numeric digits").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaitTime(u16);

impl WaitTime {
    /// The longest wait the service accepts: one day. A larger figure is a data error
    /// (a seconds column loaded as minutes, say), not a queue.
    pub const MAX_MINUTES: u16 = 1440;

    /// A wait of `minutes`, if it is within [`WaitTime::MAX_MINUTES`].
    pub fn from_minutes(minutes: u32) -> Result<Self, Expected> {
        u16::try_from(minutes).ok().filter(|m| *m <= Self::MAX_MINUTES).map(Self).ok_or(Expected::Minutes)
    }

    /// Parses a digit string such as `"15"`; signs, decimals and blanks are refused.
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        if raw.is_empty() || raw.len() > 4 || !raw.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Expected::Minutes);
        }
        raw.parse::<u32>().map_err(|_| Expected::Minutes).and_then(Self::from_minutes)
    }

    /// The wait in minutes.
    pub fn minutes(self) -> u16 {
        self.0
    }
}

impl fmt::Display for WaitTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One branch's current estimate, as the wait-time operation answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchWaitTime {
    /// The branch.
    pub branch: BranchId,
    /// Its estimated wait.
    pub wait: WaitTime,
}

/// A branch's estimate as stored, with when it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitTimeEstimate {
    /// The branch and its wait.
    pub estimate: BranchWaitTime,
    /// When it was estimated, seconds since the Unix epoch.
    pub estimated_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_writes_back_as_the_five_digits_it_was_read_from() {
        for raw in ["00000", "00042", "10300", "99999"] {
            let id = BranchId::parse(raw).unwrap();
            assert_eq!(id.digits().as_str(), raw);
            assert_eq!(id.to_string(), raw);
        }
    }

    #[test]
    fn a_branch_id_keeps_its_leading_zeros() {
        let id = BranchId::parse("00042").unwrap();
        assert_eq!(id.to_string(), "00042");
        assert_eq!(id.index(), 42);
    }

    #[test]
    fn a_branch_id_with_four_or_six_digits_is_rejected() {
        assert_eq!(BranchId::parse("1234"), Err(Expected::FiveDigits));
        assert_eq!(BranchId::parse("123456"), Err(Expected::FiveDigits));
    }

    #[test]
    fn a_branch_id_with_signs_spaces_or_non_ascii_digits_is_rejected() {
        for raw in ["+1234", "-1234", " 1234", "1234 ", "12a45", "١٢٣٤٥", ""] {
            assert_eq!(BranchId::parse(raw), Err(Expected::FiveDigits), "{raw:?}");
        }
    }

    #[test]
    fn the_whole_id_space_round_trips_through_its_index() {
        for index in [0, 1, 99_999] {
            let id = BranchId::from_index(index).unwrap();
            assert_eq!(BranchId::parse(&id.to_string()).unwrap(), id);
        }
        assert_eq!(BranchId::from_index(100_000), None);
    }

    #[test]
    fn wait_times_are_whole_minutes_up_to_a_day() {
        assert_eq!(WaitTime::parse("0").unwrap().minutes(), 0);
        assert_eq!(WaitTime::parse("1440").unwrap().to_string(), "1440");
        for raw in ["1441", "-1", "1.5", "", " 5", "99999"] {
            assert_eq!(WaitTime::parse(raw), Err(Expected::Minutes), "{raw:?}");
        }
    }
}
