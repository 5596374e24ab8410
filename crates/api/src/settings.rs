//! Command line, environment and config file, resolved into one typed [`Settings`].
//!
//! Every setting can be a flag, an environment variable `BRANCH_ATM_<NAME>` (upper
//! case, `-` as `_`) or a key of the TOML file named by `--config`; flags win over the
//! environment, which wins over the file, which wins over the defaults.

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use secrecy::SecretString;
use serde::Deserialize;

/// Default database: a SQLite file under `./data`, created on first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/branch-atm.db";
/// Default listen address: loopback only, so a first start exposes nothing.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default token lifetime (DECISIONS.md: 1800 s).
pub const DEFAULT_TOKEN_TTL_SECONDS: u32 = 1800;
/// Default refresh interval of the in-memory view: with a reload it keeps changes
/// visible within DECISIONS.md's 2 seconds.
pub const DEFAULT_REFRESH_INTERVAL_MS: u64 = 1000;
/// Default ATM page size (DECISIONS.md).
pub const DEFAULT_ATM_PAGE_SIZE: usize = 25;
/// Default limit on ATM requests per client: an app population shares its client id.
pub const DEFAULT_RATE_LIMIT_PER_SECOND: u32 = 50;
/// Default burst allowance on top of the rate.
pub const DEFAULT_RATE_LIMIT_BURST: u32 = 100;
/// Default time a client has to send its request head (actix-web's own default).
pub const DEFAULT_CLIENT_REQUEST_TIMEOUT_MS: u64 = 5000;
/// Default time the in-memory view serves without hearing from the store.
pub const DEFAULT_MAX_STALENESS_MS: u64 = 10_000;
/// Default drain period after SIGTERM: long enough for a load balancer that probes
/// readiness every second or two to see it fail and stop sending (the fault issue).
pub const DEFAULT_SHUTDOWN_DRAIN_MS: u64 = 5000;
/// Longest token lifetime accepted: a pre-login token is not a session of a day.
const MAX_TOKEN_TTL_SECONDS: u32 = 86_400;

/// The `branch-atm` command line.
#[derive(Debug, Parser)]
#[command(name = "branch-atm", version, about = "Branch and ATM open-banking service")]
pub struct Cli {
    /// TOML file of settings, keys named like the flags (`token-ttl-seconds = 900`).
    #[arg(long, env = "BRANCH_ATM_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Database URL [default: sqlite://data/branch-atm.db].
    #[arg(long, env = "BRANCH_ATM_DATABASE_URL", global = true, value_name = "URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Log filter, tracing-subscriber syntax [default: info for serve; commands log nothing unless set].
    #[arg(long, env = "BRANCH_ATM_LOG_FILTER", global = true, value_name = "FILTER")]
    pub log_filter: Option<String>,
    /// Log format [default: pretty on a terminal, json otherwise].
    #[arg(long, env = "BRANCH_ATM_LOG_FORMAT", global = true, value_enum)]
    pub log_format: Option<LogFormat>,
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `serve`, also accepted without the word `serve`.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service (the default).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate,
    /// Manage registered client applications.
    Clients {
        /// What to do with clients.
        #[command(subcommand)]
        action: ClientsAction,
    },
    /// Manage the channel combinations supported by the wait-time operation.
    Access {
        /// What to do with access.
        #[command(subcommand)]
        action: AccessAction,
    },
    /// Load branch wait times.
    Waittimes {
        /// What to do with wait times.
        #[command(subcommand)]
        action: WaitTimesAction,
    },
    /// Load the ATM set.
    Atms {
        /// What to do with ATMs.
        #[command(subcommand)]
        action: AtmsAction,
    },
    /// Manage token signing keys.
    Keys {
        /// What to do with keys.
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Look up and revoke issued tokens by their opaque token.
    Tokens {
        /// What to do with tokens.
        #[command(subcommand)]
        action: TokensAction,
    },
}

/// `clients …`
#[derive(Debug, Subcommand)]
pub enum ClientsAction {
    /// Register a client application.
    Add {
        /// Client id, 1 to 64 of [A-Za-z0-9._-].
        #[arg(long)]
        client_id: String,
        /// Business code, e.g. GCB.
        #[arg(long)]
        business_code: String,
        /// ISO 3166-1 alpha-2 country code, e.g. MX.
        #[arg(long)]
        country_code: String,
        /// Channel id, e.g. MOBILE.
        #[arg(long)]
        channel_id: String,
        /// A redirect URI the client may send; repeat for several.
        #[arg(long = "redirect-uri", value_name = "URI")]
        redirect_uris: Vec<String>,
    },
    /// List registered clients, tab-separated.
    List,
    /// Disable a client and revoke its live tokens.
    Disable {
        /// The client id.
        client_id: String,
    },
}

/// `access …`
#[derive(Debug, Subcommand)]
pub enum AccessAction {
    /// Support a (country, business, channel) combination.
    Allow {
        /// ISO country code.
        #[arg(long)]
        country_code: String,
        /// Business code.
        #[arg(long)]
        business_code: String,
        /// Channel id.
        #[arg(long)]
        channel_id: String,
    },
}

/// `waittimes …`
#[derive(Debug, Subcommand)]
pub enum WaitTimesAction {
    /// Upsert wait times from a CSV file: header `branchId,timeTaken[,estimatedAt]`.
    Import {
        /// The CSV file.
        file: PathBuf,
    },
}

/// `atms …`
#[derive(Debug, Subcommand)]
pub enum AtmsAction {
    /// Replace the ATM set with an OBIE ATM 2.3 file; nothing changes if any record is invalid.
    Import {
        /// The JSON file.
        file: PathBuf,
    },
}

/// `keys …`
#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Make a new signing key current; the old one stays published until its tokens expire.
    Rotate,
}

