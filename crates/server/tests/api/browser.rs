//! Debian's Chromium, headless, driven over the Chrome DevTools Protocol (CDP).
//!
//! The browser tests need five things of a browser: open a page, wait for an element,
//! run a script (clicks and reads), type text, and take a screenshot. That is a dozen CDP
//! calls over one WebSocket, written here on tungstenite rather than taken from a CDP
//! crate: headless_chrome, the one tried, brought 88 crates into the test build, among
//! them a second rustls and ring that its build script compiles for the host on every
//! fresh build (ADR 0030).
//!
//! `.ci/run` installs Chromium. Where none is installed a test says so and passes only
//! outside CI; under `CI=true` a missing browser is a failure.

use std::io::{BufRead as _, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

/// How long one page may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

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

/// A headless Chromium of the test's own, stopped (by its PID) when dropped.
pub struct Browser {
    process: Child,
    socket: WebSocket<TcpStream>,
    next_id: u64,
    _profile: tempfile::TempDir,
}

/// A page (a CDP target and the session attached to it).
pub struct Page {
    session: String,
}

impl Browser {
    /// Starts Chromium with flags for a sandbox-less, network-less machine (no GPU, no
    /// background traffic the closed network would refuse) and connects to it.
    pub fn launch(path: PathBuf) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut process = Command::new(path)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1280,1600",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Chromium names its WebSocket on stderr ("DevTools listening on ws://…"); the
        // rest of what it says there is read too, so that no write of its finds a closed pipe.
        let stderr = BufReader::new(process.stderr.take().unwrap());
        let (named, endpoint) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                if let Some((_, url)) = line.split_once("DevTools listening on ") {
                    let _ = named.send(url.trim().to_owned());
                }
            }
        });
        let endpoint = endpoint.recv_timeout(PATIENCE).expect("Chromium names its DevTools endpoint");
        let address = endpoint.trim_start_matches("ws://").split('/').next().unwrap().to_owned();
        let stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let (socket, _) = tungstenite::client(endpoint.as_str(), stream).unwrap();
        Browser { process, socket, next_id: 0, _profile: profile }
    }

    /// One CDP call, in `session` (a page) or to the browser itself; its `result`.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut request = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            request["sessionId"] = json!(session);
        }
        self.socket.send(Message::text(request.to_string())).unwrap();
        loop {
            // Events (no `id`) and answers to nothing pending are passed over.
            let Message::Text(text) = self.socket.read().unwrap() else { continue };
            let answer: Value = serde_json::from_str(&text).unwrap();
            if answer["id"] != id {
                continue;
            }
            assert!(answer.get("error").is_none(), "{method}: {}", answer["error"]);
            return answer["result"].clone();
        }
    }

    /// Opens `url` in a new page and waits until it has loaded.
    pub fn open(&mut self, url: &str) -> Page {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let attached =
            self.call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}));
        let page = Page { session: attached["sessionId"].as_str().unwrap().to_owned() };
        self.call(Some(&page.session), "Page.navigate", json!({"url": url}));
        self.wait_until(&page, "location.href !== 'about:blank' && document.readyState === 'complete'");
        page
    }

    /// The value of a script run in `page`; a promise is awaited. A script that throws
    /// fails the test with the browser's message.
    pub fn evaluate(&mut self, page: &Page, script: &str) -> Value {
        let params = json!({"expression": script, "awaitPromise": true, "returnByValue": true});
        let result = self.call(Some(&page.session), "Runtime.evaluate", params);
        assert!(result.get("exceptionDetails").is_none(), "{script}: {}", result["exceptionDetails"]);
        result["result"]["value"].clone()
    }

    /// Waits until `condition` (a script) is true in `page`.
    pub fn wait_until(&mut self, page: &Page, condition: &str) {
        let deadline = Instant::now() + PATIENCE;
        while self.evaluate(page, &format!("Boolean({condition})")) != json!(true) {
            assert!(Instant::now() < deadline, "not within {PATIENCE:?}: {condition}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until an element matches `selector` and clicks the middle of it with the
    /// mouse, as a user does (what is drawn there gets the click, a child button too).
    pub fn click(&mut self, page: &Page, selector: &str) {
        let found = format!("document.querySelector({})", json!(selector));
        self.wait_until(page, &found);
        let middle = self.evaluate(
            page,
            &format!(
                "(() => {{ const element = {found}; element.scrollIntoView({{block: 'center'}}); \
                 const box = element.getBoundingClientRect(); \
                 return [box.left + box.width / 2, box.top + box.height / 2]; }})()"
            ),
        );
        for kind in ["mousePressed", "mouseReleased"] {
            let event = json!({"type": kind, "x": middle[0], "y": middle[1], "button": "left", "clickCount": 1});
            self.call(Some(&page.session), "Input.dispatchMouseEvent", event);
        }
    }

    /// Clicks the input `selector` and types `text` into it, as keystrokes do.
    pub fn type_into(&mut self, page: &Page, selector: &str, text: &str) {
        self.click(page, selector);
        self.evaluate(page, &format!("document.querySelector({}).focus()", json!(selector)));
        self.call(Some(&page.session), "Input.insertText", json!({"text": text}));
    }

    /// The whole page as a PNG.
    pub fn screenshot(&mut self, page: &Page) -> Vec<u8> {
        let params = json!({"format": "png", "captureBeyondViewport": true});
        let shot = self.call(Some(&page.session), "Page.captureScreenshot", params);
        base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().unwrap()).unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
