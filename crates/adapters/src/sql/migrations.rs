//! Each SQL store's migrations, built into the binary. `build.rs` lists the files of
//! `migrations/<store>/` (version, description, text) as sqlx's `migrate!` macro did;
//! this makes sqlx's `Migrator` of them. Without the macro, a fresh build no longer
//! compiles sqlx, its drivers, rustls and tokio a second time for the host (the macro's
//! own dependencies): 88 CPU-seconds of a newcomer's first build.

use std::sync::LazyLock;

use domain::ports::StoreUnavailable;
use sqlx::SqlStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// `(version, description, sql)` of each migration file, in the folder's order.
type Embedded = [(i64, &'static str, &'static str)];

/// Every folder of `migrations/` (a store's name) with its files, as `build.rs` found them.
const FOLDERS: &[(&str, &Embedded)] = &include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// Each folder's migrator, made once.
static MIGRATORS: LazyLock<Vec<(&str, Migrator)>> =
    LazyLock::new(|| FOLDERS.iter().map(|&(store, files)| (store, migrator(files))).collect());

/// The migrations of the store registered as `store` (its folder `migrations/<store>`).
///
/// # Errors
/// [`StoreUnavailable`] if the build found no such folder (a backend added without its
/// migrations).
pub(crate) fn of(store: &str) -> Result<&'static Migrator, StoreUnavailable> {
    MIGRATORS.iter().find(|(name, _)| *name == store).map(|(_, migrator)| migrator).ok_or_else(|| {
        StoreUnavailable::new(format!("this build holds no migrations for the {store} store (migrations/{store}/)"))
    })
}

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
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
        let mut folders: Vec<String> =
            std::fs::read_dir(&root).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
        folders.sort();
        let embedded: Vec<&str> = MIGRATORS.iter().map(|(store, _)| *store).collect();
        assert_eq!(embedded, folders, "every folder of migrations/ is built in");
        for (store, migrator) in MIGRATORS.iter() {
            let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(store);
            let mut read: Vec<Migration> =
                sqlx::migrate::resolve_blocking(&folder).unwrap().into_iter().map(|(migration, _)| migration).collect();
            read.sort_by_key(|migration| migration.version);
            let embedded: Vec<&Migration> = migrator.iter().collect();
            assert_eq!(embedded.len(), read.len(), "{store}");
            assert!(!embedded.is_empty(), "{store}: no migrations");
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
