//! HTTP/2 clients that open streams by the thousand (issue 21: 10 connections × 5,000 open
//! streams took the service from 46 to 204 MB, kept after they closed).
//!
//! The service does not speak HTTP/2 (issue 32): its own TLS listener offers HTTP/1.1
//! only, and HTTP/2 ends at the gateway, which bounds the streams a client may have open
//! (`deploy/haproxy.cfg`, `tune.h2.max-concurrent-streams`). So the first test asks the
//! binary for HTTP/2 and is refused, and the second sends the finding's flood to HAProxy
//! configured as shipped, in front of the binary, and measures both.
//!
//! The client here is written by hand on purpose: it is the misbehaving peer, which opens
//! every stream at once whatever the server advertised (a client library would queue
//! them), so the test sees what the server itself enforces.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::Value;

use crate::harness::{AUTHORIZE_QUERY, Service, UUID, cannot_run, fresh_store, run};

/// Connections opened at once, and streams each tries to open: the finding's load.
const CONNECTIONS: usize = 10;
const STREAMS_PER_CONNECTION: u32 = 5_000;
/// The bound `deploy/haproxy.cfg` ships (`tune.h2.max-concurrent-streams`), read from the
/// file, so the test fails if the setting goes (HAProxy's own default is 100 too).
fn gateway_limit() -> u32 {
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/haproxy.cfg")).unwrap();
    let line = shipped.lines().map(str::trim).find(|line| line.starts_with("tune.h2.max-concurrent-streams "));
    let limit = line.expect("deploy/haproxy.cfg bounds HTTP/2 streams").split_whitespace().nth(1).unwrap();
    limit.parse().unwrap()
}
/// What the service's memory may grow by while the gateway holds the admitted streams
/// open (1,000 HTTP/1.1 requests waiting for their bodies): 21 MB here, on a loaded
/// two-core machine; without a bound it was 158 MB (the finding).
const GROWN_AT_MOST_MB: f64 = 40.0;
/// What must come back of the peak once the streams closed, as for slow connections
/// (`slow_connections`): the rest is what a first burst leaves for good (buffers and
/// pools grown to size). 9.6 MB came back within 20 s here.
const GIVEN_BACK_AT_LEAST_MB: f64 = 2.0;
/// How long the streams stay open: longer than the trimmer's checks were apart (5 s), so
/// a burst that outlasts a check is tested (issue 30: 25 -> 48 MB and 24 -> 77 MB held
/// 30 s after such bursts).
const HELD_OPEN: Duration = Duration::from_secs(6);
/// How long a connection waits for the refusals it is due, at most (a loaded machine
/// answers 5,000 streams slowly; the test counts them rather than a quiet moment).
const READ_AT_MOST: Duration = Duration::from_secs(30);

const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;
/// RFC 9113 §7: the stream was refused before any processing.
const REFUSED_STREAM: u32 = 0x7;
/// RFC 9113 §6.5.2.
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;

