//! `outages …`: announcing, listing and cancelling planned outages.

use adapters::formats::shown::{escaped, quoted};
use domain::outage::{OutageDuration, OutageId};
use domain::services::outages::{NOTICE_SECONDS, OutageAdmin};
use domain::text::Explanation;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{CommandError, utc};
use crate::cli::OutagesAction;

/// An `outages …` command with its arguments read: what [`run`] carries out.
#[derive(Debug)]
pub enum OutageCommand {
    /// `schedule`.
    Schedule {
        /// When it starts, seconds since the epoch.
        starts_at: i64,
        /// How long it lasts.
        duration: OutageDuration,
        /// What customers are told.
        explanation: Explanation,
        /// Only part of the service goes.
        partial: bool,
    },
    /// `list`.
    List,
    /// `cancel`.
    Cancel(OutageId),
}

/// Reads an `outages …` command's arguments, before the store is opened: a bad one is
/// refused in one line and nothing, not even the store's file, is touched.
///
/// # Errors
/// [`CommandError`] naming the argument and why.
pub fn parse(action: OutagesAction) -> Result<OutageCommand, CommandError> {
    Ok(match action {
        OutagesAction::Schedule { start, duration, explanation, partial } => {
            let starts_at = OffsetDateTime::parse(&start, &Rfc3339)
                .map_err(|_| {
                    CommandError(format!(
                        "--start {} is not valid: expected an RFC 3339 date and time such as \
                         2026-12-05T02:00:00Z",
                        quoted(&start)
                    ))
                })?
                .unix_timestamp();
            let duration = OutageDuration::parse_iso8601(&duration)
                .map_err(|error| CommandError(format!("--duration {} is not valid: {error}", quoted(&duration))))?;
            let explanation = Explanation::parse(&explanation)
                .map_err(|error| CommandError(format!("--explanation is not valid: {error}")))?;
            OutageCommand::Schedule { starts_at, duration, explanation, partial }
        }
        OutagesAction::List => OutageCommand::List,
        OutagesAction::Cancel { id } => OutageCommand::Cancel(
            OutageId::parse(&id).map_err(|error| CommandError(format!("{} is not valid: {error}", quoted(&id))))?,
        ),
    })
}

/// Carries out an `outages …` command [`parse`] read.
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn run(outages: &OutageAdmin, command: OutageCommand) -> Result<(), CommandError> {
    match command {
        OutageCommand::Schedule { starts_at, duration, explanation, partial } => {
            let scheduled =
                outages.schedule(starts_at, duration, partial, explanation).await.map_err(|e| CommandError::of(&e))?;
            if scheduled.short_notice {
                eprintln!(
                    "warning: the outage starts less than {} days from now; the Consumer Data Right asks for a \
                     week's notice",
                    NOTICE_SECONDS / 86_400
                );
            }
            let outage = &scheduled.outage;
            println!(
                "outage {} scheduled: {} for {} ({}); published within a refresh",
                outage.id,
                utc(outage.starts_at),
                outage.duration,
                if outage.partial { "partial" } else { "full" }
            );
        }
        OutageCommand::List => {
            for outage in outages.list().await.map_err(|e| CommandError::of(&e))? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    outage.id,
                    utc(outage.starts_at),
                    outage.duration,
                    if outage.partial { "partial" } else { "full" },
                    escaped(outage.explanation.as_str())
                );
            }
        }
        OutageCommand::Cancel(id) => {
            if outages.cancel(&id).await.map_err(|e| CommandError::of(&e))? {
                println!("outage {id} cancelled; it leaves the published list within a refresh");
            } else {
                return Err(CommandError(format!("no planned outage has the id {id}")));
            }
        }
    }
    Ok(())
}
