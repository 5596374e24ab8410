//! GET /api/v1/atms.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use crate::helpers::{Session, TestApp, assert_security_headers, eventually};

/// SHA-256 of the OBIE ATM 2.3.0 swagger file as OBIE publishes it (docs/reference/README.md).
const REFERENCE_SHA256: &str = "33f102f74998c18859d797090f94baf660683c114f5ed85b76782f593a30954d";

/// The OBIE ATM item and brand-name schemas, read from the reference file itself: the
/// repository's byte-for-byte copy, checked by hash.
fn obie_schemas() -> (jsonschema::Validator, jsonschema::Validator) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let bytes = std::fs::read(format!("{root}/docs/reference/obie-atml.2.3.0.swagger.json")).unwrap();
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &bytes);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, REFERENCE_SHA256, "docs/reference holds the reference file unchanged");
    let reference: Value = serde_json::from_slice(&bytes).unwrap();
    let brand = &reference["paths"]["/atms"]["get"]["responses"]["200"]["schema"]["properties"]["data"]["items"]["properties"]
        ["Brand"]["items"];
    let atm = jsonschema::draft4::new(&brand["properties"]["ATM"]["items"]).unwrap();
    let brand_name = jsonschema::draft4::new(&brand["properties"]["BrandName"]).unwrap();
    (atm, brand_name)
}

/// Asserts an OBIE error body for `status`, in English.
async fn assert_obie_error(response: reqwest::Response, status: u16, title: &str) {
    assert_eq!(response.status(), status);
    assert_security_headers(&response);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], status.to_string(), "{body}");
    assert_eq!(body["title"], title, "{body}");
    assert!(body["description"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
    assert_eq!(body.as_object().unwrap().len(), 3, "exactly status, title, description: {body}");
}

fn atms_of(page: &Value) -> Vec<&Value> {
    page["data"].as_array().unwrap().iter().flat_map(|brand| brand["ATM"].as_array().unwrap()).collect()
}

async fn json(response: reqwest::Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[tokio::test]
async fn the_first_page_has_the_envelope_links_and_validators() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let response = app.get_atms(&session, "/api/v1/atms", &[]).await;
    assert_eq!(response.status(), 200);
    assert_security_headers(&response);
    let headers = response.headers().clone();
    let etag = headers["etag"].to_str().unwrap();
    assert!(etag.starts_with('"') && !etag.starts_with("W/"), "a strong ETag: {etag}");
    assert!(headers.contains_key("last-modified"));
    assert_eq!(
        headers["cache-control"], "private, max-age=60, must-revalidate",
        "an answer to a request with a token is for that client's own cache only (RFC 9111 §3.5)"
    );
    let page: Value = response.json().await.unwrap();

    assert_eq!(page["meta"]["TotalResults"], 1200);
    assert_eq!(page["meta"]["Agreement"], "TBC");
    assert!(
        time::OffsetDateTime::parse(
            page["meta"]["LastUpdated"].as_str().unwrap(),
            &time::format_description::well_known::Rfc3339
        )
        .is_ok()
    );
    assert_eq!(atms_of(&page).len(), 25);
    let links = &page["link"];
    assert_eq!(links["Self"], format!("{}/api/v1/atms?page=1", app.settings.http.public_base_url()));
    assert_eq!(links["First"], links["Self"]);
    assert!(links.get("Prev").is_none());
    assert_eq!(links["Next"], format!("{}/api/v1/atms?page=2", app.settings.http.public_base_url()));
    assert_eq!(links["Last"], format!("{}/api/v1/atms?page=48", app.settings.http.public_base_url()));
}

#[tokio::test]
async fn every_atm_on_every_page_validates_against_the_obie_schema_in_stable_order() {
    let app = TestApp::builder().settings(|settings| settings.catalog.atm_page_size = 100).start().await;
    let session = app.session().await;
    let (atm_schema, brand_schema) = obie_schemas();
    // Control: the validator does reject what the schema forbids.
    let mut broken = serde_json::json!({"Identification": "X", "SupportedCurrencies": ["MXN"],
        "Location": {"PostalAddress": {"Country": "MX"}}});
    assert!(atm_schema.is_valid(&broken));
    broken["SupportedCurrencies"] = serde_json::json!(["pesos"]);
    assert!(!atm_schema.is_valid(&broken));
    assert!(!brand_schema.is_valid(&Value::from("x".repeat(141))));
    let mut next = Some("/api/v1/atms".to_owned());
    let mut seen = Vec::new();
    let mut pages = 0;
    while let Some(url) = next {
        let url = url.replace(&app.settings.http.public_base_url(), &app.address);
        let page = json(app.get_atms(&session, &url, &[]).await).await;
        pages += 1;
        for brand in page["data"].as_array().unwrap() {
            assert!(brand_schema.is_valid(&brand["BrandName"]), "{}", brand["BrandName"]);
            for atm in brand["ATM"].as_array().unwrap() {
                let errors: Vec<String> = atm_schema.iter_errors(atm).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{errors:?} in {atm}");
                seen.push((
                    brand["BrandName"].as_str().unwrap().to_owned(),
                    atm["Identification"].as_str().unwrap().to_owned(),
                ));
            }
        }
        next = page["link"]["Next"].as_str().map(str::to_owned);
    }
    assert_eq!(pages, 12);
    assert_eq!(seen.len(), 1200);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 1200, "no ATM twice across pages");
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "brand, then identification");
}

