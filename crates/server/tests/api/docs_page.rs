//! The docs page in a real browser: Debian's Chromium, headless (crate::browser).

use std::path::PathBuf;

use crate::browser::{Browser, chromium_for};
use crate::helpers::TestApp;

#[cfg_attr(
    machine_tests_ignored,
    ignore = "needs Chromium (apt-get install chromium); cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[tokio::test]
async fn the_docs_page_lists_the_operations_and_runs_the_token_call() {
    let Some(path) = chromium_for("the docs page test") else { return };
    let app = TestApp::builder().start().await;
    let url = format!("{}/api/docs", app.address);
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docs-try-it-out.png");
    let shot = screenshot.clone();

    let (listed, body) = tokio::task::spawn_blocking(move || {
        let mut browser = Browser::launch(path);
        let page = browser.open(&url);
        browser.wait_until(&page, "document.querySelector('.opblock-summary-path')");
        let listed: Vec<String> = serde_json::from_value(browser.evaluate(
            &page,
            "[...document.querySelectorAll('.opblock-summary-path')].map(element => element.innerText)",
        ))
        .unwrap();

        browser.click(&page, "#operations-Token-authorize .opblock-summary");
        browser.click(&page, "#operations-Token-authorize .try-out__btn");
        let values = [
            ("uuid", "3fa85f64-5717-4562-b3fc-2c963f66afa6"),
            ("response_type", "token"),
            ("client_id", "demo-mobile-app"),
            ("businessCode", "GCB"),
            ("countryCode", "MX"),
            ("channelId", "MOBILE"),
        ];
        for (name, value) in values {
            let input = format!("#operations-Token-authorize tr[data-param-name=\"{name}\"] input");
            browser.type_into(&page, &input, value);
        }
        browser.click(&page, "#operations-Token-authorize .execute");
        let answer =
            "document.querySelector('#operations-Token-authorize .live-responses-table .response-col_description pre')";
        browser.wait_until(&page, answer);
        let answer = browser.evaluate(&page, &format!("{answer}.innerText")).as_str().unwrap_or_default().to_owned();
        std::fs::write(&shot, browser.screenshot(&page)).unwrap();
        (listed, answer)
    })
    .await
    .unwrap();

    eprintln!("screenshot: {}", screenshot.display());
    for operation in ["/v1/authorize", "/v1/open-banking/channels/branch/waittime/retrieve", "/v1/atms"] {
        assert!(listed.iter().any(|path| path.contains(operation)), "{operation} listed in {listed:?}");
    }
    assert!(body.contains("access_token") && body.contains("visitor"), "Try it out answered: {body}");
    assert!(std::fs::metadata(&screenshot).unwrap().len() > 10_000, "a real screenshot");
}
