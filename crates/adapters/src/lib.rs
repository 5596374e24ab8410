//! The world behind the domain's ports.
//!
//! This crate owns everything that talks to something outside the process or needs a
//! library the domain must not know: the stores (SQLite, PostgreSQL and MariaDB through sqlx, and
//! one in memory), JWT signing and verification (jsonwebtoken, Ed25519 through aws-lc-rs),
//! the system clock and the CSPRNG, and the file formats operators feed in. It depends on
//! `domain` and never on the web layer.
//!
//! The hot paths never wait on SQL: [`view::StoreView`] keeps an in-memory view of the
//! small, read-mostly tables (clients, supported channels, wait times, revocations) and
//! swaps in a fresh copy when the store's revision counters move, and
//! [`token_writer::TokenWriter`] makes issued-token records durable in group commits.
//!
//! # Layout
//! - [`store`] — a database seen through each role it plays ([`store::Store`]), and the
//!   roles only adapters need (the view's source with its change counters, the lifecycle).
//! - one folder per store backend (`sqlite/`, `postgres/`, `memory/`, …), each registered
//!   by one line of `store_backends!` at the end of this file; [`registry`] finds them by
//!   URL scheme or name ([`BACKENDS`]). `docs/architecture.md`, "Adding a store", says how to add one.
//! - `sql` — the SQL the SQL backends share, written once and rendered in each dialect.
//! - [`rows`] — rows to and from the domain's values, for every SQL backend.
//! - [`store_copy`] — a whole store copied into an empty one (of any backend into any other).
//! - [`store_watch`] — whether the store answers, probed in the background for readiness.
//! - [`local_limits`] — request limits counted by this instance (GCRA in memory);
//!   [`redis_limits`] — shared by every instance, counted in Redis, this instance's own
//!   count standing in while Redis cannot answer. Both are `domain::ports::RequestLimiter`s.
//!   [`redis_link`] — the Redis connection and fall-back rule they share with the replay cache.
//! - [`jwk`] — public keys read from JWKs (a DPoP proof's, a bank system's).
//! - [`client_assertion`] — a bank system's JWKS file checked, and its client assertions (RFC 7523) verified.
//! - [`dpop`] — DPoP proofs (RFC 9449) verified, and the proofs seen, in process and in Redis.
//! - [`view`] — the in-memory view that implements the read ports, and its refresher.
//! - [`token_writer`] — group-committed token records (the `TokenLedger::record` port).
//! - [`jwt`] — Ed25519 signing keys and the JWKS, the token signer, the verifier and the DPoP nonces, a file each.
//! - [`key_seal`] — signing keys encrypted at rest (AES-256-GCM under a key-encryption key).
//! - [`system`] — the system clock and the CSPRNG id generator.
//! - [`formats`] — the files operators feed in and take out (OBIE ATM files, the
//!   wait-time CSV).
//! - `testing` — an outage switch for a store, forged tokens and fresh stores of each
//!   backend, for other crates' tests (with the `testing` feature).

pub mod client_assertion;
pub mod dpop;
pub mod formats;
pub mod jwk;
pub mod jwt;
pub mod key_seal;
pub mod local_limits;
pub mod redis_limits;
pub mod redis_link;
pub mod registry;
pub mod rows;
mod sql;
pub mod store;
pub mod store_copy;
pub mod store_watch;
pub mod system;
#[cfg(feature = "testing")]
pub mod testing;
pub mod token_writer;
pub mod view;

// The store backends, one a line: each declares its folder and registers it.
registry::store_backends!(sqlite, postgres, mysql, memory);
