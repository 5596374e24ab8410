//! Black-box tests: the real application on port 0, through the real HTTP stack.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod atm_changes;
mod atm_closures;
mod atm_states;
mod atms;
mod authorize;
#[path = "../support/binary.rs"]
mod binary;
mod browser;
mod cli;
mod clients;
mod cors;
mod discovery;
mod docs_page;
mod dpop;
mod helpers;
mod imports;
mod instances;
mod limits;
mod metrics;
mod openapi;
mod queue_events;
mod revoke;
mod routes;
#[path = "../support/store.rs"]
mod store;
#[path = "../support/system_keys.rs"]
mod system_keys;
mod systems;
mod tls;
mod tokens;
mod traces;
mod wait_times;
