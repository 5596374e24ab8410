//! Access tokens signed: the claims as RFC 9068 writes them, one Ed25519 signature.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::ports::{SigningFailed, TokenSigner};
use domain::system::SystemAccessClaims;
use domain::token::AccessClaims;
use serde::{Deserialize, Serialize};

use super::JwtTokens;

/// Claims as they are signed: RFC 9068 §2.2's (`iss`, `exp`, `aud`, `sub`, `client_id`,
/// `iat`, `jti`; `sub` is the client, as RFC 9068 §2.2 says for tokens of a client acting
/// for itself), `nbf`, `scope` and `sid`, and the channel the token was issued for.
#[derive(Serialize)]
struct ClaimsOut<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    client_id: &'a str,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: &'a str,
    scope: &'a str,
    sid: &'a str,
    #[serde(rename = "businessCode")]
    business_code: &'a str,
    #[serde(rename = "countryCode")]
    country_code: &'a str,
    #[serde(rename = "channelId")]
    channel_id: &'a str,
    /// RFC 9449 §6.1: the key a bound token is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    cnf: Option<Confirmation<&'a str>>,
}

/// The confirmation claim (RFC 7800 §3.1) of a bound token: its key's thumbprint.
#[derive(Serialize, Deserialize)]
pub(super) struct Confirmation<T> {
    pub(super) jkt: T,
}

/// A bank system's token's claims as they are signed: RFC 9068 §2.2's, `nbf` and `scope`;
/// no session and no channel, which is what keeps it off the visitor operations.
#[derive(Serialize)]
struct SystemClaimsOut<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    client_id: &'a str,
    iat: i64,
    nbf: i64,
    exp: i64,
    jti: &'a str,
    scope: &'a str,
}

impl TokenSigner for JwtTokens {
    fn sign(&self, claims: &AccessClaims) -> Result<String, SigningFailed> {
        let out = ClaimsOut {
            iss: &self.issuer,
            aud: &self.audience,
            sub: claims.client_id.as_str(),
            client_id: claims.client_id.as_str(),
            iat: claims.issued_at,
            nbf: claims.not_before,
            exp: claims.expires_at,
            jti: claims.token_id.as_str(),
            scope: claims.granted.as_str(),
            sid: claims.session.as_str(),
            business_code: claims.scope.business.as_str(),
            country_code: claims.scope.country.as_str(),
            channel_id: claims.scope.channel.as_str(),
            cnf: claims.bound_to.as_ref().map(|key| Confirmation { jkt: key.as_str() }),
        };
        self.signed(&out)
    }

    fn sign_system(&self, claims: &SystemAccessClaims) -> Result<String, SigningFailed> {
        let scope = claims.scopes.to_string();
        self.signed(&SystemClaimsOut {
            iss: &self.issuer,
            aud: &self.audience,
            sub: claims.system.as_str(),
            client_id: claims.system.as_str(),
            iat: claims.issued_at,
            nbf: claims.issued_at,
            exp: claims.expires_at,
            jti: claims.token_id.as_str(),
            scope: &scope,
        })
    }
}

impl JwtTokens {
    /// `out` signed with the key that signs now, as a compact JWS.
    fn signed(&self, out: &impl Serialize) -> Result<String, SigningFailed> {
        let keys = self.keys.load();
        let current = keys
            .signer_at(self.clock.unix_now())
            .ok_or_else(|| SigningFailed("no key signs now among those loaded".into()))?;
        // RFC 7515 §7.1: BASE64URL(header) '.' BASE64URL(payload) '.' BASE64URL(signature).
        let payload = serde_json::to_vec(out).map_err(|e| SigningFailed(e.to_string()))?;
        let mut token = String::with_capacity(current.encoded_header.len() + payload.len() * 4 / 3 + 92);
        token.push_str(&current.encoded_header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(payload, &mut token);
        let signature = current.pair.sign(token.as_bytes());
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut token);
        Ok(token)
    }
}
