//! Sample values for other crates' tests (with the `mock` feature) and this one's.

use std::sync::Mutex;
use std::time::Duration;

use time::OffsetDateTime;

use crate::atm::{Accessibility, AtmService};
use crate::atm_catalog::StoredAtm;
use crate::client::{
    BusinessCode, ChannelId, ChannelScope, ClientId, ClientRegistration, ClientStatus, CountryCode, RedirectUri,
};
use crate::ports::{Clock, MockClock};
use crate::token::{AccessClaims, Scope, SessionId, TokenId};

/// The bank's MX/GCB scope on `channel`.
///
/// # Panics
/// If `channel` is not a valid channel id (a test's own mistake).
#[allow(clippy::expect_used)]
pub fn scope(channel: &str) -> ChannelScope {
    ChannelScope {
        country: CountryCode::parse("MX").expect("valid country"),
        business: BusinessCode::parse("GCB").expect("valid business"),
        channel: ChannelId::parse(channel).expect("valid channel"),
    }
}

/// Visitor-token claims for `client_id` on MX/GCB/MOBILE in session `session`, valid
/// from `issued_at` for `lifetime` seconds, with a token id unique to the session.
///
/// # Panics
/// If `client_id` is not a valid client id (a test's own mistake).
#[allow(clippy::expect_used)]
pub fn claims(client_id: &str, session: &str, issued_at: i64, lifetime: i64) -> AccessClaims {
    AccessClaims {
        client_id: ClientId::parse(client_id).expect("valid client id"),
        scope: scope("MOBILE"),
        session: SessionId::new(session.to_owned()),
        token_id: TokenId::new(format!("jti-{session}-{issued_at}")),
        granted: Scope::Visitor,
        issued_at,
        not_before: issued_at,
        expires_at: issued_at + lifetime,
        bound_to: None,
    }
}

/// An active registration of `client_id` on MX/GCB/MOBILE with one redirect URI.
///
/// # Panics
/// If `client_id` is not a valid client id (a test's own mistake).
#[allow(clippy::expect_used)]
pub fn registration(client_id: &str) -> ClientRegistration {
    ClientRegistration {
        client_id: ClientId::parse(client_id).expect("valid client id"),
        scope: scope("MOBILE"),
        redirect_uris: vec![RedirectUri::parse("https://app.example.mx/cb").expect("valid URI")],
        allowed_origins: Vec::new(),
        status: ClientStatus::Active,
        dpop: crate::dpop::DpopPolicy::Optional,
    }
}

/// A clock that always says `unix` seconds since the epoch.
///
/// # Panics
/// If `unix` is out of `OffsetDateTime`'s range (a test's own mistake).
#[allow(clippy::expect_used)]
pub fn clock_at(unix: i64) -> MockClock {
    let now = OffsetDateTime::from_unix_timestamp(unix).expect("a representable time");
    let mut clock = MockClock::new();
    clock.expect_now().returning(move || now);
    clock.expect_unix_now().returning(move || unix);
    clock
}

/// A clock a test moves: it says what it was set to, and changes only when told, so a
/// test can make a token expire without waiting for it.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock that says `now` until moved.
    pub fn at(now: OffsetDateTime) -> Self {
        Self(Mutex::new(now))
    }

    /// Moves the clock `by` forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The ATM `record` (an OBIE ATM 2.3 object a test wrote) of `brand` in stored form, its
/// `ATMServices`, `Accessibility` and coordinates taken from the record. It does not
/// validate the record: the file's reader (`adapters::formats::obie`) does that for imports.
///
/// # Panics
/// If `record` has no string `Identification` or a coordinate is not a number.
#[allow(clippy::expect_used)]
pub fn stored_atm(brand: &str, record: &serde_json::Value) -> StoredAtm {
    fn codes<T>(record: &serde_json::Value, list: &str, parse: fn(&str) -> Option<T>) -> Vec<T> {
        let names = record[list].as_array().map(Vec::as_slice).unwrap_or_default();
        names.iter().filter_map(|name| name.as_str().and_then(parse)).collect()
    }
    let degrees = |value: &serde_json::Value| value.as_str().and_then(|v| v.parse().ok()).expect("coordinate");
    let coordinates = record
        .pointer("/Location/PostalAddress/GeoLocation/GeographicCoordinates")
        .map(|at| (degrees(&at["Latitude"]), degrees(&at["Longitude"])));
    StoredAtm::new(
        brand,
        record["Identification"].as_str().expect("an identification"),
        record.to_string(),
        &codes(record, "ATMServices", AtmService::parse),
        &codes(record, "Accessibility", Accessibility::parse),
        coordinates,
    )
}