/// `tokens …`
#[derive(Debug, Subcommand)]
pub enum TokensAction {
    /// Show the record behind an opaque token.
    Show {
        /// The opaque token.
        opaque_token: String,
    },
    /// Revoke the token behind an opaque token.
    Revoke {
        /// The opaque token.
        opaque_token: String,
    },
}

/// Options of `serve`.
#[derive(Debug, Default, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, env = "BRANCH_ATM_LISTEN", value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Do not load the demo data set into an empty store.
    #[arg(long, env = "BRANCH_ATM_NO_DEMO_DATA", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub no_demo_data: Option<bool>,
    /// Access-token lifetime in seconds [default: 1800].
    #[arg(long, env = "BRANCH_ATM_TOKEN_TTL_SECONDS", value_name = "N")]
    pub token_ttl_seconds: Option<u32>,
    /// The URL clients reach the service at; token issuer and links derive from it
    /// [default: http(s)://<listen>].
    #[arg(long, env = "BRANCH_ATM_PUBLIC_BASE_URL", value_name = "URL")]
    pub public_base_url: Option<String>,
    /// PEM certificate chain: serve HTTPS (with --tls-key).
    #[arg(long, env = "BRANCH_ATM_TLS_CERT", value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, env = "BRANCH_ATM_TLS_KEY", value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// How often the in-memory view polls the store for changes, in ms [default: 1000].
    #[arg(long, env = "BRANCH_ATM_REFRESH_INTERVAL_MS", value_name = "MS")]
    pub refresh_interval_ms: Option<u64>,
    /// HTTP worker threads [default: one per core].
    #[arg(long, env = "BRANCH_ATM_WORKERS", value_name = "N")]
    pub workers: Option<usize>,
    /// ATMs per page of GET /v1/atms [default: 25].
    #[arg(long, env = "BRANCH_ATM_ATM_PAGE_SIZE", value_name = "N")]
    pub atm_page_size: Option<usize>,
    /// Sustained ATM requests per second allowed per client id [default: 50].
    #[arg(long, env = "BRANCH_ATM_RATE_LIMIT_PER_SECOND", value_name = "N")]
    pub rate_limit_per_second: Option<u32>,
    /// Burst of ATM requests allowed per client id above the rate [default: 100].
    #[arg(long, env = "BRANCH_ATM_RATE_LIMIT_BURST", value_name = "N")]
    pub rate_limit_burst: Option<u32>,
    /// Time a client has to send its request head before a 408, in ms [default: 5000].
    #[arg(long, env = "BRANCH_ATM_CLIENT_REQUEST_TIMEOUT_MS", value_name = "MS")]
    pub client_request_timeout_ms: Option<u64>,
    /// How long to serve without hearing from the store before answering 500/503, in ms
    /// [default: 10000].
    #[arg(long, env = "BRANCH_ATM_MAX_STALENESS_MS", value_name = "MS")]
    pub max_staleness_ms: Option<u64>,
    /// After SIGTERM, how long to keep serving (readiness 503, `Connection: close` on
    /// every response) before stopping, in ms; 0 stops at once [default: 5000].
    #[arg(long, env = "BRANCH_ATM_SHUTDOWN_DRAIN_MS", value_name = "MS")]
    pub shutdown_drain_ms: Option<u64>,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line, for log shippers.
    Json,
}

