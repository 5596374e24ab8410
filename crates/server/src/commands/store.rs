//! `store …`: acting on the store as a whole.

use std::path::Path;

use super::CommandError;

/// `store copy --to URL`: copies the store at `from_url` into the empty one at `to_url`,
/// once every sealed signing key has opened with `key_file`.
///
/// # Errors
/// One line: the key file does not open the keys, or the copy was refused (a target
/// that is not empty) or failed.
pub async fn copy_store(from_url: &str, to_url: &str, key_file: Option<&Path>) -> Result<(), CommandError> {
    let copied = crate::startup::copy_store(from_url, to_url, key_file).await.map_err(|e| CommandError::of(&e))?;
    println!(
        "copied {} clients, {} supported channels, {} wait times, {} ATMs, {} signing keys, {} live token \
         records ({} revoked) and {} planned outages into the target store",
        copied.clients,
        copied.channels,
        copied.wait_times,
        copied.atms,
        copied.keys,
        copied.tokens,
        copied.revoked,
        copied.outages
    );
    Ok(())
}
