//! Issued tokens behind the API: operators look them up and revoke them, and records
//! are kept for a day after the token expired.

use std::sync::Arc;

use crate::ports::{Clock, StoreUnavailable, TokenArchive};
use crate::token::{OpaqueToken, TokenRecord};

/// How long an expired token's record is kept for operators' look-ups.
pub const EXPIRED_TOKEN_RETENTION_SECONDS: i64 = 24 * 3600;

/// Why a token's record was not found or not revoked.
#[derive(Debug, thiserror::Error)]
pub enum TokenRecordError {
    /// No token has that opaque token (or its record was purged).
    #[error("no token has that opaque token")]
    NotFound,
    /// The store could not be read or written.
    #[error(transparent)]
    Unavailable(#[from] StoreUnavailable),
}

/// What a revocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// The token is refused from the next refresh on.
    Revoked,
    /// It already was revoked.
    AlreadyRevoked,
}

/// Operators' commands on issued tokens, and the retention of their records.
pub struct TokenRecords {
    archive: Arc<dyn TokenArchive>,
    clock: Arc<dyn Clock>,
}

impl TokenRecords {
    /// Commands on `archive`.
    pub fn new(archive: Arc<dyn TokenArchive>, clock: Arc<dyn Clock>) -> Self {
        Self { archive, clock }
    }

    /// The record behind `opaque`.
    ///
    /// # Errors
    /// See [`TokenRecordError`].
    pub async fn show(&self, opaque: &OpaqueToken) -> Result<TokenRecord, TokenRecordError> {
        self.archive.find(opaque).await?.ok_or(TokenRecordError::NotFound)
    }

    /// Revokes the token behind `opaque`; revoking twice changes nothing.
    ///
    /// # Errors
    /// See [`TokenRecordError`].
    pub async fn revoke(&self, opaque: &OpaqueToken) -> Result<Revocation, TokenRecordError> {
        let record = self.show(opaque).await?;
        if record.revoked_at.is_some() {
            return Ok(Revocation::AlreadyRevoked);
        }
        // Conditional in the store too: of two revocations at once, one wins.
        Ok(if self.archive.revoke(&record.token.token_id, self.clock.unix_now()).await? {
            Revocation::Revoked
        } else {
            Revocation::AlreadyRevoked
        })
    }

    /// Deletes the records of tokens that expired more than a day ago; how many.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when they could not be deleted.
    pub async fn purge_expired(&self) -> Result<u64, StoreUnavailable> {
        self.archive.purge_expired(self.clock.unix_now() - EXPIRED_TOKEN_RETENTION_SECONDS).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ClientId;
    use crate::ports::MockTokenArchive;
    use crate::testing::clock_at;
    use crate::token::{IssuedToken, SessionId, TokenId};

    fn record(revoked_at: Option<i64>) -> TokenRecord {
        TokenRecord {
            token: IssuedToken {
                token_id: TokenId::new("jti-1".into()),
                opaque_token: OpaqueToken::new("opaque-1".into()),
                client_id: ClientId::parse("bank-app").unwrap(),
                session: SessionId::new("sid-1".into()),
                issued_at: 0,
                expires_at: 1_800,
                code_challenge: None,
            },
            revoked_at,
        }
    }

    fn records(archive: MockTokenArchive, now: i64) -> TokenRecords {
        TokenRecords::new(Arc::new(archive), Arc::new(clock_at(now)))
    }

    #[tokio::test]
    async fn a_live_token_is_revoked_now_by_its_id() {
        let mut archive = MockTokenArchive::new();
        archive.expect_find().returning(|_| Ok(Some(record(None))));
        archive
            .expect_revoke()
            .withf(|id, now| id.as_str() == "jti-1" && *now == 100)
            .times(1)
            .returning(|_, _| Ok(true));
        let revoked = records(archive, 100).revoke(&OpaqueToken::new("opaque-1".into())).await.unwrap();
        assert_eq!(revoked, Revocation::Revoked);
    }

    #[tokio::test]
    async fn a_revoked_token_is_not_revoked_again() {
        let mut archive = MockTokenArchive::new();
        archive.expect_find().returning(|_| Ok(Some(record(Some(50)))));
        archive.expect_revoke().never();
        let again = records(archive, 100).revoke(&OpaqueToken::new("opaque-1".into())).await.unwrap();
        assert_eq!(again, Revocation::AlreadyRevoked);
    }

    #[tokio::test]
    async fn an_unknown_opaque_token_is_not_found() {
        let mut archive = MockTokenArchive::new();
        archive.expect_find().returning(|_| Ok(None));
        let result = records(archive, 100).revoke(&OpaqueToken::new("nope".into())).await;
        assert!(matches!(result, Err(TokenRecordError::NotFound)));
    }

    #[tokio::test]
    async fn records_are_kept_a_day_after_their_token_expired() {
        let mut archive = MockTokenArchive::new();
        archive.expect_purge_expired().withf(|before| *before == 100_000 - 86_400).times(1).returning(|_| Ok(7));
        assert_eq!(records(archive, 100_000).purge_expired().await.unwrap(), 7);
    }
}
