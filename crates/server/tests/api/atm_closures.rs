//! Closures announced ahead through the real service: the notice, the closure shown in
//! the state before its date, the ATM gone from every listing at its date (with no import
//! that day) and `Closed` in its state, a cancelled closure reopening it, and an import
//! that would drop a closing ATM refused whole.

use std::sync::Arc;

use domain::atm_closure::{ClosureRefusal, day_of, day_start};
use domain::atm_state::AtmId;
use domain::ports::Clock;
use domain::services::atm_closures::{AnnounceClosureError, ClosureAdmin};
use domain::services::imports::{AtmFeed, DataImport, ImportAtmsError, ImportRules, ShrinkRefusal};
use domain::testing::ManualClock;
use domain::text::Explanation;
use serde_json::{Value, json};

use crate::atm_changes::{Copy, follow};
use crate::atm_states::{atms_offering, states_of};
use crate::helpers::{Session, TestApp, eventually};

fn said(text: &str) -> Explanation {
    Explanation::parse(text).unwrap()
}

/// The operators' closure commands on the app's store, at `clock`'s time.
async fn closures(app: &TestApp, clock: Arc<dyn Clock>) -> ClosureAdmin {
    let store = app.store().await;
    ClosureAdmin::new(store.closures, store.atms, clock)
}

/// Every ATM a listing's first page shows, and its `TotalResults`.
async fn listed(app: &TestApp, session: &Session, path: &str) -> (Vec<String>, u64) {
    let answer = app.get_atms(session, path, &[]).await;
    assert_eq!(answer.status(), 200, "{path}");
    let page: Value = answer.json().await.unwrap();
    let ids = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|brand| brand["ATM"].as_array().unwrap().iter())
        .map(|atm| atm["Identification"].as_str().unwrap().to_owned())
        .collect();
    (ids, page["meta"]["TotalResults"].as_u64().unwrap())
}

