//! ATM and wait-time imports as real feeds come: HSBC UK's published v2.2 file
//! (`tests/data/`: HSBC UK's published ATM feed of 2024-01-21), files with three-letter languages and
//! four-letter codes, cut and empty feeds, identical re-imports, a round trip through
//! `atms export`, and records that are valid but suspicious.

use serde_json::{Value, json};

use crate::cli::{branch_atm, fresh_database, stderr, stdout};
use crate::helpers::TestApp;

/// HSBC UK's ATM feed of 2024-01-21, v2.2: 780 ATMs of one brand.
const HSBC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hsbc-uk-v2.2-2024-01-21.json");

fn hsbc() -> Value {
    serde_json::from_str(&std::fs::read_to_string(HSBC).unwrap()).unwrap()
}

/// The HSBC file with its ATMs replaced by `change` of them.
fn hsbc_with(change: impl FnOnce(&mut Vec<Value>)) -> Value {
    let mut file = hsbc();
    let atms = file["data"][0]["Brand"][0]["ATM"].as_array_mut().unwrap();
    change(atms);
    let count = atms.len();
    file["meta"]["TotalResults"] = json!(count);
    file
}

fn write(folder: &std::path::Path, name: &str, file: &Value) -> String {
    let path = folder.join(name);
    std::fs::write(&path, file.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

fn import(url: &str, path: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["atms", "import", path];
    args.extend_from_slice(extra);
    branch_atm(url, &args)
}

/// The stored ATMs, as the export writes them.
fn exported(url: &str) -> Value {
    let export = branch_atm(url, &["atms", "export"]);
    assert!(export.status.success(), "{}", stderr(&export));
    serde_json::from_slice(&export.stdout).unwrap()
}

#[test]
fn a_real_v2_2_feed_imports_and_the_same_feed_again_changes_nothing() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let fresh = fresh_database();
    let first = import(&fresh.url, HSBC, &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(stdout(&first).contains("0 ATMs stored, 780 in the file: 780 added"), "{}", stdout(&first));
    let stored = exported(&fresh.url);
    let last_updated = stored["meta"]["LastUpdated"].clone();

    // The same records in another order, under the next day's date: nothing moves.
    let mut next_day = hsbc_with(|atms| atms.reverse());
    next_day["meta"]["LastUpdated"] = json!("2024-01-22T06:20:01.002Z");
    let path = write(fresh.folder.path(), "next-day.json", &next_day);
    let again = import(&fresh.url, &path, &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("unchanged"), "{}", stdout(&again));
    assert_eq!(exported(&fresh.url)["meta"]["LastUpdated"], last_updated, "the set keeps its date");
}

#[tokio::test]
async fn an_identical_import_keeps_the_served_etag_and_last_modified() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let app = TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 100).start().await;
    assert!(import(&app.database_url, HSBC, &["--allow-shrink"]).status.success());
    let session = app.session().await;
    let first = crate::helpers::eventually(|| async {
        let page = app.get_atms(&session, "/api/v1/atms", &[]).await;
        let body: Value = page.json().await.unwrap();
        (body["meta"]["TotalResults"] == 780).then_some(())
    })
    .await;
    assert!(first.is_some(), "the HSBC set is served");
    let page = app.get_atms(&session, "/api/v1/atms", &[]).await;
    let (etag, modified) = (page.headers()["etag"].clone(), page.headers()["last-modified"].clone());
    let body: Value = page.json().await.unwrap();
    assert_eq!(body["data"][0]["ATM"][0]["SupportedLanguages"][0].as_str().map(str::len), Some(2));

    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let again = import(&app.database_url, HSBC, &[]);
    assert!(stdout(&again).contains("unchanged"), "{}", stdout(&again));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let page = app.get_atms(&session, "/api/v1/atms", &[]).await;
    assert_eq!((&page.headers()["etag"], &page.headers()["last-modified"]), (&etag, &modified));
}

#[test]
fn three_letter_languages_and_four_letter_codes_are_stored_as_atm_2_3() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let fresh = fresh_database();
    let file = hsbc_with(|atms| {
        atms.truncate(3);
        atms[0]["SupportedLanguages"] = json!(["eng", "spa", "ger", "fre"]);
        atms[1]["ATMServices"] = json!(["ATCW", "ATBA", "ATPC"]);
        atms[1]["Accessibility"] = json!(["ATWA", "ATLA"]);
        atms[2]["Location"]["LocationCategory"] = json!(["ATBE"]);
    });
    let imported = import(&fresh.url, &write(fresh.folder.path(), "v22.json", &file), &[]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let stored = exported(&fresh.url);
    let atms = &stored["data"][0]["Brand"][0]["ATM"];
    let by_id = |id: &Value| atms.as_array().unwrap().iter().find(|atm| &atm["Identification"] == id).unwrap().clone();
    let source = file["data"][0]["Brand"][0]["ATM"].as_array().unwrap();
    assert_eq!(by_id(&source[0]["Identification"])["SupportedLanguages"], json!(["en", "es", "de", "fr"]));
    assert_eq!(by_id(&source[1]["Identification"])["ATMServices"], json!(["CashWithdrawal", "Balance", "PINChange"]));
    assert_eq!(by_id(&source[1]["Identification"])["Accessibility"], json!(["WheelchairAccess", "LevelAccess"]));
    assert_eq!(by_id(&source[2]["Identification"])["Location"]["LocationCategory"], json!(["BranchExternal"]));

    let bad = hsbc_with(|atms| {
        atms.truncate(5);
        atms[4]["SupportedLanguages"] = json!(["eng", "cmn"]);
    });
    let refused = import(&fresh.url, &write(fresh.folder.path(), "cmn.json", &bad), &[]);
    assert!(!refused.status.success());
    let said = stderr(&refused);
    assert!(said.contains("data[0].Brand[0].ATM[4].SupportedLanguages") && said.contains("cmn"), "{said}");
}

