//! The HTTP face of the branch and ATM open-banking service: routes, middleware,
//! handlers, wire errors and texts, the OpenAPI document, and the request limits.
//!
//! Handlers read top to bottom in four steps: extract, turn into domain values, call a
//! use case, map the outcome to the wire. They reach the domain only through its use
//! cases' traits (held in [`AppState`]), so a handler runs in a test on mocks, without a
//! store.
//! Every status and wire code is chosen in [`errors`]: each operation's domain error
//! becomes its wire failure in one `From`; handlers never choose a status, and convert
//! with a plain `?` in steps whose result [`errors::answer`] gives its request's context
//! when it is a failure. Texts come
//! from [`texts`]. This crate holds no SQL, no JWT code, no settings parsing and no CLI:
//! those are the adapters' and the server's.
//!
//! # Layout
//! - [`state`] — what the handlers share ([`AppState`]); [`routes`](mod@routes) — which handler
//!   answers which path and method.
//! - [`authorize`], [`revoke`], [`system_token`], [`queue_events`], [`atms`], [`atm_states`], [`wait_times`], [`meta`], [`discovery`] — one
//!   module per operation (meta: the JWKS, the server metadata and the health checks;
//!   discovery: the public status and planned outages), each with its `#[utoipa::path]`;
//!   [`readiness`] — what the health checks and the middleware read.
//! - [`headers`] — every header's name, and the OpenAPI parameters operations share;
//!   [`request`] — reading headers, queries and bodies into domain values, and the
//!   bearer check; [`correlation`] — the request's `uuid`; [`dpop`] — the proof a
//!   request presents and the nonces its answer carries; [`conditional`] — validators
//!   and 304s.
//! - [`errors`] — every wire failure, its status, code and body shape.
//! - [`texts`], [`language`] — everything said to people, in English and Spanish.
//! - [`middleware`] — security headers, correlation id, draining; [`observe`] — the one
//!   place requests and refusals are logged and counted ([`log_summary`]: one line a
//!   second per cause); [`access_log`] — its lines, handed to the server's writer.
//! - [`trace`] — each request's server span, for OpenTelemetry traces.
//! - [`cors`] — browser pages of registered clients.
//! - [`rate_limit`] — which limits a request counts against (the counting is a port,
//!   `domain::ports::RequestLimiter`); [`caller`] — who the caller is behind proxies.
//! - [`openapi`] — the OpenAPI 3.1 document and the docs page.

pub mod access_log;
pub mod atm_changes;
pub mod atm_states;
pub mod atms;
pub mod authorize;
pub mod caller;
pub mod conditional;
pub mod correlation;
pub mod cors;
pub mod discovery;
pub mod dpop;
pub mod errors;
pub mod headers;
mod json_text;
pub mod language;
pub mod log_summary;
pub mod meta;
pub mod middleware;
pub mod observe;
pub mod openapi;
pub mod posts;
pub mod queue_events;
pub mod rate_limit;
pub mod readiness;
pub mod request;
pub mod revoke;
pub mod routes;
pub mod state;
pub mod system_token;
pub mod texts;
pub mod trace;
pub mod wait_times;

pub use routes::{not_found, routes, well_known_routes};
pub use state::AppState;
