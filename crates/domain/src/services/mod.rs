//! The operations, written against the ports only.
//!
//! Serving the API:
//! - [`atms`]: ATM information (GET /v1/atms).
//! - [`authorize`]: issue a pre-login visitor token (GET /v1/authorize).
//! - [`bearer`]: check a bearer token and the `client_id` it is presented with; shared
//!   by every protected operation.
//! - [`dpop`]: check a DPoP proof (RFC 9449) against its request; shared by issuance and
//!   the bearer check.
//! - [`revocation`]: an app revokes its own token (POST /v1/revoke, RFC 7009).
//! - [`wait_times`]: estimated wait per branch (POST …/branch/waittime/retrieve).
//! - [`outages`] ([`outages::ServiceDiscovery`]): the service's status and planned
//!   outages (GET /v1/discovery/status, …/outages).
//! - [`queue_events`] ([`queue_events::QueueEventIntake`]): branch queue events posted
//!   by the bank's systems (POST /v1/branches/queue-events).
//! - [`atm_states`] ([`atm_states::AtmStateIntake`], [`atm_states::AtmStateEnquiry`]):
//!   ATM state events posted by the bank's monitoring, and the states apps read.
//! - [`atm_feed`] ([`atm_feed::AtmChangeFeed`]): the ATMs' change feed apps follow.
//! - [`posts`]: what every post of the systems' events shares.
//! - [`systems`] ([`systems::SystemTokenIssuance`], [`systems::SystemAuthentication`]):
//!   tokens for the bank's systems (POST /v1/token, client credentials), and their checks.
//! - [`keys`] ([`keys::KeyPublication`]): the JWKS; [`origins`]: the browser pages of
//!   registered clients (CORS).
//!
//! Each operation the HTTP layer calls is a trait here (the inbound ports: `TokenIssuance`,
//! `TokenRevocation`, `BearerAuthentication`, `WaitTimeEnquiry`, `AtmInformation`,
//! `KeyPublication`, `BrowserOrigins`), beside the service that implements it, with a mockall mock, so the
//! HTTP layer depends on the use cases, never on a service's concrete type.
//!
//! Operating it (the `branch-atm` commands and the service's own upkeep):
//! - [`clients`]: registering, listing and disabling client applications.
//! - [`access`]: the supported channel combinations.
//! - [`imports`]: wait-time and ATM imports; an import never drops an ATM before its
//!   announced closure.
//! - [`atm_closures`] ([`atm_closures::ClosureAdmin`]): closures announced ahead.
//! - [`keys`]: signing keys; there is always a current one.
//! - [`token_records`]: looking up and revoking issued tokens; their retention.
//! - [`demo`]: the demo data set, only into a new store.
//! - [`outages`] ([`outages::OutageAdmin`]): scheduling and cancelling planned outages.
//! - [`systems`] ([`systems::SystemAdmin`]): registering the bank's systems and their keys.

pub mod access;
pub mod atm_closures;
pub mod atm_feed;
pub mod atm_states;
pub mod atms;
pub mod authorize;
pub mod bearer;
pub mod clients;
pub mod demo;
pub mod dpop;
pub mod imports;
pub mod keys;
pub mod origins;
pub mod outages;
pub mod posts;
pub mod queue_events;
pub mod revocation;
pub mod systems;
pub mod token_records;
pub mod wait_times;
