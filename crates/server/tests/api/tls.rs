//! HTTPS served by rustls, checked with a real TLS client that trusts only our CA.

use crate::helpers::TestApp;

#[tokio::test]
async fn the_service_speaks_https_when_given_a_certificate_and_key() {
    let (certified, folder) = self_signed(&["localhost", "127.0.0.1"]);
    let (cert, key) = (folder.path().join("cert.pem"), folder.path().join("key.pem"));

    let app = TestApp::builder()
        .settings(|settings| {
            (settings.http.tls_cert, settings.http.tls_key) = (Some(cert.clone()), Some(key.clone()));
        })
        .start()
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

/// Connections that never send a ClientHello, opened before a real client comes: more
/// than actix-tls's default of 256 pending handshakes on each of the test app's two
/// workers, fewer than the service now allows.
const SILENT_CONNECTIONS: usize = 1_000;

/// The finding (issue 30): 600 to 1,500 connections that never send a ClientHello made
/// new handshakes wait 5.5 s, for about 8 s, because they held every pending-handshake
/// slot of every worker until their handshake timed out (actix-tls's defaults, 256 a
/// worker and 3 s). A real client is now served at once past them, and each of them is
/// closed by the server once its handshake time is up.
#[tokio::test]
async fn silent_connections_on_the_tls_port_do_not_delay_a_real_handshake_and_are_closed() {
    use std::io::Read as _;
    use std::time::{Duration, Instant};

    let (certified, folder) = self_signed(&["localhost"]);
    let (cert, key) = (folder.path().join("cert.pem"), folder.path().join("key.pem"));
    let app = TestApp::builder()
        .settings(|settings| {
            (settings.http.tls_cert, settings.http.tls_key) = (Some(cert.clone()), Some(key.clone()));
        })
        .start()
        .await;
    let port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));

    let resident_before = resident_kb();
    let opened = Instant::now();
    // Off the runtime the in-process server is driven by.
    let mut silent = tokio::task::spawn_blocking(move || {
        let mut silent = Vec::with_capacity(SILENT_CONNECTIONS);
        for _ in 0..SILENT_CONNECTIONS {
            // A listener that stopped accepting shows here first: connecting is bounded too.
            match std::net::TcpStream::connect_timeout(&address, Duration::from_secs(1)) {
                Ok(stream) => silent.push(stream),
                Err(_) => break,
            }
        }
        silent
    })
    .await
    .unwrap();
    let opening = opened.elapsed();
    // The server's side of them (this process runs the service), once it has them all.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held_kb = resident_kb().saturating_sub(resident_before);

    let client = reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap()])
        .https_only(true)
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let asked = Instant::now();
    let response = client.get(format!("https://localhost:{port}/api/health/live")).send().await;
    let waited = asked.elapsed();
    eprintln!(
        "figure: {} silent connections opened in {opening:.1?} (the process grew {held_kb} kB); \
         a real HTTPS request answered in {waited:.1?}",
        silent.len()
    );
    assert_eq!(silent.len(), SILENT_CONNECTIONS, "connecting stalled after {opening:?}");
    assert_eq!(response.unwrap().status(), 200);
    assert!(waited < Duration::from_secs(2), "a real handshake waited {waited:?} behind silent connections");

    // Closed by the server once the handshake time is up: each socket reads its end.
    let handshake_timeout = server::startup::TLS_HANDSHAKE_TIMEOUT;
    tokio::time::sleep(handshake_timeout.saturating_sub(opened.elapsed()) + Duration::from_secs(2)).await;
    let mut still_open = 0;
    for stream in &mut silent {
        stream.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
        let read = stream.read(&mut [0_u8; 16]);
        still_open += usize::from(matches!(read, Err(error) if error.kind() == std::io::ErrorKind::WouldBlock));
    }
    eprintln!("figure: {still_open} of them still open {:.1?} after they were opened", opened.elapsed());
    assert_eq!(still_open, 0, "silent connections kept open past the {handshake_timeout:?} handshake timeout");
}

/// A self-signed certificate for `names`, written with its key as `cert.pem` and
/// `key.pem` in a folder of its own.
fn self_signed(names: &[&str]) -> (rcgen::CertifiedKey<rcgen::KeyPair>, tempfile::TempDir) {
    let certified =
        rcgen::generate_simple_self_signed(names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>()).unwrap();
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("cert.pem"), certified.cert.pem()).unwrap();
    std::fs::write(folder.path().join("key.pem"), certified.signing_key.serialize_pem()).unwrap();
    (certified, folder)
}

