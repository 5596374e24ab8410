//! The fault issue's promises when the database server itself fails, for every store
//! that runs on a server (PostgreSQL, MariaDB): stopped, and crashed, under the
//! service's load. Each backend's file makes a server of the test's own
//! ([`PrivateServer`]) and runs these checks on it, so no other test's server is touched.

use std::time::{Duration, Instant};

use adapters::store::Store;
use domain::token::OpaqueToken;

use crate::harness::{AUTHORIZE_QUERY, Service, UUID, flood};

/// A database server of one test's own, on a free loopback port, stopped when dropped.
pub trait PrivateServer: Sync {
    /// What it is, for the figures (`PostgreSQL`).
    fn kind(&self) -> &'static str;
    /// A store's URL on it.
    fn url(&self) -> String;
    /// Stops it cleanly, ending every session.
    fn stop(&self);
    /// Stops it as a crash would (no shutdown work; the next start recovers from its log).
    fn crash(&self);
    /// Starts it again on the same files and port, or why not.
    fn start_again(&self) -> Result<(), String>;
    /// Whether the store pushes change notices the service listens for (and says it lost).
    fn sends_change_notices(&self) -> bool;
}

/// A token and its session id, from the demo client's token request.
async fn session(service: &Service) -> (String, String) {
    let call = service.http.get(format!("{}/api/v1/authorize?{AUTHORIZE_QUERY}", service.address));
    let response = call.header("uuid", UUID).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let sid = response.headers()["sid"].to_str().unwrap().to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    (body["access_token"].as_str().unwrap().to_owned(), sid)
}

