//! Every role of a SQL store, once for every dialect: `impl<D: SqlDialect> <Role> for
//! SqlStore<D>`, one file per role, in the shared statements ([`Statements`]) rendered in
//! the dialect's syntax; what a dialect does its own way is a call to its [`SqlDialect`]
//! method of the same purpose.
//!
//! Each impl's `where` clause names what its statements ask of the dialect's sqlx driver:
//! the values they bind (`&str: Encode`), the rows they read (`ClientRow: FromRow`), and
//! that a connection runs them (`&mut Connection<D>: Executor`). Rust does not carry a
//! trait's bounds on other types to the code that names the trait, so they cannot be said
//! once on [`SqlDialect`]: each impl states its own, and each backend's store is checked
//! against them where it is made. SQLite's, PostgreSQL's and MariaDB's drivers meet them
//! all; what the driver's types must do besides ([`RowsAffected`], migrations) is on
//! [`SqlDialect::Database`].
//!
//! [`RowsAffected`]: super::RowsAffected
//! [`Statements`]: super::Statements
//! [`SqlDialect`]: super::SqlDialect
//! [`SqlDialect::Database`]: super::SqlDialect::Database

mod atm_changes;
mod atm_closures;
mod atm_states;
mod atms;
mod channels;
mod clients;
mod imports;
mod inventory;
mod lifecycle;
mod outages;
mod queue_events;
mod signing_keys;
mod systems;
mod tokens;
mod view;
mod wait_times;

use domain::ports::StoreUnavailable;

use super::{Db, SqlDialect, unavailable};

/// A CLIENT span of one statement of `D`'s (OpenTelemetry's database conventions), named
/// `"{operation} {table}"`: seen only under a traced request or a traced background task.
fn db<D: SqlDialect>(name: &'static str) -> tracing::Span {
    super::db_span(D::SYSTEM, name)
}

/// Whether an INSERT that skips a stored key inserted its row: a dialect with no clause to
/// skip it ([`Syntax::skip_duplicates`](super::Syntax)) answers with the duplicate's error
/// instead. (MariaDB's `ON DUPLICATE KEY UPDATE key = key` cannot tell: sqlx's MySQL
/// connections set `CLIENT_FOUND_ROWS`, so a stored row left as it was counts as one
/// affected, as a new one does.)
fn inserted<D: SqlDialect>(
    done: Result<<Db<D> as sqlx::Database>::QueryResult, sqlx::Error>,
) -> Result<bool, StoreUnavailable> {
    use super::RowsAffected as _;
    match done {
        Ok(done) => Ok(done.rows_affected() == 1),
        Err(sqlx::Error::Database(error)) if error.is_unique_violation() => Ok(false),
        Err(error) => Err(unavailable::<D>(error)),
    }
}
