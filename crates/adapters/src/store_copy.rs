//! Copying a whole store into a new, empty one (`branch-atm store copy --to URL`), so an
//! operator can move from the embedded SQLite default to PostgreSQL (or back).
//!
//! The copy moves what is stored as it is stored: signing keys keep their bytes (a key
//! sealed under a key-encryption key stays sealed, and opens with the same key file),
//! ATM records their JSON text and the set its `LastUpdated` (so ETags and
//! `Last-Modified` do not move), wait times their estimation times, token records
//! their revocations, and queue events the system that posted each and when it arrived.
//! The ATMs' states are not copied: they are shown `Unknown` minutes after their last
//! event anyway, and the monitoring's next events set them again. It lives here, not
//! in the domain, because those stored forms are
//! the adapters' business; the one rule it keeps (only into an empty store) reads the
//! domain's [`StoreContents`].

use domain::branch::WaitTimeEstimate;
use domain::ports::{ReceivedEvent, StoreUnavailable};
use domain::posted::EventTime;
use domain::queue::event::QueueEvent;
use domain::store_contents::StoreContents;
use domain::token::{IssuedToken, SigningKey, TokenRecord};

use crate::store::{AtmSet, Store};

/// Token records written per call: each call is one statement (PostgreSQL) or one
/// transaction (SQLite).
const TOKENS_PER_WRITE: usize = 5_000;

/// Queue events appended per call, each call one transaction: the largest batch the
/// service appends (a post carries at most 1,000 events; issue 44).
const EVENTS_PER_APPEND: usize = 1_000;

/// What a copy wrote, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Client registrations.
    pub clients: usize,
    /// Supported channel combinations.
    pub channels: usize,
    /// Branch wait times.
    pub wait_times: usize,
    /// ATMs.
    pub atms: usize,
    /// Signing keys (next, current and retired).
    pub keys: usize,
    /// Records of tokens not yet expired.
    pub tokens: usize,
    /// Of those, the revoked ones.
    pub revoked: usize,
    /// Planned outages not over.
    pub outages: usize,
    /// The bank's systems.
    pub systems: usize,
    /// Queue events in the log.
    pub queue_events: usize,
}

