//! A SQLite store's files are its owner's alone: they hold the signing keys.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;

use adapters::store::Store;
use nix::sys::stat::{Mode, umask};

#[tokio::test]
async fn a_new_store_and_its_journal_files_are_readable_by_their_owner_only_whatever_the_umask() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("data").join("branch-atm.db");
    // The only test in this binary: the umask is the process's.
    let before = umask(Mode::empty());
    let store = Store::open(&format!("sqlite://{}", file.display())).await;
    umask(before);
    let store = store.unwrap();
    store.lifecycle.migrate().await.unwrap();

    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", file.display());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{path} is {mode:o}");
    }
    store.lifecycle.close().await;
}
