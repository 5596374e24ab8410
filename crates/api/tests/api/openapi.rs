//! The served OpenAPI document keeps its promises: real responses of every operation
//! validate against the schemas it declares for them.

use serde_json::Value;

use crate::helpers::TestApp;

/// A validator for `#/components/schemas/{name}` of `document`.
fn validator(document: &Value, name: &str) -> jsonschema::Validator {
    let mut root = document.clone();
    root["$ref"] = Value::from(format!("#/components/schemas/{name}"));
    jsonschema::draft202012::new(&root).unwrap()
}

fn assert_valid(document: &Value, name: &str, body: &Value) {
    let validator = validator(document, name);
    let errors: Vec<String> = validator.iter_errors(body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{body}");
}

#[tokio::test]
async fn the_document_is_served_and_equals_the_checked_in_copy() {
    let app = TestApp::with_demo().await;
    let response = app.http.get(format!("{}/api/openapi.json", app.address)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    crate::helpers::assert_security_headers(&response);
    let served = response.text().await.unwrap();
    let checked_in = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json")).unwrap();
    assert_eq!(served, checked_in);
}

#[tokio::test]
async fn real_responses_of_every_operation_match_the_documented_schemas() {
    let app = TestApp::with_demo().await;
    let document: Value =
        app.http.get(format!("{}/api/openapi.json", app.address)).send().await.unwrap().json().await.unwrap();
    // The validator does reject what a schema forbids.
    assert!(!validator(&document, "TokenResponse").is_valid(&serde_json::json!({"access_token": 1})));

    let token = app.authorize(&crate::helpers::demo_authorize_query()).await;
    assert_valid(&document, "TokenResponse", &token.json().await.unwrap());
    let token_error = app.authorize(&[("response_type", "token")]).await;
    assert_valid(&document, "TokenError", &token_error.json().await.unwrap());

    let session = app.session().await;
    let waits = app.wait_times(&session, &["00001", "00042", "99999"]).await;
    assert_valid(&document, "RetrieveBranchWaitTimeResponse", &waits.json().await.unwrap());
    let not_found = app.wait_times(&session, &["99999"]).await;
    assert_valid(&document, "ErrorResponse", &not_found.json().await.unwrap());

    for query in ["", "?page=48", "?latitude=19.4326&longitude=-99.1332&radiusKm=10"] {
        let page = app.get_atms(&session, &format!("/api/v1/atms{query}"), &[]).await;
        assert_eq!(page.status(), 200);
        assert_valid(&document, "AtmListResponse", &page.json().await.unwrap());
    }
    let bad = app.get_atms(&session, "/api/v1/atms?page=0", &[]).await;
    assert_valid(&document, "AtmError", &bad.json().await.unwrap());

    let request: Value = serde_json::json!({"branches": [{"branchId": "00001"}]});
    assert_valid(&document, "RetrieveBranchWaitTimeRequest", &request);
    assert!(!validator(&document, "RetrieveBranchWaitTimeRequest").is_valid(&serde_json::json!({"branches": []})));
}