/// Why a copy did not happen, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The target holds data already; nothing was written.
    #[error("the target store is not empty (it holds {0}): copy only into a new, empty database")]
    TargetNotEmpty(String),
    /// A store could not be read or written. If it was the target, it may be partly
    /// written: drop and recreate it before trying again.
    #[error("{0} (the target may be partly written: drop and recreate it before trying again)")]
    Store(#[from] StoreUnavailable),
    /// The target does not read back what was copied (a bug, or another writer).
    #[error("the target does not read back the copied {0}; drop and recreate it before trying again")]
    Mismatch(&'static str),
}

/// Everything a copy moves, as read from one store.
#[derive(PartialEq)]
struct Contents {
    clients: Vec<domain::client::ClientRegistration>,
    channels: Vec<domain::client::ChannelScope>,
    wait_times: Vec<WaitTimeEstimate>,
    atms: AtmSet,
    keys: Vec<SigningKey>,
    tokens: Vec<TokenRecord>,
    outages: Vec<domain::outage::PlannedOutage>,
    systems: Vec<domain::system::SystemRegistration>,
    queue_events: Vec<ReceivedEvent>,
}

/// The whole queue event log, by receipt.
async fn every_queue_event(store: &Store) -> Result<Vec<ReceivedEvent>, StoreUnavailable> {
    store.queue_events.received_since(EventTime::from_unix_micros(i64::MIN)).await
}

async fn read(store: &Store, now: i64) -> Result<Contents, StoreUnavailable> {
    let mut wait_times = store.wait_times.all().await?;
    wait_times.sort_by_key(|row| row.estimate.branch);
    let mut keys = store.keys.all().await?;
    // Of two keys activating together (a revoked waiting key and the one that replaced
    // it), the revoked one first: the later one retires it, as the revocation did.
    keys.sort_by(|a, b| {
        (a.activates_at, a.revoked_at.is_none(), &a.kid).cmp(&(b.activates_at, b.revoked_at.is_none(), &b.kid))
    });
    Ok(Contents {
        clients: store.clients.all().await?,
        channels: store.channels.all().await?,
        wait_times,
        // The feed's numbers are each store's own: the copy starts its feed anew.
        atms: AtmSet { feed_head: 0, ..store.view.atms().await? },
        keys,
        tokens: store.tokens.live(now).await?,
        outages: store.outages.not_over(now).await?,
        systems: store.systems.all().await?,
        queue_events: every_queue_event(store).await?,
    })
}

/// Copies everything `from` holds into `to` (migrated and readied first), which must be
/// empty: clients, supported channels, wait times, the ATM set with its closures, signing keys, and the
/// records of tokens not expired at `now` with their revocations, the planned outages not
/// over, the systems and the queue event log. Not the assertions systems used: each
/// expires minutes after it was made, and the service is stopped while it moves. Reads
/// `to` back afterwards and compares.
///
/// # Errors
/// [`CopyError`]: a target that is not empty (nothing written), a store that failed, or a
/// target that does not read back what was written.
pub async fn copy(from: &Store, to: &Store, now: i64) -> Result<CopyReport, CopyError> {
    to.lifecycle.migrate().await?;
    let held = to.inventory.contents().await?;
    let also_held = [
        (!to.keys.all().await?.is_empty(), "signing keys"),
        (!to.systems.all().await?.is_empty(), "systems"),
        (!every_queue_event(to).await?.is_empty(), "queue events"),
    ];
    if held != StoreContents::default() || also_held.iter().any(|(held, _)| *held) {
        return Err(CopyError::TargetNotEmpty(describe(held, also_held)));
    }
    to.lifecycle.prepare(now).await?;
    let source = read(from, now).await?;

    for client in &source.clients {
        to.clients.insert(client, now).await?;
    }
    for scope in &source.channels {
        to.channels.allow(scope).await?;
    }
    to.wait_times.upsert(&source.wait_times).await?;
    to.atms.replace(&source.atms.atms, source.atms.last_updated).await?;
    for closure in &source.atms.closures {
        to.closures.announce(closure).await?;
    }
    // Oldest activation first: each key, stored as of its activation, retires the one
    // before it at that moment, as the rotations that made them did.
    for key in &source.keys {
        to.keys.schedule(key, key.activates_at).await?;
    }
    for key in &source.keys {
        if let Some(at) = key.revoked_at {
            to.keys.revoke(&key.kid, at, None).await?;
        }
    }
    let issued: Vec<IssuedToken> = source.tokens.iter().map(|record| record.token.clone()).collect();
    for chunk in issued.chunks(TOKENS_PER_WRITE) {
        to.tokens.record(chunk).await?;
    }
    let mut revoked = 0;
    for record in &source.tokens {
        if let Some(at) = record.revoked_at {
            to.tokens.revoke(&record.token.token_id, at).await?;
            revoked += 1;
        }
    }

    for outage in &source.outages {
        to.outages.schedule(outage, now).await?;
    }
    // Registered now: no port reads a registration's time back.
    for system in &source.systems {
        to.systems.insert(system, now).await?;
    }
    // Each run of events one system posted together, as it arrived.
    for run in source.queue_events.chunk_by(|a, b| (&a.system, a.received_at) == (&b.system, b.received_at)) {
        let events: Vec<QueueEvent> = run.iter().map(|kept| kept.event.clone()).collect();
        for batch in events.chunks(EVENTS_PER_APPEND) {
            to.queue_events.append(&run[0].system, batch, run[0].received_at).await?;
        }
    }

    let copied = read(to, now).await?;
    let checks: [(&'static str, bool); 9] = [
        ("clients", copied.clients == source.clients),
        ("channels", copied.channels == source.channels),
        ("wait times", copied.wait_times == source.wait_times),
        ("ATMs", copied.atms == source.atms),
        ("signing keys", copied.keys == source.keys),
        ("token records", copied.tokens == source.tokens),
        ("planned outages", copied.outages == source.outages),
        ("systems", copied.systems == source.systems),
        ("queue events", copied.queue_events == source.queue_events),
    ];
    if let Some((what, _)) = checks.iter().find(|(_, same)| !same) {
        return Err(CopyError::Mismatch(what));
    }
    Ok(CopyReport {
        clients: source.clients.len(),
        channels: source.channels.len(),
        wait_times: source.wait_times.len(),
        atms: source.atms.atms.len(),
        keys: source.keys.len(),
        tokens: source.tokens.len(),
        revoked,
        outages: source.outages.len(),
        systems: source.systems.len(),
        queue_events: source.queue_events.len(),
    })
}

fn describe(held: StoreContents, also_held: [(bool, &'static str); 3]) -> String {
    let kinds = [
        (held.clients, "clients"),
        (held.supported_channels, "supported channels"),
        (held.wait_times, "wait times"),
        (held.atms, "ATMs"),
        (held.token_records, "token records"),
    ];
    kinds.iter().chain(&also_held).filter(|(held, _)| *held).map(|(_, kind)| *kind).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use domain::branch::BranchId;
    use domain::client::ClientStatus;
    use domain::posted::EventId;
    use domain::queue::event::{QueueEventKind, TicketId};
    use domain::system::{PublicKeySet, SystemId, SystemRegistration, SystemScopes};

    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn system(id: &str, status: ClientStatus) -> SystemRegistration {
        SystemRegistration {
            id: SystemId::parse(id).unwrap(),
            keys: PublicKeySet::checked(r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA"}]}"#.to_owned(), 1),
            scopes: SystemScopes::parse("queue:write").unwrap(),
            status,
        }
    }

    fn issued(id: &str, at: i64) -> QueueEvent {
        QueueEvent {
            id: EventId::parse(id).unwrap(),
            branch: BranchId::parse("00042").unwrap(),
            at: EventTime::from_unix_micros(at),
            kind: QueueEventKind::TicketIssued { ticket: TicketId::parse("A001").unwrap() },
        }
    }

    #[tokio::test]
    async fn systems_and_the_queue_event_log_are_copied_with_who_posted_each_and_when() {
        let from = Store::open("memory:").await.unwrap();
        from.systems.insert(&system("queue.b", ClientStatus::Disabled), NOW).await.unwrap();
        from.systems.insert(&system("queue.a", ClientStatus::Active), NOW).await.unwrap();
        let (a, b) = (SystemId::parse("queue.a").unwrap(), SystemId::parse("queue.b").unwrap());
        let at = |micros| EventTime::from_unix_micros(micros);
        // 1,001 events in one post: more than one append's batch.
        let many: Vec<QueueEvent> = (0..1_001).map(|n| issued(&format!("a-{n:04}"), n)).collect();
        from.queue_events.append(&a, &many, at(5)).await.unwrap();
        from.queue_events.append(&b, &[issued("b-1", 1), issued("b-2", 2)], at(5)).await.unwrap();
        from.queue_events.append(&a, &[issued("a-late", 3)], at(9)).await.unwrap();

        let to = Store::open("memory:").await.unwrap();
        let report = copy(&from, &to, NOW).await.unwrap();
        assert_eq!((report.systems, report.queue_events), (2, 1_004));
        assert_eq!(to.systems.all().await.unwrap(), from.systems.all().await.unwrap(), "with their status");
        let copied = every_queue_event(&to).await.unwrap();
        assert_eq!(copied, every_queue_event(&from).await.unwrap(), "each with its system and receipt");
        assert!(copied.iter().any(|kept| kept.event.id.as_str() == "b-2" && kept.system == b));
    }

    #[tokio::test]
    async fn a_target_holding_a_system_or_a_queue_event_is_refused_and_left_as_it_was() {
        let from = Store::open("memory:").await.unwrap();
        from.systems.insert(&system("queue.a", ClientStatus::Active), NOW).await.unwrap();
        let system_id = SystemId::parse("queue.z").unwrap();

        let holding_a_system = Store::open("memory:").await.unwrap();
        holding_a_system.systems.insert(&system("queue.z", ClientStatus::Active), NOW).await.unwrap();
        let refused = copy(&from, &holding_a_system, NOW).await.unwrap_err();
        assert!(matches!(&refused, CopyError::TargetNotEmpty(held) if held == "systems"), "{refused}");
        assert_eq!(holding_a_system.systems.all().await.unwrap().len(), 1, "nothing copied");

        let holding_an_event = Store::open("memory:").await.unwrap();
        let at = EventTime::from_unix_micros(1);
        holding_an_event.queue_events.append(&system_id, &[issued("z-1", 1)], at).await.unwrap();
        let refused = copy(&from, &holding_an_event, NOW).await.unwrap_err();
        assert!(matches!(&refused, CopyError::TargetNotEmpty(held) if held == "queue events"), "{refused}");
        assert!(holding_an_event.systems.all().await.unwrap().is_empty(), "nothing copied");
    }
}
