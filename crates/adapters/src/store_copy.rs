//! Copying a whole store into a new, empty one (`branch-atm store copy --to URL`), so an
//! operator can move from the embedded SQLite default to PostgreSQL (or back).
//!
//! The copy moves what is stored as it is stored: signing keys keep their bytes (a key
//! sealed under a key-encryption key stays sealed, and opens with the same key file),
//! ATM records their JSON text and the set its `LastUpdated` (so ETags and
//! `Last-Modified` do not move), wait times their estimation times, and token records
//! their revocations. It lives here, not in the domain, because those stored forms are
//! the adapters' business; the one rule it keeps (only into an empty store) reads the
//! domain's [`StoreContents`].

use domain::branch::WaitTimeEstimate;
use domain::ports::StoreUnavailable;
use domain::store_contents::StoreContents;
use domain::token::{IssuedToken, SigningKey, TokenRecord};

use crate::store::Store;

/// Token records written per call: each call is one statement (PostgreSQL) or one
/// transaction (SQLite).
const TOKENS_PER_WRITE: usize = 5_000;

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
    atms: crate::store::AtmSet,
    keys: Vec<SigningKey>,
    tokens: Vec<TokenRecord>,
    outages: Vec<domain::outage::PlannedOutage>,
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
        atms: store.view.atms().await?,
        keys,
        tokens: store.tokens.live(now).await?,
        outages: store.outages.not_over(now).await?,
    })
}

/// Copies everything `from` holds into `to` (migrated and readied first), which must be
/// empty: clients, supported channels, wait times, the ATM set, signing keys, and the
/// records of tokens not expired at `now` with their revocations, and the planned
/// outages not over. Reads `to` back
/// afterwards and compares.
///
/// # Errors
/// [`CopyError`]: a target that is not empty (nothing written), a store that failed, or a
/// target that does not read back what was written.
pub async fn copy(from: &Store, to: &Store, now: i64) -> Result<CopyReport, CopyError> {
    to.lifecycle.migrate().await?;
    let held = to.inventory.contents().await?;
    let has_keys = !to.keys.all().await?.is_empty();
    if held != StoreContents::default() || has_keys {
        return Err(CopyError::TargetNotEmpty(describe(held, has_keys)));
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

    let copied = read(to, now).await?;
    let checks: [(&'static str, bool); 7] = [
        ("clients", copied.clients == source.clients),
        ("channels", copied.channels == source.channels),
        ("wait times", copied.wait_times == source.wait_times),
        ("ATMs", copied.atms == source.atms),
        ("signing keys", copied.keys == source.keys),
        ("token records", copied.tokens == source.tokens),
        ("planned outages", copied.outages == source.outages),
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
    })
}

fn describe(held: StoreContents, keys: bool) -> String {
    let kinds = [
        (held.clients, "clients"),
        (held.supported_channels, "supported channels"),
        (held.wait_times, "wait times"),
        (held.atms, "ATMs"),
        (keys, "signing keys"),
        (held.token_records, "token records"),
    ];
    kinds.iter().filter(|(held, _)| *held).map(|(_, kind)| *kind).collect::<Vec<_>>().join(", ")
}
