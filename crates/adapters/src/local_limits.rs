//! Request limits counted by this instance alone: GCRA (the generic cell rate
//! algorithm), in memory. Alone, or while the shared limits cannot be reached
//! ([`crate::redis_limits::SharedOrLocal`]).
//!
//! A bearer request is counted with one table look-up: a session's entry holds its own
//! cell and handles on the cells of the other limits it was counted with (its caller's
//! and its client's), which it found when it first came (and finds again if it comes
//! from another address). The `governor` crate, used until issue 25, keeps each limit
//! in a map of its own, three look-ups and three shard locks a request; the algorithm
//! itself is the few lines of `Gcra::admit`, the same arithmetic as governor's and as
//! the shared limits' script (`crate::redis_limits`).

use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use domain::client::ClientId;
use domain::limits::{Admission, Limit, LimitCheck, LimitExceeded, Rate, RateLimits};
use domain::ports::RequestLimiter;
use domain::token::SessionId;

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
    limit: Limit,
    gcra: Gcra,
    cells: DashMap<K, Arc<Cell>, foldhash::fast::RandomState>,
}

impl<K: Hash + Eq + Clone> Keyed<K> {
    /// Keys are hashed with foldhash rather than SipHash: a session id is made by the
    /// service, a client id by an operator, and an address is the caller's own (one per
    /// IPv4 address or IPv6 /64); none is a value a caller picks to collide.
    fn new(limit: Limit, rates: &RateLimits) -> Self {
        Self {
            limit,
            gcra: Gcra::new(rates.of(limit)),
            cells: DashMap::with_hasher(foldhash::fast::RandomState::default()),
        }
    }

    /// The cell of `key`, made when the key is new.
    fn cell(&self, key: &K) -> Arc<Cell> {
        if let Some(cell) = self.cells.get(key) {
            return Arc::clone(&cell);
        }
        Arc::clone(&self.cells.entry(key.clone()).or_default())
    }

    /// Counts a request of `key` at `now`.
    fn check(&self, key: &K, now: Nanos) -> Result<(), LimitExceeded> {
        let admitted = match self.cells.get(key) {
            Some(cell) => self.gcra.admit(&cell, now),
            None => self.gcra.admit(&self.cells.entry(key.clone()).or_default(), now),
        };
        admitted.map_err(|wait| LimitExceeded { limit: self.limit, wait })
    }

    /// Counts a request against `cell`, one of this limit's.
    fn admit(&self, cell: &Cell, now: Nanos) -> Result<(), LimitExceeded> {
        self.gcra.admit(cell, now).map_err(|wait| LimitExceeded { limit: self.limit, wait })
    }

    /// Forgets keys whose cell is back to full and that no session holds.
    fn forget_idle(&self, now: Nanos) {
        self.cells.retain(|_, cell| cell.busy(now) || Arc::strong_count(cell) > 1);
        self.cells.shrink_to_fit();
    }
}

/// A key a session's entry holds the cell of, to know the cell is still the one its
/// request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HeldKey {
    Caller(Limit, IpAddr),
    Client(Limit, ClientId),
}

impl HeldKey {
    /// Whether `check` counts under this key.
    fn is(&self, check: &LimitCheck<'_>) -> bool {
        match (self, check) {
            (Self::Caller(limit, held), LimitCheck::IssuePerCaller(caller) | LimitCheck::PerCaller(caller)) => {
                *limit == check.limit() && held == caller
            }
            (Self::Client(limit, held), LimitCheck::IssuePerClient(client) | LimitCheck::PerClient(client)) => {
                *limit == check.limit() && held == *client
            }
            _ => false,
        }
    }
}

/// A session's entry: its own cell, and the cells of the other limits it was last
/// counted with, held so that counting a request is one look-up.
struct Session {
    cell: Cell,
    held: Vec<(HeldKey, Arc<Cell>)>,
}

