//! What every post of the bank's systems' events shares (queue events, ATM state
//! events): how many a post may carry, each read on its own and refused by its place,
//! and the one way a post fails.

use serde_json::Value;

use crate::ports::{Clock, StoreUnavailable};
use crate::posted::{EventRefusal, EventTime};

/// The most events one post may carry (issue 44).
pub const MOST_EVENTS: usize = 1_000;

/// An event refused, by its place in the post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedEvent {
    /// Its index in `events`.
    pub index: usize,
    /// Why.
    pub refusal: EventRefusal,
}

/// Why a post stored nothing.
#[derive(Debug, thiserror::Error)]
pub enum PostEventsError {
    /// The store could not write them; none was stored, and the post may be sent again.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// `clock`'s now as an event time.
pub fn event_now(clock: &dyn Clock) -> EventTime {
    let micros = clock.now().unix_timestamp_nanos() / 1_000;
    EventTime::from_unix_micros(i64::try_from(micros).unwrap_or(i64::MAX))
}

/// Reads each of `events` with `read`: the valid ones by their index, and the refused.
pub fn read_each<T>(
    events: &[Value],
    read: impl Fn(&Value) -> Result<T, EventRefusal>,
) -> (Vec<(usize, T)>, Vec<RejectedEvent>) {
    let mut valid = Vec::with_capacity(events.len());
    let mut rejected = Vec::new();
    for (index, value) in events.iter().enumerate() {
        match read(value) {
            Ok(event) => valid.push((index, event)),
            Err(refusal) => rejected.push(RejectedEvent { index, refusal }),
        }
    }
    (valid, rejected)
}
