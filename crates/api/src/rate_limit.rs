//! Request limits (GCRA, the generic cell rate algorithm), in the layers that keep one
//! caller from taking what an app's other users share:
//!
//! - issuing tokens: per caller address, under a per-client-id ceiling;
//! - the bearer operations: per session (the token's `sid`), per caller address, under
//!   a per-client-id ceiling.
//!
//! The narrowest limit is checked first, so a request refused there takes nothing from
//! the limits others share. The caller's address is the peer's, or the one a trusted
//! proxy reports ([`crate::caller`]); IPv6 callers are counted per /64, the block one
//! subscriber is usually given.
//!
//! A bearer request is counted with one table look-up: a session's entry holds its own
//! cell and handles on its caller's and its client's, which it found when it first came
//! (and finds again if it comes from another address). The `governor` crate, used until
//! issue 25, keeps each limit in a map of its own, three look-ups and three shard locks
//! a request; the algorithm itself is the few lines of [`Gcra::admit`], the same
//! arithmetic as governor's and as the shared limits' script (`adapters::redis_limits`).
//!
//! With shared limits ([`SharedLimits`], Redis) every instance counts in one place, so
//! the limits hold across instances. When they cannot be reached the instance counts
//! alone, as without them (never refusing everything, never admitting everything), says
//! so in the log, and tries the shared limits again a second later.

use std::hash::Hash;
use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use domain::client::ClientId;
use domain::ports::{LimitCheck, SharedLimits};
use domain::token::{AccessClaims, SessionId};

use crate::errors::LimitExceeded;

/// A sustained rate with bursts above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests a second, sustained.
    pub per_second: NonZeroU32,
    /// Requests allowed at once above that.
    pub burst: NonZeroU32,
}

impl Rate {
    /// A rate no test or benchmark reaches.
    pub const UNLIMITED: Self = Self { per_second: NonZeroU32::MAX, burst: NonZeroU32::MAX };
}

/// Every request limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Token requests per caller address.
    pub issue_per_caller: Rate,
    /// Token requests per client id.
    pub issue_per_client: Rate,
    /// Bearer requests per session.
    pub per_session: Rate,
    /// Bearer requests per caller address.
    pub per_caller: Rate,
    /// Bearer requests per client id.
    pub per_client: Rate,
}

impl RateLimits {
    /// No limit reached by tests.
    pub fn unlimited() -> Self {
        let open = Rate::UNLIMITED;
        Self { issue_per_caller: open, issue_per_client: open, per_session: open, per_caller: open, per_client: open }
    }
}

