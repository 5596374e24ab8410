//! The system clock and the CSPRNG-backed id generator.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::ports::{Clock, IdGenerator};
use domain::token::{OpaqueToken, SessionId, TokenId};
use time::OffsetDateTime;

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// Ids from `rand`'s thread-local CSPRNG (ChaCha, seeded and reseeded from the OS).
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomIds;

fn random_base64url<const N: usize>() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; N]>())
}

impl IdGenerator for RandomIds {
    fn token_id(&self) -> TokenId {
        // A version-4 UUID (RFC 9562 §5.4) from the same CSPRNG.
        TokenId::new(uuid::Builder::from_random_bytes(rand::random()).into_uuid().hyphenated().to_string())
    }

    fn session_id(&self) -> SessionId {
        // 128 bits: unguessable, and 22 characters in the `sid` header.
        SessionId::new(random_base64url::<16>())
    }

    fn opaque_token(&self) -> OpaqueToken {
        // 256 bits, twice DECISIONS.md's floor of 128.
        OpaqueToken::new(random_base64url::<32>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn opaque_tokens_carry_256_bits_and_do_not_repeat() {
        let tokens: HashSet<String> = (0..10_000).map(|_| RandomIds.opaque_token().as_str().to_owned()).collect();
        assert_eq!(tokens.len(), 10_000);
        assert!(tokens.iter().all(|token| token.len() == 43));
    }

    #[test]
    fn token_ids_are_version_4_uuids() {
        let id = RandomIds.token_id();
        let parsed = uuid::Uuid::parse_str(id.as_str()).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
    }

    #[test]
    fn session_ids_are_valid_sid_headers() {
        let sid = RandomIds.session_id();
        assert!(SessionId::parse(sid.as_str()).is_ok());
    }
}
