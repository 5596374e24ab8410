//! The ATMs' change feed through the real service: followed from the start it gives the
//! set `/api/v1/atms` serves; imports, state events and closures follow in commit order;
//! a cursor holds on another instance and after a restart; an old cursor is 410; and a
//! reader following while writers commit at once ends with the set served.

use std::collections::BTreeMap;
use std::sync::Arc;

use domain::atm_catalog::StoredAtm;
use domain::atm_feed::{FeedCursor, Position};
use domain::ports::AtmSetEdit;
use serde_json::{Value, json};

use crate::helpers::{Session, TestApp, assert_error, eventually};
use crate::systems::{post_events_to, seconds_from_now as at, system_token};

/// An app copy of the ATMs: (brand, id) → record.
pub(crate) type Copy = BTreeMap<(String, String), Value>;

/// One page of the feed: its changes and `next`.
async fn feed_page(app: &TestApp, session: &Session, query: &str) -> (Vec<Value>, String) {
    let answer = app.get_atms(session, &format!("/api/v1/atms/changes{query}"), &[]).await;
    assert_eq!(answer.status(), 200, "{query}");
    assert_eq!(answer.headers()["cache-control"], "no-store");
    let body: Value = answer.json().await.unwrap();
    assert!(body["links"]["Self"].as_str().unwrap().ends_with(&format!("/api/v1/atms/changes{query}")), "{body}");
    let changes = body["data"]["changes"].as_array().unwrap().clone();
    (changes, body["data"]["next"].as_str().unwrap().to_owned())
}

/// Follows the feed from `since` (the start when `None`) to its end, `limit` a page,
/// applying its changes to `copy`: the cursor at the end, and the changes read.
pub(crate) async fn follow(
    app: &TestApp,
    session: &Session,
    copy: &mut Copy,
    since: Option<String>,
    limit: usize,
) -> (String, Vec<Value>) {
    let mut cursor = since;
    let mut read = Vec::new();
    loop {
        let query = match &cursor {
            None => format!("?limit={limit}"),
            Some(cursor) => format!("?since={cursor}&limit={limit}"),
        };
        let (changes, next) = feed_page(app, session, &query).await;
        for change in &changes {
            let key = (change["brand"].as_str().unwrap_or("").to_owned(), change["atmId"].as_str().unwrap().to_owned());
            match change["change"].as_str().unwrap() {
                "upserted" => {
                    copy.insert(key, change["record"].clone());
                }
                "removed" => {
                    copy.remove(&key);
                }
                "state" => assert!(change["state"]["state"].is_string(), "{change}"),
                other => panic!("unknown change {other}"),
            }
        }
        let empty = changes.is_empty();
        read.extend(changes);
        let done = empty && cursor.as_deref() == Some(next.as_str());
        cursor = Some(next);
        if done {
            return (cursor.unwrap(), read);
        }
    }
}

/// The set `/api/v1/atms` serves, every page.
async fn served(app: &TestApp, session: &Session) -> Copy {
    let mut set = Copy::new();
    let mut path = "/api/v1/atms".to_owned();
    loop {
        let page: Value = app.get_atms(session, &path, &[]).await.json().await.unwrap();
        for brand in page["data"].as_array().unwrap() {
            for atm in brand["ATM"].as_array().unwrap() {
                let key = (
                    brand["BrandName"].as_str().unwrap().to_owned(),
                    atm["Identification"].as_str().unwrap().to_owned(),
                );
                set.insert(key, atm.clone());
            }
        }
        match page["link"]["Next"].as_str() {
            // The links name the public base URL: the same path on the test's address.
            Some(next) => path = next[next.find("/api/").unwrap()..].to_owned(),
            None => return set,
        }
    }
}

fn app_fast() -> crate::helpers::TestAppBuilder<'static> {
    TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 50)
}