#[tokio::test]
async fn a_matching_if_none_match_is_a_304_without_a_body() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let first = app.get_atms(&session, "/api/v1/atms?page=2", &[]).await;
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();

    let again = app.get_atms(&session, "/api/v1/atms?page=2", &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag.as_str());
    assert_eq!(again.headers()["cache-control"], "private, max-age=60, must-revalidate");
    assert!(again.bytes().await.unwrap().is_empty());

    let weak = format!("W/{etag}");
    let list = format!("\"other\", {weak}");
    assert_eq!(app.get_atms(&session, "/api/v1/atms?page=2", &[("If-None-Match", &list)]).await.status(), 304);
    let other_page = app.get_atms(&session, "/api/v1/atms?page=3", &[("If-None-Match", &etag)]).await;
    assert_eq!(other_page.status(), 200, "another page has another ETag");
}

#[tokio::test]
async fn if_modified_since_is_used_only_without_if_none_match() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let first = app.get_atms(&session, "/api/v1/atms", &[]).await;
    let modified = first.headers()["last-modified"].to_str().unwrap().to_owned();

    let same = app.get_atms(&session, "/api/v1/atms", &[("If-Modified-Since", &modified)]).await;
    assert_eq!(same.status(), 304);
    let older = app.get_atms(&session, "/api/v1/atms", &[("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT")]).await;
    assert_eq!(older.status(), 200);
    let both = app
        .get_atms(&session, "/api/v1/atms", &[("If-Modified-Since", &modified), ("If-None-Match", "\"stale\"")])
        .await;
    assert_eq!(both.status(), 200, "If-None-Match takes precedence (RFC 9110 §13.2.2)");
}

fn atm_file(brand: &str, ids: &[&str]) -> String {
    let atms: Vec<Value> = ids
        .iter()
        .map(|id| {
            serde_json::json!({
                "Identification": id,
                "ATMServices": ["CashWithdrawal"],
                "SupportedCurrencies": ["MXN"],
                "Location": {"PostalAddress": {"TownName": "Mérida", "Country": "MX",
                    "GeoLocation": {"GeographicCoordinates": {"Latitude": "20.9674", "Longitude": "-89.5926"}}}}
            })
        })
        .collect();
    serde_json::json!({"meta": {}, "data": [{"Brand": [{"BrandName": brand, "ATM": atms}]}]}).to_string()
}