/// `Retry-After` is whole seconds: round up, and never 0 (that would invite a retry
/// that is refused again).
fn whole_seconds(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

/// Nanoseconds since the limits were made; never 0, which marks a new cell.
type Nanos = u64;

/// One key's state under a limit: its theoretical arrival time (TAT), the moment at
/// which it is back to full, 0 for a key not seen yet.
#[derive(Debug, Default)]
struct Cell(AtomicU64);

impl Cell {
    /// Whether the cell is still short of full at `now`: forgetting it would give its
    /// key a fresh burst.
    fn busy(&self, now: Nanos) -> bool {
        self.0.load(Ordering::Relaxed) > now
    }
}

/// A rate as GCRA reads it: the emission interval (time between requests at the
/// sustained rate) and the tolerance (how far ahead of now a TAT may run: the burst
/// beyond the first request).
#[derive(Debug, Clone, Copy)]
struct Gcra {
    interval: Nanos,
    tolerance: Nanos,
}

impl Gcra {
    fn new(rate: Rate) -> Self {
        let interval = 1_000_000_000 / u64::from(rate.per_second.get());
        Self { interval, tolerance: interval * u64::from(rate.burst.get() - 1) }
    }

    /// Counts a request at `now` against `cell`; `Err(wait)` when it is refused (and
    /// then the cell is left as it was).
    fn admit(self, cell: &Cell, now: Nanos) -> Result<(), Duration> {
        let mut seen = cell.0.load(Ordering::Acquire);
        loop {
            let tat = if seen == 0 { now } else { seen.max(now) };
            let earliest = tat.saturating_sub(self.tolerance);
            if now < earliest {
                return Err(Duration::from_nanos(earliest - now));
            }
            match cell.0.compare_exchange_weak(seen, tat + self.interval, Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Ok(()),
                Err(current) => seen = current,
            }
        }
    }
}

/// The cells of one limit, by key. Cells are shared (`Arc`) so that a session's entry
/// can hold its caller's and client's.
struct Keyed<K: Hash + Eq> {
    gcra: Gcra,
    cells: DashMap<K, Arc<Cell>, foldhash::fast::RandomState>,
}

impl<K: Hash + Eq + Clone> Keyed<K> {
    /// Keys are hashed with foldhash rather than SipHash: a session id is made by the
    /// service, a client id by an operator, and an address is the caller's own (one per
    /// IPv4 address or IPv6 /64); none is a value a caller picks to collide.
    fn new(rate: Rate) -> Self {
        Self { gcra: Gcra::new(rate), cells: DashMap::with_hasher(foldhash::fast::RandomState::default()) }
    }

    /// The cell of `key`, made when the key is new.
    fn cell(&self, key: &K) -> Arc<Cell> {
        if let Some(cell) = self.cells.get(key) {
            return Arc::clone(&cell);
        }
        Arc::clone(&self.cells.entry(key.clone()).or_default())
    }

    /// Counts a request of `key` at `now`; `Err(seconds)` to wait before the next one is
    /// allowed (at least 1, for `Retry-After`).
    fn check(&self, key: &K, now: Nanos) -> Result<(), u64> {
        let admitted = match self.cells.get(key) {
            Some(cell) => self.gcra.admit(&cell, now),
            None => self.gcra.admit(&self.cells.entry(key.clone()).or_default(), now),
        };
        admitted.map_err(whole_seconds)
    }

    /// Forgets keys whose cell is back to full and that no session holds.
    fn forget_idle(&self, now: Nanos) {
        self.cells.retain(|_, cell| cell.busy(now) || Arc::strong_count(cell) > 1);
        self.cells.shrink_to_fit();
    }
}

/// A session's entry: its own cell, and the cells of the caller it last came from and
/// of its client, held so that counting a request is one look-up.
struct Session {
    cell: Cell,
    caller: IpAddr,
    caller_cell: Arc<Cell>,
    client_cell: Arc<Cell>,
}

/// The key a caller's address is counted under: an IPv4 address (also when written as
/// IPv4-mapped IPv6), or an IPv6 address's /64.
pub fn caller_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
        },
    }
}

/// After the shared limits failed, how long the instance counts alone before trying
/// them again: while they are down, requests do not each wait out their timeout.
const SHARED_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Every limit the service applies.
pub struct Limits {
    rates: RateLimits,
    issue_per_caller: Keyed<IpAddr>,
    issue_per_client: Keyed<ClientId>,
    per_session: Gcra,
    sessions: DashMap<SessionId, Session, foldhash::fast::RandomState>,
    per_caller: Keyed<IpAddr>,
    per_client: Keyed<ClientId>,
    shared: Option<Arc<dyn SharedLimits>>,
    started: Instant,
    /// Milliseconds after `started` until which the shared limits are not asked (0: ask).
    shared_down_until: AtomicU64,
}

impl Limits {
    /// The limits of `settings`, counted by this instance alone, or in `shared` when
    /// given (and by this instance alone while `shared` cannot be reached).
    pub fn new(settings: &RateLimits, shared: Option<Arc<dyn SharedLimits>>) -> Self {
        Self {
            rates: *settings,
            issue_per_caller: Keyed::new(settings.issue_per_caller),
            issue_per_client: Keyed::new(settings.issue_per_client),
            per_session: Gcra::new(settings.per_session),
            sessions: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            per_caller: Keyed::new(settings.per_caller),
            per_client: Keyed::new(settings.per_client),
            shared,
            started: Instant::now(),
            shared_down_until: AtomicU64::new(0),
        }
    }

    /// Counts a token request of `client` from `caller`.
    ///
    /// # Errors
    /// [`LimitExceeded`] when the caller or the client is over its rate.
    pub async fn issue(&self, caller: IpAddr, client: &ClientId) -> Result<(), LimitExceeded> {
        let caller = caller_key(caller);
        let shared = self.shared_checks(|| {
            vec![
                check("issue-caller", caller.to_string(), self.rates.issue_per_caller),
                check("issue-client", client.as_str().to_owned(), self.rates.issue_per_client),
            ]
        });
        if let Some(answer) = self.ask_shared(shared).await {
            return answer;
        }
        let now = self.now();
        self.issue_per_caller.check(&caller, now).map_err(|wait| refused("issue-caller", wait))?;
        self.issue_per_client.check(client, now).map_err(|wait| refused("issue-client", wait))
    }

