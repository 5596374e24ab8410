//! What a token proves: the JWKS verifies it with a standard library, and every way of
//! tampering with it is a 401.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde_json::Value;

use crate::helpers::{CLIENT, Session, TestApp, assert_error, demo_claims, now};
use domain::token::AccessClaims;

#[tokio::test]
async fn a_token_verifies_with_the_published_jwks_through_a_standard_jwt_library() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let jwks: jsonwebtoken::jwk::JwkSet =
        app.http.get(format!("{}/api/.well-known/jwks.json", app.address)).send().await.unwrap().json().await.unwrap();
    let header = jsonwebtoken::decode_header(&session.token).unwrap();
    assert_eq!(header.alg, Algorithm::EdDSA);
    let jwk = jwks.find(header.kid.as_deref().unwrap()).expect("the kid is published");
    let mut validation = Validation::new(Algorithm::EdDSA);
    validation.set_issuer(&[app.issuer()]);
    validation.set_audience(&[app.issuer()]);
    let claims = jsonwebtoken::decode::<Value>(&session.token, &DecodingKey::from_jwk(jwk).unwrap(), &validation)
        .unwrap()
        .claims;
    assert_eq!(claims["sub"], CLIENT);
    assert_eq!(claims["client_id"], CLIENT, "RFC 9068 §2.2 asks for client_id beside sub");
    assert_eq!(claims["scope"], "visitor");
    assert_eq!(claims["sid"], session.sid);
    assert_eq!(claims["businessCode"], "GCB");
    assert_eq!(claims["countryCode"], "MX");
    assert_eq!(claims["channelId"], "MOBILE");
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 1800);
    assert!(claims["jti"].is_string() && claims["nbf"].is_i64());
}

/// RFC 6750 §3's challenge of a token that is not valid (revoked, forged, another
/// client's, from another issuer: a caller is told no more than that).
const NOT_VALID: &str = r#"Bearer error="invalid_token", error_description="The access token is not valid""#;
/// … and of a token that was valid and expired.
const EXPIRED: &str = r#"Bearer error="invalid_token", error_description="The access token expired""#;

async fn assert_refused_with(app: &crate::helpers::TestApp, token: &str, sid: &str, challenge: &str) {
    let session = Session { token: token.to_owned(), sid: sid.to_owned() };
    let response = app.wait_times(&session, &["00001"]).await;
    assert_eq!(response.headers()["www-authenticate"], challenge);
    assert_error(response, 401, "unAuthorized", None).await;
}

async fn assert_refused(app: &crate::helpers::TestApp, token: &str, sid: &str) {
    assert_refused_with(app, token, sid, NOT_VALID).await;
}

#[tokio::test]
async fn a_token_with_a_changed_signature_is_refused() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let (signed, signature) = session.token.rsplit_once('.').unwrap();
    let mut bytes = URL_SAFE_NO_PAD.decode(signature).unwrap();
    bytes[0] ^= 1;
    assert_refused(&app, &format!("{signed}.{}", URL_SAFE_NO_PAD.encode(bytes)), &session.sid).await;
}

#[tokio::test]
async fn a_token_with_changed_claims_is_refused() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let parts: Vec<&str> = session.token.split('.').collect();
    let mut claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    claims["exp"] = Value::from(claims["exp"].as_i64().unwrap() + 86_400);
    let forged = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(claims.to_string()), parts[2]);
    assert_refused(&app, &forged, &session.sid).await;
}

#[tokio::test]
async fn an_unsigned_alg_none_token_is_refused() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let claims = session.token.split('.').nth(1).unwrap();
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    assert_refused(&app, &format!("{header}.{claims}."), &session.sid).await;
}

#[tokio::test]
async fn an_hs256_token_keyed_with_the_public_key_is_refused() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let kid = jsonwebtoken::decode_header(&session.token).unwrap().kid.unwrap();
    let jwks: Value =
        app.http.get(format!("{}/api/.well-known/jwks.json", app.address)).send().await.unwrap().json().await.unwrap();
    let public_key = URL_SAFE_NO_PAD.decode(jwks["keys"][0]["x"].as_str().unwrap()).unwrap();
    let claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(session.token.split('.').nth(1).unwrap()).unwrap()).unwrap();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid);
    let confused = jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(&public_key)).unwrap();
    assert_refused(&app, &confused, &session.sid).await;
}

