//! The operations, written against the ports only.
//!
//! - [`atms`]: ATM information (GET /v1/atms).
//! - [`authorize`]: issue a pre-login visitor token (GET /v1/authorize).
//! - [`bearer`]: check a bearer token and the `client_id` it is presented with; shared
//!   by every protected operation.
//! - [`wait_times`]: estimated wait per branch (POST …/branch/waittime/retrieve).

pub mod atms;
pub mod authorize;
pub mod bearer;
pub mod wait_times;
