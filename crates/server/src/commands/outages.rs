//! `outages …`: announcing, listing and cancelling planned outages.

use domain::outage::{OutageDuration, OutageExplanation, OutageId};
use domain::services::outages::{NOTICE_SECONDS, OutageAdmin};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::{CommandError, utc};
use crate::cli::OutagesAction;

/// `outages …`. Every argument is read before the store is written: a bad one is
/// refused in one line and nothing changes.
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn outages(outages: &OutageAdmin, action: OutagesAction) -> Result<(), CommandError> {
    match action {
        OutagesAction::Schedule { start, duration, explanation, partial } => {
            let starts_at = OffsetDateTime::parse(&start, &Rfc3339)
                .map_err(|_| {
                    CommandError(format!(
                        "--start {start:?} is not valid: expected an RFC 3339 date and time such as \
                         2026-12-05T02:00:00Z"
                    ))
                })?
                .unix_timestamp();
            let duration = OutageDuration::parse_iso8601(&duration)
                .map_err(|error| CommandError(format!("--duration {duration:?} is not valid: {error}")))?;
            let explanation = OutageExplanation::parse(&explanation)
                .map_err(|error| CommandError(format!("--explanation is not valid: {error}")))?;
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
        OutagesAction::List => {
            for outage in outages.list().await.map_err(|e| CommandError::of(&e))? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    outage.id,
                    utc(outage.starts_at),
                    outage.duration,
                    if outage.partial { "partial" } else { "full" },
                    outage.explanation.as_str()
                );
            }
        }
        OutagesAction::Cancel { id } => {
            let id = OutageId::parse(&id).map_err(|error| CommandError(format!("{id:?} is not valid: {error}")))?;
            if outages.cancel(&id).await.map_err(|e| CommandError::of(&e))? {
                println!("outage {id} cancelled; it leaves the published list within a refresh");
            } else {
                return Err(CommandError(format!("no planned outage has the id {id}")));
            }
        }
    }
    Ok(())
}
