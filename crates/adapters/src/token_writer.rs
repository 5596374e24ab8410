//! Group commit for issued-token records.
//!
//! Every token must be durable before it is handed out, and a durable SQLite commit
//! costs an fsync. Requests queue their record here; one task writes whatever has
//! queued up in a single transaction and then answers every waiter, so the fsync cost
//! is shared by the whole batch and issuance scales with load instead of disk latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use domain::ports::{StoreFailure, StoreUnavailable, TokenArchive};
use domain::token::IssuedToken;
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The histogram of records per group commit.
pub const BATCH_SIZE_METRIC: &str = "branch_atm_token_batch_size";

/// Counts a failed store operation (`token_record`, `view_refresh`, `readiness_probe`,
/// `change_notices`) for the metrics.
pub fn store_error(operation: &'static str) {
    metrics::counter!("branch_atm_store_errors_total", "operation" => operation).increment(1);
}

/// The most records written in one transaction.
const MAX_BATCH: usize = 512;

/// Records queued before callers wait for room: bounds memory under overload.
const QUEUE_CAPACITY: usize = 8 * MAX_BATCH;

/// The longest a caller waits for its record to be durable, queueing included: the
/// fault issue bounds every store wait on a request path at about 2 s. Past it the token
/// is refused (its record may still be written; a stored token nobody holds is harmless).
const RECORD_DEADLINE: Duration = Duration::from_secs(2);

type Reply = oneshot::Sender<Result<(), Failed>>;

/// A queued record: the token, who waits for it, the traced request's span it came from,
/// if any (the group commit that carries it links to that span), and when its caller
/// gives up waiting.
type Queued = (IssuedToken, Reply, Option<SpanContext>, tokio::time::Instant);

/// Why a batch was not stored, as each of its waiters is told: the cause's text and its
/// kind (a store that refused the data is not one that is unavailable).
#[derive(Debug, Clone)]
struct Failed {
    cause: String,
    kind: StoreFailure,
}

impl Failed {
    fn of(error: &StoreUnavailable) -> Self {
        Self { cause: error.0.to_string(), kind: error.failure() }
    }

    /// The waiter's own error, of the same kind.
    fn into_error(self) -> StoreUnavailable {
        match self.kind {
            StoreFailure::Unavailable => StoreUnavailable::new(self.cause),
            StoreFailure::RefusedData => StoreUnavailable::refused(self.cause),
        }
    }
}

/// Queues token records for the group-commit task.
#[derive(Clone)]
pub struct TokenWriter {
    queue: mpsc::Sender<Queued>,
    /// When the last write failed, in milliseconds after `started` (at least 1); 0 once
    /// one succeeds.
    failed_at: Arc<AtomicU64>,
    started: std::time::Instant,
}

/// How long a failed write says tokens cannot be issued when no write has been tried
/// since: with no token requests after an outage, nothing else would clear it, and an
/// app that asks the status before asking for a token would never ask (a second
/// review, issue 34). The store's own probe tells the status whether the store is down.
const FAILURE_SHOWN_FOR: Duration = Duration::from_secs(10);

impl TokenWriter {
    /// Starts the group-commit task on the current tokio runtime. It stops when the last
    /// `TokenWriter` clone is dropped.
    pub fn spawn(archive: Arc<dyn TokenArchive>) -> Self {
        let (queue, pending) = mpsc::channel(QUEUE_CAPACITY);
        let failed_at = Arc::new(AtomicU64::new(0));
        let started = std::time::Instant::now();
        tokio::spawn(write_batches(archive, pending, Arc::clone(&failed_at), started));
        Self { queue, failed_at, started }
    }

    /// Whether the last write of token records failed (or outlived a caller's deadline),
    /// none has succeeded since, and it failed within the last 10 s: tokens cannot be
    /// issued now. For the published status.
    pub fn is_failing(&self) -> bool {
        let failed_at = self.failed_at.load(Ordering::Relaxed);
        failed_at != 0
            && (self.started.elapsed().as_millis() as u64).saturating_sub(failed_at)
                < FAILURE_SHOWN_FOR.as_millis() as u64
    }

