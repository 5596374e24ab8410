//! `access …`: the channel combinations the wait-time operation supports.

use domain::services::access::{AccessChange, ChannelAccess};

use super::{CommandError, channel_scope};
use crate::cli::AccessAction;

/// `access …`
///
/// # Errors
/// [`CommandError`] with the reason.
pub async fn access(access: &ChannelAccess, action: AccessAction) -> Result<(), CommandError> {
    let AccessAction::Allow { country_code, business_code, channel_id } = action;
    let scope = channel_scope(&country_code, &business_code, &channel_id)?;
    let how = match access.allow(&scope).await.map_err(|e| CommandError::of(&e))? {
        AccessChange::Allowed => "now supported",
        AccessChange::AlreadyAllowed => "already supported",
    };
    println!("{country_code}/{business_code}/{channel_id} {how}");
    Ok(())
}
