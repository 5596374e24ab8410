//! Many rows in one statement, for the dialects that write them as multi-row `VALUES`
//! (SQLite, MariaDB): each statement's head, its rows bound in order, and its upsert in
//! the dialect's [`Syntax`]. A backend runs them in its own transaction, a chunk of
//! [`ROWS_PER_STATEMENT`] at a time. (PostgreSQL binds one array per column instead.)

use domain::atm_catalog::StoredAtm;
use domain::atm_feed::AtmChange;
use domain::branch::WaitTimeEstimate;
use domain::token::{CodeChallenge, IssuedToken};
use sqlx::{Database, Encode, Executor, IntoArguments, QueryBuilder, Type};

use super::Syntax;

/// Rows per statement: at most 7 parameters a row stays far below SQLite's 32,766 and
/// MariaDB's 65,535 bound parameters, and 500 ATM records of at most 16 KiB each below
/// MariaDB's default `max_allowed_packet` (16 MiB).
pub(crate) const ROWS_PER_STATEMENT: usize = 500;

/// Runs the statement `statement` makes of each chunk of [`ROWS_PER_STATEMENT`] `rows`,
/// in order, on `connection` (a backend's transaction).
pub(crate) async fn write_in_chunks<DB, T>(
    connection: &mut DB::Connection,
    rows: &[T],
    statement: impl Fn(&[T]) -> QueryBuilder<DB>,
) -> Result<(), sqlx::Error>
where
    DB: Database,
    DB::Arguments: IntoArguments<DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        statement(chunk).build().execute(&mut *connection).await?;
    }
    Ok(())
}

/// `column = <the value the INSERT proposed>, …` for an upsert's assignments.
fn take_proposed(syntax: &Syntax, columns: &[&str]) -> String {
    let assignments: Vec<String> =
        columns.iter().map(|column| format!("{column} = {}", (syntax.proposed)(column))).collect();
    assignments.join(", ")
}

/// Inserts `atms`, replacing those stored under the same brand and identification.
pub(crate) fn upsert_atms<DB>(syntax: &Syntax, atms: &[StoredAtm]) -> QueryBuilder<DB>
where
    DB: Database,
    DB::Arguments: Default,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<f64>: Encode<'q, DB> + Type<DB>,
{
    let mut statement = QueryBuilder::new(
        "INSERT INTO atms (brand_name, identification, record, services, accessibility, latitude, longitude) ",
    );
    statement.push_values(atms, |mut row, atm| {
        let (latitude, longitude) = atm.coordinates.unzip();
        row.push_bind(atm.brand.as_str())
            .push_bind(atm.identification.as_str())
            .push_bind(atm.record.as_str())
            .push_bind(i64::from(atm.services))
            .push_bind(i64::from(atm.accessibility))
            .push_bind(latitude)
            .push_bind(longitude);
    });
    statement.push(format!(
        " {} {}",
        (syntax.upsert)("brand_name, identification"),
        take_proposed(syntax, &["record", "services", "accessibility", "latitude", "longitude"])
    ));
    statement
}

/// Inserts `estimates`, replacing those stored for the same branch.
pub(crate) fn upsert_wait_times<DB>(syntax: &Syntax, estimates: &[WaitTimeEstimate]) -> QueryBuilder<DB>
where
    DB: Database,
    DB::Arguments: Default,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
{
    let mut statement = QueryBuilder::new("INSERT INTO branch_wait_times (branch_id, minutes, estimated_at) ");
    statement.push_values(estimates, |mut row, estimate| {
        row.push_bind(estimate.estimate.branch.to_string().as_str())
            .push_bind(i64::from(estimate.estimate.wait.minutes()))
            .push_bind(estimate.estimated_at);
    });
    statement.push(format!(
        " {} {}",
        (syntax.upsert)("branch_id"),
        take_proposed(syntax, &["minutes", "estimated_at"])
    ));
    statement
}

/// Inserts the records of `tokens` (a token id stored already fails the statement).
pub(crate) fn insert_tokens<DB>(tokens: &[IssuedToken]) -> QueryBuilder<DB>
where
    DB: Database,
    DB::Arguments: Default,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
{
    let mut statement = QueryBuilder::new(
        "INSERT INTO issued_tokens (jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge) ",
    );
    statement.push_values(tokens, |mut row, token| {
        row.push_bind(token.token_id.as_str())
            .push_bind(token.opaque_token.as_str())
            .push_bind(token.client_id.as_str())
            .push_bind(token.session.as_str())
            .push_bind(token.issued_at)
            .push_bind(token.expires_at)
            .push_bind(token.code_challenge.as_ref().map(CodeChallenge::as_str));
    });
    statement
}

/// Appends the feed's `changes`, each with its number, written at `now`.
pub(crate) fn insert_changes<DB>(changes: &[(i64, &AtmChange)], now: i64) -> QueryBuilder<DB>
where
    DB: Database,
    DB::Arguments: Default,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
{
    let mut statement =
        QueryBuilder::new("INSERT INTO atm_changes (seq, brand, atm_id, kind, at_micros, written_at, body) ");
    statement.push_values(changes, |mut row, (seq, change)| {
        row.push_bind(*seq)
            .push_bind(change.brand.as_deref())
            .push_bind(change.atm.as_str())
            .push_bind(change.kind.name())
            .push_bind(change.at.unix_micros())
            .push_bind(now)
            .push_bind(change.body.as_deref());
    });
    statement
}