/// `atms import` of `contents`; these tests replace the demo set with a small one on
/// purpose, which the shrink guard refuses without `--allow-shrink`.
fn import(app: &TestApp, name: &str, contents: &str) -> std::process::Output {
    let path = app.folder.path().join(name);
    std::fs::write(&path, contents).unwrap();
    crate::binary::branch_atm_command()
        .args(["--database-url", &app.database_url, "atms", "import", path.to_str().unwrap(), "--allow-shrink"])
        .output()
        .unwrap()
}

async fn fast_app() -> TestApp {
    TestApp::builder().settings(|settings| settings.view.refresh_interval_ms = 100).start().await
}

#[tokio::test]
async fn an_import_replaces_the_set_and_changes_the_etag() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let app = fast_app().await;
    let session = app.session().await;
    let before = app.get_atms(&session, "/api/v1/atms", &[]).await;
    let old_etag = before.headers()["etag"].to_str().unwrap().to_owned();

    let output = import(&app, "new.json", &atm_file("Banco Nuevo", &["N2", "N1"]));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("1200 ATMs stored, 2 in the file: 2 added (Banco Nuevo/N2, Banco Nuevo/N1), 1200 removed"),
        "{said}"
    );

    let page = eventually(|| async {
        let response = app.get_atms(&session, "/api/v1/atms", &[("If-None-Match", &old_etag)]).await;
        if response.status() != 200 {
            return None;
        }
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        Some((etag, response.json::<Value>().await.unwrap()))
    })
    .await;
    let (new_etag, page) = page.expect("the new set is served after the next refresh");
    assert_ne!(new_etag, old_etag);
    assert_eq!(page["meta"]["TotalResults"], 2);
    let ids: Vec<&str> = atms_of(&page).iter().map(|atm| atm["Identification"].as_str().unwrap()).collect();
    assert_eq!(ids, ["N1", "N2"]);
}

#[tokio::test]
async fn an_import_with_an_invalid_record_names_it_and_changes_nothing() {
    let app = fast_app().await;
    let session = app.session().await;
    let before = json(app.get_atms(&session, "/api/v1/atms", &[]).await).await;

    let mut file: Value = serde_json::from_str(&atm_file("Banco Nuevo", &["N1", "N2", "N3"])).unwrap();
    file["data"][0]["Brand"][0]["ATM"][2]["SupportedCurrencies"] = serde_json::json!(["pesos"]);
    let output = import(&app, "bad.json", &file.to_string());
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("data[0].Brand[0].ATM[2].SupportedCurrencies"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1);

    tokio::time::sleep(Duration::from_millis(400)).await;
    let after = json(app.get_atms(&session, "/api/v1/atms", &[]).await).await;
    assert_eq!(before, after, "the old set is still served, unchanged");
}

#[tokio::test]
async fn near_me_lists_the_nearest_first_with_their_distance_and_valid_records() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let (atm_schema, _) = obie_schemas();
    let url = "/api/v1/atms?latitude=19.4326&longitude=-99.1332&radiusKm=5&service=CashWithdrawal";
    let page = json(app.get_atms(&session, url, &[]).await).await;
    let atms = atms_of(&page);
    assert!(!atms.is_empty());
    let distances: Vec<u64> = atms.iter().map(|atm| atm["DistanceInMetres"].as_u64().unwrap()).collect();
    assert!(distances.windows(2).all(|pair| pair[0] <= pair[1]), "{distances:?}");
    assert!(distances.iter().all(|metres| *metres <= 5_000));
    for atm in &atms {
        assert!(atm_schema.is_valid(atm), "the extension keeps the record valid: {atm}");
        assert_eq!(atm["Location"]["PostalAddress"]["TownName"], "Ciudad de México");
    }
    assert!(page["link"]["Self"].as_str().unwrap().contains("latitude=19.4326&longitude=-99.1332&radiusKm=5"));
    assert!(page["meta"]["TotalResults"].as_u64().unwrap() >= atms.len() as u64);
}

