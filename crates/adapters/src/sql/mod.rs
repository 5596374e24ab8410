//! SQL that the SQLite and PostgreSQL stores share, written once.
//!
//! Both drivers bind `$N` placeholders by number (sqlx's SQLite driver takes a parameter
//! named `$NNN` as argument NNN, as PostgreSQL does), so one statement text serves both
//! dialects. [`shared_sql_records!`] implements every role a [`Store`](crate::store::Store)
//! needs for a backend type with those statements, binding and mapping each once (rows to
//! values through [`crate::rows`]). What is truly a dialect's own (how it writes many rows at
//! once and in which transaction, how it locks, its upkeep, its change notices, how it frees
//! space) the backend writes as [`SqlDialect`], in its own folder.
//!
//! A macro, not generic code over sqlx's `Database`: generic impls need a bound for every
//! column type each way (`Encode`, `Decode`, `Type`), for the arguments and for two kinds of
//! executor, which read longer than the SQL they carry; the macro is expanded for a concrete
//! backend type, so its body is the plain sqlx code each backend had before, and a backend's
//! mistake is reported against that type. A query builder would only pay for itself if the
//! statements differed; these are the same text.

use async_trait::async_trait;
use domain::atm_catalog::StoredAtm;
use domain::branch::WaitTimeEstimate;
use domain::ports::{AtmKey, StoreUnavailable};
use domain::token::IssuedToken;

use crate::store::{AtmSet, ChangeFeed};

pub(crate) mod migrations;
mod shared;

pub(crate) use shared::shared_sql_records;

/// A driver's error as the domain sees it: the store did not answer as it should, or
/// it refused the data it was given (as each backend classifies its own errors: a data
/// error is never told as an outage). A lost connection, or one to a server that cannot
/// take writes, is named by what it means for an operator (during a failover, say)
/// rather than by the protocol step it broke at.
pub(crate) fn unavailable(error: sqlx::Error) -> StoreUnavailable {
    match connection_failure(&error) {
        Some(meaning) => StoreUnavailable::new(meaning),
        None if refuses_the_data(&error) => StoreUnavailable::refused(error),
        None => StoreUnavailable::new(error),
    }
}

/// Whether the database answered, refusing the data it was given.
fn refuses_the_data(error: &sqlx::Error) -> bool {
    let sqlx::Error::Database(database) = error else { return false };
    if let Some(postgres) = database.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() {
        return crate::postgres::refuses_the_data(postgres.code());
    }
    crate::sqlite::result_code(error).is_some_and(crate::sqlite::refuses_the_data)
}

/// What a failure of the connection itself means, if it is one.
fn connection_failure(error: &sqlx::Error) -> Option<String> {
    match error {
        // A proxy with no server behind it (HAProxy while no node is the primary)
        // accepts the connection and closes it: the driver meets the end of the stream
        // where PostgreSQL's answer to its SSLRequest belongs.
        sqlx::Error::Protocol(text) if text.contains("SSLRequest") => Some(
            "no connection to a primary: the database's address closed the connection before any server answered \
             (a proxy with no primary behind it, as during a failover)"
                .to_owned(),
        ),
        // The same seen a step later: the stream ends where the server's first message
        // belongs.
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => Some(
            "no connection to a primary: the database's address closed the connection before any server answered \
             (a proxy with no primary behind it, as during a failover)"
                .to_owned(),
        ),
        sqlx::Error::Io(io) => Some(format!("no connection to the database: {io}")),
        // read_only_sql_transaction: a replica, or a primary being demoted.
        sqlx::Error::Database(database) if database.code().as_deref() == Some("25006") => Some(
            "no connection to a primary: the server is read-only (a replica, as during a failover or switchover)"
                .to_owned(),
        ),
        _ => None,
    }
}

/// The date of the ATM set (one row).
pub(crate) const ATM_SET_DATE: &str = "SELECT last_updated FROM atm_set WHERE id = 1";

/// The ATM set's rows ([`crate::rows::AtmRow`]), in brand then identification order.
pub(crate) const ATMS_IN_ORDER: &str = "SELECT brand_name, identification, record, services, accessibility, \
                                        latitude, longitude FROM atms ORDER BY brand_name, identification";

/// Dates the ATM set `$1`, in the transaction that changed it: the one write that moves the
/// `atms` change counter (its trigger is on this row, not on each ATM's).
pub(crate) const DATE_ATM_SET: &str = "UPDATE atm_set SET last_updated = $1 WHERE id = 1";