    /// Counts a bearer request made with `claims` from `caller`.
    ///
    /// # Errors
    /// [`LimitExceeded`] when the session, the caller or the client is
    /// over its rate.
    pub async fn bearer(&self, caller: IpAddr, claims: &AccessClaims) -> Result<(), LimitExceeded> {
        let caller = caller_key(caller);
        let shared = self.shared_checks(|| {
            vec![
                check("session", claims.session.as_str().to_owned(), self.rates.per_session),
                check("caller", caller.to_string(), self.rates.per_caller),
                check("client", claims.client_id.as_str().to_owned(), self.rates.per_client),
            ]
        });
        if let Some(answer) = self.ask_shared(shared).await {
            return answer;
        }
        self.count_bearer(caller, claims, self.now())
    }

    /// Counts a bearer request of `claims` from `caller` (a caller key) at `now`.
    fn count_bearer(&self, caller: IpAddr, claims: &AccessClaims, now: Nanos) -> Result<(), LimitExceeded> {
        // The common case: a session seen before, from the same address (a read lock).
        if let Some(session) = self.sessions.get(&claims.session)
            && session.caller == caller
        {
            return self.admit_bearer(&session, now);
        }
        // A new session, or one that came from another address: its handles are found
        // (outside any lock on the sessions) and kept; its own cell is never reset.
        let caller_cell = self.per_caller.cell(&caller);
        let client_cell = self.per_client.cell(&claims.client_id);
        let session = self
            .sessions
            .entry(claims.session.clone())
            .and_modify(|session| {
                session.caller = caller;
                session.caller_cell = Arc::clone(&caller_cell);
            })
            .or_insert_with(|| Session { cell: Cell::default(), caller, caller_cell, client_cell });
        self.admit_bearer(&session, now)
    }

    /// Counts a bearer request against a session, its caller and its client, narrowest
    /// first.
    fn admit_bearer(&self, session: &Session, now: Nanos) -> Result<(), LimitExceeded> {
        let over = |limit| move |wait| refused(limit, whole_seconds(wait));
        self.per_session.admit(&session.cell, now).map_err(over("session"))?;
        self.per_caller.gcra.admit(&session.caller_cell, now).map_err(over("caller"))?;
        self.per_client.gcra.admit(&session.client_cell, now).map_err(over("client"))
    }

