//! Core of SQLx, the rust SQL toolkit.
//!
//! ### Note: Semver Exempt API
//! The API of this crate is not meant for general use and does *not* follow Semantic Versioning.
//! The only crate that follows Semantic Versioning in the project is the `sqlx` crate itself.
//! If you are building a custom SQLx driver, you should pin an exact version for `sqlx-core` to
//! avoid breakages:
//!
//! ```toml
//! sqlx-core = { version = "=0.6.2" }
//! ```
//!
//! And then make releases in lockstep with `sqlx-core`. We recommend all driver crates, in-tree
//! or otherwise, use the same version numbers as `sqlx-core` to avoid confusion.
// branch-atm: vendored third-party code is not held to the workspace's lints (as a
// registry crate's would not be: cargo caps them); see ../README.md.
#![allow(warnings, clippy::all, clippy::pedantic)]
#![recursion_limit = "512"]
#![warn(future_incompatible, rust_2018_idioms)]
#![allow(clippy::needless_doctest_main, clippy::type_complexity)]
// The only unsafe code in SQLx is that necessary to interact with native APIs like with SQLite,
// and that can live in its own separate driver crate.
#![forbid(unsafe_code)]
// Allows an API be documented as only available in some specific platforms.
// <https://doc.rust-lang.org/unstable-book/language-features/doc-cfg.html>
#![cfg_attr(docsrs, feature(doc_cfg))]

#[macro_use]
#[rustfmt::skip]
pub mod ext;

#[macro_use]
#[rustfmt::skip]
pub mod error;

#[macro_use]
#[rustfmt::skip]
pub mod arguments;

// branch-atm: `logger` before `pool`, with its macros in textual scope, so that
// `pool::inner` uses `private_tracing_dynamic_event!` without the `use crate::…` of a
// `macro_export` macro that rustc warns will be refused (rust-lang/rust#52234), a
// future-incompatibility note cargo printed on every build (../README.md).
#[macro_use]
#[rustfmt::skip]
pub mod logger;

#[macro_use]
#[rustfmt::skip]
pub mod pool;

#[rustfmt::skip]
pub mod connection;

#[macro_use]
#[rustfmt::skip]
pub mod transaction;

#[macro_use]
#[rustfmt::skip]
pub mod encode;

#[macro_use]
#[rustfmt::skip]
pub mod decode;

#[macro_use]
#[rustfmt::skip]
pub mod types;

#[macro_use]
#[rustfmt::skip]
pub mod query;

#[macro_use]
#[rustfmt::skip]
pub mod acquire;

#[macro_use]
#[rustfmt::skip]
pub mod column;

#[macro_use]
#[rustfmt::skip]
pub mod statement;

#[rustfmt::skip]
pub mod common;
#[rustfmt::skip]
pub mod database;
#[rustfmt::skip]
pub mod describe;
#[rustfmt::skip]
pub mod executor;
#[rustfmt::skip]
pub mod from_row;
#[rustfmt::skip]
pub mod fs;
#[rustfmt::skip]
pub mod io;
#[rustfmt::skip]
pub mod net;
#[rustfmt::skip]
pub mod query_as;
#[rustfmt::skip]
pub mod query_builder;
#[rustfmt::skip]
pub mod query_scalar;
#[rustfmt::skip]
pub mod sql_str;

#[rustfmt::skip]
pub mod raw_sql;
#[rustfmt::skip]
pub mod row;
#[rustfmt::skip]
pub mod rt;
#[rustfmt::skip]
pub mod sync;
#[rustfmt::skip]
pub mod type_checking;
#[rustfmt::skip]
pub mod type_info;
#[rustfmt::skip]
pub mod value;

#[cfg(feature = "migrate")]
#[rustfmt::skip]
pub mod migrate;

#[cfg(feature = "any")]
#[rustfmt::skip]
pub mod any;

// Implements test support with automatic DB management.
#[cfg(feature = "migrate")]
#[rustfmt::skip]
pub mod testing;

#[rustfmt::skip]
pub mod config;

pub use error::{Error, Result};

pub use either::Either;
pub use hashbrown::{hash_map, HashMap};
pub use indexmap::IndexMap;
pub use percent_encoding;
pub use smallvec::SmallVec;
pub use url::{self, Url};

pub use bytes;

/// Helper module to get drivers compiling again that used to be in this crate,
/// to avoid having to replace tons of `use crate::<...>` imports.
///
/// This module can be glob-imported and should not clash with any modules a driver
/// would want to implement itself.
#[rustfmt::skip]
pub mod driver_prelude {
    pub use crate::{
        acquire, common, decode, describe, encode, executor, ext, from_row, fs, io, logger, net,
        pool, query, query_as, query_builder, query_scalar, rt, sync,
    };

    pub use crate::error::{Error, Result};
    pub use crate::{hash_map, HashMap};
    pub use either::Either;
}
