//! The wait-time CSV operators import: a header `branchId,timeTaken` and optionally
//! `estimatedAt` (RFC 3339; the import time when absent or empty), any column order, a
//! byte-order mark allowed. The first bad row refuses the whole file, naming its line
//! (the header is line 1), and quotes a bad value by its first characters
//! ([`super::shown::quoted`]): a 10 MB field makes a short line, not a 10 MB one.

use std::collections::HashMap;
use std::io::Read;

use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use domain::input::Expected;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::shown::quoted;

/// The columns a file may have.
const COLUMNS: [&str; 3] = ["branchId", "timeTaken", "estimatedAt"];

/// A wait-time CSV read into estimates, with the line each came from.
#[derive(Debug)]
pub struct WaitTimeFile {
    /// The estimates, in file order.
    pub estimates: Vec<WaitTimeEstimate>,
    /// The line of each estimate (the header is line 1).
    pub lines: Vec<u64>,
}

/// Why a wait-time file was refused; each names its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitTimeFileError {
    /// The header names a column the format does not have.
    #[error("line 1: unknown column {}; expected branchId,timeTaken[,estimatedAt]", quoted(.0))]
    UnknownColumn(String),
    /// The header names a column twice.
    #[error("line 1: column {} appears twice", quoted(.0))]
    RepeatedColumn(String),
    /// The header lacks a required column.
    #[error("line 1: the header lacks the column {0:?}")]
    MissingColumn(&'static str),
    /// A field is not a valid value of its column.
    #[error("line {line}: {column} {} is not valid", quoted(.value))]
    InvalidValue {
        /// The line.
        line: u64,
        /// The column.
        column: &'static str,
        /// The field as written.
        value: String,
        /// What a valid value looks like.
        expected: Expected,
    },
    /// `estimatedAt` is not an RFC 3339 date-time.
    #[error("line {line}: estimatedAt {} is not an RFC 3339 date-time", quoted(.value))]
    InvalidTime {
        /// The line.
        line: u64,
        /// The field as written.
        value: String,
    },
    /// The file is not CSV as the header makes it (a row with too many fields, bad UTF-8).
    #[error("line {line}: {reason}")]
    Malformed {
        /// The line.
        line: u64,
        /// The CSV reader's reason.
        reason: String,
    },
}

/// Parses a wait-time CSV; rows without `estimatedAt` were estimated at `now`.
///
/// # Errors
/// [`WaitTimeFileError`] for the first thing wrong, naming its line.
pub fn read(input: impl Read, now: i64) -> Result<WaitTimeFile, WaitTimeFileError> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(input);
    let headers =
        reader.headers().map_err(|e| WaitTimeFileError::Malformed { line: 1, reason: e.to_string() })?.clone();
    let mut columns = HashMap::new();
    for (index, name) in headers.iter().enumerate() {
        let name = name.trim_start_matches('\u{feff}');
        let Some(known) = COLUMNS.iter().find(|column| **column == name) else {
            return Err(WaitTimeFileError::UnknownColumn(name.to_owned()));
        };
        if columns.insert(*known, index).is_some() {
            return Err(WaitTimeFileError::RepeatedColumn(name.to_owned()));
        }
    }
    let column = |name: &'static str| columns.get(name).copied().ok_or(WaitTimeFileError::MissingColumn(name));
    let (branch_column, time_column) = (column("branchId")?, column("timeTaken")?);
    let estimated_column = columns.get("estimatedAt").copied();

    let mut file = WaitTimeFile { estimates: Vec::new(), lines: Vec::new() };
    for record in reader.records() {
        let record = record.map_err(|e| WaitTimeFileError::Malformed {
            line: e.position().map_or(0, |p| p.line()),
            reason: e.to_string(),
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let field = |index: usize| record.get(index).unwrap_or_default();
        let invalid = |column: &'static str, value: &str, expected: Expected| WaitTimeFileError::InvalidValue {
            line,
            column,
            value: value.to_owned(),
            expected,
        };
        let branch = BranchId::parse(field(branch_column)).map_err(|e| invalid("branchId", field(branch_column), e))?;
        let wait = WaitTime::parse(field(time_column)).map_err(|e| invalid("timeTaken", field(time_column), e))?;
        let estimated_at = match estimated_column.map(field).filter(|raw| !raw.is_empty()) {
            None => now,
            Some(raw) => OffsetDateTime::parse(raw, &Rfc3339)
                .map_err(|_| WaitTimeFileError::InvalidTime { line, value: raw.to_owned() })?
                .unix_timestamp(),
        };
        file.estimates.push(WaitTimeEstimate { estimate: BranchWaitTime { branch, wait }, estimated_at });
        file.lines.push(line);
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_with_an_estimated_at_column_keeps_its_times() {
        let csv = "branchId,timeTaken,estimatedAt\n00001,5,2026-11-21T10:00:00Z\n00002,0,\n";
        let rows = read(csv.as_bytes(), 42).unwrap().estimates;
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].estimate.wait.minutes(), 5);
        assert_eq!(rows[0].estimated_at, 1_795_255_200);
        assert_eq!(rows[1].estimated_at, 42);
    }

    #[test]
    fn a_bad_row_names_its_line_counting_the_header_as_line_one() {
        let csv = "branchId,timeTaken\n00001,5\n00002,5\n1234,5\n";
        let error = read(csv.as_bytes(), 0).unwrap_err();
        assert!(matches!(error, WaitTimeFileError::InvalidValue { line: 4, column: "branchId", .. }), "{error}");
    }

    #[test]
    fn negative_or_fractional_minutes_are_refused() {
        for bad in ["-1", "2.5", "abc", ""] {
            let csv = format!("branchId,timeTaken\n00001,{bad}\n");
            let error = read(csv.as_bytes(), 0).unwrap_err();
            assert!(matches!(error, WaitTimeFileError::InvalidValue { line: 2, column: "timeTaken", .. }), "{error}");
        }
    }

    #[test]
    fn a_wrong_header_is_refused_on_line_one() {
        let error = read("branch,minutes\n00001,5\n".as_bytes(), 0).unwrap_err();
        assert_eq!(error, WaitTimeFileError::UnknownColumn("branch".into()));
        assert!(error.to_string().starts_with("line 1:"), "{error}");
    }

    #[test]
    fn a_ten_megabyte_field_is_quoted_by_its_first_characters() {
        let huge = "9".repeat(10 * 1024 * 1024);
        for csv in [
            format!("branchId,timeTaken\n{huge},5\n"),
            format!("branchId,timeTaken\n00001,{huge}\n"),
            format!("branchId,timeTaken,estimatedAt\n00001,5,{huge}\n"),
            format!("branchId,timeTaken,{huge}\n"),
        ] {
            let error = read(csv.as_bytes(), 0).unwrap_err().to_string();
            assert!(
                error.len() < 200 && error.contains("… (10485760 characters)"),
                "{}",
                error.chars().take(200).collect::<String>()
            );
        }
        let error = read("branchId,timeTaken\n0000\u{1b}[2J,5\n".as_bytes(), 0).unwrap_err().to_string();
        assert_eq!(error, "line 2: branchId \"0000\\u{1b}[2J\" is not valid");
    }

    #[test]
    fn a_row_with_too_many_fields_is_refused() {
        let error = read("branchId,timeTaken\n00001,5,9\n".as_bytes(), 0).unwrap_err();
        assert!(matches!(error, WaitTimeFileError::Malformed { line: 2, .. }), "{error}");
    }
}
