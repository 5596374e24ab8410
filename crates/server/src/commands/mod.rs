//! The operators' commands, one module per command group: each parses its arguments
//! into domain values, calls a domain service, prints what it did on stdout, and fails
//! with a one-line reason ([`CommandError`]) that quotes an argument as a feed's value
//! is quoted ([`quoted`]: its first 64 characters, escaped, and its length).

pub mod access;
pub mod atms;
pub mod clients;
pub mod keys;
pub mod outages;
pub mod store;
pub mod systems;
pub mod tokens;
pub mod wait_times;

use std::path::Path;

use adapters::formats::shown::quoted;
use domain::client::{BusinessCode, ChannelId, ChannelScope, CountryCode};
use domain::input::Expected;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::errors::one_line;

/// `path` as a command's error names it: quoted as every argument is ([`quoted`]), by its
/// first characters and its length when it is long.
pub(crate) fn shown_path(path: &Path) -> String {
    quoted(&path.to_string_lossy())
}

/// A command failed; the text is its one-line reason.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CommandError(pub String);

impl CommandError {
    /// The reason of `error` and its causes, on one line.
    pub fn of(error: &dyn std::error::Error) -> Self {
        Self(one_line(error))
    }
}

/// `raw` parsed, or why not, in the words of the text table.
pub(crate) fn parse<T>(
    what: &str,
    raw: &str,
    parse: impl FnOnce(&str) -> Result<T, Expected>,
) -> Result<T, CommandError> {
    parse(raw)
        .map_err(|shape| CommandError(format!("{what} {} is not valid: expected {}", quoted(raw), english(shape))))
}

/// What a value should look like, as the API tells it in English.
pub(crate) fn english(shape: Expected) -> &'static str {
    api::texts::expected(shape, api::texts::Language::En)
}

/// Every one of `raw` parsed, or why the first that does not parse does not.
pub(crate) fn parse_all<T>(
    what: &str,
    raw: &[String],
    parse_one: fn(&str) -> Result<T, Expected>,
) -> Result<Vec<T>, CommandError> {
    raw.iter().map(|value| parse(what, value, parse_one)).collect()
}

/// A channel combination from its three codes.
pub(crate) fn channel_scope(country: &str, business: &str, channel: &str) -> Result<ChannelScope, CommandError> {
    Ok(ChannelScope {
        country: parse("country code", country, CountryCode::parse)?,
        business: parse("business code", business, BusinessCode::parse)?,
        channel: parse("channel id", channel, ChannelId::parse)?,
    })
}

/// The file at `path`, opened to read.
pub(crate) fn open(path: &Path) -> Result<std::fs::File, CommandError> {
    std::fs::File::open(path).map_err(|e| CommandError(format!("cannot open {}: {e}", shown_path(path))))
}

/// A Unix time as RFC 3339 UTC (the number itself if it is out of range).
pub(crate) fn utc(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| unix.to_string())
}
