//! HTTPS served by rustls, checked with a real TLS client that trusts only our CA.

use crate::helpers::TestApp;

#[tokio::test]
async fn the_service_speaks_https_when_given_a_certificate_and_key() {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let (cert, key) = (folder.path().join("cert.pem"), folder.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();

    let app = TestApp::with_demo_and(|settings| {
        settings.tls = Some(api::settings::TlsFiles { cert: cert.clone(), key: key.clone() });
    })
    .await;
    let port = app.address.rsplit(':').next().unwrap();
    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap()])
        .https_only(true)
        .build()
        .unwrap();
    let response = client.get(format!("https://localhost:{port}/api/health/live")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["strict-transport-security"], "max-age=31536000; includeSubDomains");

    let plain = app.http.get(format!("http://127.0.0.1:{port}/api/health/live")).send().await;
    assert!(plain.is_err() || !plain.unwrap().status().is_success(), "no plain HTTP on the TLS port");
}
