//! The files operators feed in and take out: OBIE ATM files ([`atm_file`], records
//! validated field by field by [`obie`]), the wait-time CSV ([`wait_time_csv`]) and queue
//! events as JSON lines ([`queue_events`]). Each reads into the domain's values or
//! refuses with a typed error naming where the file is wrong; nothing here touches a
//! store. [`shown`] is how a feed's text is shown to an operator: escaped, and cut when
//! quoted.

pub mod atm_file;
pub mod obie;
pub mod queue_events;
pub mod shown;
pub mod wait_time_csv;
