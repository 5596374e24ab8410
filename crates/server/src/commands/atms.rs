//! `atms …`: importing an OBIE ATM file as the ATM set, and exporting the set.

use std::path::Path;
use tracing::Instrument as _;

use adapters::formats::atm_file;
use adapters::formats::shown::escaped;
use domain::ports::ImportKind;
use domain::services::imports::{AtmImport, AtmSetChanges, DataImport, ImportRules};

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

/// `atms …`
///
/// # Errors
/// [`CommandError`] with the reason; the ATM set is unchanged then.
pub async fn atms(imports: &DataImport, action: AtmsAction) -> Result<(), CommandError> {
    let (file, rules) = match action {
        AtmsAction::Export { file } => return export_atms(imports, file.as_deref()).await,
        AtmsAction::Import { file, dry_run, max_shrink_percent, allow_shrink } => {
            (file, ImportRules { max_shrink_percent, allow_shrink, dry_run })
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
