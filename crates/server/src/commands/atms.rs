//! `atms …`: importing an OBIE ATM file as the ATM set, exporting the set, and the
//! closures announced for it.

use std::path::Path;
use tracing::Instrument as _;

use adapters::formats::atm_file;
use adapters::formats::shown::{escaped, quoted};
use domain::atm_state::AtmId;
use domain::ports::ImportKind;
use domain::services::atm_closures::ClosureAdmin;
use domain::services::imports::{AtmImport, AtmSetChanges, DataImport, ImportRules};
use domain::text::Explanation;
use time::Date;

use super::{CommandError, open, shown_path};
use crate::cli::AtmsAction;
use crate::errors::one_line;

/// Identifications listed per kind of change, at most.
const LISTED: usize = 5;

/// `brand/identification` of the first few of `keys`, and how many more; control
/// characters escaped (a store written before feeds were checked may hold some).
fn first_of(keys: &[(String, String)]) -> String {
    if keys.is_empty() {
        return String::new();
    }
    let shown: Vec<String> =
        keys.iter().take(LISTED).map(|(brand, id)| format!("{}/{}", escaped(brand), escaped(id))).collect();
    let more = keys.len().saturating_sub(LISTED);
    format!(" ({}{})", shown.join(", "), if more > 0 { format!(", and {more} more") } else { String::new() })
}

fn describe(changes: &AtmSetChanges) -> String {
    format!(
        "{} ATMs stored, {} in the file: {} added{}, {} removed{}, {} changed{}",
        changes.current,
        changes.new,
        changes.added.len(),
        first_of(&changes.added),
        changes.removed.len(),
        first_of(&changes.removed),
        changes.changed.len(),
        first_of(&changes.changed)
    )
}

/// An `atms closure|closures` command with its arguments read: what [`closures`]
/// carries out.
#[derive(Debug)]
pub enum ClosureCommand {
    /// `closure ATM_ID --closes-on … --explanation … [--short-notice …]`.
    Announce {
        /// The ATM.
        atm: AtmId,
        /// Its first closed day.
        closes_on: Date,
        /// What customers are told.
        explanation: Explanation,
        /// Why the notice is short, if it is.
        short_notice: Option<Explanation>,
    },
    /// `closure ATM_ID --cancel`.
    Cancel(AtmId),
    /// `closures`.
    List,
}

/// Reads an `atms closure|closures` command's arguments, before the store is opened (a
/// bad one is refused in one line, and nothing is touched); `None` for the other `atms`
/// commands.
///
/// # Errors
/// [`CommandError`] naming the argument and why.
pub fn closure_command(action: &AtmsAction) -> Result<Option<ClosureCommand>, CommandError> {
    let AtmsAction::Closure { atm_id, closes_on, explanation, short_notice, cancel } = action else {
        return Ok(matches!(action, AtmsAction::Closures).then_some(ClosureCommand::List));
    };
    let atm = AtmId::parse(atm_id).ok_or_else(|| {
        CommandError(format!("{} is not an ATM Identification (1 to 35 characters, none hidden)", quoted(atm_id)))
    })?;
    if *cancel {
        return Ok(Some(ClosureCommand::Cancel(atm)));
    }
    let said = |flag: &str, text: &str| {
        Explanation::parse(text).map_err(|error| CommandError(format!("{flag} is not valid: {error}")))
    };
    let (Some(closes_on), Some(explanation)) = (closes_on, explanation) else {
        return Err(CommandError("--closes-on and --explanation are needed, or --cancel".to_owned()));
    };
    let day = Date::parse(closes_on, time::macros::format_description!("[year]-[month]-[day]")).map_err(|_| {
        CommandError(format!("--closes-on {} is not valid: expected a date such as 2027-03-01", quoted(closes_on)))
    })?;
    Ok(Some(ClosureCommand::Announce {
        atm,
        closes_on: day,
        explanation: said("--explanation", explanation)?,
        short_notice: short_notice.as_deref().map(|reason| said("--short-notice", reason)).transpose()?,
    }))
}