/// A bearer call the view answers from memory: the demo session's wait times.
async fn wait_times(service: &Service, token: &str, sid: &str) -> Option<u16> {
    let call = service
        .http
        .post(format!("{}/api/v1/open-banking/channels/branch/waittime/retrieve", service.address))
        .bearer_auth(token)
        .header("sid", sid)
        .header("client_id", "demo-mobile-app")
        .header("uuid", UUID)
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .header("countryCode", "MX")
        .header("businessCode", "GCB")
        .header("ChannelId", "MOBILE")
        .body(r#"{"branches":[{"branchId":"00001"}]}"#)
        .timeout(Duration::from_secs(10))
        .send();
    call.await.ok().map(|response| response.status().as_u16())
}

/// The status of `GET /api/health/reads`.
async fn reads_status(service: &Service) -> Option<u16> {
    let probe = service.http.get(format!("{}/api/health/reads", service.address)).timeout(Duration::from_secs(5));
    probe.send().await.ok().map(|response| response.status().as_u16())
}

/// How long after `since` readiness first answered `want`, polling every 20 ms for at
/// most `within`.
async fn readiness_turns(service: &Service, want: u16, since: Instant, within: Duration) -> Option<Duration> {
    while since.elapsed() < within {
        if service.ready_status().await == Some(want) {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// With the server stopped, readiness fails within a second, bearer calls are answered
/// from memory for the staleness bound and refused after it, token requests are refused
/// fast; once the server is back, the same process serves everything again by itself.
pub async fn stopped_fails_readiness_at_once_serves_reads_from_memory_and_recovers_by_itself(
    server: &impl PrivateServer,
) {
    let staleness = Duration::from_secs(4);
    let service = Service::start(&server.url(), &["--max-staleness-ms", "4000"]).await;
    let (token, sid) = session(&service).await;
    assert_eq!(wait_times(&service, &token, &sid).await, Some(200));

    server.stop();
    let stopped = Instant::now();
    let failed = readiness_turns(&service, 503, stopped, Duration::from_secs(5)).await;
    eprintln!("figure: {} stopped: readiness 503 after {failed:?}", server.kind());
    assert!(failed.is_some_and(|after| after <= Duration::from_secs(1)), "readiness failed within 1 s: {failed:?}");

    // Within the staleness bound the view answers from memory, and says so to a
    // load balancer's fallback (a failover takes every instance's readiness).
    assert_eq!(wait_times(&service, &token, &sid).await, Some(200), "served from memory");
    assert_eq!(reads_status(&service).await, Some(200), "ready for reads");
    // Token requests need the store: refused within the 2 s bound, and once the
    // writer has seen the store fail, at once (one request a second tries it again).
    let asked = Instant::now();
    let (status, _) = service.authorize().await.unwrap();
    let first = asked.elapsed();
    assert_eq!(status, 500);
    assert!(first < Duration::from_millis(2_500), "refused within the bound: {first:?}");
    let asked = Instant::now();
    let (status, _) = service.authorize().await.unwrap();
    let next = asked.elapsed();
    eprintln!("figure: {} stopped: token requests refused with {status} in {first:?}, then {next:?}", server.kind());
    assert_eq!(status, 500);
    assert!(next < Duration::from_millis(200), "then at once: {next:?}");
    // The log an operator reads during the outage: one ERROR line a second for the
    // refused token requests, whole, then one line with the count of the others.
    let refused_at = Instant::now();
    for _ in 0..100 {
        assert_eq!(service.authorize().await.unwrap().0, 500);
    }
    let within = refused_at.elapsed();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let log = service.log();
    let whole = log.iter().filter(|line| line.contains("token issuance failed: the service could not answer"));
    let whole = whole.count();
    let counted: u64 = (log.iter())
        .filter(|line| line.contains("token issuance failed: ") && line.contains("more requests within a second"))
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|line| line["fields"]["more"].as_u64())
        .sum();
    eprintln!("figure: 102 refused token requests in {within:?}: {whole} whole ERROR lines, {counted} counted");
    assert_eq!(whole as u64 + counted, 102, "every refusal is in the log, whole or counted");
    assert!(whole as u128 <= 2 + within.as_millis() / 1000, "one whole line a second: {whole} in {within:?}");
    assert!(!log.iter().any(|line| line.contains("SSLRequest")), "causes, not protocol bytes");

    // Past the bound the view no longer vouches for its data.
    tokio::time::sleep(staleness.saturating_sub(stopped.elapsed()) + Duration::from_millis(500)).await;
    assert_eq!(wait_times(&service, &token, &sid).await, Some(500), "stale data is not served");
    assert_eq!(reads_status(&service).await, Some(503), "nor offered for reads");

    server.start_again().unwrap();
    let back = Instant::now();
    let ready = readiness_turns(&service, 200, back, Duration::from_secs(15)).await;
    eprintln!("figure: {} started again: readiness 200 after {ready:?}", server.kind());
    assert!(ready.is_some(), "the service recovered by itself");
    assert_eq!(wait_times(&service, &token, &sid).await, Some(200));
    let (status, body) = service.authorize().await.unwrap();
    assert_eq!(status, 200, "tokens are issued again");
    if server.sends_change_notices() {
        let log = service.log();
        let listener = |words: &str| log.iter().filter(|line| line.contains(words)).count();
        let lost =
            listener("lost the store's change notices") + listener("cannot listen for the store's change notices");
        assert_eq!(lost, 1, "the loss said once, not at every attempt");
        let back = crate::harness::eventually_logged(&service, "listening for the store's change notices again").await;
        assert!(back, "a line when the change listener is back");
    }
    let opaque = body.unwrap()["opaque_token"].as_str().unwrap().to_owned();
    let store = Store::open(&server.url()).await.unwrap();
    assert!(store.tokens.find(&OpaqueToken::new(opaque)).await.unwrap().is_some(), "and stored");
}

/// The server crashing and coming back under a flood of token requests: requests during
/// the outage may fail, but every token the service answered is in the store after the
/// server's recovery, and the service issues tokens again without being restarted.
pub async fn every_token_answered_while_the_server_crashes_and_restarts_is_in_the_store(server: &impl PrivateServer) {
    let service = Service::start(&server.url(), &[]).await;
    let during = flood(&service, 16, async {
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        server.crash();
        // Longer than a token's 2 s deadline, so the outage is seen by some requests
        // (a shorter one is ridden out by the pool's reconnecting).
        tokio::time::sleep(Duration::from_millis(3_000)).await;
        server.start_again().unwrap();
        // Long enough to see the writer recover under the same flood.
        tokio::time::sleep(Duration::from_millis(3_000)).await;
    })
    .await;
    eprintln!(
        "figure: {} crashed and restarted under an authorize flood: {:?}, {} unanswered",
        server.kind(),
        during.statuses,
        during.unanswered
    );
    assert!(during.count(500) > 0, "the outage was seen: {during:?}");
    assert_eq!(during.unanswered, 0, "every request was answered: {during:?}");
    let (status, _) = service.authorize().await.unwrap();
    assert_eq!(status, 200, "issuing again after the restart");

    let store = Store::open(&server.url()).await.unwrap();
    let mut missing = 0;
    for opaque in &during.issued {
        if store.tokens.find(&OpaqueToken::new(opaque.clone())).await.unwrap().is_none() {
            missing += 1;
        }
    }
    assert_eq!(missing, 0, "{missing} of {} answered tokens are not in the store", during.issued.len());
}

/// The published status (`GET /api/v1/discovery/status`), or `None` if it does not answer.
pub async fn published_status(service: &Service) -> Option<serde_json::Value> {
    let call = service.http.get(format!("{}/api/v1/discovery/status", service.address)).timeout(Duration::from_secs(5));
    call.send().await.ok()?.json().await.ok()
}

/// How long after `since` the published status first said `want`, polling every 50 ms
/// for at most `within`, with the body that said it.
pub async fn status_turns(
    service: &Service,
    want: &str,
    since: Instant,
    within: Duration,
) -> Option<(Duration, serde_json::Value)> {
    while since.elapsed() < within {
        if let Some(body) = published_status(service).await
            && body["data"]["status"] == want
        {
            return Some((since.elapsed(), body));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// With the server stopped, the published status leaves `OK` within seconds (a partial
/// failure: reads from memory, no tokens), is `UNAVAILABLE` past the staleness bound,
/// and is `OK` again by itself once the server is back.
pub async fn the_status_leaves_ok_while_the_server_is_stopped_and_returns_by_itself(server: &impl PrivateServer) {
    let service = Service::start(&server.url(), &["--max-staleness-ms", "3000"]).await;
    let ok = published_status(&service).await.expect("the status answers");
    assert_eq!(ok["data"]["status"], "OK", "{ok}");

    server.stop();
    let stopped = Instant::now();
    let partial = status_turns(&service, "PARTIAL_FAILURE", stopped, Duration::from_secs(5)).await;
    eprintln!("figure: {} stopped: status PARTIAL_FAILURE after {:?}", server.kind(), partial.as_ref().map(|p| p.0));
    let (after, body) = partial.expect("the status left OK within seconds");
    assert!(after <= Duration::from_secs(5), "within seconds: {after:?}");
    assert!(body["data"]["detectionTime"].is_string(), "{body}");
    let unavailable = status_turns(&service, "UNAVAILABLE", stopped, Duration::from_secs(8)).await;
    assert!(unavailable.is_some(), "UNAVAILABLE past the staleness bound");

    server.start_again().unwrap();
    let back = Instant::now();
    let ok = status_turns(&service, "OK", back, Duration::from_secs(15)).await;
    eprintln!("figure: {} started again: status OK after {:?}", server.kind(), ok.as_ref().map(|ok| ok.0));
    let (_, body) = ok.expect("the status came back to OK by itself");
    assert!(body["data"].get("detectionTime").is_none(), "{body}");
}
