//! The store the black-box and fault suites run on: the backend `STORE_UNDER_TEST` names
//! (`sqlite` when unset), found in the adapters' registry like any other, so a new backend
//! needs no line here. Shared by the test binaries through `#[path]`.

use adapters::registry::Backend;
use adapters::testing::FreshStore;

/// The backend the suite runs on.
///
/// # Panics
/// When `STORE_UNDER_TEST` names no registered backend (the test run's own mistake).
pub fn store_under_test() -> &'static Backend {
    let name = std::env::var("STORE_UNDER_TEST").unwrap_or_else(|_| "sqlite".to_owned());
    adapters::registry::named(&name).unwrap_or_else(|| {
        let known: Vec<&str> = adapters::BACKENDS.iter().map(|backend| backend.name).collect();
        panic!("STORE_UNDER_TEST={name:?}: the store backends are {}", known.join(", "))
    })
}

/// A new, empty store of the backend under test, kept while the returned value is.
///
/// # Panics
/// When that backend cannot run here (PostgreSQL without `TEST_POSTGRES_URL`): the suite
/// was asked to run on it.
pub async fn fresh_store() -> FreshStore {
    let backend = store_under_test();
    match adapters::testing::fresh_store_url(backend.name).await {
        Some(fresh) => fresh,
        None => panic!("STORE_UNDER_TEST={} cannot run here (see the line above)", backend.name),
    }
}

/// Whether a test that reaches the store from another process (the CLI binary beside
/// the app, plain SQL, a second instance in its own process) can run on the backend under
/// test; says so when it cannot (the in-memory store is one process's).
pub fn other_processes_reach_the_store(what: &str) -> bool {
    let backend = store_under_test();
    if !backend.shared_across_processes {
        eprintln!(
            "not applicable: {what} reaches the store from another process; the {} store is one process's",
            backend.name
        );
    }
    backend.shared_across_processes
}

/// The database file of a SQLite URL, for the tests of SQLite's own files.
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    url.strip_prefix("sqlite://").map(|path| std::path::PathBuf::from(path.split('?').next().unwrap_or(path)))
}