/// The config file: every key optional, unknown keys refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileSettings {
    database_url: Option<String>,
    log_filter: Option<String>,
    log_format: Option<LogFormat>,
    listen: Option<SocketAddr>,
    no_demo_data: Option<bool>,
    token_ttl_seconds: Option<u32>,
    public_base_url: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    refresh_interval_ms: Option<u64>,
    workers: Option<usize>,
    atm_page_size: Option<usize>,
    rate_limit_per_second: Option<u32>,
    rate_limit_burst: Option<u32>,
    client_request_timeout_ms: Option<u64>,
    max_staleness_ms: Option<u64>,
    shutdown_drain_ms: Option<u64>,
}

/// Settings are wrong; the message says which and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

/// Paths of the TLS certificate chain and key.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// Settings shared by every command.
#[derive(Debug, Clone)]
pub struct CommonSettings {
    /// Database URL; may hold a password, so never logged.
    pub database_url: SecretString,
    /// Log filter, if one was asked for.
    pub log_filter: Option<String>,
    /// Log format, if one was asked for.
    pub log_format: Option<LogFormat>,
}

/// Everything `serve` needs, resolved and checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Database URL.
    pub database_url: SecretString,
    /// Listen address.
    pub listen: SocketAddr,
    /// Load demo data into an empty store.
    pub demo_data: bool,
    /// Access-token lifetime in seconds.
    pub token_ttl_seconds: u32,
    /// Public base URL, without a trailing slash.
    pub public_base_url: String,
    /// TLS files, when serving HTTPS.
    pub tls: Option<TlsFiles>,
    /// Poll interval of the in-memory view.
    pub refresh_interval: Duration,
    /// HTTP worker threads, if not one per core.
    pub workers: Option<usize>,
    /// ATMs per page.
    pub atm_page_size: usize,
    /// ATM requests per second per client.
    pub rate_limit_per_second: NonZeroU32,
    /// ATM request burst per client.
    pub rate_limit_burst: NonZeroU32,
    /// Time to send a request head.
    pub client_request_timeout: Duration,
    /// How long the view may go without hearing from the store.
    pub max_staleness: Duration,
    /// How long to keep serving after SIGTERM before stopping.
    pub shutdown_drain: Duration,
}

