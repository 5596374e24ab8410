//! Two jobs. The migrations of each store, embedded: `OUT_DIR/migrations.rs` lists
//! every folder of `migrations/` and each of its files by version, description and
//! `include_str!`, as sqlx's `migrate!` macro would, without the macro: `migrate!` is
//! sqlx's only proc macro the workspace used, and it made every fresh build compile
//! sqlx-core, both drivers, rustls and tokio a second time, for the host (88
//! CPU-seconds; docs/benchmarks.md, "The first build").
//!
//! And which test servers this build's tests are given (`build/test_servers.rs`).

// A build script fails by panicking: cargo stops the build and shows the message.
#![allow(clippy::panic, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;

include!("build/test_servers.rs");

fn main() {
    embed_migrations();
    declare_test_servers();
}

/// Writes `OUT_DIR/migrations.rs`: for every folder of `migrations/`, found by itself (a
/// new store's folder needs no line here), its name and an array of `(version,
/// description, sql)`, the version and description read from each file's name as sqlx
/// reads them (`<version>_<description>.sql`, `_` as spaces). `sql::migrations` checks
/// each list against sqlx's own reading of its folder.
fn embed_migrations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    // A folder as a whole: cargo reruns this when anything below it changes.
    println!("cargo::rerun-if-changed={}", root.display());
    let mut stores: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|entry| entry.expect("a migrations folder").path())
        .filter(|path| path.is_dir())
        .collect();
    stores.sort();
    let mut list = String::from("[\n");
    for folder in stores {
        let store = folder.file_name().and_then(|name| name.to_str()).expect("a UTF-8 folder name");
        writeln!(list, "({store:?}, &{}),", migrations_of(&folder)).expect("a String takes writes");
    }
    list.push(']');
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("migrations.rs");
    std::fs::write(&out, list).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}

/// The migration files of `folder` as an array expression of `(version, description, sql)`.
fn migrations_of(folder: &Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| entry.expect("a migration file").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sql"))
        .collect();
    files.sort();
    let mut list = String::from("[\n");
    for path in files {
        let name = path.file_name().and_then(|name| name.to_str()).expect("a UTF-8 file name");
        let (version, rest) = name.split_once('_').unwrap_or_else(|| panic!("{name}: not <version>_<description>.sql"));
        let version: i64 = version.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        let description = rest.trim_end_matches(".sql").replace('_', " ");
        let path = path.canonicalize().expect("the migration's path");
        writeln!(list, "    ({version}, {description:?}, include_str!({:?})),", path.display().to_string())
            .expect("a String takes writes");
    }
    list.push(']');
    list
}
