//! Traces, as a collector sees them: the binary exports to a small OTLP/HTTP receiver of
//! the test's own, which decodes what arrives with the `opentelemetry-proto` crate.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message as _;
use serde_json::Value;

use crate::helpers::{UUID, WAIT_TIME_PATH, demo_authorize_query, wait_time_headers};

/// A span as received, with its service's name.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    span: Span,
}

impl Received {
    fn attribute(&self, key: &str) -> Option<String> {
        let found = self.span.attributes.iter().find(|attribute| attribute.key == key)?;
        match found.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(text) => Some(text.clone()),
            AnyValue::IntValue(number) => Some(number.to_string()),
            AnyValue::BoolValue(flag) => Some(flag.to_string()),
            other => Some(format!("{other:?}")),
        }
    }

    fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }

    fn span_id(&self) -> String {
        hex(&self.span.span_id)
    }

    fn parent(&self) -> String {
        hex(&self.span.parent_span_id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// An OTLP/HTTP receiver on a port of its own: every span it is sent, and the paths
/// requests came to.
struct Collector {
    port: u16,
    spans: Arc<Mutex<Vec<Received>>>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Collector {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (kept, asked) = (Arc::clone(&spans), Arc::clone(&paths));
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                let Ok(connection) = connection else { return };
                let (kept, asked) = (Arc::clone(&kept), Arc::clone(&asked));
                std::thread::spawn(move || serve(connection, &kept, &asked));
            }
        });
        Self { port, spans, paths }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spans(&self) -> Vec<Received> {
        self.spans.lock().unwrap().clone()
    }
}

