//! SIGKILL in the middle of writes: the service while it issues tokens, and the
//! operator's imports. Nothing acknowledged is lost, and nothing is half written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use adapters::store::Store;
use domain::token::OpaqueToken;

use crate::harness::{Service, cli, flood, fresh_store, run, said, signal, store_knows};

#[test]
fn every_token_answered_before_a_kill_9_is_in_the_store_after_the_restart() {
    run(async {
        let Some((_kept, url)) = fresh_store().await else { return };
        let mut service = Service::start(&url, &[]).await;
        let pid = service.pid();
        let during = flood(&service, 16, async move {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            signal(pid, "KILL");
        })
        .await;
        service.kill();
        eprintln!("figure: kill -9 under an authorize flood: {:?}, {} unanswered", during.statuses, during.unanswered);
        assert!(during.issued.len() > 100, "the flood got tokens before the kill: {during:?}");

        let restarted = Service::start(&url, &[]).await;
        let store = Store::open(&url).await.unwrap();
        let mut missing = 0;
        for opaque in &during.issued {
            if store.tokens.find(&OpaqueToken::new(opaque.clone())).await.unwrap().is_none() {
                missing += 1;
            }
        }
        assert_eq!(
            missing,
            0,
            "{missing} of {} tokens answered before the kill are not in the store",
            during.issued.len()
        );
        // And as an operator sees it, through the running service's store.
        for opaque in during.issued.iter().rev().take(5) {
            assert!(store_knows(&url, opaque), "tokens show finds {opaque}");
        }
        drop(restarted);
    });
}

/// An OBIE ATM 2.3 file of `count` ATMs whose identifications start with `prefix`.
fn atm_file(prefix: &str, count: usize) -> String {
    let atms: Vec<serde_json::Value> = (0..count)
        .map(|n| {
            serde_json::json!({
                "Identification": format!("{prefix}-{n:06}"),
                "ATMServices": ["CashWithdrawal", "Balance"],
                "SupportedCurrencies": ["MXN"],
                "Location": {"PostalAddress": {"TownName": "Mérida", "Country": "MX",
                    "GeoLocation": {"GeographicCoordinates": {"Latitude": "20.9674", "Longitude": "-89.5926"}}}}
            })
        })
        .collect();
    serde_json::json!({"meta": {}, "data": [{"Brand": [{"BrandName": "Banco", "ATM": atms}]}]}).to_string()
}

/// A wait-time CSV giving every branch `minutes`.
fn wait_time_file(minutes: u16) -> String {
    let mut csv = String::from("branchId,timeTaken\n");
    for branch in 0..100_000 {
        csv.push_str(&format!("{branch:05},{minutes}\n"));
    }
    csv
}

/// Runs an import and kills it with SIGKILL after `after` (if it is still running);
/// whether it finished first.
/// The arguments of `what import`: ATM imports here swap one whole set for another on
/// purpose, which the shrink guard would refuse.
fn import_args<'a>(what: &'a str, file: &'a Path) -> Vec<&'a str> {
    let mut args = vec![what, "import", file.to_str().unwrap()];
    if what == "atms" {
        args.push("--allow-shrink");
    }
    args
}

fn import_killed_after(url: &str, what: &str, file: &Path, after: Duration) -> bool {
    let mut import = crate::binary::branch_atm_command()
        .args(["--database-url", url])
        .args(import_args(what, file))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let finished = import.try_wait().unwrap().is_some();
    let _ = import.kill();
    let _ = import.wait();
    finished
}

/// Imports `files[0]`, then `files[1]` (timed), then the one not held each time, killed
/// at one of 20 points from 40 % to 97 % of the time a whole import takes (the write
/// transaction is the end of an import; before it comes reading and checking the file). After each kill,
/// `holds` reads the store and names the file whose whole content it holds, or `None`
/// for a mix, which fails the test. Returns the whole import's time and, per kill,
/// whether the store held the old file or the new one; `None` where the store under test
/// cannot be reached from the killed process (said).
async fn kill_imports<Held>(what: &str, files: [PathBuf; 2], holds: impl Fn(Store) -> Held) -> Option<String>
where
    Held: std::future::Future<Output = Option<usize>>,
{
    let (_kept, url) = fresh_store().await?;
    let import = |file: &Path| {
        let started = Instant::now();
        let import = cli(&url, &import_args(what, file));
        assert!(import.status.success(), "{}", said(&import));
        started.elapsed()
    };
    import(&files[0]);
    let whole = import(&files[1]);
    let mut held = 1;
    let mut outcomes = Vec::new();
    for percent in (40..100).step_by(3) {
        let next = 1 - held;
        let finished = import_killed_after(&url, what, &files[next], whole * percent / 100);
        let now_held = holds(Store::open(&url).await.unwrap()).await;
        assert!(now_held.is_some(), "{what} import killed at {percent} % of its time left a mix");
        assert!(!finished || now_held == Some(next), "an import that finished left its file's content");
        outcomes.push(if now_held == Some(next) { "new" } else { "old" });
        held = now_held.unwrap_or(held);
    }
    Some(format!("{what} import ({} ms whole) killed at 40 % to 97 % of that: {outcomes:?}", whole.as_millis()))
}