/// This process's resident size, in kB.
fn resident_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Like the key-encryption key file (the findings: `/dev/zero` given as a key file was
/// read forever, a FIFO blocked every command), a certificate or key file that is not a
/// regular file is refused in one line, and one past a megabyte is not read whole.
#[tokio::test]
async fn a_certificate_or_key_file_that_is_not_a_regular_file_is_refused_at_start() {
    let (_, folder) = self_signed(&["localhost"]);
    let (cert, key) = (folder.path().join("cert.pem"), folder.path().join("key.pem"));
    let endless = std::path::PathBuf::from("/dev/zero");
    // Issue 42: a FIFO blocked the start until it was killed.
    let fifo = crate::cli::fifo(folder.path());
    let large = folder.path().join("large.pem");
    std::fs::write(&large, vec![b'-'; (1 << 20) + 1]).unwrap();
    let (device, named_pipe, too_large) =
        ("is a device, not a regular file", "is a FIFO, not a regular file", "holds more than 1048576 bytes");
    for (what, files, says) in [
        ("certificate", server::settings::TlsFiles { cert: endless.clone(), key: key.clone() }, device),
        ("key", server::settings::TlsFiles { cert: cert.clone(), key: endless.clone() }, device),
        ("certificate", server::settings::TlsFiles { cert: fifo.clone(), key: key.clone() }, named_pipe),
        ("key", server::settings::TlsFiles { cert: cert.clone(), key: fifo.clone() }, named_pipe),
        ("certificate", server::settings::TlsFiles { cert: large.clone(), key: key.clone() }, too_large),
    ] {
        let mut settings = server::settings::Settings::for_database("memory:");
        (settings.http.tls_cert, settings.http.tls_key) = (Some(files.cert), Some(files.key));
        let error = server::startup::Application::build(settings).await.err().expect("refused");
        let line = server::errors::one_line(&error);
        assert!(line.contains(&format!("{what} \"")) && line.contains(says), "{line}");
    }
}

/// The `ENV` settings of the Dockerfile's runtime image and its `HEALTHCHECK` command.
fn dockerfile_settings_and_health_check() -> (Vec<(String, String)>, Vec<String>) {
    let dockerfile = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Dockerfile")).unwrap();
    let runtime = dockerfile.rsplit("\nFROM ").next().unwrap();
    let joined = runtime.replace("\\\n", " ");
    let env_line = joined.lines().find(|line| line.starts_with("ENV ")).expect("the runtime image sets ENV");
    let settings = env_line["ENV ".len()..]
        .split_whitespace()
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap();
            (name.to_owned(), value.to_owned())
        })
        .collect();
    let check = joined.lines().find(|line| line.starts_with("HEALTHCHECK ")).expect("a HEALTHCHECK");
    let command: Vec<String> = serde_json::from_str(check.split_once("CMD ").unwrap().1.trim()).unwrap();
    (settings, command)
}

/// The finding: `health-check` spoke plain HTTP to an instance that terminates TLS
/// ("not ready ( 2)"), so the Dockerfile's HEALTHCHECK marked every TLS container
/// unhealthy. The image's own settings and health-check command, run as the container
/// runs them (the TLS files and the port being a deployment's), now pass for an
/// instance that serves HTTPS, and for one that serves plain HTTP.
#[test]
fn the_dockerfiles_health_check_passes_for_an_instance_that_terminates_tls() {
    let (image_settings, check) = dockerfile_settings_and_health_check();
    assert_eq!(check[1..], ["health-check"], "{check:?}");
    let folder = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["api.bank.example.mx".to_owned()]).unwrap();
    let (cert, key) = (folder.path().join("cert.pem"), folder.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();

    for tls in [true, false] {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut settings = image_settings.clone();
        for (name, value) in &mut settings {
            match name.as_str() {
                "BRANCH_ATM_LISTEN" => *value = format!("0.0.0.0:{port}"),
                "BRANCH_ATM_DATABASE_URL" => {
                    *value = format!("sqlite://{}/{tls}/branch-atm.db", folder.path().display())
                }
                _ => {}
            }
        }
        if tls {
            settings.push(("BRANCH_ATM_TLS_CERT".into(), cert.display().to_string()));
            settings.push(("BRANCH_ATM_TLS_KEY".into(), key.display().to_string()));
        }
        let health_check =
            || crate::binary::branch_atm_command().args(&check[1..]).envs(settings.iter().cloned()).output().unwrap();
        let mut server = crate::binary::branch_atm_command()
            .arg("serve")
            .envs(settings.iter().cloned())
            .env("BRANCH_ATM_SHUTDOWN_DRAIN_MS", "0")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut last = None;
        for _ in 0..100 {
            let output = health_check();
            if output.status.success() {
                last = Some(Ok(String::from_utf8_lossy(&output.stdout).into_owned()));
                break;
            }
            last = Some(Err(String::from_utf8_lossy(&output.stderr).into_owned()));
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = std::process::Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
        let _ = server.wait();
        let said = last.unwrap();
        assert_eq!(said, Ok("ready\n".to_owned()), "tls: {tls}");
    }
}