    /// Queues `token` and waits until it is durable, for at most `RECORD_DEADLINE`.
    ///
    /// # Errors
    /// [`StoreUnavailable`] if the batch it was in could not be committed, or was not
    /// committed in time.
    pub async fn record(&self, token: IssuedToken) -> Result<(), StoreUnavailable> {
        // Under a traced request, the span of its wait, which the group commit links to;
        // disabled (one check) when traces are off.
        let span = tracing::trace_span!("token record");
        let traced = (!span.is_disabled()).then(|| span.context().span().span_context().clone());
        let gives_up = tokio::time::Instant::now() + RECORD_DEADLINE;
        let recorded = async {
            let (reply, answer) = oneshot::channel();
            self.queue
                .send((token, reply, traced.filter(SpanContext::is_sampled), gives_up))
                .await
                .map_err(|_| StoreUnavailable::new("the token writer has stopped"))?;
            answer.await.map_err(|_| StoreUnavailable::new("the token writer has stopped"))?.map_err(Failed::into_error)
        };
        tokio::time::timeout_at(gives_up, recorded)
            .instrument(span)
            .await
            .map_err(|_| StoreUnavailable::new("the token record was not durable within the deadline"))?
    }
}

/// A batch being written: the store call, and who waits for it.
type Write = std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StoreUnavailable>> + Send>>;

/// What a record queued while the store is failing is told at once.
const FAILING: &str = "the token store is failing: refused without waiting";

/// What a record queued while a write has outlived a caller's deadline is told at once.
const OVERDUE: &str = "the token store has not answered within the deadline: refused without waiting";

