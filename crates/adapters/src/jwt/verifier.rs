//! Access tokens verified: the header (type, pinned algorithm, key id), the signature
//! (jsonwebtoken's), the claims and their times against the clock, and what no token
//! this service signed looks like; tokens verified once are remembered per key set.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::client::{BusinessCode, ChannelId, ChannelScope, ClientId, CountryCode};
use domain::dpop::KeyThumbprint;
use domain::ports::{TokenRejected, TokenVerifier};
use domain::system::{SYSTEM_TOKEN_SECONDS, SystemAccessClaims, SystemId, SystemScopes};
use domain::token::{AccessClaims, Scope, SessionId, TokenId};
use jsonwebtoken::errors::ErrorKind;
use serde::Deserialize;
use time::OffsetDateTime;

use super::keys::{KeySet, VerifyingKey};
use super::signer::Confirmation;
use super::{ACCESS_TOKEN_TYPE, JwtTokens};

/// Leeway on `exp` and `nbf` (docs/contract.md: at most one second; jsonwebtoken's default
/// of 60 s would keep expired tokens alive a minute). It is applied to the current time
/// with its fraction of a second: a token is refused from exactly `exp` + 1 s. Compared
/// in whole seconds, as jsonwebtoken does, it was accepted until `exp` + 1.99 s.
const LEEWAY_MILLIS: i128 = 1000;

/// `client_id` must equal `sub` (RFC 9068: both name the client here).
#[derive(Deserialize)]
struct ClaimsIn {
    sub: String,
    client_id: String,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: String,
    scope: String,
    sid: String,
    #[serde(rename = "businessCode")]
    business_code: String,
    #[serde(rename = "countryCode")]
    country_code: String,
    #[serde(rename = "channelId")]
    channel_id: String,
    #[serde(default)]
    cnf: Option<Confirmation<String>>,
}

/// A bank system's token's claims: a `sid` marks a visitor's token.
#[derive(Deserialize)]
struct SystemClaimsIn {
    sub: String,
    client_id: String,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: String,
    scope: String,
    #[serde(default)]
    sid: Option<serde::de::IgnoredAny>,
}

fn rejection(kind: &ErrorKind) -> TokenRejected {
    TokenRejected::Invalid(match kind {
        ErrorKind::InvalidSignature => "bad signature",
        ErrorKind::InvalidIssuer => "wrong issuer",
        ErrorKind::InvalidAudience => "wrong audience",
        ErrorKind::InvalidAlgorithm => "algorithm not allowed",
        ErrorKind::MissingRequiredClaim(_) => "missing claim",
        _ => "malformed token",
    })
}

/// Whether `now` lies within the token's `nbf` and `exp`, and is not before its `iat`,
/// widened by the leeway: from `nbf` − 1 s (and `iat` − 1 s) up to, not including,
/// `exp` + 1 s. Milliseconds, in `i128` so that no claim a token may carry overflows.
///
/// `iat` is checked because the lifetime check (`exp` − `iat`) bounds a token's life
/// only from its `iat`: a token dated a year ahead, forged with a leaked key, would
/// otherwise live a year. No token this service signs is dated ahead of the clock.
fn time_claims_hold(claims: &AccessClaims, now: OffsetDateTime) -> Result<(), TokenRejected> {
    times_hold(claims.issued_at, claims.not_before, claims.expires_at, now)
}

/// [`time_claims_hold`] on the three claims themselves.
fn times_hold(issued_at: i64, not_before: i64, expires_at: i64, now: OffsetDateTime) -> Result<(), TokenRejected> {
    let now = now.unix_timestamp_nanos() / 1_000_000;
    if now >= i128::from(expires_at) * 1000 + LEEWAY_MILLIS {
        return Err(TokenRejected::Expired);
    }
    if now < i128::from(not_before) * 1000 - LEEWAY_MILLIS {
        return Err(TokenRejected::Invalid("not yet valid"));
    }
    if now < i128::from(issued_at) * 1000 - LEEWAY_MILLIS {
        return Err(TokenRejected::Invalid("issued in the future"));
    }
    Ok(())
}

