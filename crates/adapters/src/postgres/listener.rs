//! Change notices pushed by PostgreSQL: every change's trigger notifies
//! [`CHANGES_CHANNEL`] in the change's transaction (`migrations/postgres`, second
//! migration), and PostgreSQL delivers the notice at commit. The view reloads at once,
//! and keeps polling the counters for notices lost while it was not listening.

use async_trait::async_trait;
use domain::ports::StoreUnavailable;
use sqlx::postgres::PgListener;

use super::PostgresDialect;
use super::unavailable;
use crate::store::{ChangeFeed, Notice};

/// The channel the change triggers notify.
const CHANGES_CHANNEL: &str = "branch_atm_changes";

impl PostgresDialect {
    /// A feed of the change notices, on a connection of its own.
    pub(super) async fn listen(&self) -> Result<Box<dyn ChangeFeed>, StoreUnavailable> {
        let mut listener = PgListener::connect_with(&self.pool).await.map_err(unavailable)?;
        listener.listen(CHANGES_CHANNEL).await.map_err(unavailable)?;
        Ok(Box::new(Listening(listener)))
    }
}

/// LISTEN on [`CHANGES_CHANNEL`], on a connection of its own that sqlx makes again
/// (and listens on again) when it is lost.
struct Listening(PgListener);

#[async_trait]
impl ChangeFeed for Listening {
    async fn next(&mut self) -> Result<Notice, StoreUnavailable> {
        match self.0.try_recv().await.map_err(unavailable)? {
            Some(_) => {
                // A burst of writes is one reload: take what has arrived with it.
                while self.0.next_buffered().is_some() {}
                Ok(Notice::Changed)
            }
            None => Ok(Notice::Reconnected),
        }
    }
}
