//! `tokens …`: looking up, revoking and purging issued tokens' records.

use adapters::formats::shown::quoted;
use domain::services::token_records::{Revocation, TokenRecords};
use domain::token::OpaqueToken;

use super::{CommandError, utc};
use crate::cli::TokensAction;

/// The opaque token an operator typed, or why it cannot be one.
fn opaque(typed: &str) -> Result<OpaqueToken, CommandError> {
    OpaqueToken::parse(typed).ok_or_else(|| {
        CommandError(format!(
            "{} is not an opaque token: this service issues 1 to {} base64url characters (A-Z, a-z, 0-9, - and _)",
            quoted(typed),
            OpaqueToken::MAX_LEN
        ))
    })
}

/// `tokens …`
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn tokens(tokens: &TokenRecords, action: TokensAction) -> Result<(), CommandError> {
    match action {
        TokensAction::Show { opaque_token } => {
            let record = tokens.show(&opaque(&opaque_token)?).await.map_err(|e| CommandError::of(&e))?;
            println!("jti\t{}", record.token.token_id);
            println!("client_id\t{}", record.token.client_id);
            println!("sid\t{}", record.token.session);
            println!("issued_at\t{}", utc(record.token.issued_at));
            println!("expires_at\t{}", utc(record.token.expires_at));
            println!("revoked_at\t{}", record.revoked_at.map_or_else(|| "-".to_owned(), utc));
        }
        TokensAction::Revoke { opaque_token } => {
            let revocation = tokens.revoke(&opaque(&opaque_token)?).await.map_err(|e| CommandError::of(&e))?;
            println!(
                "{}",
                match revocation {
                    Revocation::Revoked => "revoked",
                    Revocation::AlreadyRevoked => "already revoked",
                }
            );
        }
        TokensAction::Purge => {
            let purged = tokens.purge_expired().await.map_err(|e| CommandError::of(&e))?;
            println!("purged {purged} records of tokens that expired more than a day ago");
        }
    }
    Ok(())
}
