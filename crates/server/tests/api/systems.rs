//! The bank's systems: registered with `systems …`, given tokens at POST /api/v1/token
//! for a signed assertion (RFC 7523), their tokens kept off the visitor operations.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use domain::client::ClientStatus;
use domain::system::{SystemId, SystemRegistration, SystemScopes};

use crate::cli::{branch_atm, fresh_database, stderr, stdout};
use crate::helpers::TestApp;
pub use crate::system_keys::{SystemKey, assertion_claims};

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// A system registered in `app`'s store with `scopes` and a key of its own, and a token
/// of it.
pub async fn system_token(app: &TestApp, id: &str, scopes: &str) -> String {
    let key = SystemKey::ed25519("k");
    register_in(app, id, &[&key], scopes).await;
    let answer = client_credentials(app, &key.sign(&assertion_claims(id, &app.issuer()))).await;
    assert_eq!(answer.status(), 200);
    let body: Value = answer.json().await.unwrap();
    body["access_token"].as_str().unwrap().to_owned()
}

/// POSTs `{"events": events}` to `path` with a system's `token`.
pub async fn post_events_to(app: &TestApp, path: &str, token: &str, events: &[Value]) -> reqwest::Response {
    app.http
        .post(format!("{}{path}", app.address))
        .bearer_auth(token)
        .json(&json!({ "events": events }))
        .send()
        .await
        .unwrap()
}

/// RFC 3339 of `seconds` from now (negative: ago), in UTC: an event's `at`.
pub fn seconds_from_now(seconds: f64) -> String {
    let when = time::OffsetDateTime::now_utc() + time::Duration::seconds_f64(seconds);
    when.format(&time::format_description::well_known::Rfc3339).unwrap()
}

/// Registers `system` with `keys` and `scopes` through the CLI.
pub fn register(database_url: &str, folder: &std::path::Path, system: &str, keys: &[&SystemKey], scopes: &str) {
    let file = folder.join(format!("{system}.jwks.json"));
    let set = json!({"keys": keys.iter().map(|key| key.public_jwk()).collect::<Vec<_>>()});
    std::fs::write(&file, set.to_string()).unwrap();
    let added = branch_atm(
        database_url,
        &["systems", "add", system, "--jwks-file", file.to_str().unwrap(), "--scopes", scopes],
    );
    assert!(added.status.success(), "{}", stderr(&added));
}

/// Registers `system` with `keys` and `scopes` in `app`'s store itself, as `systems add`
/// does: also on the in-memory store, which no other process reaches.
pub async fn register_in(app: &TestApp, system: &str, keys: &[&SystemKey], scopes: &str) {
    let set = json!({"keys": keys.iter().map(|key| key.public_jwk()).collect::<Vec<_>>()});
    let registration = SystemRegistration {
        id: SystemId::parse(system).unwrap(),
        keys: adapters::client_assertion::read_key_set(&set.to_string()).unwrap(),
        scopes: SystemScopes::parse(scopes).unwrap(),
        status: ClientStatus::Active,
    };
    assert!(app.store().await.systems.insert(&registration, now()).await.unwrap());
}

/// Sets `system`'s status in `app`'s store, as `systems disable|enable` does.
pub async fn set_status_in(app: &TestApp, system: &str, status: ClientStatus) {
    let id = SystemId::parse(system).unwrap();
    assert!(app.store().await.systems.set_status(&id, status).await.unwrap());
}

/// POST /api/v1/token with `form` pairs.
pub async fn token_request(app: &TestApp, form: &[(&str, &str)]) -> reqwest::Response {
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
    app.http
        .post(format!("{}/api/v1/token", app.address))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
}

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

pub async fn client_credentials(app: &TestApp, assertion: &str) -> reqwest::Response {
    token_request(
        app,
        &[
            ("grant_type", "client_credentials"),
            ("client_assertion_type", ASSERTION_TYPE),
            ("client_assertion", assertion),
        ],
    )
    .await
}

