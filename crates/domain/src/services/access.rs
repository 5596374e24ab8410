//! Which channel combinations the wait-time operation supports.

use std::sync::Arc;

use crate::client::ChannelScope;
use crate::ports::{ChannelRecords, StoreUnavailable};

/// Whether an `allow` changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessChange {
    /// The combination is supported from now on.
    Allowed,
    /// It already was.
    AlreadyAllowed,
}

/// The operators' command on supported channel combinations.
pub struct ChannelAccess {
    channels: Arc<dyn ChannelRecords>,
}

impl ChannelAccess {
    /// Commands on `channels`.
    pub fn new(channels: Arc<dyn ChannelRecords>) -> Self {
        Self { channels }
    }

    /// Supports calls from `scope`; allowing twice changes nothing.
    ///
    /// # Errors
    /// [`StoreUnavailable`] when it could not be written.
    pub async fn allow(&self, scope: &ChannelScope) -> Result<AccessChange, StoreUnavailable> {
        Ok(if self.channels.allow(scope).await? { AccessChange::Allowed } else { AccessChange::AlreadyAllowed })
    }
}
