//! Two jobs. The migrations of each store, embedded: `OUT_DIR/migrations_<store>.rs`
//! lists every file of `migrations/<store>/` by version, description and
//! `include_str!`, as sqlx's `migrate!` macro would, without the macro: `migrate!` is
//! sqlx's only proc macro the workspace used, and it made every fresh build compile
//! sqlx-core, both drivers, rustls and tokio a second time, for the host (about 100
//! CPU-seconds; docs/benchmarks.md, "The first build").
//!
//! And which test servers this build's tests are given. A test that needs a server the
//! environment does not name is compiled as ignored, so that `cargo test`'s own summary
//! counts it ("N ignored") instead of a pass that ran nothing; `docs/testing.md` says
//! how to give them. Under `CI=true` nothing is ignored: such a test runs, and fails
//! for want of its server. The same script is `crates/server/build.rs`.

// A build script fails by panicking: cargo stops the build and shows the message.
#![allow(clippy::panic, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    for store in ["sqlite", "postgres"] {
        embed_migrations(store);
    }
    println!("cargo::rustc-check-cfg=cfg(no_test_postgres, no_test_redis)");
    println!("cargo::rerun-if-env-changed=CI");
    let in_ci = std::env::var("CI").is_ok_and(|value| value == "true");
    for (variable, missing) in [("TEST_POSTGRES_URL", "no_test_postgres"), ("TEST_REDIS_URL", "no_test_redis")] {
        println!("cargo::rerun-if-env-changed={variable}");
        if !in_ci && std::env::var_os(variable).is_none_or(|value| value.is_empty()) {
            println!("cargo::rustc-cfg={missing}");
        }
    }
}

/// Writes `OUT_DIR/migrations_<store>.rs`: an array of `(version, description, sql)`,
/// the version and description read from each file's name as sqlx reads them
/// (`<version>_<description>.sql`, `_` as spaces). `sql_migrations` checks the list
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
