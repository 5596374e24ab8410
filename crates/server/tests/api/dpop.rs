//! Tokens bound to the app's key (DPoP, RFC 9449): issued for a proof at authorize,
//! accepted on the bearer operations only with a fresh proof of that key, every bad
//! proof refused with what was wrong, replays refused on every instance, server nonces.

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::client::{ClientChanges, ClientId};
use domain::dpop::DpopPolicy;
use reqwest::Response;
use serde_json::{Value, json};

use crate::helpers::{
    CLIENT, Session, TestApp, UUID, WAIT_TIME_PATH, assert_error, assert_token_error, demo_authorize_query, eventually,
    now, redis_url, wait_time_headers,
};

/// A key pair an app made on the device.
enum Signer {
    P256(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

/// An app's key, and the proofs it makes.
pub struct AppKey {
    signer: Signer,
    jwk: Value,
}

impl AppKey {
    /// A new P-256 key (ES256), as WebCrypto or a phone's keystore makes.
    pub fn p256() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let point = pair.public_key().as_ref().to_vec();
        let jwk = json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Self { signer: Signer::P256(pair), jwk }
    }

    /// A new Ed25519 key (EdDSA).
    pub fn ed25519() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref())});
        Self { signer: Signer::Ed25519(pair), jwk }
    }

    fn alg(&self) -> &'static str {
        match self.signer {
            Signer::P256(_) => "ES256",
            Signer::Ed25519(_) => "EdDSA",
        }
    }

    /// The RFC 7638 thumbprint, written out by hand from the RFC.
    pub fn thumbprint(&self) -> String {
        let members = match self.signer {
            Signer::P256(_) => format!(
                r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
                self.jwk["x"].as_str().unwrap(),
                self.jwk["y"].as_str().unwrap()
            ),
            Signer::Ed25519(_) => {
                format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, self.jwk["x"].as_str().unwrap())
            }
        };
        URL_SAFE_NO_PAD.encode(digest(&SHA256, members.as_bytes()))
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.signer {
            Signer::P256(pair) => pair.sign(&SystemRandom::new(), message).unwrap().as_ref().to_vec(),
            Signer::Ed25519(pair) => pair.sign(message).as_ref().to_vec(),
        }
    }

    /// A JWS of `header` and `claims`, signed with this key.
    pub fn signed(&self, header: &Value, claims: &Value) -> String {
        let signed =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = URL_SAFE_NO_PAD.encode(self.sign(signed.as_bytes()));
        format!("{signed}.{signature}")
    }

    /// The header of this key's proofs.
    pub fn header(&self) -> Value {
        json!({"typ": "dpop+jwt", "alg": self.alg(), "jwk": self.jwk})
    }

    /// The claims of a fresh proof for `method` on `url`.
    pub fn claims(method: &str, url: &str) -> Value {
        json!({"jti": uuid::Uuid::new_v4().to_string(), "htm": method, "htu": url, "iat": now()})
    }

    /// A fresh proof for `method` on `url`, for `token` when given (`ath`), carrying
    /// `nonce` when given.
    pub fn proof(&self, method: &str, url: &str, token: Option<&str>, nonce: Option<&str>) -> String {
        let mut claims = Self::claims(method, url);
        if let Some(token) = token {
            claims["ath"] = Value::from(URL_SAFE_NO_PAD.encode(digest(&SHA256, token.as_bytes())));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = Value::from(nonce);
        }
        self.signed(&self.header(), &claims)
    }
}

fn authorize_url(app: &TestApp) -> String {
    format!("{}/api/v1/authorize", app.settings.http.public_base_url())
}

fn wait_url(app: &TestApp) -> String {
    format!("{}{WAIT_TIME_PATH}", app.settings.http.public_base_url())
}

fn atms_url(app: &TestApp) -> String {
    format!("{}/api/v1/atms", app.settings.http.public_base_url())
}

