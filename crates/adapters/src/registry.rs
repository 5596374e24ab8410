//! The store backends this build knows, each found by its database URL's scheme (for
//! [`Store::open`]) or by its name (for the test harnesses).
//!
//! A backend registers itself with one line of `store_backends!` in `lib.rs`, which
//! declares its folder and adds the `BACKEND` that folder defines to
//! [`BACKENDS`](crate::BACKENDS); nothing else names a backend.

use std::future::Future;
use std::pin::Pin;

use domain::ports::StoreUnavailable;

use crate::store::Store;

/// A future a backend hands back: boxed, so that every backend's fits one field type.
pub type Opening<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A kind of database a store can live in, as its folder registers it.
pub struct Backend {
    /// What tests and operators call it (`sqlite`, `postgres`, `memory`).
    pub name: &'static str,
    /// The URL schemes that name it, without the colon (`postgres`, `postgresql`).
    pub schemes: &'static [&'static str],
    /// A URL of it, for the message that refuses an unknown one.
    pub example: &'static str,
    /// Whether another process that opens the same URL reaches the same store (not so in
    /// memory): a test that runs the CLI binary beside the app, or two instances in two
    /// processes, needs it.
    pub shared_across_processes: bool,
    /// Opens the store at a URL of one of its schemes (not migrated: see
    /// [`StoreLifecycle::migrate`](crate::store::StoreLifecycle::migrate)).
    pub open: fn(&str) -> Opening<'_, Result<Store, StoreUnavailable>>,
    /// What tests need of it: a fresh store, plain SQL.
    #[cfg(feature = "testing")]
    pub testing: TestSupport,
}

/// The backend whose scheme `url` has.
pub fn of_url(url: &str) -> Option<&'static Backend> {
    let scheme = url.split_once(':')?.0;
    crate::BACKENDS.iter().find(|backend| backend.schemes.contains(&scheme))
}

/// The backend called `name`.
pub fn named(name: &str) -> Option<&'static Backend> {
    crate::BACKENDS.iter().find(|backend| backend.name == name)
}

/// What an unknown database URL is refused with: the URLs this build takes.
pub(crate) fn unsupported(url: &str) -> StoreUnavailable {
    // The scheme only: the rest of a mistyped URL may hold a password.
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    let examples: Vec<&str> = crate::BACKENDS.iter().map(|backend| backend.example).collect();
    StoreUnavailable::new(format!("unsupported database URL (scheme {scheme:?}): expected {}", examples.join(", ")))
}

/// Declares the store backends, one a line: each line declares the folder `src/<name>/`
/// as a module and adds its `BACKEND` to [`BACKENDS`](crate::BACKENDS).
macro_rules! store_backends {
    ($($backend:ident),+ $(,)?) => {
        $(pub mod $backend;)+

        /// Every store backend this build knows, in registration order:
        /// [`Store::open`](crate::store::Store::open) finds one by its URL scheme, the test harnesses by
        /// its name ([`registry`](crate::registry)).
        pub static BACKENDS: &[registry::Backend] = &[$($backend::BACKEND),+];
    };
}

pub(crate) use store_backends;

impl Store {
    /// Opens the database named by `url`, on the backend registered for its scheme
    /// ([`crate::BACKENDS`]): `sqlite://path/to/file.db`, `postgres://user@host:port/database`
    /// (also `postgresql://`), `mysql://user:password@host:3306/database` (also
    /// `mariadb://`), or `memory:NAME`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] for an unsupported URL or a database that cannot be opened.
    pub async fn open(url: &str) -> Result<Self, StoreUnavailable> {
        let backend = of_url(url).ok_or_else(|| unsupported(url))?;
        (backend.open)(url).await
    }
}

/// Runs one statement of plain SQL at a database URL: the rows it changed, or the
/// driver's error as text.
#[cfg(feature = "testing")]
pub type RunSql = for<'a> fn(&'a str, String) -> Opening<'a, Result<u64, String>>;

/// What tests need of a backend beyond opening it (its `BACKEND.testing`).
#[cfg(feature = "testing")]
pub struct TestSupport {
    /// A new, empty store of this backend for one test, not migrated; `None` when it
    /// cannot run here (PostgreSQL without `TEST_POSTGRES_URL`), after saying why.
    pub fresh: fn() -> Opening<'static, Option<FreshStore>>,
    /// Runs one statement of plain SQL at a URL of this backend; `None` for a store that
    /// takes no SQL (in memory).
    pub execute_sql: Option<RunSql>,
}

/// A new, empty store for one test: its URL, and whatever must live as long as the
/// store (its folder, its database, its handle); dropping this drops the store.
#[cfg(feature = "testing")]
pub struct FreshStore {
    /// The store's URL, for [`Store::open`] or the app's settings.
    pub url: String,
    _keep: Box<dyn std::any::Any + Send + Sync>,
}

#[cfg(feature = "testing")]
impl FreshStore {
    /// The store at `url`, kept while `keep` is.
    pub fn new(url: String, keep: impl std::any::Any + Send + Sync) -> Self {
        Self { url, _keep: Box::new(keep) }
    }
}