/// An HPACK integer with an `prefix`-bit prefix after `flags` (RFC 7541 §5.1).
fn hpack_integer(out: &mut Vec<u8>, flags: u8, prefix: u8, value: usize) {
    let max = (1_usize << prefix) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// An HPACK string literal, not Huffman-coded.
fn hpack_string(out: &mut Vec<u8>, text: &str) {
    hpack_integer(out, 0, 7, text.len());
    out.extend_from_slice(text.as_bytes());
}

/// A header block (RFC 7541): the static table's `:method POST` and `:scheme https`, then
/// every other field as a literal without indexing, so each block stands alone.
fn header_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = vec![0x83, 0x87];
    for (name, value) in fields {
        block.push(0x00);
        hpack_string(&mut block, name);
        hpack_string(&mut block, value);
    }
    block
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = payload.len() as u32;
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&length.to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// What one connection saw.
#[derive(Debug, Default)]
struct Seen {
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS`, if it sent one.
    advertised: Option<u32>,
    /// Streams the server refused.
    refused: u32,
    /// The highest stream it refused: it had seen every stream up to it.
    last_refused: u32,
    /// Whether the server ended the connection (GOAWAY).
    went_away: bool,
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// Reads frames until none comes for `quiet`, tallying what matters here; whether the
/// connection is still open.
fn read_frames(tls: &mut Tls, seen: &mut Seen, quiet: Duration) -> bool {
    tls.get_ref().set_read_timeout(Some(quiet)).unwrap();
    let mut buffer = Vec::new();
    let mut chunk = [0_u8; 16 * 1024];
    loop {
        match tls.read(&mut chunk) {
            Ok(0) => return false,
            Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            Err(error) => {
                return matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
            }
        }
        while buffer.len() >= 9 {
            let length = u32::from_be_bytes([0, buffer[0], buffer[1], buffer[2]]) as usize;
            if buffer.len() < 9 + length {
                break;
            }
            let (kind, flags) = (buffer[3], buffer[4]);
            let stream = u32::from_be_bytes([buffer[5], buffer[6], buffer[7], buffer[8]]) & 0x7fff_ffff;
            let payload = buffer[9..9 + length].to_vec();
            buffer.drain(..9 + length);
            match kind {
                SETTINGS if flags & ACK == 0 => {
                    for setting in payload.chunks_exact(6) {
                        if u16::from_be_bytes([setting[0], setting[1]]) == SETTINGS_MAX_CONCURRENT_STREAMS {
                            seen.advertised =
                                Some(u32::from_be_bytes([setting[2], setting[3], setting[4], setting[5]]));
                        }
                    }
                    tls.write_all(&frame(SETTINGS, ACK, 0, &[])).unwrap();
                }
                RST_STREAM
                    if payload.len() == 4
                        && u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) == REFUSED_STREAM =>
                {
                    seen.refused += 1;
                    seen.last_refused = seen.last_refused.max(stream);
                }
                // Answered, or the server takes the connection for dead at its next
                // keep-alive check and resets it (RFC 9113 §6.7).
                PING if flags & ACK == 0 => tls.write_all(&frame(PING, ACK, 0, &payload)).unwrap(),
                GOAWAY => seen.went_away = true,
                _ => {}
            }
        }
    }
}

/// Opens an HTTP/2 connection to `port` (the gateway) trusting `cert`, and sends `STREAMS_PER_CONNECTION`
/// wait-time requests whose bodies never come, all at once, and holds them open for
/// [`HELD_OPEN`]; returns the connection, still open, and what it saw.
fn open_streams(port: u16, cert: &CertificateDer<'static>, fields: &[(&str, &str)]) -> (Tls, Seen) {
    let mut tls = handshake(port, cert, &[b"h2"]).unwrap();
    tls.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    tls.write_all(&frame(SETTINGS, 0, 0, &[])).unwrap();
    tls.flush().unwrap();
    let mut seen = Seen::default();
    read_frames(&mut tls, &mut seen, Duration::from_millis(500));
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]), "HTTP/2 was negotiated");

    let block = header_block(fields);
    let mut burst = Vec::new();
    for n in 0..STREAMS_PER_CONNECTION {
        burst.extend_from_slice(&frame(HEADERS, END_HEADERS, 2 * n + 1, &block));
    }
    tls.write_all(&burst).unwrap();
    tls.flush().unwrap();
    // Held open past a check of the service's trimmer, every frame read meanwhile (a
    // fixed wait for quiet missed refusals on a loaded machine), then until the server
    // has said all it had to (a loaded machine takes its time). A server slow to read
    // 5,000 streams reads the answer to its keep-alive PING late and may close the
    // connection first; what it refused until then still counts.
    let started = Instant::now();
    let refusals_due = STREAMS_PER_CONNECTION - gateway_limit();
    let mut open = true;
    while open && (started.elapsed() < HELD_OPEN || (seen.refused < refusals_due && started.elapsed() < READ_AT_MOST)) {
        open = read_frames(&mut tls, &mut seen, Duration::from_millis(250));
    }
    (tls, seen)
}

/// The resident memory of process `pid`, in MB.
pub fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1024.0
}

/// A client configuration trusting `cert` and offering `protocols` by ALPN.
fn client_config(cert: &CertificateDer<'static>, protocols: &[&[u8]]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(cert.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = protocols.iter().map(|protocol| protocol.to_vec()).collect();
    Arc::new(config)
}

/// A TLS connection to `port` offering `protocols`, its handshake completed (or failed).
fn handshake(port: u16, cert: &CertificateDer<'static>, protocols: &[&[u8]]) -> Result<Tls, std::io::Error> {
    let config = client_config(cert, protocols);
    let connection = ClientConnection::new(config, ServerName::try_from("localhost").unwrap()).unwrap();
    let mut tls = StreamOwned::new(connection, TcpStream::connect(("127.0.0.1", port)).unwrap());
    tls.get_ref().set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock)?;
    }
    Ok(tls)
}

/// A certificate for localhost, written as PEM files into `folder`: the certificate, its
/// key, and both in one file (HAProxy's `crt`).
struct Certified {
    der: CertificateDer<'static>,
    pem: String,
    cert_file: std::path::PathBuf,
    key_file: std::path::PathBuf,
    both_file: std::path::PathBuf,
}

fn certified(folder: &std::path::Path) -> Certified {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let (cert_pem, key_pem) = (certified.cert.pem(), certified.signing_key.serialize_pem());
    let (cert_file, key_file, both_file) =
        (folder.join("cert.pem"), folder.join("key.pem"), folder.join("cert-and-key.pem"));
    std::fs::write(&cert_file, &cert_pem).unwrap();
    std::fs::write(&key_file, &key_pem).unwrap();
    std::fs::write(&both_file, format!("{cert_pem}{key_pem}")).unwrap();
    Certified {
        der: CertificateDer::from(certified.cert.der().to_vec()),
        pem: cert_pem,
        cert_file,
        key_file,
        both_file,
    }
}

#[test]
fn the_services_own_tls_listener_offers_http1_only_and_a_client_asking_only_for_http2_is_refused() {
    run(async {
        let Some((kept, url)) = fresh_store().await else { return };
        let certified = certified(kept.folder.path());
        let http = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(certified.pem.as_bytes()).unwrap()])
            .build()
            .unwrap();
        let args =
            ["--tls-cert", certified.cert_file.to_str().unwrap(), "--tls-key", certified.key_file.to_str().unwrap()];
        let service = Service::start_with(&url, &args, http).await;
        let port: u16 = service.address.rsplit(':').next().unwrap().parse().unwrap();

        // A browser offers both: it gets HTTP/1.1, and an answer in it.
        let mut tls = handshake(port, &certified.der, &[b"h2", b"http/1.1"]).unwrap();
        assert_eq!(tls.conn.alpn_protocol(), Some(&b"http/1.1"[..]), "the protocol agreed on");
        tls.write_all(b"GET /api/health/ready HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = tls.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "answered: {answer:?}");

        // A client that speaks only HTTP/2 learns in the handshake that it cannot here
        // (RFC 7301 §3.2: no_application_protocol), before it can open a stream.
        let refused = handshake(port, &certified.der, &[b"h2"]);
        let error = refused.err().map(|error| error.to_string()).unwrap_or_default();
        assert!(error.contains("NoApplicationProtocol"), "the handshake ended with: {error:?}");

        // A client that offers no protocol at all is taken to speak HTTP/1.1.
        let tls = handshake(port, &certified.der, &[]).unwrap();
        assert_eq!(tls.conn.alpn_protocol(), None);

        assert_eq!(service.authorize().await.unwrap().0, 200, "the service answers as before");
    });
}

/// A free loopback port (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// HAProxy, stopped by its PID when dropped.
struct Gateway(Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HAProxy with `deploy/haproxy.cfg` as shipped, every instance at `instance`, and one
/// frontend more: TLS on `port` offering HTTP/2, as the file's comment shows.
fn gateway(folder: &std::path::Path, instance: &str, certificate: &std::path::Path, port: u16) -> Option<Gateway> {
    if Command::new("haproxy").arg("-v").output().is_err() {
        cannot_run("haproxy is not installed (apt-get install haproxy)");
        return None;
    }
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/haproxy.cfg");
    let tls = folder.join("tls.cfg");
    std::fs::write(
        &tls,
        format!(
            "frontend tls\n    bind 127.0.0.1:{port} ssl crt {} alpn h2,http/1.1\n    default_backend instances\n",
            certificate.display()
        ),
    )
    .unwrap();
    let child = Command::new("haproxy")
        .args(["-db", "-f", shipped, "-f"])
        .arg(&tls)
        .env("FRONTEND_BIND", format!("127.0.0.1:{}", free_port()))
        .envs(["INSTANCE_A", "INSTANCE_B", "INSTANCE_C"].map(|name| (name, instance)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Some(Gateway(child))
}

#[cfg_attr(
    machine_tests_ignored,
    ignore = "measures memory under a flood, which depends on the machine's load, and needs HAProxy; cargo test -- --include-ignored runs it (docs/testing.md)"
)]
#[test]
fn thousands_of_http2_streams_sent_through_the_gateway_are_refused_past_its_limit_and_the_service_stays_small() {
    run(async {
        let Some((kept, url)) = fresh_store().await else { return };
        let certified = certified(kept.folder.path());
        // The admitted streams wait for their bodies for as long as they are held open,
        // so none frees its place for another while the test counts refusals.
        let service = Service::start(&url, &["--client-request-timeout-ms", "60000"]).await;
        let instance = service.address.trim_start_matches("http://").to_owned();
        let port = free_port();
        let Some(gateway) = gateway(kept.folder.path(), &instance, &certified.both_file, port) else { return };
        let http = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(certified.pem.as_bytes()).unwrap()])
            .build()
            .unwrap();
        let through = format!("https://localhost:{port}");
        let started = Instant::now();
        let issued = loop {
            let answer =
                http.get(format!("{through}/api/v1/authorize?{AUTHORIZE_QUERY}")).header("uuid", UUID).send().await;
            match answer {
                Ok(answer) if answer.status() == 200 => break answer,
                _ if started.elapsed() < Duration::from_secs(20) => {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                other => panic!("no token through the gateway: {other:?}"),
            }
        };
        let session = issued.headers()["sid"].to_str().unwrap().to_owned();
        let body: Value = issued.json().await.unwrap();
        let bearer = format!("Bearer {}", body["access_token"].as_str().unwrap());
        let authority = format!("localhost:{port}");
        let path = "/api/v1/open-banking/channels/branch/waittime/retrieve";
        let fields: Vec<(&str, &str)> = vec![
            (":path", path),
            (":authority", &authority),
            ("authorization", &bearer),
            ("client_id", "demo-mobile-app"),
            ("accept", "application/json"),
            ("uuid", UUID),
            ("content-type", "application/json"),
            ("countrycode", "MX"),
            ("businesscode", "GCB"),
            ("channelid", "MOBILE"),
            ("sid", &session),
        ];

        let (pid, gateway_pid) = (service.pid(), gateway.0.id());
        let (before, gateway_before) = (rss_mb(pid), rss_mb(gateway_pid));
        let opened = std::thread::scope(|scope| {
            let workers: Vec<_> =
                (0..CONNECTIONS).map(|_| scope.spawn(|| open_streams(port, &certified.der, &fields))).collect();
            workers.into_iter().map(|worker| worker.join().unwrap()).collect::<Vec<_>>()
        });
        let (during, gateway_during) = (rss_mb(pid), rss_mb(gateway_pid));
        let (mut refused, mut advertised, mut went_away) = (0, Vec::new(), 0);
        for (_, seen) in &opened {
            refused += seen.refused;
            advertised.push(seen.advertised);
            went_away += usize::from(seen.went_away);
        }
        let opened_seen: Vec<Seen> = opened
            .into_iter()
            .map(|(tls, seen)| {
                drop(tls);
                seen
            })
            .collect();
        let closed = Instant::now();
        let mut after = rss_mb(pid);
        while during - after < GIVEN_BACK_AT_LEAST_MB && closed.elapsed() < Duration::from_secs(20) {
            tokio::time::sleep(Duration::from_millis(500)).await;
            after = rss_mb(pid);
        }
        let back_after = closed.elapsed();
        let tried = CONNECTIONS as u32 * STREAMS_PER_CONNECTION;
        eprintln!(
            "figure: through HAProxy, {CONNECTIONS} connections x {STREAMS_PER_CONNECTION} streams: {refused} of {tried} \
             refused, {went_away} connections ended by the gateway; the service's RSS {before:.1} MB before, \
             {during:.1} MB with the streams open, {after:.1} MB {back_after:.1?} after they closed; \
             HAProxy's {gateway_before:.1} MB before, {gateway_during:.1} MB with the streams open"
        );
        let shipped = gateway_limit();
        assert!(advertised.iter().all(|limit| *limit == Some(shipped)), "advertised: {advertised:?}");
        // Streams are taken in order: of those up to the last one refused, all but the
        // limit were refused, however far the gateway got before the connection ended.
        for seen in &opened_seen {
            let looked_at = seen.last_refused.div_ceil(2);
            assert!(
                looked_at - seen.refused <= shipped,
                "{} of the first {looked_at} streams admitted",
                looked_at - seen.refused
            );
        }
        assert!(refused >= tried / 2, "only {refused} of {tried} streams refused");
        assert!(during - before < GROWN_AT_MOST_MB, "the service grew {:.1} MB with the streams open", during - before);
        assert!(
            during - after >= GIVEN_BACK_AT_LEAST_MB,
            "the service gave back {:.1} of the {:.1} MB the burst took",
            during - after,
            during - before
        );

        // The service is as it was.
        assert!(service.becomes_ready(Duration::from_secs(5)).await, "ready again");
        assert_eq!(service.authorize().await.unwrap().0, 200);
        drop(gateway);
    });
}
