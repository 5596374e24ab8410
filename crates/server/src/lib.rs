//! The `branch-atm` binary: the command line, settings, wiring the adapters into the
//! domain's services and those into the HTTP layer, the operators' commands, logging and
//! metrics. It holds no business rule (the domain's), no SQL or JWT code (the
//! adapters'), and no HTTP handling (the api crate's): it puts them together.
//!
//! # Layout
//! - [`cli`] — the command line's grammar.
//! - [`settings`] — each setting declared once (flag, `BRANCH_ATM_*` variable, config-file
//!   key), layered and checked into the typed settings of the code each configures.
//! - [`startup`] — `Application::builder(settings)` → `.build()` → `.port()` →
//!   `.run_until_stopped()`; the operators' services; the only place things are wired.
//! - [`commands`] — the operators' commands, one module per command group.
//! - [`telemetry`] — the log and OpenTelemetry traces over OTLP, one subscriber;
//!   [`access_log`] — the access lines; [`metrics`] — Prometheus metrics on a listener of
//!   their own.
//! - [`probe`] — `health-check`: whether a running instance is ready.
//! - [`memory`] — giving freed memory back to the system after a burst.
//! - [`demo`] — the curl walk-through a first start prints.
//! - [`errors`] — an error and its causes in one line.

pub mod access_log;
pub mod cli;
pub mod commands;
pub mod demo;
#[cfg(test)]
mod docs_claims;
#[cfg(test)]
mod docs_links;
#[cfg(test)]
mod docs_settings;
pub mod errors;
pub mod memory;
pub mod metrics;
pub mod probe;
pub mod settings;
pub mod startup;
pub mod telemetry;
