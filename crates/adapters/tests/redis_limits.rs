//! The shared request limits against a real Redis, named by `TEST_REDIS_URL`
//! (`redis://127.0.0.1:6379`); without it they are ignored (counted so in cargo's
//! summary; build.rs), except under `CI=true`, where they fail. Every test counts under keys of its own (a random session or client id),
//! so tests and runs never share a count.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use adapters::redis_limits::RedisLimits;
use domain::ports::{LimitCheck, SharedLimits};

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

fn check(limit: &'static str, key: &str, per_second: u32, burst: u32) -> LimitCheck {
    LimitCheck { limit, key: key.to_owned(), per_second, burst }
}

fn fresh_key() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[tokio::test]
async fn a_key_gets_its_burst_then_waits_for_the_rate() {
    let Some(url) = redis_url() else { return };
    let limits = RedisLimits::new(&url).unwrap();
    let key = fresh_key();
    for n in 0..5 {
        assert_eq!(limits.admit(&[check("session", &key, 2, 5)]).await.unwrap(), None, "request {n} of the burst");
    }
    let (limit, wait) = limits.admit(&[check("session", &key, 2, 5)]).await.unwrap().expect("refused past the burst");
    assert_eq!(limit, "session");
    assert!(wait > Duration::from_millis(300) && wait <= Duration::from_millis(500), "half a second at 2/s: {wait:?}");
    tokio::time::sleep(wait + Duration::from_millis(20)).await;
    assert_eq!(limits.admit(&[check("session", &key, 2, 5)]).await.unwrap(), None, "admitted once the wait is over");
}

#[tokio::test]
async fn every_instance_counts_in_the_same_place() {
    let Some(url) = redis_url() else { return };
    let (one, two) = (RedisLimits::new(&url).unwrap(), RedisLimits::new(&url).unwrap());
    let key = fresh_key();
    let mut admitted = 0;
    for n in 0..20 {
        let instance = if n % 2 == 0 { &one } else { &two };
        if instance.admit(&[check("client", &key, 1, 6)]).await.unwrap().is_none() {
            admitted += 1;
        }
    }
    assert_eq!(admitted, 6, "the burst once, over both instances");
}

#[tokio::test]
async fn a_request_refused_by_a_narrow_limit_takes_nothing_from_the_wider_ones() {
    let Some(url) = redis_url() else { return };
    let limits = RedisLimits::new(&url).unwrap();
    let (flooder, user, client) = (fresh_key(), fresh_key(), fresh_key());
    for _ in 0..10 {
        limits.admit(&[check("session", &flooder, 1, 1), check("client", &client, 1, 3)]).await.unwrap();
    }
    let answer = limits.admit(&[check("session", &user, 1, 1), check("client", &client, 1, 3)]).await.unwrap();
    assert_eq!(answer, None, "the flooder's refused requests left the client's count with room");
}

#[tokio::test]
async fn an_unreachable_redis_is_reported_within_a_bound_not_waited_for() {
    // A port nothing listens on (bound, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let limits = RedisLimits::new(&format!("redis://127.0.0.1:{port}")).unwrap();
    let asked = std::time::Instant::now();
    assert!(limits.admit(&[check("session", "s", 1, 1)]).await.is_err());
    assert!(asked.elapsed() < Duration::from_millis(500), "{:?}", asked.elapsed());
}