impl TokenVerifier for JwtTokens {
    fn verify(&self, token: &str) -> Result<AccessClaims, TokenRejected> {
        let keys = self.keys.load();
        // One Ed25519 verification costs tens of microseconds, more than the rest of a
        // request; an app calls with the same token for its whole session.
        if let Some(claims) = keys.verified.get(token) {
            time_claims_hold(&claims, self.clock.now())?;
            return Ok(claims);
        }
        let claims = self.verify_signed(&keys, token)?;
        keys.verified.insert(token.to_owned(), claims.clone());
        Ok(claims)
    }

    fn verify_system(&self, token: &str) -> Result<SystemAccessClaims, TokenRejected> {
        self.verify_system_token(token)
    }

    fn key_set_document(&self) -> String {
        self.keys.load().document.clone()
    }
}

impl JwtTokens {
    /// The full check: header, pinned algorithm, key, signature, registered claims, the
    /// time claims against the clock, and what no token this service signed looks like:
    /// issued after its key's retirement (a forger holding a retired key) or before its
    /// activation (one holding a next key), or living longer than tokens are issued for.
    fn verify_signed(&self, keys: &KeySet, token: &str) -> Result<AccessClaims, TokenRejected> {
        let (key, claims) = self.decoded::<ClaimsIn>(keys, token)?;
        let malformed = |_| TokenRejected::Invalid("malformed claims");
        if claims.client_id != claims.sub {
            return Err(TokenRejected::Invalid("client_id differs from sub"));
        }
        let verified = AccessClaims {
            client_id: ClientId::parse(&claims.sub).map_err(malformed)?,
            scope: ChannelScope {
                country: CountryCode::parse(&claims.country_code).map_err(malformed)?,
                business: BusinessCode::parse(&claims.business_code).map_err(malformed)?,
                channel: ChannelId::parse(&claims.channel_id).map_err(malformed)?,
            },
            session: SessionId::new(claims.sid),
            token_id: TokenId::new(claims.jti),
            granted: Scope::parse_request(&claims.scope).map_err(malformed)?,
            issued_at: claims.iat,
            not_before: claims.nbf,
            expires_at: claims.exp,
            bound_to: claims
                .cnf
                .map(|cnf| KeyThumbprint::parse(&cnf.jkt).ok_or(TokenRejected::Invalid("malformed claims")))
                .transpose()?,
        };
        // First, so that an expired token is refused as expired, whatever else it is.
        time_claims_hold(&verified, self.clock.now())?;
        key_signed_it(key, claims.iat, claims.exp, self.lifetime)?;
        Ok(verified)
    }

    /// The key `token`'s `kid` names and the claims it signed: header, pinned algorithm,
    /// signature, `iss` and `aud` checked. Visitors' and systems' tokens alike.
    fn decoded<'k, C: serde::de::DeserializeOwned>(
        &self,
        keys: &'k KeySet,
        token: &str,
    ) -> Result<(&'k VerifyingKey, C), TokenRejected> {
        let kid = access_token_kid(token)?;
        let key =
            kid.as_ref().and_then(|kid| keys.verifying.get(kid)).ok_or(TokenRejected::Invalid("unknown key id"))?;
        let claims = jsonwebtoken::decode::<C>(token, &key.key, &self.validation).map_err(|e| rejection(e.kind()))?;
        Ok((key, claims.claims))
    }

    /// [`TokenVerifier::verify_system`]: the same checks on a system's claims, with no
    /// memory of tokens verified (a system asks for a token every few minutes).
    fn verify_system_token(&self, token: &str) -> Result<SystemAccessClaims, TokenRejected> {
        let keys = self.keys.load();
        let (key, claims) = self.decoded::<SystemClaimsIn>(&keys, token)?;
        if claims.sid.is_some() {
            return Err(TokenRejected::Invalid("a visitor's token"));
        }
        if claims.client_id != claims.sub {
            return Err(TokenRejected::Invalid("client_id differs from sub"));
        }
        let malformed = |_| TokenRejected::Invalid("malformed claims");
        let verified = SystemAccessClaims {
            system: SystemId::parse(&claims.sub).map_err(malformed)?,
            scopes: SystemScopes::parse(&claims.scope).map_err(malformed)?,
            token_id: TokenId::new(claims.jti),
            issued_at: claims.iat,
            expires_at: claims.exp,
        };
        times_hold(claims.iat, claims.nbf, claims.exp, self.clock.now())?;
        key_signed_it(key, claims.iat, claims.exp, SYSTEM_TOKEN_SECONDS)?;
        Ok(verified)
    }
}

