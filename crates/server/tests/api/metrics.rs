//! Prometheus metrics on their own listener: OpenTelemetry's HTTP request duration by
//! route template, and the service's own counts, imports run by the CLI among them.

use crate::cli::{branch_atm, stdout};
use crate::helpers::{TestApp, demo_authorize_query};

async fn scrape(app: &TestApp) -> String {
    let port = app.metrics_port.expect("a metrics listener");
    reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.unwrap().text().await.unwrap()
}

/// The value of the first sample whose line starts with `series` (name and labels).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find(|line| line.starts_with(series))?.rsplit(' ').next()?.parse().ok()
}

#[tokio::test]
async fn metrics_are_served_on_their_own_listener_with_route_templates_and_the_services_counts() {
    if !crate::store::other_processes_reach_the_store("the CLI binary beside the app") {
        return;
    }
    let app = TestApp::builder()
        .settings(|settings| settings.observability.metrics_listen = Some("127.0.0.1:0".parse().unwrap()))
        .start()
        .await;
    let session = app.session().await;
    assert_eq!(app.wait_times(&session, &["00001"]).await.status(), 200);
    let forged = crate::helpers::Session { token: format!("{}x", session.token), sid: session.sid.clone() };
    assert_eq!(app.wait_times(&forged, &["00001"]).await.status(), 401);
    let probe = app.http.get(format!("{}/api/v1/atms/secret-{}", app.address, uuid::Uuid::new_v4())).send();
    assert_eq!(probe.await.unwrap().status(), 404);
    assert_eq!(app.authorize(&demo_authorize_query()).await.status(), 200);

    let text = scrape(&app).await;
    let route = r#"http_server_request_duration_seconds_bucket{http_request_method="GET",http_route="/api/v1/authorize",http_response_status_code="200",le="0.005"}"#;
    assert!(sample(&text, route).is_some(), "OTel's first bucket for the authorize route:\n{text}");
    let bound = route.replace(r#"le="0.005""#, r#"le="0.3""#);
    assert!(sample(&text, &bound).is_some(), "the latency objective's 300 ms (docs/prometheus-slo-rules.yml)");
    assert!(text.contains(
        r#"http_route="/api/v1/open-banking/channels/branch/waittime/retrieve",http_response_status_code="401""#
    ));
    assert!(text.contains(r#"http_route="unmatched""#), "unmatched paths as one value");
    assert!(!text.contains("secret-"), "never the raw path");
    assert!(sample(&text, "branch_atm_tokens_issued_total").is_some_and(|n| n >= 2.0));
    assert!(text.contains(r#"branch_atm_refusals_total{operation="bearer",reason="malformed token"}"#), "{text}");
    assert_eq!(sample(&text, "branch_atm_atms "), Some(1200.0), "the demo set's ATMs held");
    assert_eq!(sample(&text, "branch_atm_wait_time_entries "), Some(300.0));
    assert!(sample(&text, "branch_atm_view_age_seconds ").is_some_and(|age| age < 5.0));
    assert!(text.contains("branch_atm_token_batch_size_bucket"), "group-commit batch sizes");
    assert_eq!(sample(&text, "branch_atm_log_messages_dropped_total "), Some(0.0), "nothing dropped");

    // Imports are commands of their own; the store counts them, so every instance shows them.
    let folder = tempfile::tempdir().unwrap();
    let set = folder.path().join("atms.json");
    let set = set.to_str().unwrap();
    let times = folder.path().join("times.csv");
    std::fs::write(&times, "branchId,timeTaken\n00001,42\n").unwrap();
    let broken = folder.path().join("broken.json");
    std::fs::write(&broken, "{}").unwrap();
    let url = app.database_url.as_str();
    assert!(branch_atm(url, &["atms", "export", set]).status.success());
    for _ in 0..2 {
        let again = stdout(&branch_atm(url, &["atms", "import", set]));
        assert!(again.lines().any(|line| line.starts_with("unchanged")), "{again}");
    }
    assert!(!branch_atm(url, &["atms", "import", broken.to_str().unwrap()]).status.success());
    assert!(branch_atm(url, &["atms", "import", "--dry-run", set]).status.success(), "not counted");
    assert!(branch_atm(url, &["waittimes", "import", times.to_str().unwrap()]).status.success());
    let text = scrape(&app).await;
    let imports = |kind: &str, outcome: &str| {
        sample(&text, &format!(r#"branch_atm_imports_total{{kind="{kind}",outcome="{outcome}"}}"#))
    };
    assert_eq!(imports("atms", "unchanged"), Some(2.0), "{text}");
    assert_eq!(imports("atms", "invalid"), Some(1.0));
    assert_eq!(imports("wait_times", "applied"), Some(1.0));
    assert_eq!(imports("atms", "applied"), None, "never seen, never shown");
    let last = sample(&text, r#"branch_atm_import_last_seconds{kind="wait_times",outcome="applied"}"#);
    assert!(last.is_some_and(|at| (at - crate::helpers::now() as f64).abs() < 60.0), "{last:?}");

    let public = app.http.get(format!("{}/metrics", app.address)).send().await.unwrap();
    assert_eq!(public.status(), 404, "never on the public port");
}