    /// Nanoseconds since the limits were made, at least 1.
    fn now(&self) -> Nanos {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// The shared limits and what to ask them, when there are some and they are not
    /// known to be down.
    fn shared_checks(&self, checks: impl FnOnce() -> Vec<LimitCheck>) -> Option<(&dyn SharedLimits, Vec<LimitCheck>)> {
        let shared = self.shared.as_deref()?;
        let down_until = self.shared_down_until.load(Ordering::Relaxed);
        if down_until != 0 && self.elapsed_ms() < down_until {
            return None;
        }
        Some((shared, checks()))
    }

    /// The shared limits' answer, or `None` when the instance is to count alone.
    async fn ask_shared(
        &self,
        shared: Option<(&dyn SharedLimits, Vec<LimitCheck>)>,
    ) -> Option<Result<(), LimitExceeded>> {
        let (limits, checks) = shared?;
        match limits.admit(&checks).await {
            Ok(None) => {
                if self.shared_down_until.swap(0, Ordering::Relaxed) != 0 {
                    tracing::info!("the shared request limits answer again: limits hold across instances");
                }
                Some(Ok(()))
            }
            Ok(Some((limit, wait))) => Some(Err(refused(limit, whole_seconds(wait)))),
            Err(error) => {
                let until = self.elapsed_ms() + SHARED_RETRY_AFTER.as_millis() as u64;
                if self.shared_down_until.swap(until, Ordering::Relaxed) == 0 {
                    tracing::warn!(%error, "the shared request limits are unavailable: this instance limits on its own");
                }
                None
            }
        }
    }

    fn elapsed_ms(&self) -> u64 {
        (self.started.elapsed().as_millis() as u64).max(1)
    }

    /// Forgets every key whose state is back to full: sessions first, so that the
    /// callers and clients only they held go in the same sweep.
    pub fn forget_idle(&self) {
        self.forget_idle_at(self.now());
    }

    fn forget_idle_at(&self, now: Nanos) {
        self.sessions.retain(|_, session| session.cell.busy(now));
        self.sessions.shrink_to_fit();
        for keyed in [&self.issue_per_caller, &self.per_caller] {
            keyed.forget_idle(now);
        }
        for keyed in [&self.issue_per_client, &self.per_client] {
            keyed.forget_idle(now);
        }
    }

    /// How many keys the limits hold: sessions, callers and clients (for tests).
    #[cfg(test)]
    fn held(&self) -> (usize, usize, usize) {
        (self.sessions.len(), self.per_caller.cells.len(), self.per_client.cells.len())
    }
}

/// A refusal by `limit`, to retry after `wait_seconds`.
fn refused(limit: &'static str, wait_seconds: u64) -> LimitExceeded {
    LimitExceeded { limit, retry_after: wait_seconds }
}

/// What the shared limits are asked for one limit.
fn check(limit: &'static str, key: String, rate: Rate) -> LimitCheck {
    LimitCheck { limit, key, per_second: rate.per_second.get(), burst: rate.burst.get() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Nanos = 1_000_000_000;

    fn rate(per_second: u32, burst: u32) -> Rate {
        Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
    }

    #[test]
    fn a_key_gets_its_burst_then_waits_at_least_a_second() {
        let limit = Keyed::new(rate(1, 3));
        for _ in 0..3 {
            assert_eq!(limit.check(&"app", 1), Ok(()));
        }
        assert_eq!(limit.check(&"app", 1), Err(1));
        assert_eq!(limit.check(&"app", 1 + SECOND), Ok(()), "one request a second comes back");
        assert_eq!(limit.check(&"app", 1 + SECOND), Err(1));
    }

    #[test]
    fn keys_are_limited_separately() {
        let limit = Keyed::new(rate(1, 1));
        assert_eq!(limit.check(&"one", 1), Ok(()));
        assert!(limit.check(&"one", 1).is_err());
        assert_eq!(limit.check(&"two", 1), Ok(()));
    }

    /// The same rate as a leaky bucket (ITU-T I.371's continuous-state form, the other
    /// formulation of GCRA): the bucket drains one nanosecond a nanosecond, a request
    /// fits when the bucket holds at most the tolerance, and adds one interval.
    #[test]
    fn the_cell_admits_exactly_what_a_leaky_bucket_of_the_same_rate_admits() {
        for (per_second, burst) in [(1, 1), (3, 2), (10, 20), (1000, 2000), (7, 1)] {
            let gcra = Gcra::new(rate(per_second, burst));
            let cell = Cell::default();
            let (mut level, mut last): (i128, i128) = (0, 0);
            let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ u64::from(per_second);
            let mut now: Nanos = 1;
            for _ in 0..20_000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                now += seed % (2 * gcra.interval.max(1));
                let drained = (level - (i128::from(now) - last)).max(0);
                let fits = drained <= i128::from(gcra.tolerance);
                if fits {
                    level = drained + i128::from(gcra.interval);
                    last = i128::from(now);
                }
                assert_eq!(gcra.admit(&cell, now).is_ok(), fits, "{per_second}/s, burst {burst}, at {now}");
            }
        }
    }

    #[test]
    fn an_unlimited_rate_admits_everything() {
        let limit = Keyed::new(Rate::UNLIMITED);
        assert!((0..10_000).all(|_| limit.check(&"app", 1).is_ok()));
    }

    #[test]
    fn an_ipv6_caller_is_counted_by_its_64_and_a_mapped_ipv4_caller_as_ipv4() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other_64: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(caller_key(one), caller_key(same_64));
        assert_ne!(caller_key(one), caller_key(other_64));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(caller_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    fn bearer_limits(per_session: Rate, per_caller: Rate, per_client: Rate) -> Limits {
        let open = Rate::UNLIMITED;
        Limits::new(
            &RateLimits { issue_per_caller: open, issue_per_client: open, per_session, per_caller, per_client },
            None,
        )
    }

    #[tokio::test]
    async fn a_request_refused_for_its_session_takes_nothing_from_the_shared_limits() {
        let limits = bearer_limits(rate(1, 1), rate(1, 2), rate(1, 2));
        let caller: IpAddr = "192.0.2.1".parse().unwrap();
        let flooder = domain::testing::claims("app", "flooder", 0, 60);
        let user = domain::testing::claims("app", "user", 0, 60);
        assert!(limits.bearer(caller, &flooder).await.is_ok());
        for _ in 0..5 {
            assert_eq!(limits.bearer(caller, &flooder).await.unwrap_err().limit, "session");
        }
        assert!(limits.bearer(caller, &user).await.is_ok(), "the shared limits still had room");
    }

    #[test]
    fn sessions_of_one_caller_or_one_client_share_its_limit() {
        let open = Rate::UNLIMITED;
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        let session = |sid: &str, client: &str| domain::testing::claims(client, sid, 0, 60);

        let per_caller = bearer_limits(open, rate(1, 2), open);
        assert!(per_caller.count_bearer(one, &session("s1", "app"), 1).is_ok());
        assert!(per_caller.count_bearer(one, &session("s2", "app"), 1).is_ok());
        assert_eq!(per_caller.count_bearer(one, &session("s3", "app"), 1).unwrap_err().limit, "caller");
        assert!(per_caller.count_bearer(other, &session("s3", "app"), 1).is_ok(), "another address has its own");

        let per_client = bearer_limits(open, open, rate(1, 2));
        assert!(per_client.count_bearer(one, &session("s1", "app"), 1).is_ok());
        assert!(per_client.count_bearer(other, &session("s2", "app"), 1).is_ok());
        assert_eq!(per_client.count_bearer(other, &session("s3", "app"), 1).unwrap_err().limit, "client");
        assert!(per_client.count_bearer(one, &session("s4", "other-app"), 1).is_ok(), "another client has its own");
    }

    #[test]
    fn a_session_that_moves_to_another_address_counts_there_and_keeps_its_own_state() {
        let open = Rate::UNLIMITED;
        let (home, away): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "198.51.100.7".parse().unwrap());
        let phone = domain::testing::claims("app", "phone", 0, 60);

        let per_caller = bearer_limits(open, rate(1, 1), open);
        assert!(per_caller.count_bearer(home, &phone, 1).is_ok());
        assert!(per_caller.count_bearer(away, &phone, 1).is_ok(), "the new address has its burst");
        assert_eq!(per_caller.count_bearer(away, &phone, 1).unwrap_err().limit, "caller");
        assert_eq!(per_caller.count_bearer(home, &phone, 1).unwrap_err().limit, "caller", "the old one remembered");

        let per_session = bearer_limits(rate(1, 2), open, open);
        assert!(per_session.count_bearer(home, &phone, 1).is_ok());
        assert!(per_session.count_bearer(away, &phone, 1).is_ok());
        assert_eq!(per_session.count_bearer(home, &phone, 1).unwrap_err().limit, "session", "no fresh burst on moving");
    }

    #[test]
    fn idle_keys_are_forgotten_but_never_a_cell_a_busy_session_holds() {
        let limits = bearer_limits(rate(1, 1), rate(10, 10), rate(10, 10));
        let caller: IpAddr = "192.0.2.1".parse().unwrap();
        let quiet = domain::testing::claims("app", "quiet", 0, 60);
        let busy = domain::testing::claims("app", "busy", 0, 60);
        assert!(limits.count_bearer(caller, &quiet, 1).is_ok());
        assert!(limits.count_bearer(caller, &busy, 1 + 9 * SECOND + SECOND / 2).is_ok());
        // At 10 s the quiet session is back to full, and so are the caller's and the
        // client's cells (full 0.1 s after a request); the busy session is not (1 s).
        limits.forget_idle_at(1 + 10 * SECOND);
        assert_eq!(limits.held(), (1, 1, 1), "the busy session keeps its caller's and client's cells");
        limits.forget_idle_at(1 + 11 * SECOND);
        assert_eq!(limits.held(), (0, 0, 0), "then it goes, and what only it held with it");
    }
}