/// What no token signed by `key` here looks like: issued after its key's retirement (a
/// forger holding a retired key) or before its activation (one holding a next key), or
/// living longer than `lifetime` seconds.
fn key_signed_it(key: &VerifyingKey, iat: i64, exp: i64, lifetime: i64) -> Result<(), TokenRejected> {
    // `iat` is whole seconds: a token signed in the second the key retired, before that
    // moment, carries that second.
    if key.retired_at.is_some_and(|retired| iat > retired) {
        return Err(TokenRejected::Invalid("issued after its key's retirement"));
    }
    // A key is published before it signs (`keys rotate`): until its activation it has
    // signed nothing here.
    if iat < key.activates_at {
        return Err(TokenRejected::Invalid("issued before its key's activation"));
    }
    if exp.saturating_sub(iat) > lifetime {
        return Err(TokenRejected::Invalid("lives longer than tokens are issued for"));
    }
    Ok(())
}

/// The JOSE header members the verifier reads.
#[derive(Deserialize)]
struct JoseHeader {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
    #[serde(default)]
    typ: Option<String>,
    #[serde(default)]
    crit: Option<serde::de::IgnoredAny>,
}

/// The key id of a token whose header is that of an access token this service signs:
/// `alg` EdDSA (pinned: `none`, HMAC and every other `alg` are refused before any key is
/// looked at); `typ` `at+jwt` or `application/at+jwt` (RFC 9068 §4; media types compare
/// case-insensitively); no `crit` (RFC 7515 §4.1.11: it names extensions the verifier
/// must understand, and this one understands none).
fn access_token_kid(token: &str) -> Result<Option<String>, TokenRejected> {
    let malformed = || TokenRejected::Invalid("malformed token");
    let encoded = token.split('.').next().unwrap_or_default();
    let json = URL_SAFE_NO_PAD.decode(encoded).map_err(|_| malformed())?;
    let header: JoseHeader = serde_json::from_slice(&json).map_err(|_| malformed())?;
    if header.alg != "EdDSA" {
        return Err(TokenRejected::Invalid("algorithm not allowed"));
    }
    if header.crit.is_some() {
        return Err(TokenRejected::Invalid("critical header extension not understood"));
    }
    let typ = header.typ.as_deref().unwrap_or_default();
    let subtype = match (typ.get(..12), typ.get(12..)) {
        (Some(prefix), Some(rest)) if prefix.eq_ignore_ascii_case("application/") => rest,
        _ => typ,
    };
    if !subtype.eq_ignore_ascii_case(ACCESS_TOKEN_TYPE) {
        return Err(TokenRejected::Invalid("not an access token (typ)"));
    }
    Ok(header.kid)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn only_an_access_token_type_without_critical_extensions_is_accepted() {
        let key = key_at(now()).unwrap();
        let tokens = tokens_with(std::slice::from_ref(&key));
        let token = tokens.sign(&claims(now(), 60)).unwrap();
        let header = |extra: serde_json::Value| {
            let mut header = serde_json::json!({"alg": "EdDSA", "kid": key.kid});
            header.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            header
        };
        let accepted = [serde_json::json!({"typ": "at+jwt"}), serde_json::json!({"typ": "Application/AT+JWT"})];
        for extra in accepted {
            let resigned = resigned_with_header(&token, &header(extra.clone()), &key);
            assert!(tokens.verify(&resigned).is_ok(), "{extra}");
        }
        let refused = [
            serde_json::json!({}),
            serde_json::json!({"typ": "JWT"}),
            serde_json::json!({"typ": "at+jwt", "crit": ["exp"]}),
            serde_json::json!({"typ": "at+jwt", "crit": ["b64"], "b64": false}),
            serde_json::json!({"typ": "at+jwt", "crit": []}),
        ];
        for extra in refused {
            let resigned = resigned_with_header(&token, &header(extra.clone()), &key);
            assert!(tokens.verify(&resigned).is_err(), "{extra} must be refused (RFC 9068 §4, RFC 7515 §4.1.11)");
        }
    }

    #[test]
    fn a_signed_token_verifies_back_to_its_claims() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let issued = claims(now(), 60);
        let token = tokens.sign(&issued).unwrap();
        assert_eq!(tokens.verify(&token).unwrap(), issued);
    }

    fn system_claims(issued_at: i64, lifetime: i64) -> SystemAccessClaims {
        SystemAccessClaims {
            system: SystemId::parse("queue-7").unwrap(),
            scopes: SystemScopes::parse("queue:write").unwrap(),
            token_id: TokenId::new("0000000000000000000000sys".to_owned()),
            issued_at,
            expires_at: issued_at + lifetime,
        }
    }

    #[test]
    fn a_systems_token_verifies_as_a_systems_and_never_as_a_visitors_nor_the_other_way() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let system = system_claims(now(), 900);
        let system_token = tokens.sign_system(&system).unwrap();
        assert_eq!(tokens.verify_system(&system_token).unwrap(), system);
        assert!(tokens.verify(&system_token).is_err(), "a system's token on a visitor operation");
        let visitor_token = tokens.sign(&claims(now(), 60)).unwrap();
        assert_eq!(tokens.verify_system(&visitor_token), Err(TokenRejected::Invalid("a visitor's token")));
        let long = tokens.sign_system(&system_claims(now(), 901)).unwrap();
        assert_eq!(tokens.verify_system(&long), Err(TokenRejected::Invalid("lives longer than tokens are issued for")));
        let expired = tokens.sign_system(&system_claims(now() - 1000, 900)).unwrap();
        assert_eq!(tokens.verify_system(&expired), Err(TokenRejected::Expired));
    }

    #[test]
    fn an_expired_token_is_rejected() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let token = tokens.sign(&claims(now() - 120, 60)).unwrap();
        assert_eq!(tokens.verify(&token), Err(TokenRejected::Expired));
    }

    #[test]
    fn a_token_from_another_issuer_is_rejected() {
        let key = key_at(now()).unwrap();
        let elsewhere =
            JwtTokens::new("https://evil.example/api", "https://bank.example/api", LIFETIME, Arc::new(SystemClock));
        elsewhere.install(std::slice::from_ref(&key)).unwrap();
        let token = elsewhere.sign(&claims(now(), 60)).unwrap();
        assert_eq!(tokens_with(&[key]).verify(&token), Err(TokenRejected::Invalid("wrong issuer")));
    }

    #[test]
    fn a_token_signed_by_an_unpublished_key_is_rejected() {
        let signer = tokens_with(&[key_at(now()).unwrap()]);
        let verifier = tokens_with(&[key_at(now()).unwrap()]);
        let token = signer.sign(&claims(now(), 60)).unwrap();
        assert_eq!(verifier.verify(&token), Err(TokenRejected::Invalid("unknown key id")));
    }

    #[test]
    fn after_rotation_the_new_key_signs_and_old_tokens_still_verify() {
        let old = key_at(now() - 10).unwrap();
        let before = tokens_with(std::slice::from_ref(&old));
        let old_token = before.sign(&claims(now() - 5, 60)).unwrap();

        let new = key_at(now()).unwrap();
        let retired = SigningKey { retired_at: Some(now()), ..old.clone() };
        let after = tokens_with(&[new.clone(), retired]);

        assert_eq!(after.current_kid(), Some(new.kid.clone()));
        assert!(after.verify(&old_token).is_ok());
        let document: serde_json::Value = serde_json::from_str(&after.key_set_document()).unwrap();
        assert_eq!(document["keys"].as_array().unwrap().len(), 2);
    }

    /// The finding: a key's holder kept minting tokens that verified after `rotate --now`
    /// (`iat` after the key's retirement) and tokens living for days (`exp` far past the
    /// lifetime). No token this service signs looks like either.
    #[test]
    fn a_token_issued_after_its_keys_retirement_or_living_longer_than_the_lifetime_is_refused() {
        let retired_at = now() - 100;
        let old = SigningKey { retired_at: Some(retired_at), ..key_at(now() - 1000).unwrap() };
        let forger = tokens_with(&[SigningKey { retired_at: None, ..old.clone() }]);
        let verifier = tokens_with(&[key_at(now()).unwrap(), old]);

        let before = forger.sign(&claims(retired_at - 1, 600)).unwrap();
        assert!(verifier.verify(&before).is_ok(), "signed while it was the signing key");
        let same_second = forger.sign(&claims(retired_at, 600)).unwrap();
        assert!(verifier.verify(&same_second).is_ok(), "signed in the second it retired, before the moment");
        let after = forger.sign(&claims(retired_at + 1, 600)).unwrap();
        assert_eq!(verifier.verify(&after), Err(TokenRejected::Invalid("issued after its key's retirement")));

        let current = tokens_with(&[key_at(now()).unwrap()]);
        let longest = current.sign(&claims(now(), 1800)).unwrap();
        assert!(current.verify(&longest).is_ok(), "exactly the configured lifetime");
        let longer = current.sign(&claims(now(), 1801)).unwrap();
        assert_eq!(current.verify(&longer), Err(TokenRejected::Invalid("lives longer than tokens are issued for")));
    }

    /// The finding: with the signing key (what a leaked key gives), a token dated a year
    /// ahead (`iat` now + 1 year, `nbf` now, `exp` `iat` + 1,800 s) passed the lifetime
    /// check and verified for a year; a next key, published before it signs, verified
    /// tokens dated before its activation, which it cannot have signed.
    #[test]
    fn a_token_dated_ahead_of_now_or_before_its_keys_activation_is_refused() {
        const YEAR: i64 = 365 * 86_400;
        let clock = SetClock::at(EXP * 1000);
        let key = key_at(EXP - 600).unwrap();
        let tokens = tokens_on(std::slice::from_ref(&key), clock.clone());
        let year_ahead = AccessClaims { not_before: EXP, ..claims(EXP + YEAR, 1800) };
        let forged = tokens.sign(&year_ahead).unwrap();
        assert_eq!(tokens.verify(&forged), Err(TokenRejected::Invalid("issued in the future")));
        clock.set((EXP + YEAR) * 1000);
        assert!(tokens.verify(&forged).is_ok(), "at its iat a token of the key's own is what it says");

        // Within the leeway, as for nbf: a signer's clock up to one second ahead.
        clock.set(EXP * 1000);
        let one_second_ahead = tokens.sign(&claims(EXP + 1, 60)).unwrap();
        assert!(tokens.verify(&one_second_ahead).is_ok(), "iat − 1 s is within the leeway");
        let two_seconds_ahead = tokens.sign(&AccessClaims { not_before: EXP, ..claims(EXP + 2, 60) }).unwrap();
        assert_eq!(tokens.verify(&two_seconds_ahead), Err(TokenRejected::Invalid("issued in the future")));
        // Remembered, then the clock set back (a verifier restarted with another clock).
        clock.set((EXP + 2) * 1000);
        assert!(tokens.verify(&two_seconds_ahead).is_ok());
        clock.set(EXP * 1000);
        assert_eq!(tokens.verify(&two_seconds_ahead), Err(TokenRejected::Invalid("issued in the future")));

        let next = SigningKey { activates_at: EXP + 300, ..key_at(EXP).unwrap() };
        let verifier = tokens_on(&[next.clone(), key], clock.clone());
        let holder = tokens_on(&[SigningKey { activates_at: EXP - 600, ..next.clone() }], clock.clone());
        let early = holder.sign(&claims(EXP, 60)).unwrap();
        assert_eq!(verifier.verify(&early), Err(TokenRejected::Invalid("issued before its key's activation")));
        clock.set((EXP + 300) * 1000);
        let on_time = holder.sign(&claims(EXP + 300, 60)).unwrap();
        assert!(verifier.verify(&on_time).is_ok(), "signed from its activation");
    }

    #[test]
    fn a_next_key_is_published_at_once_and_signs_from_its_activation_without_a_reload() {
        const NOW: i64 = 1_800_000_000;
        let clock = SetClock::at(NOW * 1000);
        let current = SigningKey { retired_at: Some(NOW + 300), ..key_at(NOW - 600).unwrap() };
        let next = SigningKey { activates_at: NOW + 300, ..key_at(NOW).unwrap() };
        let tokens = tokens_on(&[next.clone(), current.clone()], clock.clone());
        let document: serde_json::Value = serde_json::from_str(&tokens.key_set_document()).unwrap();
        assert_eq!(document["keys"].as_array().unwrap().len(), 2, "the next key is published before it signs");
        assert_eq!(tokens.current_kid(), Some(current.kid.clone()));
        let before = tokens.sign(&claims(NOW, 60)).unwrap();
        clock.set(NOW * 1000 + 300_000);
        assert_eq!(tokens.current_kid(), Some(next.kid.clone()), "at its activation, by the clock");
        let after = tokens.sign(&claims(NOW + 300, 60)).unwrap();
        assert_ne!(before.split('.').next(), after.split('.').next(), "another kid in the header");
    }

    const EXP: i64 = 1_800_000_000;

    #[test]
    fn a_token_is_accepted_until_its_exp_plus_one_second_and_refused_from_then_on() {
        let key = key_at(EXP - 600).unwrap();
        let clock = SetClock::at(EXP * 1000 + 999);
        let remembering = tokens_on(std::slice::from_ref(&key), clock.clone());
        let token = remembering.sign(&claims(EXP - 60, 60)).unwrap();
        assert!(remembering.verify(&token).is_ok(), "exp + 0.999 s is within the leeway");

        clock.set(EXP * 1000 + 1000);
        assert_eq!(remembering.verify(&token), Err(TokenRejected::Expired), "remembered, at exp + 1 s");
        let first_sight = tokens_on(&[key], clock);
        assert_eq!(first_sight.verify(&token), Err(TokenRejected::Expired), "verified afresh, at exp + 1 s");
    }

    #[test]
    fn a_token_is_refused_until_one_second_before_its_nbf() {
        let key = key_at(EXP - 600).unwrap();
        let clock = SetClock::at(EXP * 1000 - 1001);
        let tokens = tokens_on(&[key], clock.clone());
        let token = tokens.sign(&claims(EXP, 60)).unwrap();
        assert_eq!(tokens.verify(&token), Err(TokenRejected::Invalid("not yet valid")));
        clock.set(EXP * 1000 - 1000);
        assert!(tokens.verify(&token).is_ok(), "nbf − 1 s is within the leeway");
    }

    #[test]
    fn a_remembered_token_is_refused_once_its_key_is_withdrawn() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let token = tokens.sign(&claims(now(), 60)).unwrap();
        assert!(tokens.verify(&token).is_ok());
        tokens.install(&[key_at(now()).unwrap()]).unwrap();
        assert_eq!(tokens.verify(&token), Err(TokenRejected::Invalid("unknown key id")));
    }

    #[test]
    fn a_token_one_byte_off_a_remembered_one_is_refused() {
        let tokens = tokens_with(&[key_at(now()).unwrap()]);
        let token = tokens.sign(&claims(now(), 60)).unwrap();
        assert!(tokens.verify(&token).is_ok());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let flipped = if signature.starts_with('A') { 'B' } else { 'A' };
        let tampered = format!("{signed}.{flipped}{}", &signature[1..]);
        assert_eq!(tokens.verify(&tampered), Err(TokenRejected::Invalid("bad signature")));
        assert!(tokens.verify(&token).is_ok(), "the genuine token is still accepted");
    }
}
