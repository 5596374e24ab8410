//! Fault tests: the real binary on loopback, with its disk filled, its store locked,
//! SIGTERM under keep-alive load, SIGKILL in the middle of writes, and PostgreSQL and
//! MariaDB stopped or crashed under load. Each test is
//! bounded in time, starts its own processes and stops them by PID, and runs alone (see
//! `harness::one_at_a_time`). A fault that needs root (a full disk) says plainly that it
//! was skipped without it, and fails under `CI=true`.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../support/binary.rs"]
mod binary;
mod crash;
mod disk_full;
mod drain;
mod harness;
mod http2_streams;
mod malformed;
mod mariadb;
mod postgres;
mod servers;
mod slow_connections;
#[path = "../support/store.rs"]
mod store;
mod store_locked;
#[path = "../support/system_keys.rs"]
mod system_keys;