/// After a failed write, records are refused at once for this long (and while a write is
/// in flight) before the next one tries the store again: at most one caller in each such
/// period waits out a failing write, and a store that is back is found within it.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The group commit: while one batch is written, the next gathers; when the write ends,
/// the next batch starts with whatever gathered (up to [`MAX_BATCH`]). After a failed
/// write, and until a write succeeds, records are refused at once while a write is in
/// flight or for [`RETRY_AFTER`] after the failure, instead of queueing. So are they
/// while the write in flight has outlived the deadline of a caller it carries (that
/// caller was refused; the store's own timeout may fire a moment later): with the store
/// gone, each write waits out the pool's connection deadline (the pool retries a
/// refused PostgreSQL connection until then), and one write at a time is enough to find
/// out whether the store is back.
async fn write_batches(
    archive: Arc<dyn TokenArchive>,
    mut queue: mpsc::Receiver<Queued>,
    last_failure: Arc<AtomicU64>,
    started: std::time::Instant,
) {
    let mut gathering: Vec<Queued> = Vec::with_capacity(MAX_BATCH);
    let mut waiting: Vec<Reply> = Vec::with_capacity(MAX_BATCH);
    let mut write: Option<Write> = None;
    // When the first caller of the write in flight gives up: past it, the write has
    // outlived a deadline, and is as good as failed for the records that come after.
    let mut overdue_at = tokio::time::Instant::now();
    let mut failed_at: Option<tokio::time::Instant> = None;
    // `last_failure`'s value for a failure now (never 0, which means none).
    let failure_now = || (started.elapsed().as_millis() as u64).max(1);
    let mut open = true;
    loop {
        if write.is_none() {
            // Callers that gave up (deadline passed, client gone) were refused: their
            // tokens are never handed out, so they need not be written.
            gathering.retain(|(_, reply, _, _)| !reply.is_closed());
            if !gathering.is_empty() {
                let batch = gathering.len().min(MAX_BATCH);
                let mut tokens = Vec::with_capacity(batch);
                let mut traced = Vec::new();
                overdue_at = tokio::time::Instant::now() + RECORD_DEADLINE;
                for (token, reply, span, gives_up) in gathering.drain(..batch) {
                    tokens.push(token);
                    waiting.push(reply);
                    traced.extend(span);
                    overdue_at = overdue_at.min(gives_up);
                }
                metrics::histogram!(BATCH_SIZE_METRIC).record(tokens.len() as f64);
                let archive = Arc::clone(&archive);
                let span = group_commit_span(traced, tokens.len());
                write = Some(Box::pin(async move { archive.record(&tokens).await }.instrument(span)));
            } else if !open {
                return;
            }
        }
        tokio::select! {
            received = queue.recv(), if open && gathering.len() < QUEUE_CAPACITY => match received {
                Some((_, reply, _, _)) if failed_at.is_some_and(|at| write.is_some() || at.elapsed() < RETRY_AFTER) => {
                    let _ = reply.send(Err(Failed { cause: FAILING.to_owned(), kind: StoreFailure::Unavailable }));
                }
                Some((_, reply, _, _)) if write.is_some() && tokio::time::Instant::now() >= overdue_at => {
                    // Shown as a failure (the published status) until the write ends.
                    last_failure.store(failure_now(), Ordering::Relaxed);
                    let _ = reply.send(Err(Failed { cause: OVERDUE.to_owned(), kind: StoreFailure::Unavailable }));
                }
                Some(record) => gathering.push(record),
                None => open = false,
            },
            outcome = finish(&mut write) => {
                write = None;
                failed_at = outcome.is_err().then(tokio::time::Instant::now);
                last_failure.store(if outcome.is_err() { failure_now() } else { 0 }, Ordering::Relaxed);
                let outcome = outcome.map_err(|error| {
                    store_error("token_record");
                    tracing::error!(error = %error, tokens = waiting.len(), "token records were not stored");
                    // The cause and its kind: the waiter makes its own `StoreUnavailable`.
                    Failed::of(&error)
                });
                for reply in waiting.drain(..) {
                    // A waiter that went away (client disconnected) needs no answer.
                    let _ = reply.send(outcome.clone());
                }
            }
        }
    }
}

/// The span of a group commit that carried records of traced requests: a root of its own
/// (it serves many requests), linked to each of their spans (OpenTelemetry span links),
/// and kept because they were. None (no span) when no traced request rode in it.
fn group_commit_span(traced: Vec<SpanContext>, records: usize) -> tracing::Span {
    if traced.is_empty() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(target: domain::TRACE_ROOT, parent: None, "token records group commit", records);
    for request in traced {
        span.add_link(request);
    }
    span
}

