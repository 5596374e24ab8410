//! Who is calling: the peer's address, or the address a trusted proxy reports for it.
//!
//! `X-Forwarded-For` and `Forwarded` (RFC 7239) are anyone's to write, so they count
//! only when the peer is one of the operator's proxies (`--trusted-proxies`), and only
//! the one those proxies write (`--forwarded-header`): a proxy that appends to
//! `X-Forwarded-For` passes a client's own `Forwarded` through untouched. The chain
//! is read from the right, the hop nearest us: each address a trusted proxy wrote is
//! believed, and the first one that is not itself a trusted proxy is the caller. An entry
//! that is not an address (`unknown`, an obfuscated name, garbage) ends the walk: the
//! caller is then the trusted proxy that reported it, never a value the caller chose.
//!
//! Written here rather than taken from actix-web's `ConnectionInfo::realip_remote_addr`,
//! which believes the first `Forwarded`/`X-Forwarded-For` value from any peer, and from
//! no crate we found that walks the chain against a set of trusted networks.

use std::net::IpAddr;

use actix_web::HttpRequest;
use actix_web::http::header::HeaderMap;
use ipnet::IpNet;

use serde::{Deserialize, Serialize};

/// Which header the trusted proxies write the caller's address in. Only that one is
/// read: a proxy passes the other through as the client sent it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForwardedHeader {
    /// `X-Forwarded-For` (nginx, HAProxy, AWS and most load balancers).
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239).
    Forwarded,
}

impl ForwardedHeader {
    /// Each header by the name a setting gives it (the serde names above).
    pub const NAMES: [(&'static str, Self); 2] =
        [("x-forwarded-for", Self::XForwardedFor), ("forwarded", Self::Forwarded)];

    /// Who writes it, for the settings' help.
    pub fn description(self) -> &'static str {
        match self {
            Self::XForwardedFor => "`X-Forwarded-For` (nginx, HAProxy, AWS and most load balancers)",
            Self::Forwarded => "`Forwarded` (RFC 7239)",
        }
    }
}

/// A setting naming no forwarding header this service reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a forwarding header: x-forwarded-for or forwarded")]
pub struct UnknownForwardedHeader(pub String);

impl std::fmt::Display for ForwardedHeader {
    /// The name a setting gives it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = Self::NAMES.iter().find(|(_, header)| header == self).map_or("", |(name, _)| name);
        f.write_str(name)
    }
}

impl std::str::FromStr for ForwardedHeader {
    type Err = UnknownForwardedHeader;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::NAMES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, header)| *header)
            .ok_or_else(|| UnknownForwardedHeader(name.to_owned()))
    }
}

/// The operator's proxies, whose forwarding header is believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    networks: Vec<IpNet>,
    header: ForwardedHeader,
}

impl TrustedProxies {
    /// Proxies in `networks`, writing the caller's address in `header`.
    pub fn new(networks: Vec<IpNet>, header: ForwardedHeader) -> Self {
        Self { networks, header }
    }

    fn trusts(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.networks.iter().any(|network| network.contains(&address))
    }

    /// The caller of `request` (the unspecified address only when the connection has
    /// no peer address, as in a test harness's in-memory request).
    pub fn caller(&self, request: &HttpRequest) -> IpAddr {
        let peer = request.peer_addr().map_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), |peer| peer.ip());
        self.caller_behind(peer, request.headers())
    }

    /// The caller of a request from `peer` with `headers`.
    pub fn caller_behind(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if self.networks.is_empty() || !self.trusts(peer) {
            return peer;
        }
        let mut reported = peer;
        for hop in forwarded_chain(headers, self.header).into_iter().rev() {
            match hop {
                Some(address) if self.trusts(address) => reported = address,
                Some(address) => return address,
                None => return reported,
            }
        }
        reported
    }
}

/// The addresses of the forwarding chain in `header`, client first (copies of the
/// header make one list). `None` for an entry that is not an address.
fn forwarded_chain(headers: &HeaderMap, header: ForwardedHeader) -> Vec<Option<IpAddr>> {
    match header {
        ForwardedHeader::Forwarded => headers
            .get_all("forwarded")
            .flat_map(|value| value.to_str().unwrap_or("for=unknown").split(','))
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.split_once('='))
                    .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
                    .and_then(|(_, node)| node_address(node.trim()))
            })
            .collect(),
        ForwardedHeader::XForwardedFor => headers
            .get_all("x-forwarded-for")
            .flat_map(|value| value.to_str().unwrap_or("unknown").split(','))
            .map(|entry| node_address(entry.trim()))
            .collect(),
    }
}