impl Session {
    /// Whether `rest` are the checks whose cells the entry holds, in order.
    fn holds(&self, rest: &[LimitCheck<'_>]) -> bool {
        self.held.len() == rest.len() && self.held.iter().zip(rest).all(|((key, _), check)| key.is(check))
    }
}

/// Every limit, counted by this instance.
pub struct LocalLimits {
    issue_per_caller: Keyed<IpAddr>,
    issue_per_client: Keyed<ClientId>,
    per_session: Gcra,
    sessions: DashMap<SessionId, Session, foldhash::fast::RandomState>,
    per_caller: Keyed<IpAddr>,
    per_client: Keyed<ClientId>,
    started: Instant,
}

impl LocalLimits {
    /// The limits at `rates`.
    pub fn new(rates: &RateLimits) -> Self {
        Self {
            issue_per_caller: Keyed::new(Limit::IssuePerCaller, rates),
            issue_per_client: Keyed::new(Limit::IssuePerClient, rates),
            per_session: Gcra::new(rates.per_session),
            sessions: DashMap::with_hasher(foldhash::fast::RandomState::default()),
            per_caller: Keyed::new(Limit::PerCaller, rates),
            per_client: Keyed::new(Limit::PerClient, rates),
            started: Instant::now(),
        }
    }

    /// Counts a request against `checks` at `now`, narrowest first.
    fn count(&self, checks: &[LimitCheck<'_>], now: Nanos) -> Result<(), LimitExceeded> {
        if let [LimitCheck::PerSession(session), rest @ ..] = checks
            && !rest.iter().any(|check| matches!(check, LimitCheck::PerSession(_)))
        {
            return self.count_session(session, rest, now);
        }
        for check in checks {
            match check {
                LimitCheck::IssuePerCaller(caller) => self.issue_per_caller.check(caller, now)?,
                LimitCheck::IssuePerClient(client) => self.issue_per_client.check(client, now)?,
                LimitCheck::PerCaller(caller) => self.per_caller.check(caller, now)?,
                LimitCheck::PerClient(client) => self.per_client.check(client, now)?,
                LimitCheck::PerSession(session) => self.count_session(session, &[], now)?,
            }
        }
        Ok(())
    }

    /// Counts a request of `session` and then of `rest` (its caller's and client's).
    fn count_session(&self, session: &SessionId, rest: &[LimitCheck<'_>], now: Nanos) -> Result<(), LimitExceeded> {
        // The common case: a session seen before, from the same address (a read lock).
        if let Some(entry) = self.sessions.get(session)
            && entry.holds(rest)
        {
            return self.admit_session(&entry, now);
        }
        // A new session, or one that came from another address: its handles are found
        // (outside any lock on the sessions) and kept; its own cell is never reset.
        let held: Vec<_> = rest.iter().filter_map(|check| self.held(check)).collect();
        let entry = self
            .sessions
            .entry(session.clone())
            .and_modify(|entry| entry.held.clone_from(&held))
            .or_insert_with(|| Session { cell: Cell::default(), held });
        self.admit_session(&entry, now)
    }

    /// The key and cell of `check`, for a session's entry to hold (a caller's or a
    /// client's; never another session's).
    fn held(&self, check: &LimitCheck<'_>) -> Option<(HeldKey, Arc<Cell>)> {
        let limit = check.limit();
        Some(match check {
            LimitCheck::IssuePerCaller(caller) => (HeldKey::Caller(limit, *caller), self.issue_per_caller.cell(caller)),
            LimitCheck::PerCaller(caller) => (HeldKey::Caller(limit, *caller), self.per_caller.cell(caller)),
            LimitCheck::IssuePerClient(client) => {
                (HeldKey::Client(limit, (*client).clone()), self.issue_per_client.cell(client))
            }
            LimitCheck::PerClient(client) => (HeldKey::Client(limit, (*client).clone()), self.per_client.cell(client)),
            LimitCheck::PerSession(_) => return None,
        })
    }

    /// Counts a request against a session's cell, then each it holds, narrowest first.
    fn admit_session(&self, session: &Session, now: Nanos) -> Result<(), LimitExceeded> {
        self.per_session.admit(&session.cell, now).map_err(|wait| LimitExceeded { limit: Limit::PerSession, wait })?;
        for (key, cell) in &session.held {
            match key {
                HeldKey::Caller(Limit::IssuePerCaller, _) => self.issue_per_caller.admit(cell, now)?,
                HeldKey::Caller(..) => self.per_caller.admit(cell, now)?,
                HeldKey::Client(Limit::IssuePerClient, _) => self.issue_per_client.admit(cell, now)?,
                HeldKey::Client(..) => self.per_client.admit(cell, now)?,
            }
        }
        Ok(())
    }

    /// Nanoseconds since the limits were made, at least 1.
    fn now(&self) -> Nanos {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
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
    fn held_keys(&self) -> (usize, usize, usize) {
        (self.sessions.len(), self.per_caller.cells.len(), self.per_client.cells.len())
    }
}

impl RequestLimiter for LocalLimits {
    fn admit<'a>(&'a self, checks: &'a [LimitCheck<'a>]) -> Admission<'a> {
        Admission::decided(self.count(checks, self.now()).map_err(Into::into))
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use domain::limits::LimitError;
    use domain::token::AccessClaims;

    use super::*;

    const SECOND: Nanos = 1_000_000_000;

    fn rate(per_second: u32, burst: u32) -> Rate {
        Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
    }

    fn keyed(rate: Rate) -> Keyed<&'static str> {
        Keyed::new(Limit::PerClient, &RateLimits { per_client: rate, ..RateLimits::unlimited() })
    }

