//! `systems …`: registering the bank's own systems, their keys and scopes.

use std::io::Read as _;
use std::path::Path;

use adapters::client_assertion::{LONGEST_KEY_SET, read_key_set};
use domain::client::ClientStatus;
use domain::services::systems::SystemAdmin;
use domain::system::{PublicKeySet, SystemChanges, SystemId, SystemRegistration, SystemScopes};

use super::{CommandError, open, parse, shown_path};
use crate::cli::SystemsAction;

/// The public keys in the JWKS file at `path`, or why they are refused, in one line.
fn key_set(path: &Path) -> Result<PublicKeySet, CommandError> {
    let mut json = String::new();
    let read = open(path)?.take(LONGEST_KEY_SET as u64 + 1).read_to_string(&mut json);
    let in_file = |why: String| CommandError(format!("{}: {why}", shown_path(path)));
    read.map_err(|e| in_file(format!("cannot read: {e}")))?;
    if json.len() > LONGEST_KEY_SET {
        return Err(in_file(format!("longer than {LONGEST_KEY_SET} bytes: not a JWKS of a few keys")));
    }
    read_key_set(&json).map_err(|refusal| in_file(refusal.to_string()))
}

/// `systems …`
///
/// # Errors
/// [`CommandError`] with the reason; nothing is written then.
pub async fn systems(admin: &SystemAdmin, action: SystemsAction) -> Result<(), CommandError> {
    let id = |raw: &str| parse("system id", raw, SystemId::parse);
    let scopes = |raw: &str| parse("scopes", raw, SystemScopes::parse);
    let failed = |e: domain::services::systems::SystemAdminError| CommandError::of(&e);
    match action {
        SystemsAction::Add { system_id, jwks_file, scopes: raw_scopes } => {
            let system = SystemRegistration {
                id: id(&system_id)?,
                scopes: scopes(&raw_scopes)?,
                keys: key_set(&jwks_file)?,
                status: ClientStatus::Active,
            };
            admin.add(&system).await.map_err(failed)?;
            println!("registered system {} with {} key(s), scopes {}", system.id, system.keys.len(), system.scopes);
        }
        SystemsAction::Update { system_id, jwks_file, scopes: raw_scopes } => {
            let system = id(&system_id)?;
            let changes = SystemChanges {
                keys: jwks_file.as_deref().map(key_set).transpose()?,
                scopes: raw_scopes.as_deref().map(scopes).transpose()?,
            };
            if changes == SystemChanges::default() {
                return Err(CommandError("nothing to update: give --jwks-file or --scopes".into()));
            }
            admin.update(&system, &changes).await.map_err(failed)?;
            println!("updated system {system}");
        }
        SystemsAction::Disable { system_id } => {
            let system = id(&system_id)?;
            admin.set_status(&system, ClientStatus::Disabled).await.map_err(failed)?;
            println!("disabled system {system}: its tokens are refused from now on");
        }
        SystemsAction::Enable { system_id } => {
            let system = id(&system_id)?;
            admin.set_status(&system, ClientStatus::Active).await.map_err(failed)?;
            println!("enabled system {system}");
        }
        SystemsAction::List => {
            println!("system_id\tstatus\tscopes\tkeys");
            for system in admin.list().await.map_err(|e| CommandError::of(&e))? {
                let status = if system.status == ClientStatus::Active { "active" } else { "disabled" };
                println!("{}\t{status}\t{}\t{}", system.id, system.scopes, system.keys.len());
            }
        }
    }
    Ok(())
}