/// GET /api/v1/authorize for the demo client with `proofs` as `DPoP` headers.
async fn authorize_with(app: &TestApp, proofs: &[&str]) -> Response {
    let mut request =
        app.http.get(format!("{}/api/v1/authorize", app.address)).header("uuid", UUID).query(&demo_authorize_query());
    for proof in proofs {
        request = request.header("DPoP", *proof);
    }
    request.send().await.unwrap()
}

/// A token bound to `key`, and its session.
async fn bound_session(app: &TestApp, key: &AppKey) -> Session {
    let response = authorize_with(app, &[&key.proof("GET", &authorize_url(app), None, None)]).await;
    assert_eq!(response.status(), 200);
    let sid = response.headers()["sid"].to_str().unwrap().to_owned();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["token_type"], "DPoP", "{body}");
    Session { token: body["access_token"].as_str().unwrap().to_owned(), sid }
}

/// The claims of a token, read without verifying it (the tokens test verifies them).
fn token_claims(token: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap()).unwrap()
}

/// Wait times of branch 00001 with `authorization` and `proof` as sent.
async fn wait_times_with(app: &TestApp, session: &Session, authorization: &str, proof: Option<&str>) -> Response {
    let mut request = app.http.post(format!("{}{WAIT_TIME_PATH}", app.address));
    for (name, value) in wait_time_headers() {
        request = request.header(name, value);
    }
    request = request.header("Authorization", authorization).header("sid", &session.sid);
    if let Some(proof) = proof {
        request = request.header("DPoP", proof);
    }
    request.body(r#"{"branches":[{"branchId":"00001"}]}"#).send().await.unwrap()
}

/// Wait times with the bound token and a fresh proof of `key` for them.
async fn wait_times_bound(app: &TestApp, session: &Session, key: &AppKey, nonce: Option<&str>) -> Response {
    let proof = key.proof("POST", &wait_url(app), Some(&session.token), nonce);
    wait_times_with(app, session, &format!("DPoP {}", session.token), Some(&proof)).await
}

/// Asserts a 401 on a bearer operation whose challenge is DPoP's with `error`.
async fn assert_dpop_challenge(response: Response, error: &str) -> Value {
    let challenge = response.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with(&format!(r#"DPoP error="{error}""#)), "{challenge}");
    assert!(challenge.contains(r#"algs="ES256 EdDSA Ed25519""#), "{challenge}");
    assert_error(response, 401, "unAuthorized", None).await
}

#[tokio::test]
async fn a_proof_at_authorize_gets_a_dpop_token_bound_to_its_key_that_works_with_fresh_proofs() {
    let app = TestApp::builder().start().await;
    for key in [AppKey::p256(), AppKey::ed25519()] {
        let session = bound_session(&app, &key).await;
        let claims = token_claims(&session.token);
        assert_eq!(claims["cnf"]["jkt"], key.thumbprint(), "RFC 7638 thumbprint of the proof's key");

        let response = wait_times_bound(&app, &session, &key, None).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        let proof = key.proof("GET", &atms_url(&app), Some(&session.token), None);
        let atms = app
            .http
            .get(format!("{}/api/v1/atms?page=1", app.address))
            .header("Authorization", format!("DPoP {}", session.token))
            .header("client_id", CLIENT)
            .header("DPoP", proof)
            .send()
            .await
            .unwrap();
        assert_eq!(atms.status(), 200, "htu is the resource without its query");
    }
    // Without a proof, everything stays as it was.
    let plain: Value = app.authorize(&demo_authorize_query()).await.json().await.unwrap();
    assert_eq!(plain["token_type"], "Bearer");
    assert!(token_claims(plain["access_token"].as_str().unwrap()).get("cnf").is_none());
}

#[tokio::test]
async fn the_metadata_lists_the_proof_algorithms() {
    let app = TestApp::builder().start().await;
    let metadata: Value = app
        .http
        .get(format!("{}/.well-known/oauth-authorization-server/api", app.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["dpop_signing_alg_values_supported"], json!(["ES256", "EdDSA", "Ed25519"]));
}

#[tokio::test]
async fn every_bad_proof_at_authorize_is_a_400_saying_what_was_wrong_and_gets_no_token() {
    let app = TestApp::builder().start().await;
    let key = AppKey::p256();
    let url = authorize_url(&app);
    let fresh = || AppKey::claims("GET", &url);
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = fresh();
        change(&mut claims);
        key.signed(&key.header(), &claims)
    };
    let with_header = |change: &dyn Fn(&mut Value)| {
        let mut header = key.header();
        change(&mut header);
        key.signed(&header, &fresh())
    };
    let good = key.proof("GET", &url, None, None);
    let (signed, signature) = good.rsplit_once('.').unwrap();
    let mut flipped = URL_SAFE_NO_PAD.decode(signature).unwrap();
    flipped[5] ^= 1;
    let mut private = key.header();
    private["jwk"]["d"] = Value::from(URL_SAFE_NO_PAD.encode([7u8; 32]));
    let used = key.proof("GET", &url, None, None);
    assert_eq!(authorize_with(&app, &[&used]).await.status(), 200);

    let cases: Vec<(&str, String, &str)> = vec![
        ("malformed", "not-a-jwt".to_owned(), "well-formed"),
        ("wrong typ", with_header(&|h| h["typ"] = Value::from("JWT")), "typ"),
        ("alg none", with_header(&|h| h["alg"] = Value::from("none")), "alg"),
        ("symmetric alg", with_header(&|h| h["alg"] = Value::from("HS256")), "alg"),
        ("unsupported alg", with_header(&|h| h["alg"] = Value::from("RS256")), "alg"),
        ("alg of another key type", with_header(&|h| h["alg"] = Value::from("EdDSA")), "jwk"),
        ("private key in jwk", key.signed(&private, &fresh()), "private"),
        ("bad signature", format!("{signed}.{}", URL_SAFE_NO_PAD.encode(&flipped)), "signature"),
        ("wrong htm", with(&|c| c["htm"] = Value::from("POST")), "htm"),
        ("wrong htu", with(&|c| c["htu"] = Value::from("https://elsewhere.example/api/v1/authorize")), "htu"),
        ("too old", with(&|c| c["iat"] = Value::from(now() - 120)), "too old"),
        ("too far ahead", with(&|c| c["iat"] = Value::from(now() + 120)), "future"),
        ("missing jti", with(&|c| drop(c.as_object_mut().unwrap().remove("jti"))), "jti"),
        ("replayed", used.clone(), "used before"),
    ];
    for (case, proof, says) in cases {
        let body =
            assert_token_error(authorize_with(&app, &[&proof]).await, 400, "invalid_dpop_proof", Some("DPoP")).await;
        let details = body["details"].as_str().unwrap();
        assert!(details.contains(says), "{case}: {details}");
    }
    let two = [key.proof("GET", &url, None, None), key.proof("GET", &url, None, None)];
    let body =
        assert_token_error(authorize_with(&app, &[&two[0], &two[1]]).await, 400, "invalid_dpop_proof", Some("DPoP"))
            .await;
    assert!(body["details"].as_str().unwrap().contains("exactly one"), "{body}");
}

#[tokio::test]
async fn on_the_bearer_operations_a_bound_token_needs_a_fresh_proof_of_its_own_key() {
    let app = TestApp::builder().start().await;
    let key = AppKey::p256();
    let session = bound_session(&app, &key).await;
    let dpop = format!("DPoP {}", session.token);
    let url = wait_url(&app);

    // RFC 9449 §7.2: a bound token is not a bearer token.
    let as_bearer = wait_times_with(&app, &session, &format!("Bearer {}", session.token), None).await;
    assert!(as_bearer.headers()["www-authenticate"].to_str().unwrap().starts_with("Bearer error=\"invalid_token\""));
    assert_error(as_bearer, 401, "unAuthorized", None).await;

    let no_proof = wait_times_with(&app, &session, &dpop, None).await;
    assert_dpop_challenge(no_proof, "invalid_dpop_proof").await;

    let other_key = AppKey::ed25519().proof("POST", &url, Some(&session.token), None);
    let body =
        assert_dpop_challenge(wait_times_with(&app, &session, &dpop, Some(&other_key)).await, "invalid_dpop_proof")
            .await;
    assert!(body["details"].as_str().unwrap().contains("bound to"), "{body}");

    let other_token = key.proof("POST", &url, Some("another.token"), None);
    assert_dpop_challenge(wait_times_with(&app, &session, &dpop, Some(&other_token)).await, "invalid_dpop_proof").await;

    let no_ath = key.proof("POST", &url, None, None);
    assert_dpop_challenge(wait_times_with(&app, &session, &dpop, Some(&no_ath)).await, "invalid_dpop_proof").await;

    let for_atms = key.proof("GET", &atms_url(&app), Some(&session.token), None);
    assert_dpop_challenge(wait_times_with(&app, &session, &dpop, Some(&for_atms)).await, "invalid_dpop_proof").await;

    let once = key.proof("POST", &url, Some(&session.token), None);
    assert_eq!(wait_times_with(&app, &session, &dpop, Some(&once)).await.status(), 200);
    let body =
        assert_dpop_challenge(wait_times_with(&app, &session, &dpop, Some(&once)).await, "invalid_dpop_proof").await;
    assert!(body["details"].as_str().unwrap().contains("used before"), "{body}");

    // A bearer token sent with the DPoP scheme is refused too.
    let bearer = app.session().await;
    let proof = key.proof("POST", &url, Some(&bearer.token), None);
    let response = wait_times_with(&app, &bearer, &format!("DPoP {}", bearer.token), Some(&proof)).await;
    assert_dpop_challenge(response, "invalid_token").await;
}

#[tokio::test]
async fn revocation_and_a_disabled_client_refuse_bound_tokens_as_they_do_bearer_ones() {
    let app = TestApp::builder().start().await;
    let key = AppKey::ed25519();
    let session = bound_session(&app, &key).await;
    assert_eq!(wait_times_bound(&app, &session, &key, None).await.status(), 200);
    let revoked = app.revoke(&[("token", &session.token), ("client_id", CLIENT)]).await;
    assert_eq!(revoked.status(), 200);
    assert_dpop_challenge(wait_times_bound(&app, &session, &key, None).await, "invalid_token").await;

    let live = bound_session(&app, &key).await;
    let store = app.store().await;
    let admin = domain::services::clients::ClientAdmin::new(
        std::sync::Arc::clone(&store.clients),
        std::sync::Arc::clone(&store.tokens),
        std::sync::Arc::new(adapters::system::SystemClock),
    );
    admin.disable(&ClientId::parse(CLIENT).unwrap()).await.unwrap();
    let refused =
        eventually(|| async { (wait_times_bound(&app, &live, &key, None).await.status() == 401).then_some(()) }).await;
    assert!(refused.is_some(), "a disabled client's bound token is refused");
}

#[tokio::test]
async fn a_client_that_requires_dpop_gets_no_bearer_token_and_its_bearer_tokens_stop_working() {
    let app = TestApp::builder().start().await;
    let earlier = app.session().await;
    let changed = ClientChanges { dpop: Some(DpopPolicy::Required), ..ClientChanges::default() };
    assert!(app.store().await.clients.change(&ClientId::parse(CLIENT).unwrap(), &changed).await.unwrap());

    let required =
        eventually(|| async { (app.authorize(&demo_authorize_query()).await.status() == 400).then_some(()) }).await;
    assert!(required.is_some(), "the policy is in force at the view's next refresh");
    let body =
        assert_token_error(app.authorize(&demo_authorize_query()).await, 400, "invalid_dpop_proof", Some("DPoP")).await;
    assert!(body["details"].as_str().unwrap().contains("must send a DPoP proof"), "{body}");
    let response = wait_times_with(&app, &earlier, &format!("Bearer {}", earlier.token), None).await;
    assert_error(response, 401, "unAuthorized", None).await;

    let key = AppKey::p256();
    let session = bound_session(&app, &key).await;
    assert_eq!(wait_times_bound(&app, &session, &key, None).await.status(), 200);
}

/// The nonce an answer gives to use next (`DPoP-Nonce`).
fn nonce_asked(response: &Response) -> String {
    response.headers()["dpop-nonce"].to_str().unwrap().to_owned()
}

fn with_nonces(settings: &mut server::settings::Settings) {
    settings.tokens.dpop_nonce = true;
}

#[tokio::test]
async fn with_server_nonces_a_proof_without_a_recent_one_is_answered_with_one_to_use() {
    let app = TestApp::builder().settings(with_nonces).start().await;
    let key = AppKey::p256();
    let url = authorize_url(&app);

    let first = authorize_with(&app, &[&key.proof("GET", &url, None, None)]).await;
    let nonce = nonce_asked(&first);
    assert_token_error(first, 400, "use_dpop_nonce", Some("DPoP")).await;
    let made_up =
        authorize_with(&app, &[&key.proof("GET", &url, None, Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))]).await;
    assert_token_error(made_up, 400, "use_dpop_nonce", Some("DPoP")).await;

    let response = authorize_with(&app, &[&key.proof("GET", &url, None, Some(&nonce))]).await;
    assert_eq!(response.status(), 200);
    let sid = response.headers()["sid"].to_str().unwrap().to_owned();
    let body: Value = response.json().await.unwrap();
    let session = Session { token: body["access_token"].as_str().unwrap().to_owned(), sid };

    let without = wait_times_bound(&app, &session, &key, None).await;
    let nonce = nonce_asked(&without);
    assert_dpop_challenge(without, "use_dpop_nonce").await;
    let answered = wait_times_bound(&app, &session, &key, Some(&nonce)).await;
    assert_eq!(answered.status(), 200);
    // RFC 9449 §8.2: every answer to a call with a proof carries a nonce to use next.
    let next = nonce_asked(&answered);
    assert_eq!(wait_times_bound(&app, &session, &key, Some(&next)).await.status(), 200);
    let plain = app.session().await;
    assert!(app.wait_times(&plain, &["00001"]).await.headers().get("dpop-nonce").is_none(), "none without a proof");
}

#[tokio::test]
async fn a_nonce_one_instance_hands_out_is_accepted_by_another_on_the_same_store() {
    let Some(first) = TestApp::builder().on_backend("postgres").settings(with_nonces).try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).settings(with_nonces).start().await;
    let key = AppKey::ed25519();
    let asked = authorize_with(&first, &[&key.proof("GET", &authorize_url(&first), None, None)]).await;
    let nonce = nonce_asked(&asked);
    let response = authorize_with(&second, &[&key.proof("GET", &authorize_url(&second), None, Some(&nonce))]).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

#[tokio::test]
async fn a_proof_used_on_one_instance_is_refused_on_another_sharing_redis() {
    let Some(redis) = redis_url("replays refused across instances") else { return };
    let shared = |settings: &mut server::settings::Settings| {
        settings.limits.redis_url = Some(redis.parse().unwrap());
    };
    let Some(first) = TestApp::builder().on_backend("postgres").settings(shared).try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).settings(shared).start().await;
    assert_eq!(first.settings.http.public_base_url(), second.settings.http.public_base_url(), "one public name");
    let key = AppKey::p256();
    let proof = key.proof("GET", &authorize_url(&first), None, None);
    assert_eq!(authorize_with(&first, &[&proof]).await.status(), 200);
    let body =
        assert_token_error(authorize_with(&second, &[&proof]).await, 400, "invalid_dpop_proof", Some("DPoP")).await;
    assert!(body["details"].as_str().unwrap().contains("used before"), "{body}");
}

/// Issue 42: two instances share a Redis through a line that is cut and mended, as a
/// Redis restart or failover does. Proofs the first accepted alone while Redis was away,
/// and those it accepted just after Redis returned (its first ask then failed on the
/// dropped connection, and it decided alone for a second), were accepted again on the
/// second 3 and 20 s after the return. Now each set is refused there 1, 3 and 20 s after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_returns_no_proof_used_on_one_instance_is_accepted_on_another() {
    let Some(redis) = redis_url("replays refused across instances after Redis returns") else { return };
    let redis = url::Url::parse(&redis).unwrap();
    let line =
        adapters::testing::TcpLine::to(format!("{}:{}", redis.host_str().unwrap(), redis.port().unwrap_or(6379))).await;
    // The same Redis, its password and database kept, through the line.
    let mut through = redis.clone();
    through.set_host(Some("127.0.0.1")).unwrap();
    through.set_port(Some(line.port)).unwrap();
    let shared = |settings: &mut server::settings::Settings| {
        settings.limits.redis_url = Some(through.as_str().parse().unwrap());
    };
    let Some(first) = TestApp::builder().on_backend("postgres").settings(shared).try_start().await else { return };
    let second = TestApp::builder().on_store(&first.database_url).settings(shared).start().await;
    let key = AppKey::p256();
    let used_on_first = || async {
        let proof = key.proof("GET", &authorize_url(&first), None, None);
        let response = authorize_with(&first, &[&proof]).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        proof
    };
    // Both instances have asked Redis before it goes.
    used_on_first().await;
    let proof = key.proof("GET", &authorize_url(&second), None, None);
    assert_eq!(authorize_with(&second, &[&proof]).await.status(), 200);

    line.cut();
    let mut sets: [Vec<String>; 3] = Default::default();
    for set in &mut sets {
        for _ in 0..4 {
            set.push(used_on_first().await);
        }
    }
    line.mend();
    let returned = std::time::Instant::now();
    for set in &mut sets {
        for _ in 0..4 {
            set.push(used_on_first().await);
        }
    }

    for (set, after) in sets.iter().zip([1, 3, 20]) {
        tokio::time::sleep_until((returned + std::time::Duration::from_secs(after)).into()).await;
        for (n, proof) in set.iter().enumerate() {
            let response = authorize_with(&second, &[proof]).await;
            let body = assert_token_error(response, 400, "invalid_dpop_proof", Some("DPoP")).await;
            assert!(body["details"].as_str().unwrap().contains("used before"), "{after} s after, proof {n}: {body}");
        }
    }
}

/// A page that makes a P-256 key with WebCrypto (not extractable), gets a token bound to
/// it, answering the server's request for a nonce (read from `DPoP-Nonce`), calls both
/// bearer operations with fresh proofs, and tries the token as a bearer token; its
/// `window.outcome` settles to a JSON summary. `base` is the service's public base URL,
/// which proofs name; `api` where the page reaches it.
fn dpop_page(api: &str, base: &str) -> String {
    crate::cors::outcome_page(
        "bank app with DPoP",
        &format!(
            r#"
  const api = "{api}", base = "{base}", uuid = "3fa85f64-5717-4562-b3fc-2c963f66afa6";
    const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
      .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const utf8 = (text) => new TextEncoder().encode(text);
    const keys = await crypto.subtle.generateKey({{name: "ECDSA", namedCurve: "P-256"}}, false, ["sign", "verify"]);
    const {{kty, crv, x, y}} = await crypto.subtle.exportKey("jwk", keys.publicKey);
    const header = b64url(utf8(JSON.stringify({{typ: "dpop+jwt", alg: "ES256", jwk: {{kty, crv, x, y}}}})));
    let nonce;
    const proof = async (htm, htu, token) => {{
      const claims = {{jti: crypto.randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000)}};
      if (nonce) claims.nonce = nonce;
      if (token) claims.ath = b64url(await crypto.subtle.digest("SHA-256", utf8(token)));
      const signed = `${{header}}.${{b64url(utf8(JSON.stringify(claims)))}}`;
      const signature = await crypto.subtle.sign({{name: "ECDSA", hash: "SHA-256"}}, keys.privateKey, utf8(signed));
      return `${{signed}}.${{b64url(signature)}}`;
    }};
    const query = new URLSearchParams({{response_type: "token", client_id: "browser-app", businessCode: "GCB",
      countryCode: "MX", channelId: "WEB"}});
    const authorize = async () => fetch(`${{api}}/api/v1/authorize?${{query}}`,
      {{headers: {{uuid, DPoP: await proof("GET", `${{base}}/api/v1/authorize`)}}}});
    const asked = await authorize();
    const askedCode = (await asked.json()).code;
    nonce = asked.headers.get("DPoP-Nonce");
    const token = await authorize();
    const sid = token.headers.get("sid");
    const body = await token.json();
    const access = body.access_token;
    const waitPath = "/api/v1/open-banking/channels/branch/waittime/retrieve";
    const waits = await fetch(`${{api}}${{waitPath}}`, {{
      method: "POST",
      headers: {{Authorization: `DPoP ${{access}}`, DPoP: await proof("POST", `${{base}}${{waitPath}}`, access),
        client_id: "browser-app", uuid, sid, countryCode: "MX", businessCode: "GCB", ChannelId: "WEB",
        Accept: "application/json", "Content-Type": "application/json"}},
      body: JSON.stringify({{branches: [{{branchId: "00001"}}]}})
    }});
    const atms = await fetch(`${{api}}/api/v1/atms`, {{headers: {{Authorization: `DPoP ${{access}}`,
      DPoP: await proof("GET", `${{base}}/api/v1/atms`, access), client_id: "browser-app"}}}});
    const asBearer = await fetch(`${{api}}/api/v1/atms`, {{cache: "no-store",
      headers: {{Authorization: `Bearer ${{access}}`, client_id: "browser-app"}}}});
    return JSON.stringify({{asked: asked.status, askedCode, nonce, token: token.status, tokenType: body.token_type,
      access, jkt: JSON.parse(atob(access.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).cnf.jkt,
      waits: waits.status, atms: atms.status, asBearer: asBearer.status}});"#
        ),
    )
}

#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs Chromium (apt-get install chromium); cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[tokio::test]
async fn a_page_binds_its_token_to_a_webcrypto_key_and_calls_both_operations_with_proofs() {
    let Some(path) = crate::browser::chromium_for("the browser DPoP test") else { return };
    let app = TestApp::builder().settings(with_nonces).start().await;
    let base = app.settings.http.public_base_url();
    let (port, server) = crate::cors::serve_page(dpop_page(&app.address, &base)).await;
    let origin = format!("http://127.0.0.1:{port}");
    let client = domain::client::ClientRegistration {
        client_id: ClientId::parse("browser-app").unwrap(),
        scope: domain::testing::scope("WEB"),
        redirect_uris: vec![domain::client::RedirectUri::parse(&format!("{origin}/callback")).unwrap()],
        allowed_origins: Vec::new(),
        status: domain::client::ClientStatus::Active,
        dpop: DpopPolicy::Required,
    };
    assert!(app.store().await.clients.insert(&client, now()).await.unwrap());
    let served = eventually(|| async {
        (crate::cors::preflight(&app, "/api/v1/atms", &origin, "GET").await.status() == 204).then_some(())
    })
    .await;
    assert!(served.is_some(), "the new client's origin is served at the view's next refresh");

    let outcome = tokio::task::spawn_blocking(move || {
        let mut browser = crate::browser::Browser::launch(path);
        let page = browser.open(&origin);
        browser.wait_until(&page, "window.outcome !== undefined");
        serde_json::from_str::<Value>(browser.evaluate(&page, "window.outcome").as_str().unwrap()).unwrap()
    })
    .await
    .unwrap();
    server.abort();

    assert_eq!(
        (outcome["asked"].as_u64(), outcome["askedCode"].as_str()),
        (Some(400), Some("use_dpop_nonce")),
        "{outcome}"
    );
    assert!(outcome["nonce"].as_str().is_some_and(|nonce| nonce.len() == 32), "the page read DPoP-Nonce: {outcome}");
    assert_eq!((outcome["token"].as_u64(), outcome["tokenType"].as_str()), (Some(200), Some("DPoP")), "{outcome}");
    assert_eq!(outcome["waits"], 200, "{outcome}");
    assert_eq!(outcome["atms"], 200, "{outcome}");
    assert_eq!(outcome["asBearer"], 401, "{outcome}");
    // The key never left the page; what the service bound is its thumbprint.
    assert_eq!(token_claims(outcome["access"].as_str().unwrap())["cnf"]["jkt"], outcome["jkt"]);
}

/// Node.js and npm, for the test `what`: where either is missing, the test says it
/// skipped and passes outside CI only.
fn node_for(what: &str) -> bool {
    let found = ["node", "npm"].iter().all(|program| {
        std::process::Command::new(program).arg("--version").output().is_ok_and(|output| output.status.success())
    });
    if !found {
        assert!(std::env::var("CI").is_err(), "CI must have Node.js and npm (installed by .ci/run)");
        eprintln!("SKIPPED: no Node.js or npm; install them to run {what}");
    }
    found
}

#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs Node.js, npm and the npm registry; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[tokio::test]
async fn outside_libraries_make_proofs_call_with_a_bound_token_and_validate_it_as_a_resource_server() {
    if !node_for("the DPoP interoperability test") {
        return;
    }
    // The libraries' own proofs name the URL they send to: the service is reached at the
    // public base URL it is told, on a port chosen here.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}");
    let public = base.clone();
    let app = TestApp::builder()
        .settings(move |settings| {
            settings.http.listen = format!("127.0.0.1:{port}").parse().unwrap();
            settings.http.public_base_url = Some(public);
        })
        .start()
        .await;
    assert_eq!(app.address, base);

    let folder = tempfile::tempdir().unwrap();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    for file in ["package.json", "package-lock.json", "dpop.mjs"] {
        std::fs::copy(source.join(file), folder.path().join(file)).unwrap();
    }
    let at = folder.path().to_owned();
    let run = move |program: &str, args: &[&str]| {
        let output = std::process::Command::new(program).args(args).current_dir(&at).output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{program} {args:?}: {text}{}", String::from_utf8_lossy(&output.stderr));
        text
    };
    let script = folder.path().join("dpop.mjs").to_string_lossy().into_owned();
    let printed = tokio::task::spawn_blocking(move || {
        run("npm", &["ci", "--no-audit", "--no-fund", "--loglevel=error"]);
        run("node", &[&script, &base])
    })
    .await
    .unwrap();

    let results: Vec<Value> = printed.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(results.len(), 2, "{printed}");
    for result in results {
        assert_eq!(result["algs"], json!(["ES256", "EdDSA", "Ed25519"]), "{result}");
        assert_eq!(
            (result["authorize"].as_u64(), result["token_type"].as_str()),
            (Some(200), Some("DPoP")),
            "{result}"
        );
        assert_eq!(result["atms_by_oauth4webapi"], 200, "oauth4webapi's own proofs: {result}");
        assert_eq!(result["atms"], 200, "dpop's proof: {result}");
        assert_eq!(result["validated"], true, "oauth4webapi validates the token and its proof: {result}");
        assert!(result["jkt"].as_str().is_some_and(|jkt| jkt.len() == 43), "{result}");
    }
}
