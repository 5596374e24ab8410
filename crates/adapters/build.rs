//! Two jobs. The migrations of each store, embedded: `OUT_DIR/migrations_<store>.rs`
//! lists every file of `migrations/<store>/` by version, description and
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
    for store in ["sqlite", "postgres"] {
        embed_migrations(store);
    }
    declare_test_servers();
}

/// Writes `OUT_DIR/migrations_<store>.rs`: an array of `(version, description, sql)`,
/// the version and description read from each file's name as sqlx reads them
/// (`<version>_<description>.sql`, `_` as spaces). `sql::migrations` checks the list
/// against sqlx's own reading of the folder.
fn embed_migrations(store: &str) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(store);
    println!("cargo::rerun-if-changed={}", folder.display());
    let mut files: Vec<_> = std::fs::read_dir(&folder)
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
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join(format!("migrations_{store}.rs"));
    std::fs::write(&out, list).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