#[tokio::test]
async fn filters_keep_only_matching_atms_and_page_like_the_full_list() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let url = "/api/v1/atms?accessibility=AudioCashMachine&service=CashDeposits";
    let page = json(app.get_atms(&session, url, &[]).await).await;
    let total = page["meta"]["TotalResults"].as_u64().unwrap();
    assert!(total > 25 && total < 1200, "{total}");
    for atm in atms_of(&page) {
        assert!(atm["Accessibility"].as_array().unwrap().contains(&Value::from("AudioCashMachine")));
        assert!(atm["ATMServices"].as_array().unwrap().contains(&Value::from("CashDeposits")));
    }
    let next = page["link"]["Next"].as_str().unwrap();
    assert!(next.contains("page=2&service=CashDeposits&accessibility=AudioCashMachine"), "{next}");
}

#[tokio::test]
async fn bad_queries_and_headers_are_obie_400s() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    for query in [
        "page=0",
        "page=abc",
        "page=49",
        "latitude=19.4",
        "latitude=100&longitude=0",
        "latitude=19&longitude=-99&radiusKm=-1",
        "service=Teleport",
        "accessibility=wheelchair",
        "page=1&page=2",
    ] {
        let response = app.get_atms(&session, &format!("/api/v1/atms?{query}"), &[]).await;
        assert_obie_error(response, 400, "Bad request").await;
    }
    let bad_uuid = app.get_atms(&session, "/api/v1/atms", &[("uuid", "not-a-uuid")]).await;
    assert_obie_error(bad_uuid, 400, "Bad request").await;
    let no_client = app
        .http
        .get(format!("{}/api/v1/atms", app.address))
        .header("Authorization", format!("Bearer {}", session.token))
        .send()
        .await
        .unwrap();
    assert_obie_error(no_client, 400, "Bad request").await;
}

#[tokio::test]
async fn missing_or_invalid_credentials_are_obie_401s() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let none = app
        .http
        .get(format!("{}/api/v1/atms", app.address))
        .header("client_id", "demo-mobile-app")
        .send()
        .await
        .unwrap();
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    assert_obie_error(none, 401, "Unauthorized").await;
    let forged = Session { token: format!("{}x", session.token), sid: session.sid.clone() };
    assert_obie_error(app.get_atms(&forged, "/api/v1/atms", &[]).await, 401, "Unauthorized").await;
}

/// The finding: every ATM error said "You have sent a request which could not be
/// understood." Now the description names the header or parameter at fault and why, in
/// the caller's language; the title stays OBIE's.
#[tokio::test]
async fn an_atm_error_says_which_header_or_parameter_is_wrong_and_why() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let described = |response: reqwest::Response| async move {
        assert_eq!(response.status(), 400);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["title"], "Bad request", "{body}");
        body["description"].as_str().unwrap().to_owned()
    };
    let no_client = app
        .http
        .get(format!("{}/api/v1/atms", app.address))
        .header("Authorization", format!("Bearer {}", session.token))
        .send()
        .await
        .unwrap();
    assert_eq!(described(no_client).await, "The client_id header is missing.");
    let cases = [
        ("page=abc", "page must be a whole number from 1 to 48."),
        ("page=0", "page must be a whole number from 1 to 48."),
        ("page=49", "page must be a whole number from 1 to 48."),
        ("latitude=19.4", "longitude must be sent with latitude."),
        ("latitude=91&longitude=0", "latitude must be between -90 and 90."),
        ("latitude=abc&longitude=0", "latitude must be a decimal number, such as 19.4326."),
        ("radiusKm=5", "radiusKm needs latitude and longitude."),
        ("latitude=19.4&longitude=-99.1&radiusKm=0", "radiusKm must be more than 0 and at most 20037.5."),
        ("service=Teller", "service must be a code of OBIE's ATMServices list, such as CashWithdrawal."),
        ("page=1&page=2", "The parameter page was sent more than once."),
    ];
    for (query, description) in cases {
        let response = app.get_atms(&session, &format!("/api/v1/atms?{query}"), &[]).await;
        assert_eq!(described(response).await, description, "{query}");
    }
    let spanish = app.get_atms(&session, "/api/v1/atms?latitude=91&longitude=0", &[("Accept-Language", "es")]).await;
    let body: Value = spanish.json().await.unwrap();
    assert_eq!(
        (body["title"].as_str(), body["description"].as_str()),
        (Some("Solicitud incorrecta"), Some("latitude debe estar entre -90 y 90."))
    );
}