/// Answers one connection's export requests (keep-alive) with 200 and an empty body.
fn serve(connection: TcpStream, spans: &Mutex<Vec<Received>>, paths: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(connection.try_clone().unwrap());
    let mut writer = connection;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        paths.lock().unwrap().push(path);
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf export");
        for resource in request.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|resource| resource.attributes.iter())
                .find(|attribute| attribute.key == "service.name")
                .and_then(|attribute| match attribute.value.as_ref()?.value.as_ref()? {
                    AnyValue::StringValue(name) => Some(name.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for scope in resource.scope_spans {
                let mut kept = spans.lock().unwrap();
                kept.extend(scope.spans.into_iter().map(|span| Received { service: service.clone(), span }));
            }
        }
        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// The binary serving a fresh store with demo data, exporting to `endpoint`; its
/// address and its standard output's lines.
fn serve_traced(
    fresh: &crate::cli::Fresh,
    endpoint: &str,
    extra: &[&str],
) -> (Child, String, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut server = crate::binary::branch_atm_command()
        .args(["--database-url", &fresh.url, "serve", "--listen", "127.0.0.1:0", "--shutdown-drain-ms", "0"])
        .args(["--otlp-endpoint", endpoint, "--log-format", "json", "--log-filter", "info"])
        .args(extra)
        .current_dir(fresh.folder.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    // Log lines (INFO) may come before the line that says where it listens.
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("branch-atm listening on ").map(str::to_owned))
        .expect("a line says where it listens");
    (server, address, lines)
}

/// A new store, and a wait-time feed of one branch for a command to import into it.
fn store_and_feed() -> (crate::cli::Fresh, std::path::PathBuf) {
    let fresh = crate::cli::fresh_database();
    let csv = fresh.folder.path().join("waits.csv");
    std::fs::write(&csv, "branchId,timeTaken\n00001,12\n").unwrap();
    (fresh, csv)
}

fn stop(server: &mut Child) {
    let killed = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(killed.success());
    assert!(server.wait().unwrap().success());
}

async fn token(http: &reqwest::Client, address: &str, headers: &[(&str, &str)]) -> (String, String) {
    let mut request = http.get(format!("{address}/api/v1/authorize")).query(&demo_authorize_query());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let sid = response.headers()["sid"].to_str().unwrap().to_owned();
    let body: Value = response.json().await.unwrap();
    (body["access_token"].as_str().unwrap().to_owned(), sid)
}

async fn wait_times(http: &reqwest::Client, address: &str, token: &str, sid: &str) -> reqwest::Response {
    let mut request = http.post(format!("{address}{WAIT_TIME_PATH}"));
    for (name, value) in wait_time_headers() {
        request = request.header(name, value);
    }
    request
        .header("Authorization", format!("Bearer {token}"))
        .header("sid", sid)
        .body(r#"{"branches":[{"branchId":"00001"}]}"#)
        .send()
        .await
        .unwrap()
}

/// The spans of one trace, by name (the last of a name wins).
fn by_name(spans: &[Received], trace: &str) -> HashMap<String, Received> {
    spans.iter().filter(|span| span.trace_id() == trace).map(|span| (span.span.name.clone(), span.clone())).collect()
}

/// The server span whose `uuid` attribute is `uuid`.
fn server_span<'s>(spans: &'s [Received], uuid: &str) -> Option<&'s Received> {
    spans
        .iter()
        .find(|span| span.span.kind == SpanKind::Server as i32 && span.attribute("uuid").as_deref() == Some(uuid))
}

#[tokio::test]
async fn an_authorize_a_bearer_operation_and_a_refusal_are_traced_as_span_trees() {
    let collector = Collector::start();
    let fresh = crate::cli::fresh_database();
    let (mut server, address, lines) = serve_traced(&fresh, &collector.endpoint(), &["--trace-sample-ratio", "1"]);
    let http = reqwest::Client::builder().user_agent("trace-test/1").build().unwrap();
    let (token, sid) = token(&http, &address, &[("uuid", UUID)]).await;
    let answered = wait_times(&http, &address, &token, &sid).await;
    assert_eq!(answered.status(), 200);
    let refused = wait_times(&http, &address, "not-a-token", &sid).await;
    assert_eq!(refused.status(), 401);
    // A request whose caller did not sample it: nothing of it is exported, even at a
    // ratio of 1 (the work beneath it must not turn up as roots of its own).
    let not_kept = "0af7651916cd43dd8448eb211c80319c";
    self::token(&http, &address, &[("uuid", UUID), ("traceparent", &format!("00-{not_kept}-b7ad6b7169203331-00"))])
        .await;
    stop(&mut server);
    let spans = collector.spans();
    assert!(collector.paths.lock().unwrap().iter().all(|path| path == "/v1/traces"));
    assert!(spans.iter().all(|span| span.service == "branch-atm"), "service.name defaults to branch-atm");

    // The authorize: a SERVER span named by its route template, with the HTTP
    // conventions' attributes, and the work beneath it in the same trace.
    let authorize = spans
        .iter()
        .find(|span| span.span.name == "GET /api/v1/authorize")
        .unwrap_or_else(|| panic!("no authorize span among {:?}", names(&spans)));
    assert_eq!(authorize.span.kind, SpanKind::Server as i32);
    assert!(authorize.span.parent_span_id.is_empty(), "a request without traceparent starts a trace");
    for (key, value) in [
        ("http.request.method", "GET"),
        ("http.route", "/api/v1/authorize"),
        ("http.response.status_code", "200"),
        ("url.path", "/api/v1/authorize"),
        ("url.scheme", "http"),
        ("client.address", "127.0.0.1"),
        ("server.address", "127.0.0.1"),
        ("user_agent.original", "trace-test/1"),
        ("uuid", UUID),
    ] {
        assert_eq!(authorize.attribute(key).as_deref(), Some(value), "{key} of {:?}", authorize.span.attributes);
    }
    assert_eq!(
        spans.iter().filter(|span| span.span.name == "sign token").count(),
        1,
        "one token signed in a kept trace: {:?}",
        names(&spans)
    );
    assert!(spans.iter().all(|span| span.trace_id() != not_kept));
    let tree = by_name(&spans, &authorize.trace_id());
    for child in ["rate limits", "sign token", "token record"] {
        assert!(tree.contains_key(child), "{child} beneath the authorize: {:?}", tree.keys());
    }
    assert!(
        tree.values().all(|span| span.span_id() == authorize.span_id() || !span.span.parent_span_id.is_empty()),
        "every other span of the trace has a parent"
    );
    // The group commit that stored the token: a trace of its own, linked to the
    // request's wait for it, with the store's INSERT beneath.
    let record = &tree["token record"];
    let commit = spans
        .iter()
        .find(|span| span.span.name == "token records group commit")
        .unwrap_or_else(|| panic!("no group commit among {:?}", names(&spans)));
    assert!(
        commit
            .span
            .links
            .iter()
            .any(|link| hex(&link.span_id) == record.span_id() && hex(&link.trace_id) == record.trace_id()),
        "the commit links to the request's record span"
    );
    // A database's store writes beneath it; the in-memory store has no statements.
    if crate::store::other_processes_reach_the_store("the store's statements in a trace") {
        let insert = by_name(&spans, &commit.trace_id());
        let insert = insert.get("INSERT token_records").expect("the store's write beneath the commit");
        assert_eq!(insert.span.kind, SpanKind::Client as i32);
        assert_eq!(insert.attribute("db.operation.name").as_deref(), Some("INSERT"));
        assert_eq!(insert.attribute("db.collection.name").as_deref(), Some("token_records"));
        let system = insert.attribute("db.system.name").unwrap_or_default();
        assert!(["sqlite", "postgresql", "mysql"].contains(&system.as_str()), "{system}");
    }

    // The bearer operation: its check and limits beneath it.
    let bearer: Vec<&Received> =
        spans.iter().filter(|span| span.span.name == format!("POST {WAIT_TIME_PATH}")).collect();
    assert_eq!(bearer.len(), 2, "{:?}", names(&spans));
    let ok = bearer.iter().find(|span| span.attribute("http.response.status_code").as_deref() == Some("200")).unwrap();
    let tree = by_name(&spans, &ok.trace_id());
    let check = tree.get("bearer check").expect("the bearer check");
    assert_eq!(check.parent(), ok.span_id());
    assert_eq!(tree.get("rate limits").map(Received::parent), Some(check.span_id()));
    // The refusal: a 4xx is the caller's, so the span's status stays unset.
    let refusal =
        bearer.iter().find(|span| span.attribute("http.response.status_code").as_deref() == Some("401")).unwrap();
    assert_eq!(refusal.span.status.as_ref().map_or(0, |status| status.code), StatusCode::Unset as i32);
    assert_eq!(refusal.attribute("error.type"), None);

    // Logs: the access line of each request, and every line logged inside one, carry
    // its trace and span ids.
    let logged: Vec<Value> = lines.map_while(Result::ok).filter_map(|line| serde_json::from_str(&line).ok()).collect();
    let access = logged
        .iter()
        .find(|line| line["target"] == "access" && line["route"] == "/api/v1/authorize")
        .expect("the authorize's access line");
    assert_eq!(access["trace_id"].as_str(), Some(authorize.trace_id().as_str()));
    assert_eq!(access["span_id"].as_str(), Some(authorize.span_id().as_str()));
    let inside = logged
        .iter()
        .find(|line| line["fields"]["message"] == "credentials refused")
        .unwrap_or_else(|| panic!("the refusal's log line among {logged:?}"));
    assert_eq!(inside["span"]["trace_id"].as_str(), Some(refusal.trace_id().as_str()), "{inside}");
    assert_eq!(inside["span"]["span_id"].as_str(), Some(refusal.span_id().as_str()), "{inside}");
}

#[tokio::test]
async fn a_callers_traceparent_makes_the_request_its_child_and_its_sampling_decision_is_followed() {
    let collector = Collector::start();
    let fresh = crate::cli::fresh_database();
    // Sampling nothing of its own: only a caller's decision keeps a trace.
    let (mut server, address, lines) = serve_traced(
        &fresh,
        &collector.endpoint(),
        &["--trace-sample-ratio", "0", "--otel-service-name", "atm-api-blue"],
    );
    let http = reqwest::Client::new();
    let sampled_uuid = "9b2f3c1e-6a1d-4c3b-8f7e-2d4a5b6c7d8e";
    let unsampled_uuid = "1c6e0d2a-3b4f-4a5e-9d8c-7b6a5f4e3d2c";
    let root_uuid = "5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716";
    let caller = "4bf92f3577b34da6a3ce929d0e0e4736";
    token(
        &http,
        &address,
        &[
            ("uuid", sampled_uuid),
            ("traceparent", &format!("00-{caller}-00f067aa0ba902b7-01")),
            ("tracestate", "bank=checkout"),
        ],
    )
    .await;
    let unsampled = "0af7651916cd43dd8448eb211c80319c";
    token(
        &http,
        &address,
        &[("uuid", unsampled_uuid), ("traceparent", &format!("00-{unsampled}-b7ad6b7169203331-00"))],
    )
    .await;
    token(&http, &address, &[("uuid", root_uuid)]).await;
    stop(&mut server);
    let spans = collector.spans();

    let child = server_span(&spans, sampled_uuid).unwrap_or_else(|| panic!("{:?}", names(&spans)));
    assert_eq!((child.trace_id(), child.parent()), (caller.to_owned(), "00f067aa0ba902b7".to_owned()));
    assert_eq!(child.span.trace_state, "bank=checkout");
    assert_eq!(child.service, "atm-api-blue");
    assert!(by_name(&spans, caller).contains_key("sign token"), "the work beneath follows the caller's decision");
    assert!(server_span(&spans, unsampled_uuid).is_none(), "a caller that did not sample is not exported");
    assert!(spans.iter().all(|span| span.trace_id() != unsampled), "nothing of its trace is");
    assert!(server_span(&spans, root_uuid).is_none(), "a ratio of 0 keeps no trace of its own");

    // The unsampled request still logs its caller's trace id.
    let logged: Vec<Value> = lines.map_while(Result::ok).filter_map(|line| serde_json::from_str(&line).ok()).collect();
    let access = logged.iter().find(|line| line["target"] == "access" && line["uuid"] == unsampled_uuid).unwrap();
    assert_eq!(access["trace_id"].as_str(), Some(unsampled));
    assert_eq!(access["span_id"].as_str().map(str::len), Some(16));
}

/// An operator who gives a command a collector sees its whole trace, whatever the
/// ratio that thins out the service's requests: the import is one root, with the store's
/// statements beneath it.
#[test]
fn an_import_run_by_a_command_is_traced_whole_whatever_the_ratio() {
    let collector = Collector::start();
    let (fresh, csv) = store_and_feed();
    let endpoint = collector.endpoint();
    let import = crate::cli::branch_atm(
        &fresh.url,
        &["waittimes", "import", csv.to_str().unwrap(), "--otlp-endpoint", &endpoint, "--trace-sample-ratio", "0"],
    );
    assert!(import.status.success(), "{}", crate::cli::stderr(&import));
    // The command sends its last spans before it exits.
    let spans = collector.spans();
    let root = spans.iter().find(|span| span.span.name == "wait times import").expect("the import's span");
    assert!(root.span.parent_span_id.is_empty(), "a trace of its own");
    if crate::store::other_processes_reach_the_store("the import's statements in its trace") {
        let beneath = by_name(&spans, &root.trace_id());
        let statement = beneath.values().find(|span| span.attribute("db.operation.name").is_some());
        let statement = statement.expect("the store's statements beneath the import");
        assert_eq!(statement.span.kind, SpanKind::Client as i32, "{:?}", statement.span.name);
    }
}

/// OpenTelemetry's standard variables, as a platform sets them for every process: the
/// traces' own URL taken whole, the service's name; a sampler the service does not have
/// ignored (with a warning in the log), not a reason to stop.
#[test]
fn opentelemetrys_standard_variables_send_the_traces_where_they_say() {
    let collector = Collector::start();
    let (fresh, csv) = store_and_feed();
    let traces_url = format!("{}/otlp/spans", collector.endpoint());
    let imported = crate::binary::branch_atm_command()
        .args(["--database-url", &fresh.url, "waittimes", "import", csv.to_str().unwrap()])
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &traces_url)
        .env("OTEL_SERVICE_NAME", "atm-api-green")
        .env("OTEL_TRACES_SAMPLER", "xray")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317")
        .output()
        .unwrap();
    assert!(imported.status.success(), "{}", crate::cli::stderr(&imported));
    // What the service cannot use is set aside, and the operator told which variable.
    let warned = crate::cli::stderr(&imported);
    assert!(warned.contains("warning: OTEL_TRACES_SAMPLER \"xray\" is not a sampler of this service"), "{warned}");
    assert!(warned.contains("warning: OTEL_EXPORTER_OTLP_ENDPOINT is ignored: it must be an http"), "{warned}");
    let spans = collector.spans();
    let root = spans.iter().find(|span| span.span.name == "wait times import").expect("the import's span");
    assert_eq!(root.service, "atm-api-green");
    let paths = collector.paths.lock().unwrap().clone();
    assert!(!paths.is_empty() && paths.iter().all(|path| path == "/otlp/spans"), "{paths:?}");
}

