//! `store …`: acting on the store as a whole.

use super::CommandError;

/// `store copy --to URL`: copies the store at `from_url` into the empty one at `to_url`.
///
/// # Errors
/// One line: the copy refused (a target that is not empty) or failed.
pub async fn copy_store(from_url: &str, to_url: &str) -> Result<(), CommandError> {
    let copied = crate::startup::copy_store(from_url, to_url).await.map_err(|e| CommandError::of(&e))?;
    println!(
        "copied {} clients, {} supported channels, {} wait times, {} ATMs, {} signing keys and {} live token \
         records ({} revoked) into the target store",
        copied.clients, copied.channels, copied.wait_times, copied.atms, copied.keys, copied.tokens, copied.revoked
    );
    Ok(())
}