#[test]
fn an_atm_import_killed_at_any_point_leaves_the_old_set_or_the_new_one_never_a_mix() {
    run(async {
        let folder = tempfile::tempdir().unwrap();
        let sets = [("A", 15_000), ("B", 20_000)];
        let files = sets.map(|(prefix, count)| {
            let path = folder.path().join(format!("{prefix}.json"));
            std::fs::write(&path, atm_file(prefix, count)).unwrap();
            path
        });
        let figure = kill_imports("atms", files, |store| async move {
            let ids: BTreeSet<String> =
                store.view.atms().await.unwrap().atms.into_iter().map(|atm| atm.identification).collect();
            store.lifecycle.close().await;
            sets.iter().position(|(prefix, count)| {
                ids.len() == *count && ids.iter().all(|id| id.starts_with(&format!("{prefix}-")))
            })
        })
        .await;
        if let Some(figure) = figure {
            eprintln!("figure: {figure}");
        }
    });
}

#[test]
fn a_wait_time_import_killed_at_any_point_leaves_the_old_times_or_the_new_ones_never_a_mix() {
    run(async {
        let folder = tempfile::tempdir().unwrap();
        let minutes = [5, 7];
        let files = minutes.map(|minutes| {
            let path = folder.path().join(format!("{minutes}.csv"));
            std::fs::write(&path, wait_time_file(minutes)).unwrap();
            path
        });
        let figure = kill_imports("waittimes", files, |store| async move {
            let rows = store.wait_times.all().await.unwrap();
            store.lifecycle.close().await;
            let held: BTreeSet<u16> = rows.iter().map(|row| row.estimate.wait.minutes()).collect();
            let whole = rows.len() == 100_000 && held.len() == 1;
            minutes.iter().position(|m| whole && held.contains(m))
        })
        .await;
        if let Some(figure) = figure {
            eprintln!("figure: {figure}");
        }
    });
}

/// Queue events a system posted and was answered 200 for, when the service is killed
/// with SIGKILL in the middle of posts: every one is in the store after the restart.
#[test]
fn every_queue_event_answered_before_a_kill_9_is_in_the_store_after_the_restart() {
    use crate::system_keys::{SystemKey, assertion_claims};

    run(async {
        let Some((_kept, url)) = fresh_store().await else { return };
        let folder = tempfile::tempdir().unwrap();
        let key = SystemKey::ed25519("k");
        let jwks = folder.path().join("queue.jwks");
        std::fs::write(&jwks, serde_json::json!({"keys": [key.public_jwk()]}).to_string()).unwrap();
        let added = cli(
            &url,
            &["systems", "add", "queue-hq", "--jwks-file", jwks.to_str().unwrap(), "--scopes", "queue:write"],
        );
        assert!(added.status.success(), "{}", said(&added));
        let mut service = Service::start(&url, &[]).await;
        // The issuer the metadata names (the public base URL, not the listening address).
        let metadata: serde_json::Value = service
            .http
            .get(format!("{}/api/.well-known/oauth-authorization-server", service.address))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let issuer = metadata["issuer"].as_str().unwrap().to_owned();
        let assertion = key.sign(&assertion_claims("queue-hq", &issuer));
        let token: serde_json::Value = service
            .http
            .post(format!("{}/api/v1/token", service.address))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(
                form_urlencoded::Serializer::new(String::new())
                    .append_pair("grant_type", "client_credentials")
                    .append_pair("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
                    .append_pair("client_assertion", &assertion)
                    .finish(),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let token = token["access_token"].as_str().expect("a system token").to_owned();

        let at = time::OffsetDateTime::now_utc().format(&time::format_description::well_known::Rfc3339).unwrap();
        let pid = service.pid();
        let killer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            signal(pid, "KILL");
        });
        let posters: Vec<_> = (0..4)
            .map(|poster| {
                let (http, address, token, at) =
                    (service.http.clone(), service.address.clone(), token.clone(), at.clone());
                tokio::spawn(async move {
                    let mut answered = Vec::new();
                    for post in 0.. {
                        let ids: Vec<String> = (0..50).map(|n| format!("p{poster}-{post}-{n}")).collect();
                        let events: Vec<serde_json::Value> = ids
                            .iter()
                            .enumerate()
                            .map(|(n, id)| {
                                serde_json::json!({"eventId": id, "branchId": format!("{:05}", n % 10),
                                    "type": "TicketIssued", "at": at, "ticket": id})
                            })
                            .collect();
                        let answer = http
                            .post(format!("{address}/api/v1/branches/queue-events"))
                            .bearer_auth(&token)
                            .json(&serde_json::json!({"events": events}))
                            .send()
                            .await;
                        match answer {
                            Ok(answer) if answer.status() == 200 => {
                                let body: serde_json::Value = answer.json().await.unwrap_or_default();
                                if body["accepted"] == 50 {
                                    answered.extend(ids);
                                }
                            }
                            _ => break,
                        }
                    }
                    answered
                })
            })
            .collect();
        killer.await.unwrap();
        let mut answered = BTreeSet::new();
        for poster in posters {
            answered.extend(poster.await.unwrap());
        }
        service.kill();
        eprintln!("figure: kill -9 under queue event posts: {} events answered 200", answered.len());
        assert!(answered.len() > 500, "the posts got answers before the kill: {}", answered.len());

        let restarted = Service::start(&url, &[]).await;
        let store = Store::open(&url).await.unwrap();
        let an_hour_ago = domain::posted::EventTime::from_unix_seconds(
            u64::try_from(time::OffsetDateTime::now_utc().unix_timestamp() - 3600).unwrap(),
        );
        let stored: BTreeSet<String> = store
            .queue_events
            .happened_since(an_hour_ago)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.id.as_str().to_owned())
            .collect();
        let missing = answered.difference(&stored).count();
        assert_eq!(missing, 0, "{missing} of {} events answered before the kill are not in the store", answered.len());
        drop(restarted);
    });
}