#[tokio::test]
async fn errors_are_told_in_spanish_when_asked() {
    let app = TestApp::builder().start().await;
    let session = app.session().await;
    let response = app.get_atms(&session, "/api/v1/atms?page=0", &[("Accept-Language", "es-MX")]).await;
    assert_eq!(response.headers()["content-language"], "es");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], "400");
    assert_eq!(body["title"], "Solicitud incorrecta");
}

#[tokio::test]
async fn a_client_over_its_rate_gets_429_with_retry_after() {
    let app = TestApp::builder()
        .settings(|settings| {
            (settings.limits.rate_limit_per_second, settings.limits.rate_limit_burst) = (1, 2);
        })
        .start()
        .await;
    let session = app.session().await;
    for _ in 0..2 {
        assert_eq!(app.get_atms(&session, "/api/v1/atms", &[]).await.status(), 200);
    }
    let limited = app.get_atms(&session, "/api/v1/atms", &[]).await;
    let retry_after: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    assert_obie_error(limited, 429, "Too many requests").await;
}

#[tokio::test]
async fn a_client_too_slow_to_send_its_request_gets_408() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = TestApp::builder().settings(|settings| settings.http.client_request_timeout_ms = 300).start().await;
    let mut stream = tokio::net::TcpStream::connect(app.address.trim_start_matches("http://")).await.unwrap();
    stream.write_all(b"GET /api/v1/atms HTTP/1.1\r\nHost: localhost\r\n").await.unwrap();
    let mut answer = String::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer)).await;
    assert!(read.is_ok(), "the server answers and closes instead of waiting forever");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // Written by the HTTP parser below the application (docs/adr/0010-the-http-parsers-own-answers.md): no body at all.
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.to_ascii_lowercase().contains("content-length: 0") && body.is_empty(), "{answer}");
}

#[tokio::test]
async fn an_unreachable_store_gives_503_once_the_data_cannot_be_vouched_for() {
    let app = TestApp::builder()
        .settings(|settings| {
            settings.view.refresh_interval_ms = 50;
            settings.view.max_staleness_ms = 300;
        })
        .start()
        .await;
    let session = app.session().await;
    assert_eq!(app.get_atms(&session, "/api/v1/atms", &[]).await.status(), 200);

    app.outage.take_down();
    let response = eventually(|| async {
        let response = app.get_atms(&session, "/api/v1/atms", &[]).await;
        (response.status() == 503).then_some(response)
    })
    .await
    .expect("503 once the view is stale");
    assert!(response.headers().contains_key("retry-after"));
    assert_obie_error(response, 503, "Service temporarily unavailable").await;
    let ready = app.http.get(format!("{}/api/health/ready", app.address)).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let wait = app.wait_times(&session, &["00001"]).await;
    crate::helpers::assert_error(wait, 500, "serverUnavailable", None).await;

    app.outage.bring_back();
    let back =
        eventually(|| async { (app.get_atms(&session, "/api/v1/atms", &[]).await.status() == 200).then_some(()) });
    assert!(back.await.is_some(), "served again once the store answers, without a restart");
    // Readiness reuses a probe for 200 ms, and the status monitor probes every refresh:
    // a probe made just before the store came back may still be the answer for a moment.
    let ready = eventually(|| async {
        let ready = app.http.get(format!("{}/api/health/ready", app.address)).send().await.unwrap();
        (ready.status() == 200).then_some(())
    })
    .await;
    assert!(ready.is_some(), "ready again once the store answers, without a restart");
}