/// Empties the ATM set, before a whole new one is written.
pub(crate) const DELETE_EVERY_ATM: &str = "DELETE FROM atms";

/// What a SQL backend writes in its own dialect; [`shared_sql_records!`] does the rest.
///
/// Each method is the part of a port's method (named in its doc) that the dialects do
/// differently; its contract is that port method's.
#[async_trait]
pub(crate) trait SqlDialect: Send + Sync {
    /// sqlx's driver for this database.
    type Database: sqlx::Database;

    /// The pool the shared statements run on.
    fn pool(&self) -> &sqlx::Pool<Self::Database>;

    /// `StoreLifecycle::migrate`: applies this backend's migrations (`migrations/<name>`).
    async fn migrate(&self) -> Result<(), StoreUnavailable>;

    /// `StoreLifecycle::prepare`.
    async fn prepare(&self, now: i64) -> Result<(), StoreUnavailable>;

    /// Begins the transaction a key rotation (`SigningKeyRecords::schedule`) runs in: two
    /// rotations at once (two hosts' CLIs) must take turns, the second seeing the first's key.
    async fn begin_key_rotation(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Begins the transaction every write of wait times runs in (`WaitTimeRecords::upsert`
    /// and `edit`), holding the lock that makes writers of wait times take turns: an
    /// edit reads the rows inside it, so the second of two edits at once reads what the
    /// first wrote. Plain reads are not blocked.
    async fn begin_wait_time_edit(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Inserts or replaces `estimates` (by branch) in `transaction`.
    async fn write_wait_times(
        transaction: &mut sqlx::Transaction<'static, Self::Database>,
        estimates: &[WaitTimeEstimate],
    ) -> Result<(), StoreUnavailable>;

    /// Begins the transaction every write of the ATM set runs in (`AtmRecords::replace`
    /// and `edit`), holding the set's lock, as [`begin_wait_time_edit`](Self::begin_wait_time_edit)
    /// does for wait times. The write that ends it dates the set with [`DATE_ATM_SET`].
    async fn begin_atm_edit(&self) -> Result<sqlx::Transaction<'static, Self::Database>, StoreUnavailable>;

    /// Inserts `atms` in `transaction`, replacing those stored under the same brand and
    /// identification.
    async fn write_atms(
        transaction: &mut sqlx::Transaction<'static, Self::Database>,
        atms: &[StoredAtm],
    ) -> Result<(), StoreUnavailable>;

    /// Deletes the ATMs `keys` (brand, identification) in `transaction`.
    async fn delete_atms(
        transaction: &mut sqlx::Transaction<'static, Self::Database>,
        keys: &[AtmKey],
    ) -> Result<(), StoreUnavailable>;

    /// `ViewSource::atms` (and `AtmRecords::current`): the set and its date, which belong
    /// together.
    async fn atm_set(&self) -> Result<AtmSet, StoreUnavailable>;

    /// `TokenArchive::record`: many rows, all or none, durable when it returns.
    async fn record_tokens(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable>;

    /// `TokenArchive::purge_expired`.
    async fn purge_expired_tokens(&self, before: i64) -> Result<u64, StoreUnavailable>;

    /// `KeyVault::scrub`.
    async fn scrub(&self) -> Result<(), StoreUnavailable>;

    /// `ViewSource::subscribe`: `None` when changes are only found by polling.
    async fn subscribe(&self) -> Result<Option<Box<dyn ChangeFeed>>, StoreUnavailable> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_connection_is_named_by_what_it_means_not_by_the_protocol_step() {
        let closed = unavailable(sqlx::Error::Protocol("unexpected response from SSLRequest: 0x00".into()));
        assert!(closed.to_string().contains("no connection to a primary") && !closed.to_string().contains("0x00"));
        let refused = unavailable(sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)));
        assert!(refused.to_string().contains(": no connection to the database: "), "{refused}");
        let cut =
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "expected to read 5 bytes, got 0 bytes at EOF");
        let cut = unavailable(sqlx::Error::Io(cut)).to_string();
        assert!(cut.contains("no connection to a primary") && !cut.contains("5 bytes"), "{cut}");
        let other = unavailable(sqlx::Error::RowNotFound);
        assert!(!other.to_string().contains("no connection"), "{other}");
    }
}
