//! Group commit for issued-token records.
//!
//! Every token must be durable before it is handed out, and a durable SQLite commit
//! costs an fsync. Requests queue their record here; one task writes whatever has
//! queued up in a single transaction and then answers every waiter, so the fsync cost
//! is shared by the whole batch and issuance scales with load instead of disk latency.

use std::sync::Arc;
use std::time::Duration;

use domain::ports::{StoreUnavailable, TokenArchive};
use domain::token::IssuedToken;
use tokio::sync::{mpsc, oneshot};

/// The most records written in one transaction.
const MAX_BATCH: usize = 512;

/// Records queued before callers wait for room: bounds memory under overload.
const QUEUE_CAPACITY: usize = 8 * MAX_BATCH;

/// The longest a caller waits for its record to be durable, queueing included: the
/// fault issue bounds every store wait on a request path at about 2 s. Past it the token
/// is refused (its record may still be written; a stored token nobody holds is harmless).
const RECORD_DEADLINE: Duration = Duration::from_secs(2);

type Reply = oneshot::Sender<Result<(), String>>;

/// Queues token records for the group-commit task.
#[derive(Clone)]
pub struct TokenWriter {
    queue: mpsc::Sender<(IssuedToken, Reply)>,
}

impl TokenWriter {
    /// Starts the group-commit task on the current tokio runtime. It stops when the last
    /// `TokenWriter` clone is dropped.
    pub fn spawn(archive: Arc<dyn TokenArchive>) -> Self {
        let (queue, pending) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(write_batches(archive, pending));
        Self { queue }
    }

    /// Queues `token` and waits until it is durable, for at most [`RECORD_DEADLINE`].
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the batch it was in could not be committed, or was not
    /// committed in time.
    pub async fn record(&self, token: IssuedToken) -> Result<(), StoreUnavailable> {
        let recorded = async {
            let (reply, answer) = oneshot::channel();
            self.queue.send((token, reply)).await.map_err(|_| StoreUnavailable::new("the token writer has stopped"))?;
            answer
                .await
                .map_err(|_| StoreUnavailable::new("the token writer has stopped"))?
                .map_err(StoreUnavailable::new)
        };
        tokio::time::timeout(RECORD_DEADLINE, recorded)
            .await
            .map_err(|_| StoreUnavailable::new("the token record was not durable within the deadline"))?
    }
}

async fn write_batches(archive: Arc<dyn TokenArchive>, mut pending: mpsc::Receiver<(IssuedToken, Reply)>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut tokens = Vec::with_capacity(MAX_BATCH);
    while pending.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // Callers that gave up (deadline passed, client gone) were refused: their tokens
        // are never handed out, so they need not be written.
        batch.retain(|(_, reply)| !reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        tokens.extend(batch.iter().map(|(token, _)| token.clone()));
        let outcome = archive.record(&tokens).await.map_err(|error| {
            tracing::error!(error = %error, tokens = tokens.len(), "token records were not stored");
            error.to_string()
        });
        tokens.clear();
        for (_, reply) in batch.drain(..) {
            // A waiter that went away (client disconnected) needs no answer.
            let _ = reply.send(outcome.clone());
        }
    }
}