/// The address of a node as `Forwarded` (RFC 7239 §6) or `X-Forwarded-For` write it:
/// `192.0.2.1`, `192.0.2.1:443`, `"[2001:db8::1]:443"`, `2001:db8::1`.
fn node_address(node: &str) -> Option<IpAddr> {
    let node = node.strip_prefix('"').and_then(|n| n.strip_suffix('"')).unwrap_or(node);
    if let Some(bracketed) = node.strip_prefix('[') {
        return bracketed.split_once(']')?.0.parse().ok();
    }
    if let Ok(address) = node.parse() {
        return Some(address);
    }
    let (host, port) = node.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::{HeaderName, HeaderValue};

    use super::*;

    fn proxies(networks: &[&str]) -> TrustedProxies {
        proxies_writing(networks, ForwardedHeader::XForwardedFor)
    }

    fn proxies_writing(networks: &[&str], header: ForwardedHeader) -> TrustedProxies {
        TrustedProxies::new(networks.iter().map(|n| n.parse().unwrap()).collect(), header)
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(HeaderName::from_static(name), HeaderValue::from_static(value));
        }
        map
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn forwarding_headers_from_an_untrusted_peer_are_ignored() {
        let sent = headers(&[("x-forwarded-for", "198.51.100.7"), ("forwarded", "for=198.51.100.8")]);
        assert_eq!(proxies(&[]).caller_behind(ip("203.0.113.5"), &sent), ip("203.0.113.5"));
        assert_eq!(proxies(&["10.0.0.0/8"]).caller_behind(ip("203.0.113.5"), &sent), ip("203.0.113.5"));
    }

    #[test]
    fn behind_trusted_proxies_the_caller_is_the_nearest_untrusted_hop() {
        let trusted = proxies(&["10.0.0.0/8"]);
        // The caller wrote a first value itself; the proxies appended the real hops.
        let sent = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.0.0.2")]);
        assert_eq!(trusted.caller_behind(ip("10.0.0.1"), &sent), ip("198.51.100.7"));
        let forwarded = headers(&[("forwarded", r#"for=1.2.3.4, for="[2001:db8::7]:4711";proto=https, for=10.0.0.2"#)]);
        let rfc7239 = proxies_writing(&["10.0.0.0/8"], ForwardedHeader::Forwarded);
        assert_eq!(rfc7239.caller_behind(ip("10.0.0.1"), &forwarded), ip("2001:db8::7"));
    }

    #[test]
    fn only_the_header_the_proxies_write_is_read_and_its_copies_make_one_list() {
        let sent = headers(&[
            ("x-forwarded-for", "198.51.100.1"),
            ("forwarded", "for=198.51.100.2"),
            ("forwarded", "for=10.0.0.3"),
        ]);
        // A proxy appending to X-Forwarded-For passes the client's own Forwarded through.
        let xff = proxies(&["10.0.0.0/8"]);
        assert_eq!(xff.caller_behind(ip("10.0.0.1"), &sent), ip("198.51.100.1"));
        let spoofed = headers(&[("forwarded", "for=203.0.113.9")]);
        assert_eq!(xff.caller_behind(ip("10.0.0.1"), &spoofed), ip("10.0.0.1"), "Forwarded is not read");
        let rfc7239 = proxies_writing(&["10.0.0.0/8"], ForwardedHeader::Forwarded);
        assert_eq!(rfc7239.caller_behind(ip("10.0.0.1"), &sent), ip("198.51.100.2"));
    }

    #[test]
    fn an_entry_that_is_not_an_address_stops_at_the_proxy_that_reported_it() {
        let trusted = proxies(&["10.0.0.0/8"]);
        let sent = headers(&[("x-forwarded-for", "198.51.100.7, unknown, 10.0.0.2")]);
        assert_eq!(trusted.caller_behind(ip("10.0.0.1"), &sent), ip("10.0.0.2"));
        let none = headers(&[]);
        assert_eq!(trusted.caller_behind(ip("10.0.0.1"), &none), ip("10.0.0.1"));
    }

    #[test]
    fn a_setting_names_a_header_as_serde_does() {
        for (name, header) in ForwardedHeader::NAMES {
            assert_eq!(name.parse::<ForwardedHeader>(), Ok(header));
            assert_eq!(header.to_string(), name);
            assert_eq!(serde_json::to_value(header).unwrap(), name);
        }
        assert!("X-Forwarded-For".parse::<ForwardedHeader>().is_err());
    }

    #[test]
    fn addresses_with_ports_and_mapped_peers_are_read() {
        assert_eq!(node_address("192.0.2.1:443"), Some(ip("192.0.2.1")));
        assert_eq!(node_address("\"[2001:db8::1]:80\""), Some(ip("2001:db8::1")));
        assert_eq!(node_address("2001:db8::1"), Some(ip("2001:db8::1")));
        assert_eq!(node_address("_hidden"), None);
        let trusted = proxies(&["127.0.0.1/32"]);
        let sent = headers(&[("x-forwarded-for", "198.51.100.9")]);
        assert_eq!(trusted.caller_behind(ip("::ffff:127.0.0.1"), &sent), ip("198.51.100.9"));
    }
}
