//! The operators' commands: each parses its arguments into domain values, calls a
//! domain service, prints what it did on stdout, and fails with a one-line reason.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use domain::branch::{BranchId, BranchWaitTime, WaitTime, WaitTimeEstimate};
use domain::client::{
    BusinessCode, ChannelId, ChannelScope, ClientAddresses, ClientId, ClientRegistration, ClientStatus, CountryCode,
    Origin, RedirectUri,
};
use domain::input::Expected;
use domain::ports::{Clock, ImportKind};
use domain::services::access::{AccessChange, ChannelAccess};
use domain::services::clients::ClientAdmin;
use domain::services::imports::{AtmImport, AtmSetChanges, DataImport, ImportRules, ImportWaitTimesError};
use domain::services::keys::KeyManagement;
use domain::services::token_records::{Revocation, TokenRecords};
use domain::token::{KeyState, OpaqueToken};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::cli::{AccessAction, AtmsAction, ClientsAction, KeysAction, TokensAction, WaitTimesAction};

/// The domain's services for operators, wired to one store (`startup::operators`).
pub struct Operators {
    /// The service's one clock (a CSV row without `estimatedAt` is estimated now).
    pub clock: Arc<dyn Clock>,
    /// Client applications.
    pub clients: ClientAdmin,
    /// Supported channel combinations.
    pub access: ChannelAccess,
    /// Wait-time and ATM imports.
    pub imports: DataImport,
    /// Signing keys.
    pub keys: KeyManagement,
    /// Issued tokens.
    pub tokens: TokenRecords,
}

/// A command failed; the text is its one-line reason.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CommandError(pub String);

impl CommandError {
    /// The reason of `error` and its causes, on one line.
    pub fn of(error: &dyn std::error::Error) -> Self {
        Self(one_line(error))
    }
}

/// An error and its causes on one line, `outer: inner: root`.
pub fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line.replace('\n', " ")
}

/// `raw` parsed, or why not, in the words of the text table.
fn parse<T>(what: &str, raw: &str, parse: impl FnOnce(&str) -> Result<T, Expected>) -> Result<T, CommandError> {
    parse(raw).map_err(|shape| CommandError(format!("{what} {raw:?} is not valid: expected {}", english(shape))))
}

/// What a value should look like, as the API tells it in English.
fn english(shape: Expected) -> &'static str {
    crate::texts::expected(shape, crate::texts::Language::En)
}

fn parse_all<T>(
    what: &str,
    raw: &[String],
    parse_one: fn(&str) -> Result<T, Expected>,
) -> Result<Vec<T>, CommandError> {
    raw.iter().map(|value| parse(what, value, parse_one)).collect()
}

fn channel_scope(country: &str, business: &str, channel: &str) -> Result<ChannelScope, CommandError> {
    Ok(ChannelScope {
        country: parse("country code", country, CountryCode::parse)?,
        business: parse("business code", business, BusinessCode::parse)?,
        channel: parse("channel id", channel, ChannelId::parse)?,
    })
}

