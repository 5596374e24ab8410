//! Each SQL store's migrations, built into the binary. `build.rs` lists the files of
//! `migrations/<store>/` (version, description, text) as sqlx's `migrate!` macro did;
//! this makes sqlx's `Migrator` of them. Without the macro, a fresh build no longer
//! compiles sqlx, its drivers, rustls and tokio a second time for the host (the macro's
//! own dependencies): 88 CPU-seconds of a newcomer's first build.

use std::sync::LazyLock;

use sqlx::SqlStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `(version, description, sql)` of each migration file, in the folder's order.
type Embedded = [(i64, &'static str, &'static str)];

/// `migrations/sqlite`.
const SQLITE: &Embedded = &include!(concat!(env!("OUT_DIR"), "/migrations_sqlite.rs"));

/// `migrations/postgres`.
const POSTGRES: &Embedded = &include!(concat!(env!("OUT_DIR"), "/migrations_postgres.rs"));

/// The SQLite store's migrations.
pub(crate) static SQLITE_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(SQLITE));

/// The PostgreSQL store's migrations.
pub(crate) static POSTGRES_MIGRATOR: LazyLock<Migrator> = LazyLock::new(|| migrator(POSTGRES));

/// A migrator of `files` with sqlx's defaults (its `_sqlx_migrations` table, a lock while
/// migrating, each migration in a transaction unless it opts out as sqlx reads it), and
/// each migration's checksum computed by sqlx from its text, as `migrate!` does: stores
/// migrated by earlier builds find the same checksums.
fn migrator(files: &'static Embedded) -> Migrator {
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(version, description, sql)| {
                let no_tx = sql.starts_with("-- no-transaction");
                Migration::new(version, description.into(), MigrationType::Simple, SqlStr::from_static(sql), no_tx)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list build.rs wrote is what sqlx's own reading of each folder gives (the code
    /// path `migrate!` used): the same versions, descriptions, kinds, texts and checksums.
    #[test]
    fn the_embedded_migrations_are_sqlxs_reading_of_each_folder() {
        for (store, migrator) in [("sqlite", &*SQLITE_MIGRATOR), ("postgres", &*POSTGRES_MIGRATOR)] {
            let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(store);
            let mut read: Vec<Migration> =
                sqlx::migrate::resolve_blocking(&folder).unwrap().into_iter().map(|(migration, _)| migration).collect();
            read.sort_by_key(|migration| migration.version);
            let embedded: Vec<&Migration> = migrator.iter().collect();
            assert_eq!(embedded.len(), read.len(), "{store}");
            assert!(embedded.len() >= 4, "{store}: {} migrations", embedded.len());
            for (ours, sqlxs) in embedded.into_iter().zip(&read) {
                assert_eq!(ours.version, sqlxs.version, "{store}");
                assert_eq!(ours.description, sqlxs.description, "{store} {}", ours.version);
                assert_eq!(ours.migration_type, sqlxs.migration_type, "{store} {}", ours.version);
                assert_eq!(ours.sql.as_str(), sqlxs.sql.as_str(), "{store} {}", ours.version);
                assert_eq!(ours.checksum, sqlxs.checksum, "{store} {}", ours.version);
                assert_eq!(ours.no_tx, sqlxs.no_tx, "{store} {}", ours.version);
            }
        }
    }
}