impl Settings {
    /// Settings for tests and embedding: `database_url`, listening on `127.0.0.1:0`,
    /// without demo data, every other value its default.
    pub fn for_database(database_url: &str) -> Self {
        Self {
            database_url: SecretString::from(database_url),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            demo_data: false,
            token_ttl_seconds: DEFAULT_TOKEN_TTL_SECONDS,
            public_base_url: "http://127.0.0.1".to_owned(),
            tls: None,
            refresh_interval: Duration::from_millis(DEFAULT_REFRESH_INTERVAL_MS),
            workers: Some(2),
            atm_page_size: DEFAULT_ATM_PAGE_SIZE,
            rate_limit_per_second: NonZeroU32::MAX,
            rate_limit_burst: NonZeroU32::MAX,
            client_request_timeout: Duration::from_millis(DEFAULT_CLIENT_REQUEST_TIMEOUT_MS),
            max_staleness: Duration::from_millis(DEFAULT_MAX_STALENESS_MS),
            shutdown_drain: Duration::from_millis(DEFAULT_SHUTDOWN_DRAIN_MS),
        }
    }
}

fn read_file(path: Option<&Path>) -> Result<FileSettings, SettingsError> {
    let Some(path) = path else { return Ok(FileSettings::default()) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| SettingsError(format!("cannot read config file {}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| SettingsError(format!("config file {}: {}", path.display(), e.message())))
}

/// Resolves the shared settings and those of `serve` from the command line, the
/// environment (already folded in by clap) and the config file.
///
/// # Errors
/// [`SettingsError`] for an unreadable or invalid file or an out-of-range value.
pub fn resolve(cli: &Cli, serve: &ServeArgs) -> Result<(CommonSettings, Settings), SettingsError> {
    let file = read_file(cli.config.as_deref())?;
    let database_url =
        cli.database_url.clone().or(file.database_url).unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
    let common = CommonSettings {
        database_url: SecretString::from(database_url.clone()),
        log_filter: cli.log_filter.clone().or(file.log_filter),
        log_format: cli.log_format.or(file.log_format),
    };

    let listen = match serve.listen.or(file.listen) {
        Some(listen) => listen,
        None => {
            DEFAULT_LISTEN.parse().map_err(|_| SettingsError("the default listen address does not parse".into()))?
        }
    };
    let token_ttl_seconds = serve.token_ttl_seconds.or(file.token_ttl_seconds).unwrap_or(DEFAULT_TOKEN_TTL_SECONDS);
    if !(1..=MAX_TOKEN_TTL_SECONDS).contains(&token_ttl_seconds) {
        return Err(SettingsError(format!("token-ttl-seconds must be from 1 to {MAX_TOKEN_TTL_SECONDS}")));
    }
    let tls = match (serve.tls_cert.clone().or(file.tls_cert), serve.tls_key.clone().or(file.tls_key)) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        (None, None) => None,
        _ => return Err(SettingsError("tls-cert and tls-key go together".into())),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let public_base_url =
        serve.public_base_url.clone().or(file.public_base_url).unwrap_or_else(|| format!("{scheme}://{listen}"));
    if !(public_base_url.starts_with("https://") || public_base_url.starts_with("http://")) {
        return Err(SettingsError("public-base-url must be an http or https URL".into()));
    }
    let refresh_ms = serve.refresh_interval_ms.or(file.refresh_interval_ms).unwrap_or(DEFAULT_REFRESH_INTERVAL_MS);
    if !(10..=60_000).contains(&refresh_ms) {
        return Err(SettingsError("refresh-interval-ms must be from 10 to 60000".into()));
    }
    let workers = serve.workers.or(file.workers);
    if workers == Some(0) {
        return Err(SettingsError("workers must be at least 1".into()));
    }
    let atm_page_size = serve.atm_page_size.or(file.atm_page_size).unwrap_or(DEFAULT_ATM_PAGE_SIZE);
    if !(1..=1000).contains(&atm_page_size) {
        return Err(SettingsError("atm-page-size must be from 1 to 1000".into()));
    }
    let positive = |value: Option<u32>, default: u32, name: &str| {
        NonZeroU32::new(value.unwrap_or(default)).ok_or_else(|| SettingsError(format!("{name} must be at least 1")))
    };
    let rate_limit_per_second = positive(
        serve.rate_limit_per_second.or(file.rate_limit_per_second),
        DEFAULT_RATE_LIMIT_PER_SECOND,
        "rate-limit-per-second",
    )?;
    let rate_limit_burst =
        positive(serve.rate_limit_burst.or(file.rate_limit_burst), DEFAULT_RATE_LIMIT_BURST, "rate-limit-burst")?;
    let client_request_timeout_ms =
        serve.client_request_timeout_ms.or(file.client_request_timeout_ms).unwrap_or(DEFAULT_CLIENT_REQUEST_TIMEOUT_MS);
    if !(100..=600_000).contains(&client_request_timeout_ms) {
        return Err(SettingsError("client-request-timeout-ms must be from 100 to 600000".into()));
    }
    let max_staleness_ms = serve.max_staleness_ms.or(file.max_staleness_ms).unwrap_or(DEFAULT_MAX_STALENESS_MS);
    if max_staleness_ms < 2 * refresh_ms {
        return Err(SettingsError("max-staleness-ms must be at least twice refresh-interval-ms".into()));
    }
    let shutdown_drain_ms = serve.shutdown_drain_ms.or(file.shutdown_drain_ms).unwrap_or(DEFAULT_SHUTDOWN_DRAIN_MS);
    if shutdown_drain_ms > 600_000 {
        return Err(SettingsError("shutdown-drain-ms must be from 0 to 600000".into()));
    }
    Ok((
        common,
        Settings {
            database_url: SecretString::from(database_url),
            listen,
            demo_data: !serve.no_demo_data.or(file.no_demo_data).unwrap_or(false),
            token_ttl_seconds,
            public_base_url: public_base_url.trim_end_matches('/').to_owned(),
            tls,
            refresh_interval: Duration::from_millis(refresh_ms),
            workers,
            atm_page_size,
            rate_limit_per_second,
            rate_limit_burst,
            client_request_timeout: Duration::from_millis(client_request_timeout_ms),
            max_staleness: Duration::from_millis(max_staleness_ms),
            shutdown_drain: Duration::from_millis(shutdown_drain_ms),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn cli(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("branch-atm").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn defaults_serve_sqlite_on_loopback_with_demo_data() {
        let cli = cli(&[]);
        let (common, settings) = resolve(&cli, &cli.serve).unwrap();
        use secrecy::ExposeSecret as _;
        assert_eq!(common.database_url.expose_secret(), DEFAULT_DATABASE_URL);
        assert_eq!(settings.listen.to_string(), DEFAULT_LISTEN);
        assert!(settings.demo_data);
        assert_eq!(settings.token_ttl_seconds, 1800);
        assert_eq!(settings.public_base_url, "http://127.0.0.1:8080");
    }

    #[test]
    fn flags_win_over_the_config_file_which_wins_over_defaults() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "token-ttl-seconds = 900\nlisten = \"127.0.0.1:9000\"\nno-demo-data = true").unwrap();
        let path = file.path().to_str().unwrap();
        let cli = cli(&["--config", path, "serve", "--listen", "127.0.0.1:9100"]);
        let Some(Command::Serve(serve)) = &cli.command else { panic!("serve expected") };
        let (_, settings) = resolve(&cli, serve).unwrap();
        assert_eq!(settings.listen.port(), 9100);
        assert_eq!(settings.token_ttl_seconds, 900);
        assert!(!settings.demo_data);
    }

    #[test]
    fn an_unknown_config_key_is_an_error_naming_the_file() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "tokn-ttl = 5").unwrap();
        let cli = cli(&["--config", file.path().to_str().unwrap()]);
        let error = resolve(&cli, &cli.serve).unwrap_err().to_string();
        assert!(error.contains("tokn-ttl"), "{error}");
    }

    #[test]
    fn a_tls_certificate_without_its_key_is_refused() {
        let cli = cli(&["--tls-cert", "cert.pem"]);
        assert!(resolve(&cli, &cli.serve).is_err());
    }

    #[test]
    fn a_zero_token_lifetime_is_refused() {
        let cli = cli(&["--token-ttl-seconds", "0"]);
        assert!(resolve(&cli, &cli.serve).is_err());
    }
}
