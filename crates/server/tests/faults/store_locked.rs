//! A store that cannot be read: another process holds SQLite's WAL-index locks. The
//! service says so at once on readiness, refuses what needs the store fast, and comes
//! back by itself when the locks are released.

use std::os::fd::AsFd as _;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, fcntl};

use crate::harness::{Service, fresh_store, run, sqlite_fault};

/// POSIX write locks on bytes 120–127 of a SQLite `-shm` file (the WAL-index locks:
/// write, checkpoint, recovery and the five read marks), held by this process. `chmod`
/// would do nothing to a running server; these stop every reader and writer of it.
struct WalIndexLocks {
    _shm: std::fs::File,
}

impl WalIndexLocks {
    fn hold(shm: &Path) -> Self {
        let shm = std::fs::OpenOptions::new().read(true).write(true).open(shm).unwrap();
        let range = nix::libc::flock {
            l_type: nix::libc::F_WRLCK as i16,
            l_whence: nix::libc::SEEK_SET as i16,
            l_start: 120,
            l_len: 8,
            l_pid: 0,
        };
        // Waits for any read the service has in progress to end.
        fcntl(shm.as_fd(), FcntlArg::F_SETLKW(&range)).unwrap();
        Self { _shm: shm }
    }
}

#[test]
fn a_locked_store_fails_readiness_within_a_second_and_requests_fast_and_recovers_by_itself() {
    if !sqlite_fault("a locked store file") {
        return;
    }
    run(async {
        let Some((_kept, url)) = fresh_store().await else { return };
        let file = crate::store::sqlite_file(&url).expect("a SQLite store");
        let service = Service::start(&url, &[]).await;
        assert_eq!(service.authorize().await.unwrap().0, 200);

        // Closing the file (dropping the guard) releases the locks.
        let locks = WalIndexLocks::hold(&file.with_extension("db-shm"));
        let locked = Instant::now();

        // Token requests need the store: each is refused fast, none hangs.
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let (http, address) = (service.http.clone(), service.address.clone());
                tokio::spawn(async move {
                    let started = Instant::now();
                    let response = http
                        .get(format!("{address}/api/v1/authorize?{}", crate::harness::AUTHORIZE_QUERY))
                        .header("uuid", crate::harness::UUID)
                        .send()
                        .await
                        .unwrap();
                    (response.status().as_u16(), response.json::<serde_json::Value>().await.unwrap(), started.elapsed())
                })
            })
            .collect();

        // Readiness answers every probe within a second, and says 503 within a second.
        let mut first_503 = None;
        let mut slowest_probe = Duration::ZERO;
        while locked.elapsed() < Duration::from_secs(4) {
            let probed = Instant::now();
            let status = service.ready_status().await;
            assert!(probed.elapsed() < Duration::from_secs(1), "a probe took {:?}", probed.elapsed());
            slowest_probe = slowest_probe.max(probed.elapsed());
            if status == Some(503) && first_503.is_none() {
                first_503 = Some(locked.elapsed());
            }
            if first_503.is_some() {
                assert_eq!(status, Some(503), "readiness stays 503 while the store is locked");
            }
            let live = service.http.get(format!("{}/api/health/live", service.address)).send().await.unwrap();
            assert_eq!(live.status(), 200, "liveness never touches the store");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let first_503 = first_503.expect("readiness said 503");
        assert!(first_503 < Duration::from_secs(1), "readiness said 503 after {first_503:?}");
        let mut longest = Duration::ZERO;
        for call in calls {
            let (status, body, took) = call.await.unwrap();
            assert_eq!((status, body["code"].as_str()), (500, Some("serverUnavailable")), "{body}");
            assert!(took < Duration::from_millis(2_500), "a token request was held {took:?}");
            longest = longest.max(took);
        }
        eprintln!(
            "figure: store locked: readiness 503 after {} ms (slowest probe {} ms), token requests refused within {} ms",
            first_503.as_millis(),
            slowest_probe.as_millis(),
            longest.as_millis()
        );

        drop(locks);
        let released = Instant::now();
        assert!(service.becomes_ready(Duration::from_secs(5)).await, "readiness recovers by itself");
        let ready_again = released.elapsed();
        let issued = loop {
            if let Ok((200, _)) = service.authorize().await {
                break released.elapsed();
            }
            assert!(released.elapsed() < Duration::from_secs(5), "issuance recovers by itself");
        };
        eprintln!(
            "figure: store locked: ready again {} ms and issuing {} ms after release",
            ready_again.as_millis(),
            issued.as_millis()
        );
    });
}

/// The published status while the store file is locked: it leaves `OK` within seconds
/// (tokens cannot be issued, reads come from memory), and comes back to `OK` by itself
/// once the locks are released, without a restart.
#[test]
fn the_status_leaves_ok_while_the_store_is_locked_and_returns_by_itself() {
    if !sqlite_fault("a locked store file") {
        return;
    }
    run(async {
        let Some((_kept, url)) = fresh_store().await else { return };
        let file = crate::store::sqlite_file(&url).expect("a SQLite store");
        let service = Service::start(&url, &["--max-staleness-ms", "60000"]).await;
        let ok = crate::servers::published_status(&service).await.expect("the status answers");
        assert_eq!(ok["data"]["status"], "OK", "{ok}");

        let locks = WalIndexLocks::hold(&file.with_extension("db-shm"));
        let locked = Instant::now();
        let partial = crate::servers::status_turns(&service, "PARTIAL_FAILURE", locked, Duration::from_secs(6)).await;
        eprintln!("figure: store locked: status PARTIAL_FAILURE after {:?}", partial.as_ref().map(|p| p.0));
        let (after, body) = partial.expect("the status left OK");
        assert!(after <= Duration::from_secs(5), "within seconds: {after:?}");
        assert!(body["data"]["explanation"].as_str().is_some_and(|text| text.contains("tokens cannot be issued")));
        assert!(body["data"]["detectionTime"].is_string(), "{body}");

        drop(locks);
        let released = Instant::now();
        let ok = crate::servers::status_turns(&service, "OK", released, Duration::from_secs(10)).await;
        eprintln!("figure: store locked: status OK again {:?} after release", ok.as_ref().map(|ok| ok.0));
        assert!(ok.is_some(), "the status came back to OK by itself");
    });
}