#[test]
fn a_standard_variable_the_service_cannot_use_is_a_warn_line_in_the_services_log() {
    let fresh = crate::cli::fresh_database();
    let mut server = crate::binary::branch_atm_command()
        .args(["--database-url", &fresh.url, "serve", "--listen", "127.0.0.1:0", "--shutdown-drain-ms", "0"])
        .args(["--log-format", "json", "--log-filter", "warn"])
        .env("OTEL_TRACES_SAMPLER_ARG", "1%")
        .current_dir(fresh.folder.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The log's lines come from a writer thread of their own, in no set order with the
    // line saying where the server listens: read until the warning, for ten seconds at most.
    let (lines, read) = std::sync::mpsc::channel();
    let stdout = server.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = Vec::new();
    let warned = loop {
        let Ok(line) = read.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) else {
            break None;
        };
        let logged = serde_json::from_str::<Value>(&line).ok();
        seen.push(line);
        if let Some(logged) = logged.filter(|logged| logged.to_string().contains("OTEL_TRACES_SAMPLER_ARG")) {
            break Some(logged);
        }
    };
    // Its shutdown is not what this test is about.
    server.kill().unwrap();
    server.wait().unwrap();
    let warned = warned.unwrap_or_else(|| panic!("a line names the variable within 10 s: {seen:?}"));
    assert_eq!(warned["level"], "WARN", "{warned}");
    assert!(warned["fields"]["message"].as_str().unwrap().contains("\"1%\" is ignored"), "{warned}");
}

