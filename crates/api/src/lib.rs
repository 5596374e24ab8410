//! The HTTP face of the branch and ATM open-banking service, and the `branch-atm`
//! binary's commands.
//!
//! This crate extracts requests, turns them into domain values, calls the domain's
//! services and maps results and errors to the wire. It holds no SQL and no JWT code:
//! those live in `adapters`, which [`startup`] wires into the services.
//!
//! # Layout
//! - [`http`] — routes, middleware, handlers (one module per operation), wire errors.
//! - [`startup`] — `Application::build(settings)` → `.port()` → `.run_until_stopped()`.
//! - [`cli`] — the command line's grammar.
//! - [`settings`] — each setting declared once; flags, environment and config file, layered and checked.
//! - [`obie`] — OBIE ATM 2.3 records, every schema limit enforced on input.
//! - [`atm_file`] — reading OBIE ATM 2.3 files for `atms import`, into stored form.
//! - [`admin`] — the operators' commands (clients, access, wait times, keys, tokens).
//! - [`demo`] — the demo data set of a first start.
//! - [`probe`] — `health-check`: whether a running instance is ready, for container health checks.
//! - [`telemetry`] — logging.
//! - [`metrics`] — Prometheus metrics on a listener of their own.
//! - [`texts`] — everything the service says to people, in English and Spanish.

pub mod admin;
pub mod atm_file;
pub mod cli;
pub mod demo;
pub mod http;
pub mod metrics;
pub mod obie;
pub mod probe;
pub mod settings;
pub mod startup;
pub mod telemetry;
pub mod texts;