/// `clients …`
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn clients(admin: &ClientAdmin, action: ClientsAction) -> Result<(), CommandError> {
    match action {
        ClientsAction::Add { client_id, business_code, country_code, channel_id, redirect_uris, allowed_origins } => {
            let client = ClientRegistration {
                client_id: parse("client id", &client_id, ClientId::parse)?,
                scope: channel_scope(&country_code, &business_code, &channel_id)?,
                redirect_uris: parse_all("redirect URI", &redirect_uris, RedirectUri::parse)?,
                allowed_origins: parse_all("origin", &allowed_origins, Origin::parse)?,
                status: ClientStatus::Active,
            };
            admin.register(&client).await.map_err(|e| CommandError::of(&e))?;
            println!("registered client {client_id}");
        }
        ClientsAction::Update { client_id, redirect_uris, allowed_origins, no_allowed_origins } => {
            let id = parse("client id", &client_id, ClientId::parse)?;
            let addresses = ClientAddresses {
                redirect_uris: (!redirect_uris.is_empty())
                    .then(|| parse_all("redirect URI", &redirect_uris, RedirectUri::parse))
                    .transpose()?,
                allowed_origins: (no_allowed_origins || !allowed_origins.is_empty())
                    .then(|| parse_all("origin", &allowed_origins, Origin::parse))
                    .transpose()?,
            };
            if addresses == ClientAddresses::default() {
                return Err(CommandError(
                    "nothing to update: give --redirect-uri, --allowed-origin or --no-allowed-origins".into(),
                ));
            }
            admin.update(&id, &addresses).await.map_err(|e| CommandError::of(&e))?;
            println!("updated client {client_id}");
        }
        ClientsAction::List => {
            println!("client_id\tstatus\tcountryCode\tbusinessCode\tchannelId\tredirect_uris\torigins");
            for client in admin.list().await.map_err(|e| CommandError::of(&e))? {
                let uris: Vec<&str> = client.redirect_uris.iter().map(RedirectUri::as_str).collect();
                let origins: Vec<String> = client.origins().iter().map(|o| o.as_str().to_owned()).collect();
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    client.client_id,
                    match client.status {
                        ClientStatus::Active => "active",
                        ClientStatus::Disabled => "disabled",
                    },
                    client.scope.country,
                    client.scope.business,
                    client.scope.channel,
                    uris.join(" "),
                    origins.join(" ")
                );
            }
        }
        ClientsAction::Disable { client_id } => {
            let id = parse("client id", &client_id, ClientId::parse)?;
            let revoked = admin.disable(&id).await.map_err(|e| CommandError::of(&e))?;
            println!("disabled client {client_id}; revoked {revoked} live token(s)");
        }
    }
    Ok(())
}

/// `access …`
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn access(access: &ChannelAccess, action: AccessAction) -> Result<(), CommandError> {
    let AccessAction::Allow { country_code, business_code, channel_id } = action;
    let scope = channel_scope(&country_code, &business_code, &channel_id)?;
    let how = match access.allow(&scope).await.map_err(|e| CommandError::of(&e))? {
        AccessChange::Allowed => "now supported",
        AccessChange::AlreadyAllowed => "already supported",
    };
    println!("{country_code}/{business_code}/{channel_id} {how}");
    Ok(())
}

/// A wait-time CSV read into estimates, with the line each came from.
#[derive(Debug)]
pub struct WaitTimeFile {
    /// The estimates, in file order.
    pub estimates: Vec<WaitTimeEstimate>,
    /// The line of each estimate (the header is line 1).
    pub lines: Vec<u64>,
}

