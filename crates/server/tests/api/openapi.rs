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
    let app = TestApp::builder().start().await;
    let response = app.http.get(format!("{}/api/openapi.json", app.address)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    crate::helpers::assert_security_headers(&response);
    let served = response.text().await.unwrap();
    let checked_in = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json")).unwrap();
    assert_eq!(served, checked_in);
}

#[tokio::test]
async fn real_responses_of_every_operation_match_the_documented_schemas() {
    let app = TestApp::builder().start().await;
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

/// Whether the query parameters `sent` satisfy what the document declares for the query
/// of `path`: each declared parameter (an exploded form object takes its properties
/// from the query), and nothing required missing.
fn document_accepts_query(document: &Value, path: &str, sent: &[(&str, &str)]) -> bool {
    let parameters = document["paths"][path]["get"]["parameters"].as_array().unwrap();
    parameters.iter().filter(|p| p["in"] == "query").all(|parameter| {
        let schema = &parameter["schema"];
        let value = if schema["type"] == "object" {
            let mut object = serde_json::Map::new();
            for (name, property) in schema["properties"].as_object().unwrap() {
                if let Some((_, raw)) = sent.iter().find(|(key, _)| key == name) {
                    let typed = if property["type"] == "number" {
                        serde_json::json!(raw.parse::<f64>().unwrap())
                    } else {
                        Value::from(*raw)
                    };
                    object.insert(name.clone(), typed);
                }
            }
            (!object.is_empty()).then_some(Value::Object(object))
        } else {
            let name = parameter["name"].as_str().unwrap();
            sent.iter().find(|(key, _)| *key == name).map(|(_, raw)| match schema["type"].as_str() {
                Some("number") => serde_json::json!(raw.parse::<f64>().unwrap()),
                Some("integer") => serde_json::json!(raw.parse::<i64>().unwrap()),
                _ => Value::from(*raw),
            })
        };
        match value {
            Some(value) => jsonschema::draft202012::new(schema).unwrap().is_valid(&value),
            None => parameter["required"] != true,
        }
    })
}

/// The finding: schemathesis found schema-valid requests the server refuses with 400
/// (`latitude` without `longitude`; `code_challenge` without its method). The document
/// now says which parameters go together, and for each of these queries the document
/// and the server agree.
#[tokio::test]
async fn the_document_and_the_server_agree_on_which_parameters_go_together() {
    let app = TestApp::builder().start().await;
    let document: Value =
        app.http.get(format!("{}/api/openapi.json", app.address)).send().await.unwrap().json().await.unwrap();
    let session = app.session().await;
    let atm_queries: [&[(&str, &str)]; 6] = [
        &[("latitude", "-90")],
        &[("longitude", "10")],
        &[("radiusKm", "5")],
        &[("latitude", "19.43"), ("longitude", "-99.13")],
        &[("latitude", "19.43"), ("longitude", "-99.13"), ("radiusKm", "5")],
        &[("page", "1")],
    ];
    for sent in atm_queries {
        let query: String = sent.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
        let status = app.get_atms(&session, &format!("/api/v1/atms?{query}"), &[]).await.status();
        let documented = document_accepts_query(&document, "/v1/atms", sent);
        assert_eq!(
            documented,
            status != 400,
            "GET /v1/atms?{query}: the document says {documented}, the server {status}"
        );
    }
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let pkce: [&[(&str, &str)]; 3] = [
        &[("code_challenge", challenge)],
        &[("code_challenge_method", "S256")],
        &[("code_challenge", challenge), ("code_challenge_method", "S256")],
    ];
    for extra in pkce {
        let mut sent = crate::helpers::demo_authorize_query();
        sent.extend_from_slice(extra);
        let status = app.authorize(&sent).await.status();
        let documented = document_accepts_query(&document, "/v1/authorize", &sent);
        assert_eq!(
            documented,
            status != 400,
            "authorize with {extra:?}: the document says {documented}, the server {status}"
        );
    }
}
