//! The system clock and the CSPRNG-backed id generator.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::outage::OutageId;
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

/// Milliseconds since the Unix epoch (0 for a clock set before it).
fn unix_millis() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

fn random_base64url<const N: usize>() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; N]>())
}

impl IdGenerator for RandomIds {
    fn token_id(&self) -> TokenId {
        // A version-7 UUID (RFC 9562 §5.7): milliseconds since the epoch, then 74 bits
        // from the same CSPRNG. Time-ordered ids make each new token record an append to
        // the end of the token table's key instead of a write into a random page of it.
        let uuid = uuid::Builder::from_unix_timestamp_millis(unix_millis(), &rand::random()).into_uuid();
        TokenId::new(uuid.hyphenated().to_string())
    }

    fn session_id(&self) -> SessionId {
        // 128 bits: unguessable, and 22 characters in the `sid` header.
        SessionId::new(random_base64url::<16>())
    }

    fn opaque_token(&self) -> OpaqueToken {
        // 256 random bits (twice docs/contract.md's floor of 128), after the issuance time in
        // milliseconds as 12 lowercase hex digits: characters of the base64url alphabet
        // that sort in time order, so the store's unique index on opaque tokens also
        // grows at its end. The time is no secret: the JWT carries it in `iat`.
        OpaqueToken::new(format!("{:012x}{}", unix_millis(), random_base64url::<32>()))
    }

    fn outage_id(&self) -> OutageId {
        // 40 random bits as 10 lowercase hex digits: typed by an operator, never guessed
        // by anyone (outages are public), unique among the few a store holds.
        OutageId::from_bytes(rand::random::<[u8; 5]>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn opaque_tokens_carry_256_random_bits_and_do_not_repeat() {
        let tokens: HashSet<String> = (0..10_000).map(|_| RandomIds.opaque_token().as_str().to_owned()).collect();
        assert_eq!(tokens.len(), 10_000);
        for token in &tokens {
            let (time, random) = token.split_at(12);
            assert!(time.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{token}");
            assert_eq!(URL_SAFE_NO_PAD.decode(random).unwrap().len(), 32, "{token}");
        }
    }

    #[test]
    fn opaque_tokens_sort_in_issuance_order() {
        let first = RandomIds.opaque_token();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = RandomIds.opaque_token();
        assert!(first.as_str() < second.as_str(), "{first:?} sorts before {second:?}");
    }

    #[test]
    fn token_ids_are_version_7_uuids_in_issuance_order() {
        let first = RandomIds.token_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = RandomIds.token_id();
        assert_eq!(uuid::Uuid::parse_str(first.as_str()).unwrap().get_version_num(), 7);
        assert!(first.as_str() < second.as_str(), "{first:?} sorts before {second:?}");
    }

    #[test]
    fn session_ids_are_valid_sid_headers() {
        let sid = RandomIds.session_id();
        assert!(SessionId::parse(sid.as_str()).is_ok());
    }
}