#[tokio::test]
async fn a_dead_or_silent_collector_costs_the_callers_nothing() {
    // Nothing listens on a port just freed; a listener that never answers holds every
    // export until its timeout.
    let dead = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_endpoint = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let held = Arc::new(Mutex::new(Vec::new()));
    let holder = Arc::clone(&held);
    std::thread::spawn(move || {
        for connection in silent.incoming().flatten() {
            holder.lock().unwrap().push(connection);
        }
    });
    // A silent collector holds an export for its 5 s timeout, so its failures are
    // counted later than a dead one's, which refuses at once.
    for (endpoint, counted_at_once) in [(dead, true), (silent_endpoint, false)] {
        let fresh = crate::cli::fresh_database();
        let metrics = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let (mut server, address, _lines) =
            serve_traced(&fresh, &endpoint, &["--trace-sample-ratio", "1", "--metrics-listen", &metrics.to_string()]);
        let http = reqwest::Client::new();
        for _ in 0..20 {
            let (token, sid) = token(&http, &address, &[("uuid", UUID)]).await;
            assert_eq!(wait_times(&http, &address, &token, &sid).await.status(), 200, "{endpoint}");
        }
        // The export thread gives up on the collector; the spans it could not send are
        // counted, and the service goes on answering.
        let counted = crate::helpers::eventually(|| async {
            let text = reqwest::get(format!("http://{metrics}/metrics")).await.ok()?.text().await.ok()?;
            text.lines()
                .any(|line| line.starts_with("branch_atm_trace_spans_failed_total") && !line.ends_with(" 0"))
                .then_some(())
        })
        .await;
        assert_eq!(reqwest::get(format!("{address}/api/health/live")).await.unwrap().status(), 200);
        stop(&mut server);
        if counted_at_once {
            assert!(counted.is_some(), "spans that could not be sent are counted ({endpoint})");
        }
    }
    assert!(!held.lock().unwrap().is_empty(), "the silent collector was asked");
}

fn names(spans: &[Received]) -> Vec<&str> {
    spans.iter().map(|span| span.span.name.as_str()).collect()
}
