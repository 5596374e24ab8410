//! `branch-atm health-check`: asks a running instance whether it is ready, for a
//! container's health check in an image with no HTTP client of its own. One fixed
//! HTTP/1.1 request over a TCP connection, in TLS when the instance terminates TLS
//! itself, written by hand: one request and one status line to read do not warrant an
//! HTTP client in the service's binary.
//!
//! Over TLS the probe trusts exactly the certificate the instance serves (the first of
//! its `--tls-cert` file), whatever names it holds: the probe reaches its own instance
//! on loopback by address, which a certificate for the service's public name does not
//! name, so hostname verification cannot apply. Pinning the instance's own certificate
//! is stronger than skipping verification, and the handshake's signatures are checked
//! as usual.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};

/// How long the probe waits to connect and for the answer: readiness answers within
/// about half a second whatever the store does.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The address to probe an instance listening on `listen` at: the same port on the
/// loopback address when it listens on every address.
pub fn probe_address(listen: SocketAddr) -> SocketAddr {
    match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listen.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), listen.port()),
        _ => listen,
    }
}

/// `GET /api/health/ready` at `address`, over TLS trusting the certificate in
/// `tls_cert` when the instance serves one: `Ok` for a 200, else the status or the error.
///
/// # Errors
/// The status line when it is not 200, or why there was none.
pub fn health_check(address: SocketAddr, tls_cert: Option<&Path>) -> Result<(), String> {
    let stream = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).map_err(|e| format!("{address}: {e}"))?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    let status_line = match tls_cert {
        None => ask(stream, address),
        Some(cert) => {
            let connection =
                ClientConnection::new(Arc::new(pinned_to(cert)?), ServerName::IpAddress(address.ip().into()))
                    .map_err(|e| format!("{address}: {e}"))?;
            ask(StreamOwned::new(connection, stream), address)
        }
    }
    .map_err(|e| format!("{address}: {e}"))?;
    match status_line.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        _ => Err(format!("{address}: not ready ({status_line})")),
    }
}

/// Sends the readiness request over `stream` and returns the answer's status line.
fn ask(mut stream: impl Read + Write, address: SocketAddr) -> std::io::Result<String> {
    let request = format!("GET /api/health/ready HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    stream.flush()?;
    // A status line is short; over TLS it may arrive in more than one read.
    let mut head = Vec::with_capacity(64);
    let mut chunk = [0_u8; 64];
    while head.len() < 256 && !head.contains(&b'\n') {
        let read = stream.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&chunk[..read]);
    }
    Ok(String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_owned())
}

/// A TLS client that trusts only the first certificate of the PEM file `cert`.
fn pinned_to(cert: &Path) -> Result<ClientConfig, String> {
    let expected =
        crate::startup::read_pem("certificate", cert, |pem| match CertificateDer::pem_slice_iter(pem).next() {
            Some(Ok(certificate)) => Ok(certificate),
            Some(Err(error)) => Err(error.to_string()),
            None => Err("no certificate in the file".to_owned()),
        })?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = OwnCertificate { expected, algorithms: provider.signature_verification_algorithms };
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// Accepts the server's certificate only if it is `expected`, byte for byte.
#[derive(Debug)]
struct OwnCertificate {
    expected: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for OwnCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.expected.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General("the instance serves another certificate than its --tls-cert file".into()))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, signature, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signature: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, signature, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_listening_everywhere_is_probed_on_loopback() {
        assert_eq!(probe_address("0.0.0.0:8080".parse().unwrap()), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(probe_address("[::]:8080".parse().unwrap()), "[::1]:8080".parse().unwrap());
        assert_eq!(probe_address("10.0.0.5:9000".parse().unwrap()), "10.0.0.5:9000".parse().unwrap());
    }

    #[test]
    fn nothing_listening_is_not_ready() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        assert!(health_check(free, None).is_err());
    }

    #[test]
    fn a_certificate_file_without_a_certificate_is_an_error_naming_it() {
        let folder = tempfile::tempdir().unwrap();
        let empty = folder.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let error = pinned_to(&empty).unwrap_err();
        assert!(error.contains("empty.pem"), "{error}");
    }
}