#[tokio::test]
async fn an_expired_token_signed_with_the_real_key_is_refused() {
    let app = TestApp::builder().start().await;
    let expired = app.forge(&app.issuer(), &demo_claims("AAAAAAAAAAAAAAAAAAAAAA", now() - 3600, 60)).await;
    assert_refused_with(&app, &expired, "AAAAAAAAAAAAAAAAAAAAAA", EXPIRED).await;
}

/// The finding: every bearer failure looked the same, a bare `WWW-Authenticate: Bearer`.
/// Now each 401 carries RFC 6750's error code and a description that tells an expired
/// token from one that is not valid (and no more), in the body too, in the caller's
/// language.
#[tokio::test]
async fn a_bearer_refusal_says_whether_the_token_expired_or_is_not_valid() {
    let app = TestApp::builder().start().await;
    let sid = "AAAAAAAAAAAAAAAAAAAAAA";
    let expired = app.forge(&app.issuer(), &demo_claims(sid, now() - 3600, 60)).await;
    let session = Session { token: expired, sid: sid.to_owned() };
    let response = app
        .wait_time_request(&session, &[])
        .header("Accept-Language", "es")
        .body(r#"{"branches":[{"branchId":"00001"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["www-authenticate"], EXPIRED);
    let body = assert_error(response, 401, "unAuthorized", None).await;
    assert_eq!(body["details"], "El token de acceso ha expirado; solicite uno nuevo.");

    let real = app.session().await;
    let tampered = Session { token: format!("{}A", real.token), sid: real.sid.clone() };
    let response = app.get_atms(&tampered, "/api/v1/atms", &[]).await;
    assert_eq!(response.headers()["www-authenticate"], NOT_VALID);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["description"], "The access token is not valid.");

    let other_session = Session { token: real.token.clone(), sid: "BBBBBBBBBBBBBBBBBBBBBB".to_owned() };
    let response = app.wait_times(&other_session, &["00001"]).await;
    assert_eq!(
        response.headers()["www-authenticate"],
        r#"Bearer error="invalid_token", error_description="The access token was not issued for this session""#
    );
}

/// Sleeps until `unix_seconds` (a whole second) plus `millis`.
async fn sleep_until(unix_seconds: i64, millis: u64) {
    let at = std::time::UNIX_EPOCH
        + std::time::Duration::from_secs(unix_seconds as u64 + millis / 1000)
        + std::time::Duration::from_millis(millis % 1000);
    if let Ok(wait) = at.duration_since(std::time::SystemTime::now()) {
        tokio::time::sleep(wait).await;
    }
}

#[tokio::test]
async fn a_token_is_refused_one_second_after_its_exp_whether_remembered_or_not() {
    let app = TestApp::builder().start().await;
    let expires_at = now() + 1;
    // Issued now: a token dated before its key signed (the app started seconds ago) is refused.
    let claims = |sid: &str| demo_claims(sid, expires_at - 1, 1);
    let remembered = Session {
        token: app.forge(&app.issuer(), &claims("AAAAAAAAAAAAAAAAAAAAAA")).await,
        sid: "AAAAAAAAAAAAAAAAAAAAAA".into(),
    };
    let fresh = Session {
        token: app.forge(&app.issuer(), &claims("BBBBBBBBBBBBBBBBBBBBBB")).await,
        sid: "BBBBBBBBBBBBBBBBBBBBBB".into(),
    };
    // Verified once while live, so the service remembers it; the other is first seen late.
    assert_eq!(app.wait_times(&remembered, &["00001"]).await.status(), 200);

    // docs/contract.md: at most one second of leeway. At exp + 1.05 s both are refused.
    sleep_until(expires_at + 1, 50).await;
    assert_refused_with(&app, &remembered.token, &remembered.sid, EXPIRED).await;
    assert_refused_with(&app, &fresh.token, &fresh.sid, EXPIRED).await;
}

#[tokio::test]
async fn a_token_not_yet_valid_is_refused() {
    let app = TestApp::builder().start().await;
    let future = app.forge(&app.issuer(), &demo_claims("AAAAAAAAAAAAAAAAAAAAAA", now() + 120, 600)).await;
    assert_refused(&app, &future, "AAAAAAAAAAAAAAAAAAAAAA").await;
}

