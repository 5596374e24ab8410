//! The shared request limits and DPoP replay cache against a real Redis, named by `TEST_REDIS_URL`
//! (`redis://127.0.0.1:6379`); without it they are ignored (counted so in cargo's
//! summary; build.rs), except under `CI=true`, where they fail. Every test counts under keys of its own (a random session or client id),
//! so tests and runs never share a count.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::num::NonZeroU32;
use std::time::Duration;

use adapters::redis_limits::RedisLimits;
use domain::client::ClientId;
use domain::limits::{Limit, LimitCheck, LimitError, LimitExceeded, Rate, RateLimits};
use domain::ports::RequestLimiter as _;
use domain::token::SessionId;

fn redis_url() -> Option<String> {
    match std::env::var("TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("CI must run the shared-limit tests: set TEST_REDIS_URL (.ci/run does)")
        }
        _ => {
            eprintln!("SKIPPED: the shared request limits on Redis: set TEST_REDIS_URL=redis://host:port to run them");
            None
        }
    }
}

fn rate(per_second: u32, burst: u32) -> Rate {
    Rate { per_second: NonZeroU32::new(per_second).unwrap(), burst: NonZeroU32::new(burst).unwrap() }
}

fn fresh_key() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn session() -> SessionId {
    SessionId::parse(&fresh_key()).unwrap()
}

fn client() -> ClientId {
    ClientId::parse(&fresh_key()).unwrap()
}

#[tokio::test]
async fn a_key_gets_its_burst_then_waits_for_the_rate() {
    let Some(url) = redis_url() else { return };
    let limits = RedisLimits::new(&url, &RateLimits { per_session: rate(2, 5), ..RateLimits::unlimited() }).unwrap();
    let session = session();
    let checks = [LimitCheck::PerSession(&session)];
    for n in 0..5 {
        assert_eq!(limits.admit(&checks).await, Ok(()), "request {n} of the burst");
    }
    let Err(LimitError::Exceeded(LimitExceeded { limit, wait })) = limits.admit(&checks).await else {
        panic!("refused past the burst")
    };
    assert_eq!(limit, Limit::PerSession);
    assert!(wait > Duration::from_millis(300) && wait <= Duration::from_millis(500), "half a second at 2/s: {wait:?}");
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    assert_eq!(limits.admit(&checks).await, Ok(()), "admitted once the wait is over");
}

#[tokio::test]
async fn every_instance_counts_in_the_same_place() {
    let Some(url) = redis_url() else { return };
    let rates = RateLimits { per_client: rate(1, 6), ..RateLimits::unlimited() };
    let (one, two) = (RedisLimits::new(&url, &rates).unwrap(), RedisLimits::new(&url, &rates).unwrap());
    let client = client();
    let checks = [LimitCheck::PerClient(&client)];
    let mut admitted = 0;
    for n in 0..20 {
        let instance = if n % 2 == 0 { &one } else { &two };
        if instance.admit(&checks).await.is_ok() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 6, "the burst once, over both instances");
}

#[tokio::test]
async fn a_request_refused_by_a_narrow_limit_takes_nothing_from_the_wider_ones() {
    let Some(url) = redis_url() else { return };
    let rates = RateLimits { per_session: rate(1, 1), per_client: rate(1, 3), ..RateLimits::unlimited() };
    let limits = RedisLimits::new(&url, &rates).unwrap();
    let (flooder, user, client) = (session(), session(), client());
    for _ in 0..10 {
        let _ = limits.admit(&[LimitCheck::PerSession(&flooder), LimitCheck::PerClient(&client)]).await;
    }
    let answer = limits.admit(&[LimitCheck::PerSession(&user), LimitCheck::PerClient(&client)]).await;
    assert_eq!(answer, Ok(()), "the flooder's refused requests left the client's count with room");
}

#[tokio::test]
async fn an_unreachable_redis_is_reported_within_a_bound_not_waited_for() {
    // A port nothing listens on (bound, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let limits = RedisLimits::new(&format!("redis://127.0.0.1:{port}"), &RateLimits::unlimited()).unwrap();
    let asked = std::time::Instant::now();
    let session = session();
    assert!(matches!(limits.admit(&[LimitCheck::PerSession(&session)]).await, Err(LimitError::Unavailable(_))));
    assert!(asked.elapsed() < Duration::from_millis(500), "{:?}", asked.elapsed());
}

