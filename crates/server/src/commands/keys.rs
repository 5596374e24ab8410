//! `keys …`: rotating, revoking and listing the keys that sign access tokens.

use std::time::Duration;

use adapters::formats::shown::quoted;
use domain::services::keys::{KeyManagement, KeyRevocation};
use domain::token::{KeyId, KeyState};

use super::{CommandError, utc};
use crate::cli::KeysAction;

/// The key id an operator typed, or why it cannot be one.
fn key_id(typed: &str) -> Result<KeyId, CommandError> {
    KeyId::parse(typed).ok_or_else(|| {
        CommandError(format!(
            "{} is not a key id: keys list shows them, 1 to {} base64url characters (A-Z, a-z, 0-9, - and _)",
            quoted(typed),
            KeyId::MAX_LEN
        ))
    })
}

/// `keys …`; a rotation's new key signs after `activation_delay`.
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn keys(keys: &KeyManagement, action: KeysAction, activation_delay: Duration) -> Result<(), CommandError> {
    match action {
        KeysAction::Rotate { now: true } => {
            let key = keys.rotate_now().await.map_err(|e| CommandError::of(&e))?;
            println!("signing key {} signs now; the previous one stays published until its tokens expire", key.kid);
        }
        KeysAction::Rotate { now: false } => {
            // Whole seconds, rounded up: never earlier than the caches allow.
            let seconds = activation_delay.as_secs() + u64::from(activation_delay.subsec_nanos() > 0);
            let delay = i64::try_from(seconds).unwrap_or(i64::MAX);
            let key = keys.rotate(delay).await.map_err(|e| CommandError::of(&e))?;
            println!(
                "signing key {} is published now and signs from {} ({} s from now); the current key signs until then",
                key.kid,
                utc(key.activates_at),
                delay
            );
        }
        KeysAction::Revoke { kid } => match keys.revoke(&key_id(&kid)?).await.map_err(|e| CommandError::of(&e))? {
            KeyRevocation::AlreadyRevoked => println!("signing key {kid} was revoked already; nothing changed"),
            KeyRevocation::Revoked { replaced_by } => {
                println!(
                    "signing key {kid} is revoked: it leaves the JWKS and the verifiers within a refresh, and every \
                     token it signed is refused"
                );
                if let Some(key) = replaced_by {
                    println!("signing key {} signs from {} in its place", key.kid, utc(key.activates_at));
                }
            }
        },
        KeysAction::List => {
            println!("kid\tstate\tcreated_at\tactivates_at\tretired_at\trevoked_at");
            for key in keys.list().await.map_err(|e| CommandError::of(&e))? {
                let state = match key.state {
                    KeyState::Next => "next",
                    KeyState::Current => "current",
                    KeyState::Retired => "retired",
                    KeyState::Revoked => "revoked",
                };
                let retired = key.retired_at.map(utc).unwrap_or_default();
                let revoked = key.revoked_at.map(utc).unwrap_or_default();
                println!(
                    "{}\t{state}\t{}\t{}\t{retired}\t{revoked}",
                    key.kid,
                    utc(key.created_at),
                    utc(key.activates_at)
                );
            }
        }
    }
    Ok(())
}