/// The finding: with the signing key (what a leaked key gives), a token dated a year
/// ahead (`iat` now + 1 year, `nbf` now, `exp` `iat` + 1,800 s) was answered 200 on both
/// operations, for a year.
#[tokio::test]
async fn a_token_dated_a_year_ahead_is_refused_on_both_operations() {
    let app = TestApp::builder().start().await;
    let sid = "AAAAAAAAAAAAAAAAAAAAAA";
    let year_ahead = AccessClaims { not_before: now(), ..demo_claims(sid, now() + 365 * 86_400, 1800) };
    let forged = app.forge(&app.issuer(), &year_ahead).await;
    assert_refused(&app, &forged, sid).await;
    let session = Session { token: forged, sid: sid.into() };
    assert_eq!(app.get_atms(&session, "/api/v1/atms", &[]).await.status(), 401, "the ATM operation too");
}

#[tokio::test]
async fn a_token_from_another_issuer_is_refused_even_with_the_real_key() {
    let app = TestApp::builder().start().await;
    let foreign = app.forge("https://elsewhere.example/api", &demo_claims("AAAAAAAAAAAAAAAAAAAAAA", now(), 600)).await;
    assert_refused(&app, &foreign, "AAAAAAAAAAAAAAAAAAAAAA").await;
}

/// The finding: a token signed with the real key and an `exp` far past the token
/// lifetime was accepted. No token this service issues lives longer than the lifetime.
#[tokio::test]
async fn a_token_living_longer_than_the_configured_lifetime_is_refused() {
    let app = TestApp::builder().start().await;
    let sid = "AAAAAAAAAAAAAAAAAAAAAA";
    let for_days = app.forge(&app.issuer(), &demo_claims(sid, now(), 3 * 86_400)).await;
    assert_refused(&app, &for_days, sid).await;
    let one_second_more = app.forge(&app.issuer(), &demo_claims(sid, now(), 1801)).await;
    assert_refused(&app, &one_second_more, sid).await;
    let as_issued = app.forge(&app.issuer(), &demo_claims(sid, now(), 1800)).await;
    let session = Session { token: as_issued, sid: sid.into() };
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "the configured lifetime itself");
}

#[tokio::test]
async fn a_token_forged_the_same_way_but_valid_is_accepted() {
    // The control for the three tests above: only the claim under test differs.
    let app = TestApp::builder().start().await;
    let valid = app.forge(&app.issuer(), &demo_claims("AAAAAAAAAAAAAAAAAAAAAA", now(), 600)).await;
    let session = Session { token: valid, sid: "AAAAAAAAAAAAAAAAAAAAAA".into() };
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200);
}

#[tokio::test]
async fn a_token_presented_with_another_client_id_is_refused() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let response = app
        .wait_time_request(&session, &["client_id"])
        .header("client_id", "demo-web-app")
        .body(r#"{"branches":[{"branchId":"00001"}]}"#)
        .send()
        .await
        .unwrap();
    assert_error(response, 401, "unAuthorized", None).await;
}

#[tokio::test]
async fn a_sid_from_another_session_is_refused() {
    let app = TestApp::builder().start().await;
    let (session, other) = (app.session().await, app.session().await);
    let other_session =
        r#"Bearer error="invalid_token", error_description="The access token was not issued for this session""#;
    assert_refused_with(&app, &session.token, &other.sid, other_session).await;
}

/// The application takes its clock from its builder: a token expires when the clock says
/// so, and the test moves the clock instead of waiting half an hour.
#[tokio::test]
async fn a_token_is_refused_once_the_services_clock_passes_its_expiry() {
    let clock = Arc::new(domain::testing::ManualClock::at(time::OffsetDateTime::now_utc()));
    let app = TestApp::builder().clock(clock.clone()).start().await;
    let session = app.session().await;
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200);
    clock.advance(std::time::Duration::from_secs(1_799));
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "alive until its lifetime is over");
    clock.advance(std::time::Duration::from_secs(2));
    let expired = app.wait_times(&session, &["00001"]).await;
    assert_eq!(expired.status(), 401, "1,801 s after it was issued, by the service's clock");
    let fresh = app.session().await;
    assert_eq!(app.wait_times(&fresh, &["00001"]).await.status(), 200, "a new token is issued at the clock's time");
}