/// The status hears of one Redis from both its uses: told of a loss by the DPoP replay
/// cache, it hears Redis is back from the limits' next request, though no DPoP proof
/// comes (review of the status's Redis signal: with news of each use apart, the loss
/// stayed published until the next proof).
#[tokio::test]
async fn redis_lost_by_one_use_is_found_back_by_the_other() {
    use adapters::dpop::SharedReplays;
    use adapters::redis_limits::SharedOrLocal;
    use adapters::redis_link::RedisNews;
    use domain::ports::ProofReplays as _;
    use std::sync::Arc;

    let Some(url) = redis_url() else { return };
    let news = Arc::new(RedisNews::new());
    let local = Arc::new(adapters::local_limits::LocalLimits::new(&RateLimits::unlimited()));
    let limits =
        SharedOrLocal::new(RedisLimits::new(&url, &RateLimits::unlimited()).unwrap(), local, Arc::clone(&news));
    let session = session();
    // Connected first: the first ask over a new connection may take longer than the
    // limits wait for Redis.
    for _ in 0..20 {
        assert_eq!(limits.admit(&[LimitCheck::PerSession(&session)]).await, Ok(()));
        if !news.is_lost() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The proofs' Redis is one nothing listens on: it fails, as Redis does when it goes.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let proofs =
        SharedReplays::new(&format!("redis://127.0.0.1:{port}"), Duration::from_secs(60), Arc::clone(&news)).unwrap();
    assert!(proofs.first_use(&fresh_key()).await, "a proof is still accepted once, here");
    assert!(news.is_lost(), "the loss is told");
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(limits.admit(&[LimitCheck::PerSession(&session)]).await, Ok(()));
    assert!(!news.is_lost(), "the limits' answer to an ask begun after the loss says Redis is back");
}

/// `url` reached through a line that can be cut and mended, with its password and
/// database kept.
async fn through_a_line(url: &str) -> (adapters::testing::TcpLine, String) {
    let mut url = url::Url::parse(url).unwrap();
    let line =
        adapters::testing::TcpLine::to(format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(6379))).await;
    url.set_host(Some("127.0.0.1")).unwrap();
    url.set_port(Some(line.port)).unwrap();
    (line, url.to_string())
}

/// Issue 42: after Redis returns, each instance's first ask of it failed on the dropped
/// connection and the instance counted alone for a second, so two instances each let a
/// client's burst through. The ask is now sent again on a new connection.
#[tokio::test]
async fn the_first_count_after_redis_returns_is_counted_in_redis() {
    use adapters::redis_limits::SharedOrLocal;
    use adapters::redis_link::RedisNews;
    use std::sync::Arc;

    let Some(url) = redis_url() else { return };
    let (line, through) = through_a_line(&url).await;
    let rates = RateLimits { per_client: rate(1, 1), ..RateLimits::unlimited() };
    let instance = || {
        let local = Arc::new(adapters::local_limits::LocalLimits::new(&rates));
        SharedOrLocal::new(RedisLimits::new(&through, &rates).unwrap(), local, Arc::new(RedisNews::new()))
    };
    let (one, two) = (instance(), instance());
    // Connected first: the first ask over a new connection may take longer than the
    // limits wait for Redis.
    for limits in [&one, &two] {
        for _ in 0..20 {
            let _ = limits.admit(&[LimitCheck::PerClient(&client())]).await;
        }
    }
    line.cut();
    line.mend();
    let client = client();
    assert_eq!(one.admit(&[LimitCheck::PerClient(&client)]).await, Ok(()));
    let Err(LimitError::Exceeded(_)) = two.admit(&[LimitCheck::PerClient(&client)]).await else {
        panic!(
            "the second instance lets the client's one request a second through again: the first was not counted in Redis"
        )
    };
}

/// Two instances' DPoP replay caches on one Redis reached through a line.
async fn two_replay_caches(url: &str) -> (adapters::testing::TcpLine, [adapters::dpop::SharedReplays; 2]) {
    use adapters::redis_link::RedisNews;
    use std::sync::Arc;
    let (line, through) = through_a_line(url).await;
    let cache =
        || adapters::dpop::SharedReplays::new(&through, Duration::from_secs(60), Arc::new(RedisNews::new())).unwrap();
    (line, [cache(), cache()])
}

/// Issue 42: a proof one instance accepted alone while Redis was away is refused on
/// every other once Redis answers that instance's probe.
#[tokio::test]
async fn a_proof_accepted_alone_while_redis_was_away_is_refused_on_another_instance_once_it_returns() {
    use adapters::redis_link::RedisProbe as _;
    use domain::ports::ProofReplays as _;

    let Some(url) = redis_url() else { return };
    let (line, [one, two]) = two_replay_caches(&url).await;
    one.probe().await;
    two.probe().await;
    line.cut();
    let proof = fresh_key();
    assert!(one.first_use(&proof).await, "accepted alone");
    line.mend();
    one.probe().await;
    assert!(!two.first_use(&proof).await, "refused on the other instance");
}

/// A Redis that lost what it held (restarted without its data, another one failed over
/// to) is caught up by each instance's probe with the proofs that instance remembers.
/// On a database of its own, which it empties.
#[tokio::test]
async fn a_redis_that_forgot_every_proof_is_given_them_again_by_the_probe() {
    use adapters::redis_link::RedisProbe as _;
    use domain::ports::ProofReplays as _;

    let Some(url) = redis_url() else { return };
    let mut own = url::Url::parse(&url).unwrap();
    own.set_path("/13");
    let (_line, [one, two]) = two_replay_caches(own.as_str()).await;
    let proof = fresh_key();
    assert!(one.first_use(&proof).await);
    one.probe().await;
    let mut redis = redis::Client::open(own.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    redis::cmd("FLUSHDB").query_async::<()>(&mut redis).await.unwrap();
    assert!(two.first_use(&fresh_key()).await, "a new proof is new");
    one.probe().await;
    assert!(!two.first_use(&proof).await, "a proof used before Redis forgot it is refused on the other instance");
}