/// Carries out a closure command [`closure_command`] read.
///
/// # Errors
/// [`CommandError`] with the reason; nothing changed then.
pub async fn closures(admin: &ClosureAdmin, command: ClosureCommand) -> Result<(), CommandError> {
    match command {
        ClosureCommand::Announce { atm, closes_on, explanation, short_notice } => {
            let closure =
                admin.announce(atm, closes_on, explanation, short_notice).await.map_err(|e| CommandError::of(&e))?;
            println!(
                "ATM {} closes on {} (00:00 UTC); until then no import may drop it, and apps see the closure \
                 within a refresh",
                closure.atm, closure.closes_on
            );
        }
        ClosureCommand::Cancel(atm) => {
            if !admin.cancel(&atm).await.map_err(|e| CommandError::of(&e))? {
                return Err(CommandError(format!("no closure is announced for ATM {atm}")));
            }
            println!("the closure of ATM {atm} is cancelled; apps see it within a refresh");
        }
        ClosureCommand::List => {
            for (closure, closed) in admin.list().await.map_err(|e| CommandError::of(&e))? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    closure.atm,
                    closure.closes_on,
                    if closed { "closed" } else { "announced" },
                    escaped(closure.explanation.as_str()),
                    closure.short_notice.as_ref().map_or(String::new(), |reason| escaped(reason.as_str()).to_string()),
                );
            }
        }
    }
    Ok(())
}

/// `atms import|export`
///
/// # Errors
/// [`CommandError`] with the reason; the ATM set is unchanged then.
pub async fn atms(imports: &DataImport, action: AtmsAction) -> Result<(), CommandError> {
    let (file, rules) = match action {
        AtmsAction::Export { file } => return export_atms(imports, file.as_deref()).await,
        AtmsAction::Import { file, dry_run, max_shrink_percent, allow_shrink } => {
            (file, ImportRules { max_shrink_percent, allow_shrink, dry_run })
        }
        AtmsAction::Closure { .. } | AtmsAction::Closures => {
            return Err(CommandError("a closure command is run by `closures`".to_owned()));
        }
    };
    let read = open(&file)
        .and_then(|opened| atm_file::read(opened).map_err(|e| CommandError(format!("{}: {e}", shown_path(&file)))));
    let read = match read {
        Ok(read) => read,
        Err(error) => {
            if !rules.dry_run {
                imports.invalid_file(ImportKind::Atms).await;
            }
            return Err(error);
        }
    };
    for warning in &read.warnings {
        println!("warning: {}", escaped(warning));
    }
    let span = tracing::info_span!(target: domain::TRACE_ROOT, "atms import", dry_run = rules.dry_run);
    let outcome = imports
        .atms(&read.feed, rules)
        .instrument(span)
        .await
        .map_err(|e| CommandError(format!("{}: {}", shown_path(&file), one_line(&e))))?;
    match outcome {
        AtmImport::Unchanged { atms } => {
            println!("unchanged: {} holds the {atms} ATMs stored; nothing written", file.display());
        }
        AtmImport::Applied(changes) => println!("imported {}: {}", file.display(), describe(&changes)),
        AtmImport::Planned { changes, refusal } => {
            let verdict = match (changes.is_empty(), refusal) {
                (true, _) => "it holds the stored set, so it would change nothing".to_owned(),
                (false, Some(refusal)) => format!("it would be refused: {refusal}"),
                (false, None) => "it would be applied".to_owned(),
            };
            println!("dry run, nothing written: {}: {}; {verdict}", file.display(), describe(&changes));
        }
    }
    Ok(())
}

async fn export_atms(imports: &DataImport, file: Option<&Path>) -> Result<(), CommandError> {
    let set = imports.current_atms().await.map_err(|e| CommandError::of(&e))?;
    let written = match file {
        Some(path) => std::fs::File::create(path)
            .and_then(|out| atm_file::write(&set.atms, set.last_updated, std::io::BufWriter::new(out)))
            .map_err(|e| CommandError(format!("cannot write {}: {e}", shown_path(path)))),
        None => atm_file::write(&set.atms, set.last_updated, std::io::stdout().lock())
            .map_err(|e| CommandError(format!("cannot write the ATM file: {e}"))),
    };
    written?;
    if let Some(path) = file {
        println!("exported {} ATMs to {}", set.atms.len(), path.display());
    }
    Ok(())
}