#[test]
fn systems_are_added_listed_updated_disabled_and_enabled_and_a_private_key_file_is_refused_in_one_line() {
    if !crate::store::other_processes_reach_the_store("the CLI binary") {
        return;
    }
    let fresh = fresh_database();
    let key = SystemKey::ed25519("k1");
    register(&fresh.url, fresh.folder.path(), "queue-hq", &[&key], "queue:write");
    let jwks = fresh.folder.path().join("queue-hq.jwks.json");
    let again = branch_atm(
        &fresh.url,
        &["systems", "add", "queue-hq", "--jwks-file", jwks.to_str().unwrap(), "--scopes", "queue:write"],
    );
    assert!(!again.status.success());
    assert!(stderr(&again).contains("system queue-hq already exists"), "{}", stderr(&again));

    let mut private = key.public_jwk();
    private["d"] = json!("c2VjcmV0LWtleS1tYXRlcmlhbC1vZi0zMi1ieXRlcyE");
    let private_file = fresh.folder.path().join("private.json");
    std::fs::write(&private_file, json!({"keys": [private]}).to_string()).unwrap();
    let refused = branch_atm(
        &fresh.url,
        &["systems", "add", "queue-2", "--jwks-file", private_file.to_str().unwrap(), "--scopes", "queue:write"],
    );
    assert!(!refused.status.success());
    let error = stderr(&refused);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(error.contains("key 0 holds the private member \"d\""), "{error}");
    let no_key = fresh.folder.path().join("empty.json");
    std::fs::write(&no_key, r#"{"keys": []}"#).unwrap();
    let refused = branch_atm(
        &fresh.url,
        &["systems", "add", "queue-2", "--jwks-file", no_key.to_str().unwrap(), "--scopes", "queue:write"],
    );
    assert!(stderr(&refused).contains("holds 1 to 10 keys; this one holds 0"), "{}", stderr(&refused));
    let bad_scope = branch_atm(
        &fresh.url,
        &["systems", "add", "queue-2", "--jwks-file", jwks.to_str().unwrap(), "--scopes", "visitor"],
    );
    assert!(stderr(&bad_scope).contains("scopes \"visitor\" is not valid"), "{}", stderr(&bad_scope));

    let listed = stdout(&branch_atm(&fresh.url, &["systems", "list"]));
    assert!(listed.contains("queue-hq\tactive\tqueue:write\t1"), "{listed}");
    assert!(!listed.contains("queue-2"), "refused registrations wrote nothing: {listed}");
    let rotated = fresh.folder.path().join("rotated.json");
    std::fs::write(&rotated, json!({"keys": [key.public_jwk(), SystemKey::p256("k2").public_jwk()]}).to_string())
        .unwrap();
    let update = branch_atm(&fresh.url, &["systems", "update", "queue-hq", "--jwks-file", rotated.to_str().unwrap()]);
    assert!(update.status.success(), "{}", stderr(&update));
    assert!(branch_atm(&fresh.url, &["systems", "disable", "queue-hq"]).status.success());
    assert!(stdout(&branch_atm(&fresh.url, &["systems", "list"])).contains("queue-hq\tdisabled\tqueue:write\t2"));
    assert!(branch_atm(&fresh.url, &["systems", "enable", "queue-hq"]).status.success());
    let unknown = branch_atm(&fresh.url, &["systems", "disable", "nobody"]);
    assert!(stderr(&unknown).contains("system nobody does not exist"), "{}", stderr(&unknown));
}

#[tokio::test]
async fn a_system_gets_a_bearer_token_for_a_signed_assertion_once_and_it_works_on_no_visitor_operation() {
    let app = TestApp::builder().start().await;
    let es = SystemKey::p256("es-1");
    let ed = SystemKey::ed25519("ed-1");
    register_in(&app, "queue-hq", &[&es, &ed], "queue:write").await;
    for key in [&es, &ed] {
        let assertion = key.sign(&assertion_claims("queue-hq", &app.issuer()));
        let answer = client_credentials(&app, &assertion).await;
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.headers()["cache-control"], "no-store");
        let body: Value = answer.json().await.unwrap();
        assert_eq!((body["token_type"].as_str(), body["scope"].as_str()), (Some("Bearer"), Some("queue:write")));
        assert!(body["expires_in"].as_i64().unwrap() <= 900, "{body}");
        let token = body["access_token"].as_str().unwrap();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap()).unwrap();
        assert_eq!((claims["client_id"].as_str(), claims["sub"].as_str()), (Some("queue-hq"), Some("queue-hq")));

        let replayed = client_credentials(&app, &assertion).await;
        assert_eq!(replayed.status(), 401);
        assert_eq!(replayed.headers()["www-authenticate"], r#"Bearer error="invalid_client""#);
        let body: Value = replayed.json().await.unwrap();
        assert_eq!(body["error"], "invalid_client");
        assert_eq!(body["error_description"], "this client assertion was used before.");

        // A system's token is no visitor's: the wait-time operation refuses it.
        let session = app.session().await;
        let visitor = crate::helpers::Session { token: token.to_owned(), sid: session.sid };
        assert_eq!(app.wait_times(&visitor, &["00001"]).await.status(), 401);
    }
    // The token endpoint serves the systems alone: the metadata says how.
    let metadata: Value = app
        .http
        .get(format!("{}/.well-known/oauth-authorization-server/api", app.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["token_endpoint"], format!("{}/v1/token", app.issuer()));
    assert_eq!(metadata["token_endpoint_auth_methods_supported"], json!(["private_key_jwt"]));
    assert_eq!(metadata["token_endpoint_auth_signing_alg_values_supported"], json!(["ES256", "EdDSA"]));
    assert!(metadata["grant_types_supported"].as_array().unwrap().contains(&json!("client_credentials")));
}

#[tokio::test]
async fn every_assertion_the_token_endpoint_must_refuse_is_refused_as_its_error() {
    let app = TestApp::builder().start().await;
    let key = SystemKey::ed25519("k");
    let stranger = SystemKey::ed25519("k");
    register_in(&app, "queue-hq", &[&key], "queue:write").await;
    register_in(&app, "queue-off", &[&key], "queue:write").await;
    set_status_in(&app, "queue-off", ClientStatus::Disabled).await;
    let issuer = app.issuer();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = assertion_claims("queue-hq", &issuer);
        change(&mut claims);
        claims
    };
    let endpoint = format!("{issuer}/v1/token");
    // Accepted: the token endpoint's URL as the audience, in an array.
    let by_endpoint = key.sign(&with(&|c| c["aud"] = json!(["https://elsewhere", endpoint.clone()])));
    assert_eq!(client_credentials(&app, &by_endpoint).await.status(), 200);

    let refused: Vec<(&str, String)> = vec![
        ("another audience", key.sign(&with(&|c| c["aud"] = json!("https://elsewhere.example")))),
        ("expired", key.sign(&with(&|c| c["exp"] = json!(now() - 1)))),
        ("more than 5 minutes ahead", key.sign(&with(&|c| c["exp"] = json!(now() + 600)))),
        ("iss differs", key.sign(&with(&|c| c["iss"] = json!("queue-other")))),
        ("no jti", key.sign(&with(&|c| drop(c.as_object_mut().unwrap().remove("jti"))))),
        (
            "unknown system",
            key.sign(&with(&|c| {
                c["iss"] = json!("queue-none");
                c["sub"] = json!("queue-none");
            })),
        ),
        (
            "disabled system",
            key.sign(&with(&|c| {
                c["iss"] = json!("queue-off");
                c["sub"] = json!("queue-off");
            })),
        ),
        ("another key", stranger.sign(&with(&|_| {}))),
        ("not a JWT", "not-a-jwt".to_owned()),
    ];
    for (case, assertion) in refused {
        let answer = client_credentials(&app, &assertion).await;
        assert_eq!(answer.status(), 401, "{case}");
        assert!(answer.headers().contains_key("www-authenticate"), "{case}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"], "invalid_client", "{case}: {body}");
    }

    let good = || key.sign(&with(&|_| {}));
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (vec![("grant_type", "password".into()), ("username", "u".into())], "unsupported_grant_type"),
        (vec![("grant_type", "client_credentials".into()), ("client_assertion", good())], "invalid_request"),
        (
            vec![
                ("grant_type", "client_credentials".into()),
                ("client_assertion_type", ASSERTION_TYPE.into()),
                ("client_assertion", good()),
                ("scope", "atm:write".into()),
            ],
            "invalid_scope",
        ),
        (
            vec![
                ("grant_type", "client_credentials".into()),
                ("client_assertion_type", ASSERTION_TYPE.into()),
                ("client_assertion", good()),
                ("client_assertion", good()),
            ],
            "invalid_request",
        ),
    ];
    for (form, error) in cases {
        let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let answer = token_request(&app, &pairs).await;
        assert_eq!(answer.status(), 400, "{error}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"], error, "{body}");
    }
}
