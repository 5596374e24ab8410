//! Client applications registered with the bank, and the channel they call from.

use std::fmt;

use smol_str::SmolStr;
use validator::ValidateUrl;

use crate::dpop::DpopPolicy;
use crate::input::Expected;

/// Declares a string newtype whose only constructor is a `parse` checking `$valid`.
macro_rules! code_newtype {
    ($(#[$doc:meta])* $name:ident, $expected:expr, $valid:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(SmolStr);

        impl $name {
            /// Parses the raw value, refusing anything outside the documented shape.
            pub fn parse(raw: &str) -> Result<Self, Expected> {
                let valid: fn(&str) -> bool = $valid;
                if valid(raw) { Ok(Self(SmolStr::new(raw))) } else { Err($expected) }
            }

            /// The value as sent on the wire.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

fn is_token_of(raw: &str, max: usize, extra: &[u8]) -> bool {
    !raw.is_empty() && raw.len() <= max && raw.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

code_newtype!(
    /// The client id generated when an application registered (1 to 64 of `[A-Za-z0-9._-]`).
    ClientId,
    Expected::ClientId,
    |raw| is_token_of(raw, 64, b"._-")
);
code_newtype!(
    /// A country as ISO 3166-1 alpha-2, upper case (`MX`).
    CountryCode,
    Expected::CountryCode,
    |raw| raw.len() == 2 && raw.bytes().all(|b| b.is_ascii_uppercase())
);
code_newtype!(
    /// The business code identified at registration (`GCB`): 1 to 16 letters or digits.
    BusinessCode,
    Expected::BusinessCode,
    |raw| is_token_of(raw, 16, b"")
);
code_newtype!(
    /// The channel a request comes from (`MOBILE`, `WEB`): 1 to 32 of `[A-Za-z0-9_-]`.
    ChannelId,
    Expected::ChannelId,
    |raw| is_token_of(raw, 32, b"_-")
);

/// Where a call comes from: the (country, business, channel) triple that the bank
/// registers clients under and configures as supported for the wait-time operation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelScope {
    /// ISO country code.
    pub country: CountryCode,
    /// Business code.
    pub business: BusinessCode,
    /// Channel id.
    pub channel: ChannelId,
}

/// A redirect URI registered for a client: absolute, without a fragment (RFC 6749
/// §3.1.2), `https` or, for native apps, `http` on a loopback host (RFC 8252 §7.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RedirectUri(String);

/// Whether `raw` is `https`, or `http` on a loopback host (RFC 8252 §7.3).
fn secure_or_loopback(raw: &str) -> bool {
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
        .iter()
        .any(|prefix| raw.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/'])));
    raw.starts_with("https://") || loopback
}

impl RedirectUri {
    /// Parses a URI to register; compared later by exact string match (RFC 9700 §2.1), so
    /// it holds no character that is not seen as itself ([`crate::text::Hidden`]).
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        let acceptable = secure_or_loopback(raw)
            && !raw.contains('#')
            && raw.len() <= 2048
            && crate::text::first_hidden(raw).is_none()
            && raw.validate_url();
        if acceptable { Ok(Self(raw.to_owned())) } else { Err(Expected::RedirectUri) }
    }

    /// The URI as registered.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The web origin of the URI: a page there may call the API from a browser.
    pub fn origin(&self) -> Option<Origin> {
        Origin::of_url(&self.0)
    }
}

/// A web origin a browser app calls from, as browsers write it in the `Origin` header
/// (RFC 6454 §6.2): `https://host[:port]`, or `http` on a loopback host; lower case, no
/// default port, no path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin(String);

impl Origin {
    /// Parses an origin to register; it must be written as a browser sends it
    /// (`https://app.example.mx`, not `https://App.example.mx:443/`).
    pub fn parse(raw: &str) -> Result<Self, Expected> {
        Self::of_url(raw).filter(|origin| origin.0 == raw).ok_or(Expected::Origin)
    }

    fn of_url(raw: &str) -> Option<Self> {
        let serialized = url::Url::parse(raw).ok()?.origin().ascii_serialization();
        secure_or_loopback(&serialized).then_some(Self(serialized))
    }

    /// The origin as browsers write it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether a registered client may obtain tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientStatus {
    /// May obtain tokens.
    Active,
    /// Refused at `/v1/authorize`; its live tokens are revoked when it is disabled.
    Disabled,
}

/// An application registered with the bank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRegistration {
    /// Its client id.
    pub client_id: ClientId,
    /// The country, business and channel it registered for.
    pub scope: ChannelScope,
    /// The redirect URIs it registered; a `redirect_uri` sent to authorize must be one.
    pub redirect_uris: Vec<RedirectUri>,
    /// Web origins its pages call from, beside those of its redirect URIs.
    pub allowed_origins: Vec<Origin>,
    /// Whether it may obtain tokens.
    pub status: ClientStatus,
    /// Whether its tokens must be bound to a key of the app's (DPoP).
    pub dpop: DpopPolicy,
}

/// Changes to a client's registration: where its pages live, and its DPoP policy; what
/// is not given stays as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientChanges {
    /// Its redirect URIs, replaced when given.
    pub redirect_uris: Option<Vec<RedirectUri>>,
    /// Its added origins, replaced when given.
    pub allowed_origins: Option<Vec<Origin>>,
    /// Its DPoP policy, replaced when given.
    pub dpop: Option<DpopPolicy>,
}

impl ClientRegistration {
    /// Every origin its pages may call the API from: those of its redirect URIs and
    /// those added, each once, in order.
    pub fn origins(&self) -> Vec<Origin> {
        let mut origins: Vec<Origin> = Vec::new();
        for origin in
            self.redirect_uris.iter().filter_map(RedirectUri::origin).chain(self.allowed_origins.iter().cloned())
        {
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        origins
    }

    /// Whether a page at `origin` (an `Origin` header's value) may call the API as this
    /// client: the client is active and the origin is one of [`Self::origins`].
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.status == ClientStatus::Active && self.origins().iter().any(|allowed| allowed.as_str() == origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn country_codes_are_two_upper_case_letters() {
        assert!(CountryCode::parse("MX").is_ok());
        for raw in ["mx", "MEX", "M", "M1", ""] {
            assert_eq!(CountryCode::parse(raw), Err(Expected::CountryCode), "{raw:?}");
        }
    }

    #[test]
    fn client_ids_refuse_spaces_and_control_characters() {
        assert!(ClientId::parse("demo-mobile.app_1").is_ok());
        for raw in ["", "a b", "a\nb", "é", &"x".repeat(65)] {
            assert_eq!(ClientId::parse(raw), Err(Expected::ClientId), "{raw:?}");
        }
    }

    #[test]
    fn an_origin_is_written_as_browsers_write_it() {
        assert_eq!(Origin::parse("https://app.example.mx").unwrap().as_str(), "https://app.example.mx");
        assert!(Origin::parse("http://127.0.0.1:7000").is_ok());
        for raw in [
            "https://App.example.mx",
            "https://app.example.mx:443",
            "https://app.example.mx/",
            "http://app.example.mx",
            "null",
        ] {
            assert_eq!(Origin::parse(raw), Err(Expected::Origin), "{raw:?}");
        }
    }

    #[test]
    fn a_client_allows_the_origins_of_its_redirect_uris_and_those_added_while_active() {
        let mut client = crate::testing::registration("web-app");
        client.redirect_uris = vec![RedirectUri::parse("https://bank.example.mx:8443/app/callback").unwrap()];
        client.allowed_origins = vec![Origin::parse("https://partner.example.mx").unwrap()];
        assert!(client.allows_origin("https://bank.example.mx:8443"));
        assert!(client.allows_origin("https://partner.example.mx"));
        assert!(!client.allows_origin("https://bank.example.mx"));
        assert!(!client.allows_origin("https://evil.example"));
        client.status = ClientStatus::Disabled;
        assert!(!client.allows_origin("https://partner.example.mx"));
    }

    #[test]
    fn redirect_uris_must_be_https_or_loopback_http_without_fragment() {
        assert!(RedirectUri::parse("https://app.example.mx/callback").is_ok());
        assert!(RedirectUri::parse("http://127.0.0.1:7000/cb").is_ok());
        for raw in [
            "http://app.example.mx/cb",
            "https://app.example.mx/cb#x",
            "http://localhost.evil.example/cb",
            "app.example.mx/cb",
            "javascript:alert(1)",
            // Issue 42: what an operator is shown must read as it is.
            "https://app.example.mx/\u{202e}bc/",
            "https://app.example.mx/c\u{200b}b",
        ] {
            assert_eq!(RedirectUri::parse(raw), Err(Expected::RedirectUri), "{raw:?}");
        }
    }
}
