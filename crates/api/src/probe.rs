//! `branch-atm health-check`: asks a running instance whether it is ready, for a
//! container's health check in an image with no HTTP client of its own. Plain HTTP/1.1
//! over a TCP connection, written by hand: one fixed request and one status line to
//! read do not warrant an HTTP client in the service's binary.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

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

/// `GET /api/health/ready` at `address`: `Ok` for a 200, else the status or the error.
///
/// # Errors
/// The status line when it is not 200, or why there was none.
pub fn health_check(address: SocketAddr) -> Result<(), String> {
    let mut stream = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).map_err(|e| format!("{address}: {e}"))?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).map_err(|e| e.to_string())?;
    let request = format!("GET /api/health/ready HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(|e| format!("{address}: {e}"))?;
    let mut head = [0_u8; 64];
    let read = stream.read(&mut head).map_err(|e| format!("{address}: {e}"))?;
    let status_line = String::from_utf8_lossy(&head[..read]);
    let status_line = status_line.lines().next().unwrap_or_default();
    match status_line.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        _ => Err(format!("{address}: not ready ({status_line})")),
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
        assert!(health_check(free).is_err());
    }
}