    #[test]
    fn a_key_gets_its_burst_then_waits_for_the_rate() {
        let limit = keyed(rate(1, 3));
        for _ in 0..3 {
            assert_eq!(limit.check(&"app", 1), Ok(()));
        }
        let refused = limit.check(&"app", 1).unwrap_err();
        assert_eq!((refused.limit, refused.wait), (Limit::PerClient, Duration::from_secs(1)));
        assert_eq!(limit.check(&"app", 1 + SECOND), Ok(()), "one request a second comes back");
        assert!(limit.check(&"app", 1 + SECOND).is_err());
    }

    #[test]
    fn keys_are_limited_separately() {
        let limit = keyed(rate(1, 1));
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
        let limit = keyed(Rate::UNLIMITED);
        assert!((0..10_000).all(|_| limit.check(&"app", 1).is_ok()));
    }

    fn bearer_limits(per_session: Rate, per_caller: Rate, per_client: Rate) -> LocalLimits {
        LocalLimits::new(&RateLimits { per_session, per_caller, per_client, ..RateLimits::unlimited() })
    }

    /// Counts a bearer request as the HTTP layer asks for it: session, caller, client.
    fn bearer(limits: &LocalLimits, caller: IpAddr, claims: &AccessClaims, now: Nanos) -> Result<(), Limit> {
        let checks = [
            LimitCheck::PerSession(&claims.session),
            LimitCheck::PerCaller(caller),
            LimitCheck::PerClient(&claims.client_id),
        ];
        limits.count(&checks, now).map_err(|over| over.limit)
    }

    #[tokio::test]
    async fn a_request_refused_for_its_session_takes_nothing_from_the_shared_limits() {
        let limits = bearer_limits(rate(1, 1), rate(1, 2), rate(1, 2));
        let caller: IpAddr = "192.0.2.1".parse().unwrap();
        let flooder = domain::testing::claims("app", "flooder", 0, 60);
        let user = domain::testing::claims("app", "user", 0, 60);
        fn checks(claims: &AccessClaims, caller: IpAddr) -> [LimitCheck<'_>; 3] {
            [
                LimitCheck::PerSession(&claims.session),
                LimitCheck::PerCaller(caller),
                LimitCheck::PerClient(&claims.client_id),
            ]
        }
        assert!(limits.admit(&checks(&flooder, caller)).await.is_ok());
        for _ in 0..5 {
            let refused = limits.admit(&checks(&flooder, caller)).await.unwrap_err();
            assert!(matches!(refused, LimitError::Exceeded(LimitExceeded { limit: Limit::PerSession, .. })));
        }
        assert!(limits.admit(&checks(&user, caller)).await.is_ok(), "the shared limits still had room");
    }

