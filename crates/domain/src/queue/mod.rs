//! Branch queues as their own systems report them: the events, the queue they make, the
//! estimated wait of a ticket taken now, and how accurate past estimates were.
//!
//! # Layout
//! - [`event`] — a queue event read from its JSON object, or refused with a code.
//! - [`state`] — [`state::BranchQueue`]: the queue the events give in `at` order, and
//!   the service times and patience it learns.
//! - [`estimate`] — the wait of a ticket taken now: pure, served live and replayed alike.
//! - [`evaluate`] — a replay of past events, scored against the waits that followed.
//! - [`live`] — [`live::LiveQueues`]: every branch's queue and estimate, held live by an instance.

pub mod estimate;
pub mod evaluate;
pub mod event;
pub mod live;
pub mod state;
