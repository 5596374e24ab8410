//! The HTTP listener: where it listens, as what, for how long, and whose forwarding
//! headers it believes.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::{ForwardedHeader, SettingsError};

/// Paths of the TLS certificate chain and key.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// The HTTP listener.
#[derive(Debug, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Http {
    /// Address to listen on; loopback only, so a first start exposes nothing.
    #[arg(long, value_name = "ADDR", default_value_t = SocketAddr::from(([127, 0, 0, 1], 8080)))]
    pub listen: SocketAddr,
    /// The URL clients reach the service at; token issuer and links derive from it
    /// [default: http(s)://<listen>].
    // `<listen>` is the help's placeholder, not an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long, value_name = "URL")]
    pub public_base_url: Option<String>,
    /// PEM certificate chain: serve HTTPS (with --tls-key) [default: none].
    #[arg(long, value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert [default: none].
    #[arg(long, value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// HTTP worker threads [default: one per core].
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Time a client has to send its request head before a 408, in ms, 100 to 600000
    /// (actix-web's own default).
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub client_request_timeout_ms: u64,
    /// After SIGTERM, how long to keep serving (readiness 503, `Connection: close` on
    /// every response) before stopping, in ms, up to 600000; 0 stops at once. Long enough
    /// for a load balancer that probes readiness every second or two to stop sending.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    pub shutdown_drain_ms: u64,
    /// Proxies whose X-Forwarded-For / Forwarded headers name the caller, as
    /// comma-separated addresses or CIDR networks [default: none].
    #[arg(long, value_name = "CIDR,...")]
    pub trusted_proxies: Option<String>,
    /// The header the trusted proxies write the caller's address in; the other is
    /// ignored.
    #[arg(long, value_parser = forwarded_header(), default_value_t = ForwardedHeader::default())]
    pub forwarded_header: ForwardedHeader,
}

/// `--forwarded-header`: one of the names [`ForwardedHeader`] reads, each listed in the
/// help with who writes it.
fn forwarded_header() -> impl clap::builder::TypedValueParser<Value = ForwardedHeader> {
    use clap::builder::{PossibleValue, TypedValueParser as _};
    let names = ForwardedHeader::NAMES.map(|(name, header)| PossibleValue::new(name).help(header.description()));
    clap::builder::PossibleValuesParser::new(names).try_map(|name| name.parse::<ForwardedHeader>())
}

impl Http {
    /// The URL clients reach the service at, without a trailing slash: the one given, or
    /// `http(s)://<listen>`.
    pub fn public_base_url(&self) -> String {
        let url = match &self.public_base_url {
            Some(url) => url.clone(),
            None => format!("{}://{}", if self.tls_cert.is_some() { "https" } else { "http" }, self.listen),
        };
        url.trim_end_matches('/').to_owned()
    }

    /// The TLS files, when serving HTTPS.
    pub fn tls(&self) -> Option<TlsFiles> {
        let (cert, key) = (self.tls_cert.clone()?, self.tls_key.clone()?);
        Some(TlsFiles { cert, key })
    }

    /// Time to send a request head.
    pub fn client_request_timeout(&self) -> Duration {
        Duration::from_millis(self.client_request_timeout_ms)
    }

    /// How long to keep serving after SIGTERM before stopping.
    pub fn shutdown_drain(&self) -> Duration {
        Duration::from_millis(self.shutdown_drain_ms)
    }

    /// Proxies whose forwarding headers are believed (none if the list does not parse,
    /// which resolving the settings refuses).
    pub fn trusted_proxies(&self) -> Vec<IpNet> {
        self.trusted_proxies.as_deref().map(proxy_networks).and_then(Result::ok).unwrap_or_default()
    }

    pub(super) fn check(&self) -> Result<(), SettingsError> {
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err(SettingsError::new("tls-cert and tls-key go together"));
        }
        let url = self.public_base_url();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(SettingsError::new("public-base-url must be an http or https URL"));
        }
        if self.workers == Some(0) {
            return Err(SettingsError::new("workers must be at least 1"));
        }
        if let Some(list) = &self.trusted_proxies {
            proxy_networks(list)?;
        }
        if !(100..=600_000).contains(&self.client_request_timeout_ms) {
            return Err(SettingsError::new("client-request-timeout-ms must be from 100 to 600000"));
        }
        if self.shutdown_drain_ms > 600_000 {
            return Err(SettingsError::new("shutdown-drain-ms must be from 0 to 600000"));
        }
        Ok(())
    }
}

/// The networks of `--trusted-proxies`: addresses (one host each) or CIDR networks.
fn proxy_networks(list: &str) -> Result<Vec<IpNet>, SettingsError> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| SettingsError(format!("trusted-proxies: {entry:?} is not an address or a CIDR network")))
        })
        .collect()
}
