//! Disabling and enabling a client application, as an operator does it while the
//! client's users keep asking for tokens, on two instances of the service.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{branch_atm, stderr, stdout};
use crate::helpers::{Session, TestApp, demo_authorize_query, eventually};

/// A token answered 200, and when (after the start of the test).
struct Minted {
    session: Session,
    at: Duration,
}

/// Asks `apps` in turn for demo tokens until `stop`, keeping every one answered 200.
async fn mint_until(apps: Arc<[TestApp; 2]>, stop: Arc<AtomicBool>, started: Instant, turn: usize) -> Vec<Minted> {
    let mut minted = Vec::new();
    let mut next = turn;
    while !stop.load(Ordering::Relaxed) {
        let response = apps[next % 2].authorize(&demo_authorize_query()).await;
        next += 1;
        if response.status() != 200 {
            continue;
        }
        let at = started.elapsed();
        let sid = response.headers()["sid"].to_str().unwrap().to_owned();
        let body: Value = response.json().await.unwrap();
        minted.push(Minted { session: Session { token: body["access_token"].as_str().unwrap().to_owned(), sid }, at });
    }
    minted
}

/// Whether `session`'s token is refused by `app` on both bearer operations.
async fn refused_by(app: &TestApp, session: &Session) -> bool {
    app.wait_times(session, &["00001"]).await.status() == 401
        && app.get_atms(session, "/api/v1/atms", &[]).await.status() == 401
}

/// The finding: an instance keeps issuing tokens until its next view refresh after
/// `clients disable` (up to 1 s on SQLite); nothing revoked those, so they stayed valid
/// for their whole lifetime. Now every token of a disabled client is refused, whenever
/// and wherever it was issued, and enabling the client again brings none back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_token_minted_around_a_disable_is_refused_and_enabling_brings_none_back() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let first = TestApp::builder().start().await;
    let second = TestApp::builder().on_store(&first.database_url).start().await;
    let apps = Arc::new([first, second]);
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let minters: Vec<_> =
        (0..4).map(|turn| tokio::spawn(mint_until(Arc::clone(&apps), Arc::clone(&stop), started, turn))).collect();

    tokio::time::sleep(Duration::from_millis(300)).await;
    let url = apps[0].database_url.clone();
    let disable = tokio::task::spawn_blocking(move || branch_atm(&url, &["clients", "disable", "demo-mobile-app"]))
        .await
        .unwrap();
    let disabled_at = started.elapsed();
    assert!(disable.status.success(), "{}", stderr(&disable));
    // The views learn of it within a refresh: mint on through that window and past it.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop.store(true, Ordering::Relaxed);
    let mut minted = Vec::new();
    for minter in minters {
        minted.extend(minter.await.unwrap());
    }
    let after_disable = minted.iter().filter(|token| token.at > disabled_at).count();
    eprintln!(
        "figure: {} tokens minted, {after_disable} of them answered after `clients disable` returned",
        minted.len()
    );
    assert!(minted.len() > after_disable, "tokens were minted before the disable too");

    for app in apps.iter() {
        let seen =
            eventually(|| async { (app.authorize(&demo_authorize_query()).await.status() == 401).then_some(()) });
        assert!(seen.await.is_some(), "every instance refuses the disabled client new tokens within a refresh");
    }
    for token in &minted {
        for app in apps.iter() {
            assert!(refused_by(app, &token.session).await, "a token answered at {:?} is still accepted", token.at);
        }
    }

    let enable = branch_atm(&apps[0].database_url, &["clients", "enable", "demo-mobile-app"]);
    assert!(enable.status.success(), "{}", stderr(&enable));
    assert!(stdout(&enable).contains("enabled client demo-mobile-app"), "{}", stdout(&enable));
    for app in apps.iter() {
        let fresh = eventually(|| async {
            let response = app.authorize(&demo_authorize_query()).await;
            (response.status() == 200).then_some(())
        })
        .await;
        assert!(fresh.is_some(), "an enabled client gets tokens again");
        let session = app.session().await;
        assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200, "and they work");
    }
    for token in &minted {
        for app in apps.iter() {
            assert!(refused_by(app, &token.session).await, "enabling brought back a token answered at {:?}", token.at);
        }
    }
    let again = branch_atm(&apps[0].database_url, &["clients", "enable", "demo-mobile-app"]);
    assert!(stdout(&again).contains("already active"), "{}", stdout(&again));
    let unknown = branch_atm(&apps[0].database_url, &["clients", "enable", "nobody"]);
    assert!(!unknown.status.success() && stderr(&unknown).contains("does not exist"), "{}", stderr(&unknown));
}