#[tokio::test]
async fn an_atm_closes_at_its_date_everywhere_at_once_and_a_cancelled_closure_reopens_it() {
    let clock = Arc::new(ManualClock::at(time::OffsetDateTime::now_utc()));
    let app = TestApp::builder()
        .clock(clock.clone())
        .settings(|settings| settings.view.refresh_interval_ms = 50)
        .start()
        .await;
    let session = app.session().await;
    let (atm, lat, lon) = atms_offering(&app, &session, "CashWithdrawal").await.remove(0);
    let near = format!("/api/v1/atms?latitude={lat}&longitude={lon}");
    let (_, total) = listed(&app, &session, "/api/v1/atms").await;
    let mut copy = Copy::new();
    let (start, _) = follow(&app, &session, &mut copy, None, 1_000).await;
    let admin = closures(&app, clock.clone()).await;
    let tomorrow = day_of(clock.unix_now()).next_day().unwrap();
    let id = AtmId::parse(&atm).unwrap();

    let refused = admin.announce(id.clone(), tomorrow, said("The shop closes"), None).await.unwrap_err();
    assert!(matches!(refused, AnnounceClosureError::Refused(ClosureRefusal::ShortNotice { days: 1, .. })), "{refused}");
    admin.announce(id.clone(), tomorrow, said("The shop closes"), Some(said("The lease ended"))).await.unwrap();
    let closure = json!({"closesOn": tomorrow.to_string(), "explanation": "The shop closes"});
    let announced = eventually(|| async {
        let state = states_of(&app, &session, &[&atm]).await.remove(0);
        (state["closure"] == closure).then_some(state)
    })
    .await
    .expect("the closure is shown in the ATM's state within a refresh");
    assert_ne!(announced["state"], "Closed", "announced, not yet closed");
    assert!(listed(&app, &session, &near).await.0.contains(&atm), "listed until its date");

    // Its date comes: no import, no command; the instances see the day change.
    let midnight = day_start(tomorrow);
    clock.advance(std::time::Duration::from_secs((midnight - clock.unix_now() + 1).unsigned_abs()));
    let session = app.session().await;
    let closed = eventually(|| async {
        let state = states_of(&app, &session, &[&atm]).await.remove(0);
        (state["state"] == "Closed").then_some(state)
    })
    .await
    .expect("Closed from its date");
    assert_eq!(closed["since"], format!("{tomorrow}T00:00:00Z"));
    assert_eq!(closed["closure"], closure);
    assert_eq!(closed["unavailableServices"], json!([]));
    let (ids, after) = listed(&app, &session, "/api/v1/atms").await;
    assert_eq!(after, total - 1, "gone from the listing");
    assert!(!ids.contains(&atm));
    assert!(!listed(&app, &session, &near).await.0.contains(&atm), "gone from near-me");
    let page: Value = app.get_atms(&session, "/api/v1/atms", &[]).await.json().await.unwrap();
    let updated = page["meta"]["LastUpdated"].as_str().unwrap();
    let updated = time::OffsetDateTime::parse(updated, &time::format_description::well_known::Rfc3339).unwrap();
    assert_eq!(updated.unix_timestamp(), midnight, "the set changed at midnight");
    let states: Value = app.get_atms(&session, "/api/v1/atms/state", &[]).await.json().await.unwrap();
    assert_eq!(states["meta"]["TotalResults"].as_u64(), Some(total - 1), "the state pages follow the ATM pages");

    assert!(admin.cancel(&id).await.unwrap());
    let reopened = eventually(|| async {
        let (_, now) = listed(&app, &session, "/api/v1/atms").await;
        (now == total).then_some(())
    })
    .await;
    assert!(reopened.is_some(), "a cancelled closure reopens the ATM");
    let state = states_of(&app, &session, &[&atm]).await.remove(0);
    assert!(state.get("closure").is_none() && state["state"] != "Closed", "{state}");

    // The feed told it all, in order: announced, closed at midnight, reopened.
    let (_, read) = follow(&app, &session, &mut copy, Some(start), 1_000).await;
    let told: Vec<(&str, &str)> = (read.iter())
        .filter(|change| change["atmId"] == atm.as_str())
        .map(|change| (change["change"].as_str().unwrap(), change["state"]["state"].as_str().unwrap_or("")))
        .collect();
    let first_state = told[0];
    assert_eq!(first_state.0, "state");
    assert_eq!(&told[1..], [("removed", ""), ("upserted", ""), ("state", first_state.1)], "{told:?}");
    assert_eq!(read[0]["state"]["closure"], closure);
    assert!(copy.values().any(|record| record["Identification"] == atm.as_str()), "back in the copy");
}

#[tokio::test]
async fn an_import_that_would_drop_an_atm_before_its_closure_is_refused_whole_naming_it() {
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 50).start().await;
    let store = app.store().await;
    let clock: Arc<dyn Clock> = Arc::new(adapters::system::SystemClock);
    let set = store.atms.current().await.unwrap();
    let atm = set.atms[0].identification.clone();
    let later = day_of(clock.unix_now()) + time::Duration::days(100);
    let admin = ClosureAdmin::new(store.closures.clone(), store.atms.clone(), Arc::clone(&clock));
    admin.announce(AtmId::parse(&atm).unwrap(), later, said("The branch moves"), None).await.unwrap();
    let unknown = admin.announce(AtmId::parse("NO-SUCH-ATM").unwrap(), later, said("x"), None).await.unwrap_err();
    assert_eq!(unknown.to_string(), "no ATM of the set has Identification NO-SUCH-ATM");

    let imports = DataImport::new(store.wait_times.clone(), store.atms.clone(), store.imports.clone(), clock);
    let without: Vec<_> = set.atms.iter().filter(|stored| stored.identification != atm).cloned().collect();
    let feed = AtmFeed { atms: without, published: None };
    let rules = ImportRules { allow_shrink: true, ..ImportRules::default() };
    let refused = imports.atms(&feed, rules).await.unwrap_err();
    let ImportAtmsError::Refused(ShrinkRefusal::Closing { atm: named, closes_on, others: 0 }) = &refused else {
        panic!("refused by the closure guard: {refused}");
    };
    assert_eq!((named, *closes_on), (&atm, later));
    let after = store.atms.current().await.unwrap();
    assert_eq!((after.atms, after.last_updated), (set.atms, set.last_updated), "nothing changed");
}