    #[test]
    fn sessions_of_one_caller_or_one_client_share_its_limit() {
        let open = Rate::UNLIMITED;
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        let session = |sid: &str, client: &str| domain::testing::claims(client, sid, 0, 60);

        let per_caller = bearer_limits(open, rate(1, 2), open);
        assert!(bearer(&per_caller, one, &session("s1", "app"), 1).is_ok());
        assert!(bearer(&per_caller, one, &session("s2", "app"), 1).is_ok());
        assert_eq!(bearer(&per_caller, one, &session("s3", "app"), 1), Err(Limit::PerCaller));
        assert!(bearer(&per_caller, other, &session("s3", "app"), 1).is_ok(), "another address has its own");

        let per_client = bearer_limits(open, open, rate(1, 2));
        assert!(bearer(&per_client, one, &session("s1", "app"), 1).is_ok());
        assert!(bearer(&per_client, other, &session("s2", "app"), 1).is_ok());
        assert_eq!(bearer(&per_client, other, &session("s3", "app"), 1), Err(Limit::PerClient));
        assert!(bearer(&per_client, one, &session("s4", "other-app"), 1).is_ok(), "another client has its own");
    }

    #[test]
    fn a_session_that_moves_to_another_address_counts_there_and_keeps_its_own_state() {
        let open = Rate::UNLIMITED;
        let (home, away): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "198.51.100.7".parse().unwrap());
        let phone = domain::testing::claims("app", "phone", 0, 60);

        let per_caller = bearer_limits(open, rate(1, 1), open);
        assert!(bearer(&per_caller, home, &phone, 1).is_ok());
        assert!(bearer(&per_caller, away, &phone, 1).is_ok(), "the new address has its burst");
        assert_eq!(bearer(&per_caller, away, &phone, 1), Err(Limit::PerCaller));
        assert_eq!(bearer(&per_caller, home, &phone, 1), Err(Limit::PerCaller), "the old one remembered");

        let per_session = bearer_limits(rate(1, 2), open, open);
        assert!(bearer(&per_session, home, &phone, 1).is_ok());
        assert!(bearer(&per_session, away, &phone, 1).is_ok());
        assert_eq!(bearer(&per_session, home, &phone, 1), Err(Limit::PerSession), "no fresh burst on moving");
    }

    #[test]
    fn token_requests_count_per_caller_then_per_client() {
        let client = ClientId::parse("app").unwrap();
        let limits = LocalLimits::new(&RateLimits { issue_per_client: rate(1, 2), ..RateLimits::unlimited() });
        let from =
            |caller: [u8; 4]| [LimitCheck::IssuePerCaller(IpAddr::from(caller)), LimitCheck::IssuePerClient(&client)];
        assert!(limits.count(&from([192, 0, 2, 1]), 1).is_ok());
        assert!(limits.count(&from([192, 0, 2, 2]), 1).is_ok());
        assert_eq!(limits.count(&from([192, 0, 2, 3]), 1).unwrap_err().limit, Limit::IssuePerClient);
    }

    #[test]
    fn idle_keys_are_forgotten_but_never_a_cell_a_busy_session_holds() {
        let limits = bearer_limits(rate(1, 1), rate(10, 10), rate(10, 10));
        let caller: IpAddr = "192.0.2.1".parse().unwrap();
        let quiet = domain::testing::claims("app", "quiet", 0, 60);
        let busy = domain::testing::claims("app", "busy", 0, 60);
        assert!(bearer(&limits, caller, &quiet, 1).is_ok());
        assert!(bearer(&limits, caller, &busy, 1 + 9 * SECOND + SECOND / 2).is_ok());
        // At 10 s the quiet session is back to full, and so are the caller's and the
        // client's cells (full 0.1 s after a request); the busy session is not (1 s).
        limits.forget_idle_at(1 + 10 * SECOND);
        assert_eq!(limits.held_keys(), (1, 1, 1), "the busy session keeps its caller's and client's cells");
        limits.forget_idle_at(1 + 11 * SECOND);
        assert_eq!(limits.held_keys(), (0, 0, 0), "then it goes, and what only it held with it");
    }
}