#[test]
fn a_cut_feed_is_refused_with_its_numbers_and_applied_only_when_allowed() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let fresh = fresh_database();
    assert!(import(&fresh.url, HSBC, &[]).status.success());
    // A day the feed was cut to 61 of its ATMs, TotalResults matching the cut.
    let cut = write(fresh.folder.path(), "cut.json", &hsbc_with(|atms| atms.truncate(61)));

    let dry = import(&fresh.url, &cut, &["--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(stdout(&dry).contains("780 ATMs stored, 61 in the file: 0 added, 719 removed"), "{}", stdout(&dry));
    assert!(stdout(&dry).contains("would be refused"), "{}", stdout(&dry));

    let refused = import(&fresh.url, &cut, &[]);
    assert!(!refused.status.success());
    assert_eq!(stderr(&refused).lines().count(), 1, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("719 of the 780") && stderr(&refused).contains("leaving 61"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(exported(&fresh.url)["meta"]["TotalResults"], 780, "nothing changed");

    let allowed = import(&fresh.url, &cut, &["--allow-shrink"]);
    assert!(allowed.status.success(), "{}", stderr(&allowed));
    assert_eq!(exported(&fresh.url)["meta"]["TotalResults"], 61);
}

#[test]
fn an_empty_feed_dated_1970_is_refused() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let fresh = fresh_database();
    assert!(import(&fresh.url, HSBC, &[]).status.success());
    let mut empty = hsbc();
    empty["meta"]["LastUpdated"] = json!("1970-01-01T00:00:00.000Z");
    empty["meta"]["TotalResults"] = json!(0);
    empty["data"] = json!([]);
    let refused = import(&fresh.url, &write(fresh.folder.path(), "1970.json", &empty), &[]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("before 2000"), "{}", stderr(&refused));
    // Undated, it is still a feed that would leave no ATM.
    empty["meta"].as_object_mut().unwrap().remove("LastUpdated");
    let refused = import(&fresh.url, &write(fresh.folder.path(), "empty.json", &empty), &[]);
    assert!(stderr(&refused).contains("holds no ATM"), "{}", stderr(&refused));
    assert_eq!(exported(&fresh.url)["meta"]["TotalResults"], 780);
}

#[test]
fn an_export_imports_back_unchanged() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let fresh = fresh_database();
    assert!(import(&fresh.url, HSBC, &[]).status.success());
    let path = fresh.folder.path().join("export.json");
    let export = branch_atm(&fresh.url, &["atms", "export", path.to_str().unwrap()]);
    assert!(stdout(&export).contains("exported 780 ATMs"), "{}", stdout(&export));
    let back = import(&fresh.url, path.to_str().unwrap(), &[]);
    assert!(back.status.success(), "{}", stderr(&back));
    assert!(stdout(&back).contains("unchanged"), "{}", stdout(&back));
}

#[test]
fn suspicious_records_are_reported_and_still_imported() {
    let fresh = fresh_database();
    let file = hsbc_with(|atms| {
        atms.truncate(6);
        // An ATM of another address put on the point of the first (three machines of one
        // branch share it already, which is no warning); one moved out of its country.
        let point = atms[0]["Location"]["PostalAddress"]["GeoLocation"].clone();
        atms[3]["Location"]["PostalAddress"]["GeoLocation"] = point;
        atms[5]["Location"]["PostalAddress"]["GeoLocation"]["GeographicCoordinates"]["Longitude"] = json!("-45.5");
    });
    let imported = import(&fresh.url, &write(fresh.folder.path(), "odd.json", &file), &[]);
    assert!(imported.status.success(), "{}", stderr(&imported));
    let said = stdout(&imported);
    assert!(said.contains("ATMs at 2 different addresses share the point (51.1488168, 0.8735929)"), "{said}");
    assert!(said.contains("outside its country GB"), "{said}");
    assert!(said.contains("6 added"), "{said}");
}

#[test]
fn a_wait_time_file_imported_twice_changes_nothing_the_second_time() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let fresh = fresh_database();
    let path = fresh.folder.path().join("waits.csv");
    std::fs::write(
        &path,
        "branchId,timeTaken,estimatedAt\n00001,5,2026-11-24T08:00:00Z\n00002,7,2026-11-24T08:00:00Z\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let first = branch_atm(&fresh.url, &["waittimes", "import", path]);
    assert!(stdout(&first).contains("2 added, 0 changed, 0 unchanged"), "{}", stdout(&first));
    let again = branch_atm(&fresh.url, &["waittimes", "import", path]);
    assert!(stdout(&again).contains("unchanged"), "{}", stdout(&again));
    assert!(stdout(&again).contains("0 added, 0 changed, 2 unchanged"), "{}", stdout(&again));
    std::fs::write(
        fresh.folder.path().join("waits.csv"),
        "branchId,timeTaken,estimatedAt\n00001,9,2026-11-24T09:00:00Z\n",
    )
    .unwrap();
    let dry = branch_atm(&fresh.url, &["waittimes", "import", path, "--dry-run"]);
    assert!(stdout(&dry).contains("dry run") && stdout(&dry).contains("0 added, 1 changed"), "{}", stdout(&dry));
}
