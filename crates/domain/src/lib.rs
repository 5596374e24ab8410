//! The bank's language for the open-banking service, free of any web framework,
//! database driver or JWT library.
//!
//! This crate owns the values the service speaks about (branch ids, wait times,
//! registered client applications, access-token claims), the *ports* it needs from the
//! world (stores, token signing and verification, clock, id generation) and the
//! *services* that implement the operations on top of those ports. Adapters live in the
//! `adapters` crate and HTTP lives in the `api` crate; both depend on this one, never the
//! other way round (`cargo tree -p domain` shows no actix, sqlx or jsonwebtoken).
//!
//! Values are parsed, not validated: every newtype has a private field and a `parse`
//! constructor returning `Result`, so holding a `BranchId` means holding a valid one.
//!
//! # Layout
//! - [`atm`] — the ATM code lists (services, accessibility) listings filter by.
//! - [`atm_catalog`] — ATMs in stored form, and the set ready to serve: pages, filters, near-me search.
//! - [`atm_state`] — ATMs as they are now: state events, the state they leave, what an app is shown.
//! - [`branch`] — `BranchId`, `WaitTime`, `BranchWaitTime`.
//! - [`client`] — `ClientId`, `ChannelScope` (country, business, channel), client registrations.
//! - [`demo`] — the demo data set.
//! - [`dpop`] — tokens bound to an app's key (RFC 9449): client policy, thumbprints, proof refusals.
//! - [`token`] — access-token claims, token/session ids, opaque tokens, PKCE challenges.
//! - [`limits`] — request limits: rates, the counts a request takes, a limiter's answer.
//! - [`outage`] — planned outages: ids, ISO 8601 durations, explanations.
//! - [`queue`] — branch queue events, the queue they make, live wait estimates and their accuracy.
//! - [`status`] — the service's status, derived from observed health and planned outages.
//! - [`input`] — what a malformed input was expected to look like ([`input::Expected`]).
//! - [`posted`] — what the bank's systems post: an event's id, time and window, read field by field.
//! - [`ports`] — the async traits adapters implement, each with its `# Errors` contract.
//! - [`services`] — token issuance, bearer checks and wait-time retrieval.
//! - [`store_contents`] — which kinds of data a store holds; the demo data set's rule.
//! - [`system`] — the bank's own systems: ids, scopes, public keys, registrations.
//! - [`text`] — what an identifier or code may hold, and which characters are not seen as themselves.
//! - `testing` — sample values for tests (with the `mock` feature).

pub mod atm;
pub mod atm_catalog;
pub mod atm_closure;
pub mod atm_feed;
pub mod atm_state;
pub mod branch;
pub mod client;
pub mod demo;
pub mod dpop;
pub mod input;
pub mod limits;
pub mod outage;
pub mod ports;
pub mod posted;
pub mod queue;
pub mod services;
pub mod status;
pub mod store_contents;
pub mod system;
#[cfg(any(test, feature = "mock"))]
pub mod testing;
pub mod text;
pub mod token;

/// The `tracing` target of the spans that start a trace (docs/operations.md, "Traces"):
/// a sampled request's server span, and the roots of background work (a group commit, a
/// view refresh, an import). The server's trace layer exports these, and every span of
/// the service's crates made while one of them is current; a span of the service made
/// outside them (at TRACE level, the work beneath a request) is never made at all. A
/// naming convention of every layer, so it lives in the innermost one.
pub const TRACE_ROOT: &str = "branch_atm::trace";
