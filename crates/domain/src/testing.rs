//! Sample values for other crates' tests (with the `mock` feature) and this one's.

use crate::client::{BusinessCode, ChannelId, ChannelScope, ClientId, CountryCode};
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
    }
}
