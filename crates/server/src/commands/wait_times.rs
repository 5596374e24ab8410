//! `waittimes …`: importing a wait-time CSV, and scoring the live estimator on past
//! queue events.

use std::path::{Path, PathBuf};

use adapters::formats::queue_events;
use adapters::formats::shown::quoted;
use adapters::formats::wait_time_csv::{self, WaitTimeFileError};
use domain::ports::ImportKind;
use domain::queue::evaluate::{Accuracy, replay};
use domain::queue::state::LIVE_WINDOW_MINUTES;
use domain::services::imports::ImportWaitTimesError;
use tracing::Instrument as _;

use super::{CommandError, english, open, shown_path};
use crate::startup::Operators;

/// A file's refusal in one line, as an operator reads it.
fn refused_file(error: &WaitTimeFileError) -> CommandError {
    match error {
        WaitTimeFileError::InvalidValue { line, column, value, expected } => {
            let value = quoted(value);
            CommandError(format!("line {line}: {column} {value} is not valid: expected {}", english(*expected)))
        }
        other => CommandError(other.to_string()),
    }
}

/// An import's refusal, with positions in the file told as its lines.
fn refused_import(error: &ImportWaitTimesError, lines: &[u64]) -> CommandError {
    match error {
        ImportWaitTimesError::DuplicateBranch { branch, first, again } => {
            let line = |at: &usize| lines.get(*at).copied().unwrap_or_default();
            CommandError(format!("line {}: branch {branch} was already given on line {}", line(again), line(first)))
        }
        ImportWaitTimesError::Unavailable(cause) => CommandError::of(cause),
    }
}

/// `waittimes import FILE [--dry-run]`
///
/// # Errors
/// [`CommandError`] with the reason; nothing is written then.
pub async fn import(operators: &Operators, file: PathBuf, dry_run: bool) -> Result<(), CommandError> {
    let in_file = |e: CommandError| CommandError(format!("{}: {e}", shown_path(&file)));
    let read = match open(&file).and_then(|opened| {
        wait_time_csv::read(opened, operators.clock.unix_now()).map_err(|e| in_file(refused_file(&e)))
    }) {
        Ok(read) => read,
        Err(error) => {
            if !dry_run {
                operators.imports.invalid_file(ImportKind::WaitTimes).await;
            }
            return Err(error);
        }
    };
    let changes = operators
        .imports
        .wait_times(&read.estimates, dry_run)
        .instrument(tracing::info_span!(target: domain::TRACE_ROOT, "wait times import", dry_run))
        .await
        .map_err(|e| in_file(refused_import(&e, &read.lines)))?;
    let counts = format!("{} added, {} changed, {} unchanged", changes.added, changes.changed, changes.unchanged);
    match (dry_run, changes.written) {
        (true, _) => println!("dry run, nothing written: {} would have {counts}", file.display()),
        (false, false) => println!("unchanged: {} holds the stored wait times ({counts})", file.display()),
        (false, true) => println!("imported {}: {counts}", file.display()),
    }
    Ok(())
}

/// An accuracy as the evaluation prints it.
fn accuracy_line(accuracy: &Accuracy) -> String {
    format!(
        "tickets {}, MAE {:.2} min, P90 absolute error {:.2} min, bias {:.2} min",
        accuracy.tickets, accuracy.mean_absolute, accuracy.p90_absolute, accuracy.bias
    )
}

/// `waittimes evaluate --events FILE [--per-ticket OUT.csv] [--references]`: replays the
/// file through the estimator the service runs, and prints its accuracy in one line
/// (and the references', one line each).
///
/// # Errors
/// [`CommandError`] when the file cannot be read or a line is not a valid event, or the
/// per-ticket file cannot be written.
pub fn evaluate(events: &Path, per_ticket: Option<&Path>, references: bool) -> Result<(), CommandError> {
    let in_file = |e: &dyn std::fmt::Display| CommandError(format!("{}: {e}", shown_path(events)));
    let read = queue_events::read(open(events)?).map_err(|e| in_file(&e))?;
    let replay = replay(read, LIVE_WINDOW_MINUTES);
    if let Some(out) = per_ticket {
        let file =
            std::fs::File::create(out).map_err(|e| CommandError(format!("cannot create {}: {e}", shown_path(out))))?;
        queue_events::write_per_ticket(std::io::BufWriter::new(file), &replay.tickets)
            .map_err(|e| CommandError(format!("cannot write {}: {e}", shown_path(out))))?;
    }
    let tickets = &replay.tickets;
    println!("{}", accuracy_line(&Accuracy::of(tickets.iter().map(|t| (t.estimate, t.actual)))));
    if references {
        let reference = |name: &str, pick: fn(&domain::queue::evaluate::TicketOutcome) -> f64| {
            println!("{name}: {}", accuracy_line(&Accuracy::of(tickets.iter().map(|t| (pick(t), t.actual)))));
        };
        reference("QL with the true mean service time", |t| t.queue_length);
        reference("LES, the last wait to enter service", |t| t.last_to_enter);
        reference("the day's mean wait", |t| t.day_mean);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_given_twice_is_told_by_its_lines() {
        let csv = "branchId,timeTaken\n00001,5\n00002,5\n00001,6\n";
        let file = wait_time_csv::read(csv.as_bytes(), 0).unwrap();
        let twice =
            ImportWaitTimesError::DuplicateBranch { branch: file.estimates[0].estimate.branch, first: 0, again: 2 };
        let error = refused_import(&twice, &file.lines).to_string();
        assert_eq!(error, "line 4: branch 00001 was already given on line 2");
    }

    #[test]
    fn a_bad_value_says_what_a_good_one_looks_like() {
        let error = wait_time_csv::read("branchId,timeTaken\n1234,5\n".as_bytes(), 0).unwrap_err();
        let line = refused_file(&error).to_string();
        assert!(line.starts_with("line 2: branchId \"1234\" is not valid: expected "), "{line}");
    }
}