/// The outcome of the write in flight; never resolves when there is none.
async fn finish(write: &mut Option<Write>) -> Result<(), StoreUnavailable> {
    match write {
        Some(write) => write.as_mut().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::time::Instant;

    use async_trait::async_trait;
    use domain::client::ClientId;
    use domain::token::{OpaqueToken, SessionId, TokenId, TokenRecord};

    use super::*;

    /// An archive whose writes each take a set time and then succeed or fail, in order.
    struct Scripted {
        writes: Mutex<VecDeque<(Duration, bool)>>,
        batches: Mutex<Vec<usize>>,
        /// Its failures are refusals of the data, not outages.
        refuses: bool,
    }

    impl Scripted {
        fn new(writes: &[(u64, bool)]) -> Arc<Self> {
            let writes = writes.iter().map(|&(ms, ok)| (Duration::from_millis(ms), ok)).collect();
            Arc::new(Self { writes: Mutex::new(writes), batches: Mutex::new(Vec::new()), refuses: false })
        }
    }

    #[async_trait]
    impl TokenArchive for Scripted {
        async fn record(&self, tokens: &[IssuedToken]) -> Result<(), StoreUnavailable> {
            self.batches.lock().unwrap().push(tokens.len());
            let (takes, succeeds) = self.writes.lock().unwrap().pop_front().unwrap_or((Duration::ZERO, true));
            tokio::time::sleep(takes).await;
            match (succeeds, self.refuses) {
                (true, _) => Ok(()),
                (false, false) => Err(StoreUnavailable::new("down")),
                (false, true) => Err(StoreUnavailable::refused("token id already recorded")),
            }
        }
        async fn find(&self, _: &OpaqueToken) -> Result<Option<TokenRecord>, StoreUnavailable> {
            Ok(None)
        }
        async fn revoke(&self, _: &TokenId, _: i64) -> Result<bool, StoreUnavailable> {
            Ok(false)
        }
        async fn revoke_live_of(&self, _: &ClientId, _: i64) -> Result<u64, StoreUnavailable> {
            Ok(0)
        }
        async fn revoked_live(&self, _: i64) -> Result<Vec<TokenId>, StoreUnavailable> {
            Ok(Vec::new())
        }
        async fn live(&self, _: i64) -> Result<Vec<TokenRecord>, StoreUnavailable> {
            Ok(Vec::new())
        }
        async fn purge_expired(&self, _: i64) -> Result<u64, StoreUnavailable> {
            Ok(0)
        }
    }

    fn token(n: u32) -> IssuedToken {
        IssuedToken {
            token_id: TokenId::new(format!("jti-{n}")),
            opaque_token: OpaqueToken::new(format!("opaque-{n}")),
            client_id: ClientId::parse("bank-app").unwrap(),
            session: SessionId::new(format!("session-{n}")),
            issued_at: 0,
            expires_at: 60,
            code_challenge: None,
        }
    }

    #[tokio::test]
    async fn a_failed_write_says_tokens_cannot_be_issued_until_one_succeeds() {
        let writer = TokenWriter::spawn(Scripted::new(&[(0, false)]));
        assert!(!writer.is_failing(), "nothing has failed yet");
        assert!(writer.record(token(0)).await.is_err());
        assert!(writer.is_failing());
        // After the refusal period, the next record is written, and succeeds.
        tokio::time::sleep(RETRY_AFTER + Duration::from_millis(50)).await;
        assert!(writer.record(token(1)).await.is_ok());
        assert!(!writer.is_failing());
    }

    /// Found in review (issue 30): each waiter's error was made anew as "unavailable",
    /// so a batch the store refused was told as an outage.
    #[tokio::test]
    async fn a_batch_the_store_refuses_is_told_to_its_waiters_as_refused_not_as_an_outage() {
        let refusing = Arc::new(Scripted {
            writes: Mutex::new(VecDeque::from([(Duration::ZERO, false)])),
            batches: Mutex::new(Vec::new()),
            refuses: true,
        });
        let error = TokenWriter::spawn(refusing).record(token(0)).await.unwrap_err();
        assert_eq!(error.failure(), StoreFailure::RefusedData, "{error}");
        assert!(error.to_string().contains("token id already recorded"), "{error}");
        let down = TokenWriter::spawn(Scripted::new(&[(0, false)])).record(token(0)).await.unwrap_err();
        assert_eq!(down.failure(), StoreFailure::Unavailable, "{down}");
    }

    #[tokio::test]
    async fn records_that_arrive_during_a_write_are_written_together_in_the_next() {
        let archive = Scripted::new(&[(200, true), (0, true)]);
        let writer = TokenWriter::spawn(archive.clone());
        let first = tokio::spawn({
            let writer = writer.clone();
            async move { writer.record(token(0)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let later: Vec<_> = (1..=5)
            .map(|n| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.record(token(n)).await })
            })
            .collect();
        assert!(first.await.unwrap().is_ok());
        for one in later {
            assert!(one.await.unwrap().is_ok());
        }
        assert_eq!(*archive.batches.lock().unwrap(), [1, 5]);
    }

    /// Found by CI (issue 34): with PostgreSQL stopped, the first write waits out the
    /// pool's 2 s connection deadline, as long as a record's own deadline; its caller is
    /// refused at the deadline, a hair before the write fails, and the next caller joined
    /// the next batch and waited 2 s too instead of being refused at once.
    #[tokio::test]
    async fn a_record_that_waits_past_its_deadline_makes_the_next_be_refused_at_once() {
        let hangs = RECORD_DEADLINE + Duration::from_millis(500);
        let archive = Scripted::new(&[(hangs.as_millis() as u64, false), (0, true)]);
        let writer = TokenWriter::spawn(archive.clone());
        let asked = Instant::now();
        let error = writer.record(token(0)).await.unwrap_err();
        assert!(error.to_string().contains("deadline"), "{error}");
        assert!(asked.elapsed() < hangs, "refused at its deadline: {:?}", asked.elapsed());

        let asked = Instant::now();
        assert!(writer.record(token(1)).await.is_err(), "refused while the overdue write goes on");
        assert!(asked.elapsed() < Duration::from_millis(100), "at once: {:?}", asked.elapsed());
        assert_eq!(*archive.batches.lock().unwrap(), [1], "the refused record was never written");
    }

    /// Found in review: timing the write from when it began missed a caller that had
    /// waited in the queue behind an earlier write, and gave up before its own write had
    /// run for a deadline.
    #[tokio::test]
    async fn a_write_is_overdue_once_any_caller_it_carries_has_given_up() {
        // The first write takes 1 s; the second, begun then, would take 2 s more.
        let archive = Scripted::new(&[(1_000, true), (2_000, false), (0, true)]);
        let writer = TokenWriter::spawn(archive.clone());
        let first = tokio::spawn({
            let writer = writer.clone();
            async move { writer.record(token(0)).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let queued = Instant::now();
        let second = writer.record(token(1)).await;
        assert!(second.is_err(), "its write outlived its deadline");
        assert!(queued.elapsed() < Duration::from_millis(2_200), "refused at its deadline: {:?}", queued.elapsed());
        assert!(first.await.unwrap().is_ok());

        let asked = Instant::now();
        let third = writer.record(token(2)).await.unwrap_err();
        assert!(asked.elapsed() < Duration::from_millis(100), "at once: {:?}", asked.elapsed());
        assert!(third.to_string().contains("within the deadline"), "{third}");
        assert!(writer.is_failing(), "the status says tokens cannot be issued meanwhile");
        assert_eq!(*archive.batches.lock().unwrap(), [1, 1], "the refused record was never written");
    }

    #[tokio::test]
    async fn while_the_store_fails_records_are_refused_at_once_and_the_next_write_finds_it_back() {
        // The first write fails after 100 ms; the next (a trial, a retry period later)
        // after 600 ms; then the store is back.
        let archive = Scripted::new(&[(100, false), (600, false), (0, true)]);
        let writer = TokenWriter::spawn(archive.clone());
        assert!(writer.record(token(0)).await.is_err());
        tokio::time::sleep(RETRY_AFTER).await;

        let trial = tokio::spawn({
            let writer = writer.clone();
            async move { writer.record(token(1)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let asked = Instant::now();
        assert!(writer.record(token(2)).await.is_err(), "refused while the trial is written");
        assert!(asked.elapsed() < Duration::from_millis(100), "at once: {:?}", asked.elapsed());
        assert!(trial.await.unwrap().is_err());
        let asked = Instant::now();
        assert!(writer.record(token(3)).await.is_err(), "refused for a while after a failed write");
        assert!(asked.elapsed() < Duration::from_millis(100), "at once: {:?}", asked.elapsed());

        tokio::time::sleep(RETRY_AFTER).await;
        assert!(writer.record(token(4)).await.is_ok(), "written once the store is back");
        assert_eq!(*archive.batches.lock().unwrap(), [1, 1, 1], "the refused record was never written");
    }
}