/// A record of the set with its note replaced, as an import would change it.
fn changed(atm: &StoredAtm, note: &str) -> StoredAtm {
    let mut record: Value = serde_json::from_str(&atm.record).unwrap();
    record["Note"] = json!([note]);
    StoredAtm { record: record.to_string(), ..atm.clone() }
}

#[tokio::test]
async fn followed_from_the_start_the_feed_gives_the_set_served_then_every_change_in_order() {
    let app = app_fast().start().await;
    let session = app.session().await;
    let mut copy = Copy::new();
    let (cursor, _) = follow(&app, &session, &mut copy, None, 7).await;
    let set = served(&app, &session).await;
    assert!(set.len() > 7, "several pages");
    assert_serves(&app, &session, &copy).await;

    // An import changes one record and drops another; the monitoring reports a third.
    let store = app.store().await;
    let stored = store.atms.current().await.unwrap().atms;
    let (first, second, third) = (&stored[0], &stored[1], &stored[2]);
    let edit = AtmSetEdit::Apply {
        upserts: vec![changed(first, "Moved to the entrance")],
        removals: vec![(second.brand.clone(), second.identification.clone())],
    };
    store.atms.edit(&mut |_| edit.clone(), crate::helpers::now()).await.unwrap();
    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let event = json!({"eventId": "f-1", "atmId": third.identification, "at": at(-1.0), "state": "OutOfService"});
    assert_eq!(post_events_to(&app, "/api/v1/atms/state-events", &token, &[event]).await.status(), 200);

    let (_, read) = eventually(|| async {
        let mut again = copy.clone();
        let (next, read) = follow(&app, &session, &mut again, Some(cursor.clone()), 2).await;
        (read.len() == 3).then_some((next, read))
    })
    .await
    .expect("the three changes, within a refresh");
    let kinds: Vec<(&str, &str)> =
        read.iter().map(|c| (c["change"].as_str().unwrap(), c["atmId"].as_str().unwrap())).collect();
    assert_eq!(
        kinds,
        [
            ("upserted", first.identification.as_str()),
            ("removed", second.identification.as_str()),
            ("state", third.identification.as_str())
        ],
        "in commit order"
    );
    assert_eq!(read[0]["record"]["Note"], json!(["Moved to the entrance"]));
    assert_eq!(read[2]["state"]["state"], "OutOfService");
    follow(&app, &session, &mut copy, Some(cursor), 2).await;
    assert_serves(&app, &session, &copy).await;
}

/// Asserts that `copy` is, or soon is (the view's next refresh), the set served.
async fn assert_serves(app: &TestApp, session: &Session, copy: &Copy) {
    let same = eventually(|| async { (served(app, session).await == *copy).then_some(()) }).await;
    if same.is_none() {
        let set = served(app, session).await;
        let differ: Vec<&(String, String)> =
            set.keys().chain(copy.keys()).filter(|key| set.get(*key) != copy.get(*key)).collect();
        let first = differ[0];
        panic!(
            "the copy followed is not the set served: {} ATMs differ, first {first:?}: served {:?}, followed {:?}",
            differ.len(),
            set.get(first).map(Value::to_string),
            copy.get(first).map(Value::to_string)
        );
    }
}