#[test]
fn the_closure_commands_keep_the_notice_list_cancel_and_stop_an_import_dropping_the_atm() {
    use crate::cli::{branch_atm, fresh_database, stderr, stdout};
    if !crate::store::other_processes_reach_the_store("the CLI binary") {
        return;
    }
    let fresh = fresh_database();
    let url = fresh.url.as_str();
    assert!(branch_atm(url, &["migrate"]).status.success());
    let file = fresh.folder.path().join("atms.json");
    let records: Vec<Value> = (1..=3)
        .map(|n| {
            json!({"Identification": format!("C{n}"), "SupportedCurrencies": ["GBP"],
                "Location": {"PostalAddress": {"TownName": "Leeds", "Country": "GB"}}})
        })
        .collect();
    let feed = |atms: &[Value]| {
        json!({"meta": {"LastUpdated": "2026-11-01T00:00:00Z", "TotalResults": atms.len(), "Agreement": "x",
            "License": "x", "TermsOfUse": "x"},
            "data": [{"Brand": [{"BrandName": "Leeds Bank", "ATM": atms}]}]})
        .to_string()
    };
    std::fs::write(&file, feed(&records)).unwrap();
    let imported = branch_atm(url, &["atms", "import", file.to_str().unwrap()]);
    assert!(imported.status.success(), "{}", stderr(&imported));

    let today = day_of(time::OffsetDateTime::now_utc().unix_timestamp());
    let ahead = |days: i64| (today + time::Duration::days(days)).to_string();
    let short = branch_atm(url, &["atms", "closure", "C2", "--closes-on", &ahead(83), "--explanation", "Moving"]);
    assert!(!short.status.success());
    assert!(
        stderr(&short).contains(&format!("at least 84 days ahead (on or after {})", ahead(84))),
        "{}",
        stderr(&short)
    );
    let unknown = branch_atm(url, &["atms", "closure", "ZZ", "--closes-on", &ahead(90), "--explanation", "Moving"]);
    assert!(stderr(&unknown).contains("no ATM of the set has Identification ZZ"), "{}", stderr(&unknown));
    let bad_date = branch_atm(url, &["atms", "closure", "C2", "--closes-on", "1 March", "--explanation", "Moving"]);
    assert!(stderr(&bad_date).contains("--closes-on \"1 March\" is not valid"), "{}", stderr(&bad_date));
    let announced = branch_atm(
        url,
        &["atms", "closure", "C2", "--closes-on", &ahead(30), "--explanation", "Moving", "--short-notice", "Flood"],
    );
    assert!(announced.status.success(), "{}", stderr(&announced));
    assert!(stdout(&announced).contains(&format!("ATM C2 closes on {}", ahead(30))), "{}", stdout(&announced));
    let listed = branch_atm(url, &["atms", "closures"]);
    assert_eq!(stdout(&listed), format!("C2\t{}\tannounced\tMoving\tFlood\n", ahead(30)));

    std::fs::write(&file, feed(&[records[0].clone(), records[2].clone()])).unwrap();
    let dropping = branch_atm(url, &["atms", "import", file.to_str().unwrap(), "--allow-shrink"]);
    assert!(!dropping.status.success(), "refused, exit status non-zero");
    assert!(stderr(&dropping).contains("the feed drops ATM C2"), "{}", stderr(&dropping));
    let export = branch_atm(url, &["atms", "export"]);
    assert!(stdout(&export).contains("\"C2\""), "nothing changed");

    let cancelled = branch_atm(url, &["atms", "closure", "C2", "--cancel"]);
    assert!(cancelled.status.success(), "{}", stderr(&cancelled));
    let again = branch_atm(url, &["atms", "closure", "C2", "--cancel"]);
    assert!(stderr(&again).contains("no closure is announced for ATM C2"), "{}", stderr(&again));
    assert_eq!(stdout(&branch_atm(url, &["atms", "closures"])), "");
    let dropped = branch_atm(url, &["atms", "import", file.to_str().unwrap(), "--allow-shrink"]);
    assert!(dropped.status.success(), "without its closure it may go: {}", stderr(&dropped));
}
