//! The docs page in a real browser: Debian's Chromium, driven headless over CDP.
//!
//! `.ci/run` installs Chromium. Where no Chromium is installed the test says so and
//! passes only outside CI; under `CI=true` a missing browser is a failure.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Duration;

use headless_chrome::protocol::cdp::Page::CaptureScreenshotFormatOption;
use headless_chrome::{Browser, LaunchOptions};

use crate::helpers::TestApp;

/// Debian's Chromium (or another Chrome), where installed.
fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists())
}

/// Chromium for the test `what`: where none is installed, the test says it skipped and
/// passes outside CI only (under `CI=true` a missing browser fails it).
pub fn chromium_for(what: &str) -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(std::env::var("CI").is_err(), "CI must have Chromium (installed by .ci/run)");
        eprintln!("SKIPPED: no Chromium installed; `apt-get install chromium` to run {what}");
    }
    found
}

/// Flags for a sandbox-less, network-less machine (see the machine notes): no GPU, no
/// background traffic that the closed network would refuse.
pub fn launch(path: PathBuf) -> Browser {
    let args: Vec<&OsStr> = [
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let options = LaunchOptions::default_builder()
        .path(Some(path))
        .headless(true)
        .sandbox(false)
        .window_size(Some((1280, 1600)))
        .idle_browser_timeout(Duration::from_secs(60))
        .args(args)
        .build()
        .unwrap();
    Browser::new(options).unwrap()
}

#[tokio::test]
async fn the_docs_page_lists_the_operations_and_runs_the_token_call() {
    let Some(path) = chromium_for("the docs page test") else { return };
    let app = TestApp::with_demo().await;
    let url = format!("{}/api/docs", app.address);
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("docs-try-it-out.png");
    let shot = screenshot.clone();

    let (listed, body) = tokio::task::spawn_blocking(move || {
        let browser = launch(path);
        let tab = browser.new_tab().unwrap();
        tab.set_default_timeout(Duration::from_secs(20));
        tab.navigate_to(&url).unwrap().wait_until_navigated().unwrap();
        tab.wait_for_element(".opblock-summary-path").unwrap();
        let listed: Vec<String> = tab
            .find_elements(".opblock-summary-path")
            .unwrap()
            .iter()
            .map(|element| element.get_inner_text().unwrap_or_default())
            .collect();

        tab.wait_for_element("#operations-Token-authorize .opblock-summary").unwrap().click().unwrap();
        tab.wait_for_element("#operations-Token-authorize .try-out__btn").unwrap().click().unwrap();
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
            tab.wait_for_element(&input).unwrap().click().unwrap();
            tab.type_str(value).unwrap();
        }
        tab.wait_for_element("#operations-Token-authorize .execute").unwrap().click().unwrap();
        let answer = tab
            .wait_for_element("#operations-Token-authorize .live-responses-table .response-col_description pre")
            .unwrap()
            .get_inner_text()
            .unwrap_or_default();
        let png = tab.capture_screenshot(CaptureScreenshotFormatOption::Png, None, None, true).unwrap();
        std::fs::write(&shot, png).unwrap();
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