#[tokio::test]
async fn a_cursor_holds_on_another_instance_after_a_restart_and_an_old_one_is_410() {
    let app = app_fast().start().await;
    let session = app.session().await;
    let mut copy = Copy::new();
    let (cursor, _) = follow(&app, &session, &mut copy, None, 500).await;
    let store = app.store().await;
    let stored = store.atms.current().await.unwrap().atms;
    let edit = AtmSetEdit::Apply { upserts: vec![changed(&stored[0], "Second")], removals: vec![] };
    store.atms.edit(&mut |_| edit.clone(), crate::helpers::now()).await.unwrap();

    // Another instance, started after the change (as a restart is), on the same store.
    let other = app_fast().on_store(&app.database_url).start().await;
    let there = other.session().await;
    let (changes, next) = feed_page(&other, &there, &format!("?since={cursor}")).await;
    assert_eq!(changes.len(), 1, "the change after the cursor, and only it");
    assert_eq!(changes[0]["record"]["Note"], json!(["Second"]));
    let (changes, again) = feed_page(&app, &session, &format!("?since={next}")).await;
    assert!(changes.is_empty() && again == next, "the next cursor holds on the first instance too");

    // Past the retention the changes go: the old cursor is told to start again.
    store.changes.forget_before(crate::helpers::now() + 1).await.unwrap();
    let gone = eventually(|| async {
        let answer = app.get_atms(&session, &format!("/api/v1/atms/changes?since={cursor}"), &[]).await;
        (answer.status() == 410).then_some(answer)
    })
    .await
    .expect("410 once the floor passed the cursor");
    let body = assert_error(gone, 410, "cursorExpired", Some("since")).await;
    assert!(body["details"].as_str().unwrap().contains("start again without since"), "{body}");
    let (_, latest) = feed_page(&app, &session, "?limit=1000").await;
    assert!(!latest.is_empty());

    let foreign = format!("l.{}.1", "f".repeat(32));
    for (since, status) in [(foreign.as_str(), 410), ("not-a-cursor", 400), ("l.ab.-3", 400)] {
        let answer = app.get_atms(&session, &format!("/api/v1/atms/changes?since={since}"), &[]).await;
        assert_eq!(answer.status(), status, "{since}");
    }
    for limit in ["0", "1001", "x"] {
        let answer = app.get_atms(&session, &format!("/api/v1/atms/changes?limit={limit}"), &[]).await;
        assert_error(answer, 400, "invalidRequest", Some("limit")).await;
    }
}

#[tokio::test]
async fn a_reader_following_while_imports_and_state_events_commit_at_once_ends_with_the_set_served() {
    let app = Arc::new(app_fast().start().await);
    let session = app.session().await;
    let mut copy = Copy::new();
    let (mut cursor, _) = follow(&app, &session, &mut copy, None, 500).await;
    let store = app.store().await;
    let stored = store.atms.current().await.unwrap().atms;
    let token = system_token(&app, "atm-monitoring", "atm:write").await;
    let mut writers = tokio::task::JoinSet::new();
    for round in 0..8 {
        let (atms, record) =
            (Arc::clone(&store.atms), changed(&stored[round % stored.len()], &format!("round {round}")));
        writers.spawn(async move {
            let edit = AtmSetEdit::Apply { upserts: vec![record], removals: vec![] };
            atms.edit(&mut |_| edit.clone(), crate::helpers::now()).await.unwrap();
        });
        let (app, token) = (Arc::clone(&app), token.clone());
        let atm = stored[(round + 3) % stored.len()].identification.clone();
        writers.spawn(async move {
            let event = json!({"eventId": format!("w-{round}"), "atmId": atm, "at": at(-1.0), "state": "InService"});
            assert_eq!(post_events_to(&app, "/api/v1/atms/state-events", &token, &[event]).await.status(), 200);
        });
    }
    // Read while they write.
    let mut states = 0;
    while !writers.is_empty() {
        let (next, read) = follow(&app, &session, &mut copy, Some(cursor.clone()), 3).await;
        states += read.iter().filter(|c| c["change"] == "state").count();
        cursor = next;
        if let Some(done) = writers.try_join_next() {
            done.unwrap();
        }
    }
    // Every instance serves the feed as its view holds it, at most a refresh behind the
    // store: follow until the last change written is read.
    let head = store.changes.since(i64::MAX, 0).await.unwrap().head;
    let last = Position::Log { after: head };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline && FeedCursor::parse(&cursor).unwrap().position != last {
        let (next, read) = follow(&app, &session, &mut copy, Some(cursor.clone()), 3).await;
        states += read.iter().filter(|c| c["change"] == "state").count();
        cursor = next;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(states, 8, "every state change read once");
    assert_serves(&app, &session, &copy).await;
}