/// Parses a wait-time CSV: header `branchId,timeTaken` and optionally `estimatedAt`
/// (RFC 3339; the import time when absent or empty). The first bad row fails the whole
/// file, naming its line (the header is line 1).
///
/// # Errors
/// [`CommandError`] naming the line and the field.
pub fn parse_wait_times(input: impl Read, now: i64) -> Result<WaitTimeFile, CommandError> {
    let mut reader = csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(input);
    let headers = reader.headers().map_err(|e| CommandError(format!("line 1: {e}")))?.clone();
    let mut columns = std::collections::HashMap::new();
    for (index, name) in headers.iter().enumerate() {
        let name = name.trim_start_matches('\u{feff}');
        if !["branchId", "timeTaken", "estimatedAt"].contains(&name) {
            return Err(CommandError(format!(
                "line 1: unknown column {name:?}; expected branchId,timeTaken[,estimatedAt]"
            )));
        }
        if columns.insert(name.to_owned(), index).is_some() {
            return Err(CommandError(format!("line 1: column {name:?} appears twice")));
        }
    }
    let column = |name: &str| {
        columns.get(name).copied().ok_or_else(|| CommandError(format!("line 1: the header lacks the column {name:?}")))
    };
    let (branch_column, time_column) = (column("branchId")?, column("timeTaken")?);
    let estimated_column = columns.get("estimatedAt").copied();

    let mut file = WaitTimeFile { estimates: Vec::new(), lines: Vec::new() };
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            CommandError(format!("line {line}: {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let field = |index: usize| record.get(index).unwrap_or_default();
        let at_line = |what: &str, raw: &str, expected: Expected| {
            CommandError(format!("line {line}: {what} {raw:?} is not valid: expected {}", english(expected)))
        };
        let branch = BranchId::parse(field(branch_column)).map_err(|e| at_line("branchId", field(branch_column), e))?;
        let wait = WaitTime::parse(field(time_column)).map_err(|e| at_line("timeTaken", field(time_column), e))?;
        let estimated_at = match estimated_column.map(field).filter(|raw| !raw.is_empty()) {
            None => now,
            Some(raw) => OffsetDateTime::parse(raw, &Rfc3339)
                .map_err(|_| CommandError(format!("line {line}: estimatedAt {raw:?} is not an RFC 3339 date-time")))?
                .unix_timestamp(),
        };
        file.estimates.push(WaitTimeEstimate { estimate: BranchWaitTime { branch, wait }, estimated_at });
        file.lines.push(line);
    }
    Ok(file)
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

/// `waittimes …`
///
/// # Errors
/// [`CommandError`] with the reason; nothing is written then.
pub async fn wait_times(operators: &Operators, action: WaitTimesAction) -> Result<(), CommandError> {
    let WaitTimesAction::Import { file, dry_run } = action;
    let in_file = |e: CommandError| CommandError(format!("{}: {e}", file.display()));
    let read =
        match open(&file).and_then(|opened| parse_wait_times(opened, operators.clock.unix_now()).map_err(in_file)) {
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

/// Identifications listed per kind of change, at most.
const LISTED: usize = 5;

/// `brand/identification` of the first few of `keys`, and how many more.
fn first_of(keys: &[(String, String)]) -> String {
    if keys.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = keys.iter().take(LISTED).map(|(brand, id)| format!("{brand}/{id}")).collect();
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
        .and_then(|opened| crate::atm_file::read(opened).map_err(|e| CommandError(format!("{}: {e}", file.display()))));
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
        println!("warning: {warning}");
    }
    let outcome = imports
        .atms(&read.feed, rules)
        .await
        .map_err(|e| CommandError(format!("{}: {}", file.display(), one_line(&e))))?;
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
            .and_then(|out| crate::atm_file::write(&set.atms, set.last_updated, std::io::BufWriter::new(out)))
            .map_err(|e| CommandError(format!("cannot write {}: {e}", path.display()))),
        None => crate::atm_file::write(&set.atms, set.last_updated, std::io::stdout().lock())
            .map_err(|e| CommandError(format!("cannot write the ATM file: {e}"))),
    };
    written?;
    if let Some(path) = file {
        println!("exported {} ATMs to {}", set.atms.len(), path.display());
    }
    Ok(())
}

fn open(path: &Path) -> Result<std::fs::File, CommandError> {
    std::fs::File::open(path).map_err(|e| CommandError(format!("cannot open {}: {e}", path.display())))
}

/// `keys …`; a rotation's new key signs after `activation_delay`.
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn keys(keys: &KeyManagement, action: KeysAction, activation_delay: Duration) -> Result<(), CommandError> {
    match action {
        KeysAction::Rotate { now: true } => {
            let key = keys.rotate_now().await.map_err(|e| CommandError::of(&e))?;
            println!("signing key {} signs now; the previous one stays published until its tokens expire", key.kid);
        }
        KeysAction::Rotate { now: false } => {
            // Whole seconds, rounded up: never earlier than the caches allow.
            let seconds = activation_delay.as_secs() + u64::from(activation_delay.subsec_nanos() > 0);
            let delay = i64::try_from(seconds).unwrap_or(i64::MAX);
            let key = keys.rotate(delay).await.map_err(|e| CommandError::of(&e))?;
            println!(
                "signing key {} is published now and signs from {} ({} s from now); the current key signs until then",
                key.kid,
                utc(key.activates_at),
                delay
            );
        }
        KeysAction::List => {
            println!("kid\tstate\tcreated_at\tactivates_at\tretired_at");
            for key in keys.list().await.map_err(|e| CommandError::of(&e))? {
                let state = match key.state {
                    KeyState::Next => "next",
                    KeyState::Current => "current",
                    KeyState::Retired => "retired",
                };
                let retired = key.retired_at.map(utc).unwrap_or_default();
                println!("{}\t{state}\t{}\t{}\t{retired}", key.kid, utc(key.created_at), utc(key.activates_at));
            }
        }
    }
    Ok(())
}

/// `store copy --to URL`: copies the store at `from_url` into the empty one at `to_url`.
///
/// # Errors
/// One line: the copy refused (a target that is not empty) or failed.
pub async fn copy_store(from_url: &str, to_url: &str) -> Result<(), CommandError> {
    let copied = crate::startup::copy_store(from_url, to_url).await.map_err(|e| CommandError::of(&e))?;
    println!(
        "copied {} clients, {} supported channels, {} wait times, {} ATMs, {} signing keys and {} live token \
         records ({} revoked) into the target store",
        copied.clients, copied.channels, copied.wait_times, copied.atms, copied.keys, copied.tokens, copied.revoked
    );
    Ok(())
}

/// A Unix time as RFC 3339 UTC (the number itself if it is out of range).
fn utc(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| unix.to_string())
}

/// `tokens …`
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn tokens(tokens: &TokenRecords, action: TokensAction) -> Result<(), CommandError> {
    match action {
        TokensAction::Show { opaque_token } => {
            let record = tokens.show(&OpaqueToken::new(opaque_token)).await.map_err(|e| CommandError::of(&e))?;
            println!("jti\t{}", record.token.token_id);
            println!("client_id\t{}", record.token.client_id);
            println!("sid\t{}", record.token.session);
            println!("issued_at\t{}", utc(record.token.issued_at));
            println!("expires_at\t{}", utc(record.token.expires_at));
            println!("revoked_at\t{}", record.revoked_at.map_or_else(|| "-".to_owned(), utc));
        }
        TokensAction::Revoke { opaque_token } => {
            let revocation = tokens.revoke(&OpaqueToken::new(opaque_token)).await.map_err(|e| CommandError::of(&e))?;
            println!(
                "{}",
                match revocation {
                    Revocation::Revoked => "revoked",
                    Revocation::AlreadyRevoked => "already revoked",
                }
            );
        }
        TokensAction::Purge => {
            let purged = tokens.purge_expired().await.map_err(|e| CommandError::of(&e))?;
            println!("purged {purged} records of tokens that expired more than a day ago");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_with_an_estimated_at_column_keeps_its_times() {
        let csv = "branchId,timeTaken,estimatedAt\n00001,5,2026-11-21T10:00:00Z\n00002,0,\n";
        let rows = parse_wait_times(csv.as_bytes(), 42).unwrap().estimates;
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].estimate.wait.minutes(), 5);
        assert_eq!(rows[0].estimated_at, 1_795_255_200);
        assert_eq!(rows[1].estimated_at, 42);
    }

    #[test]
    fn a_bad_row_names_its_line_counting_the_header_as_line_one() {
        let csv = "branchId,timeTaken\n00001,5\n00002,5\n1234,5\n";
        let error = parse_wait_times(csv.as_bytes(), 0).unwrap_err().to_string();
        assert!(error.starts_with("line 4:"), "{error}");
        assert!(error.contains("branchId"), "{error}");
    }

    #[test]
    fn negative_or_fractional_minutes_are_refused() {
        for bad in ["-1", "2.5", "abc", ""] {
            let csv = format!("branchId,timeTaken\n00001,{bad}\n");
            let error = parse_wait_times(csv.as_bytes(), 0).unwrap_err().to_string();
            assert!(error.starts_with("line 2:") && error.contains("timeTaken"), "{error}");
        }
    }

    #[test]
    fn a_branch_given_twice_is_told_by_its_lines() {
        let csv = "branchId,timeTaken\n00001,5\n00002,5\n00001,6\n";
        let file = parse_wait_times(csv.as_bytes(), 0).unwrap();
        let twice =
            ImportWaitTimesError::DuplicateBranch { branch: file.estimates[0].estimate.branch, first: 0, again: 2 };
        let error = refused_import(&twice, &file.lines).to_string();
        assert_eq!(error, "line 4: branch 00001 was already given on line 2");
    }

    #[test]
    fn a_wrong_header_is_refused_on_line_one() {
        let error = parse_wait_times("branch,minutes\n00001,5\n".as_bytes(), 0).unwrap_err().to_string();
        assert!(error.starts_with("line 1:"), "{error}");
    }

    #[test]
    fn a_row_with_too_many_fields_is_refused() {
        let error = parse_wait_times("branchId,timeTaken\n00001,5,9\n".as_bytes(), 0).unwrap_err().to_string();
        assert!(error.starts_with("line 2:"), "{error}");
    }
}
