//! Settings, each declared once: a field of [`CommonOptions`] (every command) or
//! [`ServeOptions`] (`serve`) is a flag, a `BRANCH_ATM_<NAME>` environment variable (upper
//! case, `-` as `_`) and a key of the TOML file named by `--config`, all at once. They are
//! layered with figment, defaults → file → environment → flags, and checked in one place,
//! [`resolve`], into the typed [`CommonSettings`] and [`Settings`]. The environment is
//! an argument ([`Environment`]): the binary passes its own, a test passes what it sets,
//! so no test reads the variables of whoever runs it.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use figment::Figment;
use figment::providers::{Format as _, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Metadata, Profile, Provider};
use ipnet::IpNet;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use api::access_log::{AccessLog, LogFormat};
use api::caller::ForwardedHeader;
use api::rate_limit::{Rate, RateLimits};
use domain::atm_catalog::{MAX_PAGE_BYTES, MAX_PAGE_SIZE, MAX_RECORD_BYTES};

use crate::errors::one_line;

/// Default database: a SQLite file under `./data`, created on first start.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/branch-atm.db";
/// Default listen address: loopback only, so a first start exposes nothing.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default token lifetime (docs/contract.md: 1800 s).
pub const DEFAULT_TOKEN_TTL_SECONDS: u32 = 1800;
/// Default refresh interval of the in-memory view: with a reload it keeps changes
/// visible within docs/contract.md's 2 seconds.
pub const DEFAULT_REFRESH_INTERVAL_MS: u64 = 1000;
/// Default ATM page size (docs/contract.md).
pub const DEFAULT_ATM_PAGE_SIZE: usize = 25;
/// Default ceiling on bearer requests per client id: every user of an app shares it, so
/// it sits well above what one caller address may send ([`DEFAULT_CALLER_RATE`]).
pub const DEFAULT_CLIENT_RATE: (u32, u32) = (1000, 2000);
/// Default limit on bearer requests per session (token): a person using an app sends a
/// few a second at most.
pub const DEFAULT_SESSION_RATE: (u32, u32) = (10, 20);
/// Default limit on bearer requests per caller address: room for many users behind one
/// carrier address, far below the client ceiling.
pub const DEFAULT_CALLER_RATE: (u32, u32) = (200, 400);
/// Default limit on token requests per caller address: a user takes one token per
/// session of up to 30 minutes, so this is thousands of users behind one address.
pub const DEFAULT_ISSUE_RATE: (u32, u32) = (10, 100);
/// Default ceiling on token requests per client id, over every caller.
pub const DEFAULT_ISSUE_CLIENT_RATE: (u32, u32) = (200, 2000);
/// Default lifetime verifiers may cache the JWKS for (its `Cache-Control: max-age`); a
/// rotated key signs only this long (plus one refresh) after it is published.
pub const DEFAULT_JWKS_MAX_AGE_SECONDS: u32 = 300;
/// Default time a client has to send its request head (actix-web's own default).
pub const DEFAULT_CLIENT_REQUEST_TIMEOUT_MS: u64 = 5000;
/// Default time the in-memory view serves without hearing from the store.
pub const DEFAULT_MAX_STALENESS_MS: u64 = 10_000;
/// Default drain period after SIGTERM: long enough for a load balancer that probes
/// readiness every second or two to see it fail and stop sending (the fault issue).
pub const DEFAULT_SHUTDOWN_DRAIN_MS: u64 = 5000;
/// Default age past which a branch's wait-time estimate is not served (answered as
/// unknown): three missed runs of a feed every 15 minutes, and an hour's wait is already
/// a guess. Why, and how the demo keeps answering:
/// docs/adr/0028-wait-time-data-fresh-estimates-and-demo.md.
pub const DEFAULT_WAIT_TIME_MAX_AGE_MINUTES: u32 = 60;
/// Longest wait-time maximum age accepted: a week.
const MAX_WAIT_TIME_MAX_AGE_MINUTES: u32 = 7 * 24 * 60;
/// Longest token lifetime accepted: a pre-login token is not a session of a day.
const MAX_TOKEN_TTL_SECONDS: u32 = 86_400;

/// Options of every command.
#[derive(Debug, Default, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CommonOptions {
    /// Database URL [default: sqlite://data/branch-atm.db].
    #[arg(long, global = true, value_name = "URL")]
    pub database_url: Option<String>,
    /// File holding the key that encrypts signing keys at rest: 32 bytes, or 64
    /// hexadecimal characters [default: none: keys are stored unencrypted].
    #[arg(long, global = true, value_name = "FILE")]
    pub key_encryption_key_file: Option<PathBuf>,
    /// Log filter, tracing-subscriber syntax [default: info for serve; commands log nothing unless set].
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_filter: Option<String>,
    /// Log format [default: pretty on a terminal, json otherwise].
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
}

/// Options of `serve`.
#[derive(Debug, Default, Clone, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ServeOptions {
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Do not load the demo data set into a new store.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub no_demo_data: Option<bool>,
    /// Access-token lifetime in seconds, 1 to 86400 [default: 1800].
    #[arg(long, value_name = "N")]
    pub token_ttl_seconds: Option<u32>,
    /// The URL clients reach the service at; token issuer and links derive from it
    /// [default: http(s)://LISTEN].
    #[arg(long, value_name = "URL")]
    pub public_base_url: Option<String>,
    /// PEM certificate chain: serve HTTPS (with --tls-key).
    #[arg(long, value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for --tls-cert.
    #[arg(long, value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// How often the in-memory view polls the store for changes, in ms [default: 1000].
    #[arg(long, value_name = "MS")]
    pub refresh_interval_ms: Option<u64>,
    /// HTTP worker threads [default: one per core].
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// ATMs per page of GET /v1/atms, 1 to 256 (a page carries at most 4 MiB of records) [default: 25].
    #[arg(long, value_name = "N")]
    pub atm_page_size: Option<usize>,
    /// Sustained bearer requests (ATMs, wait times) per second per client id, over all
    /// its users [default: 1000].
    #[arg(long, value_name = "N")]
    pub rate_limit_per_second: Option<u32>,
    /// Burst of bearer requests per client id above that rate [default: 2000].
    #[arg(long, value_name = "N")]
    pub rate_limit_burst: Option<u32>,
    /// Sustained bearer requests per second per session (token) [default: 10].
    #[arg(long, value_name = "N")]
    pub session_rate_limit_per_second: Option<u32>,
    /// Burst of bearer requests per session above that rate [default: 20].
    #[arg(long, value_name = "N")]
    pub session_rate_limit_burst: Option<u32>,
    /// Sustained bearer requests per second per caller address (IPv6: per /64) [default: 200].
    #[arg(long, value_name = "N")]
    pub caller_rate_limit_per_second: Option<u32>,
    /// Burst of bearer requests per caller address above that rate [default: 400].
    #[arg(long, value_name = "N")]
    pub caller_rate_limit_burst: Option<u32>,
    /// Sustained token requests per second per caller address (IPv6: per /64) [default: 10].
    #[arg(long, value_name = "N")]
    pub issue_rate_limit_per_second: Option<u32>,
    /// Burst of token requests per caller address above that rate [default: 100].
    #[arg(long, value_name = "N")]
    pub issue_rate_limit_burst: Option<u32>,
    /// Sustained token requests per second per client id, over all callers [default: 200].
    #[arg(long, value_name = "N")]
    pub issue_client_rate_limit_per_second: Option<u32>,
    /// Burst of token requests per client id above that rate [default: 2000].
    #[arg(long, value_name = "N")]
    pub issue_client_rate_limit_burst: Option<u32>,
    /// How long verifiers may cache the JWKS, in seconds; `keys rotate` lets a new key
    /// sign only this long plus one refresh interval after publishing it [default: 300].
    #[arg(long, value_name = "S")]
    pub jwks_max_age_seconds: Option<u32>,
    /// Proxies whose X-Forwarded-For / Forwarded headers name the caller, as
    /// comma-separated addresses or CIDR networks [default: none].
    #[arg(long, value_name = "CIDR,...")]
    pub trusted_proxies: Option<String>,
    /// The header the trusted proxies write the caller's address in; the other is
    /// ignored [default: x-forwarded-for].
    #[arg(long, value_enum)]
    pub forwarded_header: Option<ForwardedHeader>,
    /// Time a client has to send its request head before a 408, in ms [default: 5000].
    #[arg(long, value_name = "MS")]
    pub client_request_timeout_ms: Option<u64>,
    /// How long to serve without hearing from the store before answering 500/503, in ms
    /// [default: 10000].
    #[arg(long, value_name = "MS")]
    pub max_staleness_ms: Option<u64>,
    /// A branch whose wait-time estimate is older than this many minutes is answered as
    /// unknown, 1 to 10080 [default: 60].
    #[arg(long, value_name = "N")]
    pub wait_time_max_age_minutes: Option<u32>,
    /// After SIGTERM, how long to keep serving (readiness 503, `Connection: close` on
    /// every response) before stopping, in ms; 0 stops at once [default: 5000].
    #[arg(long, value_name = "MS")]
    pub shutdown_drain_ms: Option<u64>,
    /// Redis that every instance counts the request limits in (`redis://host:port`), so
    /// they hold across instances; without it each instance limits on its own
    /// [default: none].
    #[arg(long, value_name = "URL")]
    pub redis_url: Option<String>,
    /// Address of a second listener serving Prometheus metrics at /metrics; keep it off
    /// the public network [default: none, no metrics].
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// Which requests the access log writes: all, errors (4xx and 5xx), off
    /// [default: all].
    #[arg(long, value_enum)]
    pub access_log: Option<AccessLog>,
}

/// The prefix of the environment variables that are settings.
const ENV_PREFIX: &str = "BRANCH_ATM_";

/// The `BRANCH_ATM_*` variables settings are read from: the process's own for the
/// binary, exactly those a test gives for a test.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Each variable's name after the prefix, in upper case, and its value.
    vars: Vec<(String, String)>,
}

impl Environment {
    /// This process's `BRANCH_ATM_*` variables (names compared without case, as figment's
    /// own environment provider does).
    pub fn of_process() -> Self {
        Self::of(
            std::env::vars_os()
                .map(|(name, value)| (name.to_string_lossy().into_owned(), value.to_string_lossy().into_owned())),
        )
    }

    /// The `BRANCH_ATM_*` variables among `vars`; any other is left out.
    pub fn of<N: AsRef<str>, V: Into<String>>(vars: impl IntoIterator<Item = (N, V)>) -> Self {
        let vars = vars
            .into_iter()
            .filter_map(|(name, value)| {
                let name = name.as_ref().trim().to_ascii_uppercase();
                let setting = name.strip_prefix(ENV_PREFIX).filter(|rest| !rest.is_empty())?.to_owned();
                Some((setting, value.into()))
            })
            .collect();
        Self { vars }
    }

    /// `BRANCH_ATM_CONFIG`: the config file, when no `--config` names one.
    fn config_file(&self) -> Option<PathBuf> {
        self.vars.iter().find(|(name, _)| name == "CONFIG").map(|(_, file)| PathBuf::from(file))
    }
}

impl Provider for Environment {
    fn metadata(&self) -> Metadata {
        Metadata::named(format!("`{ENV_PREFIX}` environment variable(s)"))
    }

    /// Each variable as the key of its flag (`TOKEN_TTL_SECONDS` as `token-ttl-seconds`),
    /// its value read as figment reads an environment variable's.
    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let dict = self
            .vars
            .iter()
            .filter(|(name, _)| name != "CONFIG")
            .map(|(name, value)| {
                let parsed = value.parse::<Value>().unwrap_or_else(|never| match never {});
                (name.to_ascii_lowercase().replace('_', "-"), parsed)
            })
            .collect();
        Ok(Profile::Default.collect(dict))
    }
}

/// The keys of the layers that no option has: a misspelt key must not be ignored.
#[derive(Debug, Deserialize)]
struct UnknownKeys {
    #[serde(flatten)]
    _common: CommonOptions,
    #[serde(flatten)]
    _serve: ServeOptions,
    #[serde(flatten)]
    unknown: Dict,
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
    /// The key-encryption key's file, if signing keys are encrypted at rest.
    pub key_encryption_key_file: Option<PathBuf>,
}

/// Everything `serve` needs, resolved and checked.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Database URL.
    pub database_url: SecretString,
    /// Listen address.
    pub listen: SocketAddr,
    /// Load demo data into a new store.
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
    /// How long verifiers may cache the JWKS.
    pub jwks_max_age: Duration,
    /// The key-encryption key's file, if signing keys are encrypted at rest.
    pub key_encryption_key_file: Option<PathBuf>,
    /// Request limits.
    pub limits: RateLimits,
    /// Proxies whose forwarding headers are believed.
    pub trusted_proxies: Vec<IpNet>,
    /// The forwarding header they write.
    pub forwarded_header: ForwardedHeader,
    /// Time to send a request head.
    pub client_request_timeout: Duration,
    /// How long the view may go without hearing from the store.
    pub max_staleness: Duration,
    /// Age past which a wait-time estimate is not served.
    pub wait_time_max_age: Duration,
    /// How long to keep serving after SIGTERM before stopping.
    pub shutdown_drain: Duration,
    /// The Redis the request limits are counted in, if they are shared.
    pub redis_url: Option<SecretString>,
    /// Where Prometheus metrics are served, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Which requests the access log writes.
    pub access_log: AccessLog,
}

impl Settings {
    /// How long after publishing a new signing key it may start signing: every
    /// verifier's cached JWKS has expired and every instance has refreshed by then.
    pub fn key_activation_delay(&self) -> Duration {
        self.jwks_max_age + self.refresh_interval
    }

    /// Settings for tests and embedding: `database_url`, listening on `127.0.0.1:0`,
    /// without demo data, every other value its default, the rate limits out of the way.
    pub fn for_database(database_url: &str) -> Self {
        let options = ServeOptions {
            listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
            workers: Some(2),
            ..Default::default()
        };
        let mut settings = serve_settings(database_url, options)
            .unwrap_or_else(|error| unreachable!("the defaults are valid settings: {error}"));
        settings.demo_data = false;
        settings.public_base_url = "http://127.0.0.1".to_owned();
        settings.limits = RateLimits::unlimited();
        // Tests read answers, not access lines; a test of the access log runs the binary.
        settings.access_log = AccessLog::Off;
        settings
    }
}

/// The limits `serve` applies when none is set.
pub fn default_limits() -> RateLimits {
    serve_settings("", ServeOptions::default())
        .map(|settings| settings.limits)
        .unwrap_or_else(|error| unreachable!("the defaults are valid settings: {error}"))
}

/// The options given in one layer, without the ones it leaves out: a flag not given
/// must not hide the file's or the environment's value.
fn given(options: &impl Serialize) -> Result<Dict, SettingsError> {
    let Value::Dict(_, mut values) = Value::serialize(options).map_err(|e| SettingsError(e.to_string()))? else {
        return Ok(Dict::new());
    };
    values.retain(|_, value| !matches!(value, Value::Empty(..)));
    Ok(values)
}

/// One invocation of the binary, as its command line gave it.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    /// `--config FILE`, if given.
    pub config: Option<&'a std::path::Path>,
    /// Options of every command.
    pub common: &'a CommonOptions,
    /// Options of `serve` given before the word `serve` (or without it).
    pub serve: &'a ServeOptions,
    /// Options given after the word `serve`, when the command is `serve`.
    pub serve_after: Option<&'a ServeOptions>,
    /// Whether the command is `serve` (named or, with no command, by default).
    pub serves: bool,
}

/// Resolves the shared settings and those of `serve`: defaults, then the config file
/// (`--config`, else `BRANCH_ATM_CONFIG`), then the `BRANCH_ATM_*` variables of
/// `environment`, then flags. Options of `serve` given before the word `serve` count as
/// given after it; given with another command, they are refused.
///
/// # Errors
/// [`SettingsError`] naming the setting and where it came from.
pub fn resolve(
    invocation: &Invocation<'_>,
    environment: &Environment,
) -> Result<(CommonSettings, Settings), SettingsError> {
    let serve_flags = given(invocation.serve)?;
    if !invocation.serves
        && let Some(flag) = serve_flags.keys().next()
    {
        return Err(SettingsError(format!("--{flag} is an option of serve, not of this command")));
    }
    let mut layers = Figment::new();
    if let Some(file) = invocation.config.map(std::path::Path::to_path_buf).or_else(|| environment.config_file()) {
        if !file.is_file() {
            return Err(SettingsError(format!("cannot read config file {}", file.display())));
        }
        layers = layers.merge(Toml::file_exact(&file));
    }
    layers = layers
        .merge(environment.clone())
        .merge(Serialized::defaults(given(invocation.common)?))
        .merge(Serialized::defaults(serve_flags));
    if let Some(after) = invocation.serve_after {
        layers = layers.merge(Serialized::defaults(given(after)?));
    }
    // Each set of options on its own, so that an error names its key and its source.
    let invalid = |error: figment::Error| SettingsError(one_line(&error));
    let common_options: CommonOptions = layers.extract().map_err(invalid)?;
    let serve_options: ServeOptions = layers.extract().map_err(invalid)?;
    if let Some(key) = layers.extract::<UnknownKeys>().map_err(invalid)?.unknown.keys().next() {
        let source = layers.find_metadata(key).map_or_else(String::new, |found| match &found.source {
            Some(source) => format!(" in {} {source}", found.name),
            None => format!(" in {}", found.name),
        });
        return Err(SettingsError(format!("unknown setting {key:?}{source}")));
    }
    let database_url = common_options.database_url.unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
    let common = CommonSettings {
        database_url: SecretString::from(database_url.clone()),
        log_filter: common_options.log_filter,
        log_format: common_options.log_format,
        key_encryption_key_file: common_options.key_encryption_key_file.clone(),
    };
    let mut settings = serve_settings(&database_url, serve_options)?;
    settings.key_encryption_key_file = common_options.key_encryption_key_file;
    Ok((common, settings))
}

/// `serve`'s settings from its options: each default applied and each value checked.
fn serve_settings(database_url: &str, options: ServeOptions) -> Result<Settings, SettingsError> {
    let listen = match options.listen {
        Some(listen) => listen,
        None => {
            DEFAULT_LISTEN.parse().map_err(|_| SettingsError("the default listen address does not parse".into()))?
        }
    };
    let token_ttl_seconds = options.token_ttl_seconds.unwrap_or(DEFAULT_TOKEN_TTL_SECONDS);
    if !(1..=MAX_TOKEN_TTL_SECONDS).contains(&token_ttl_seconds) {
        return Err(SettingsError(format!("token-ttl-seconds must be from 1 to {MAX_TOKEN_TTL_SECONDS}")));
    }
    let tls = match (options.tls_cert, options.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        (None, None) => None,
        _ => return Err(SettingsError("tls-cert and tls-key go together".into())),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let public_base_url = options.public_base_url.unwrap_or_else(|| format!("{scheme}://{listen}"));
    if !(public_base_url.starts_with("https://") || public_base_url.starts_with("http://")) {
        return Err(SettingsError("public-base-url must be an http or https URL".into()));
    }
    let refresh_ms = options.refresh_interval_ms.unwrap_or(DEFAULT_REFRESH_INTERVAL_MS);
    if !(10..=60_000).contains(&refresh_ms) {
        return Err(SettingsError("refresh-interval-ms must be from 10 to 60000".into()));
    }
    if options.workers == Some(0) {
        return Err(SettingsError("workers must be at least 1".into()));
    }
    let atm_page_size = options.atm_page_size.unwrap_or(DEFAULT_ATM_PAGE_SIZE);
    // A page's byte budget (4 MiB) over the largest record (16 KiB): issue 30.
    if !(1..=MAX_PAGE_SIZE).contains(&atm_page_size) {
        return Err(SettingsError(format!(
            "atm-page-size must be from 1 to {MAX_PAGE_SIZE} (a page carries at most {} MiB of records of up to \
             {} KiB)",
            MAX_PAGE_BYTES >> 20,
            MAX_RECORD_BYTES >> 10
        )));
    }
    let rate = |per_second: Option<u32>, burst: Option<u32>, default: (u32, u32), prefix: &str| {
        let positive = |value: Option<u32>, default: u32, what: &str| {
            NonZeroU32::new(value.unwrap_or(default))
                .ok_or_else(|| SettingsError(format!("{prefix}rate-limit-{what} must be at least 1")))
        };
        Ok::<_, SettingsError>(Rate {
            per_second: positive(per_second, default.0, "per-second")?,
            burst: positive(burst, default.1, "burst")?,
        })
    };
    let limits = RateLimits {
        issue_per_caller: rate(
            options.issue_rate_limit_per_second,
            options.issue_rate_limit_burst,
            DEFAULT_ISSUE_RATE,
            "issue-",
        )?,
        issue_per_client: rate(
            options.issue_client_rate_limit_per_second,
            options.issue_client_rate_limit_burst,
            DEFAULT_ISSUE_CLIENT_RATE,
            "issue-client-",
        )?,
        per_session: rate(
            options.session_rate_limit_per_second,
            options.session_rate_limit_burst,
            DEFAULT_SESSION_RATE,
            "session-",
        )?,
        per_caller: rate(
            options.caller_rate_limit_per_second,
            options.caller_rate_limit_burst,
            DEFAULT_CALLER_RATE,
            "caller-",
        )?,
        per_client: rate(options.rate_limit_per_second, options.rate_limit_burst, DEFAULT_CLIENT_RATE, "")?,
    };
    let jwks_max_age_seconds = options.jwks_max_age_seconds.unwrap_or(DEFAULT_JWKS_MAX_AGE_SECONDS);
    if jwks_max_age_seconds > 86_400 {
        return Err(SettingsError("jwks-max-age-seconds must be from 0 to 86400".into()));
    }
    let trusted_proxies = options.trusted_proxies.as_deref().map(proxy_networks).transpose()?.unwrap_or_default();
    let client_request_timeout_ms = options.client_request_timeout_ms.unwrap_or(DEFAULT_CLIENT_REQUEST_TIMEOUT_MS);
    if !(100..=600_000).contains(&client_request_timeout_ms) {
        return Err(SettingsError("client-request-timeout-ms must be from 100 to 600000".into()));
    }
    let max_staleness_ms = options.max_staleness_ms.unwrap_or(DEFAULT_MAX_STALENESS_MS);
    if max_staleness_ms < 2 * refresh_ms {
        return Err(SettingsError("max-staleness-ms must be at least twice refresh-interval-ms".into()));
    }
    let wait_time_max_age_minutes = options.wait_time_max_age_minutes.unwrap_or(DEFAULT_WAIT_TIME_MAX_AGE_MINUTES);
    if !(1..=MAX_WAIT_TIME_MAX_AGE_MINUTES).contains(&wait_time_max_age_minutes) {
        return Err(SettingsError(format!(
            "wait-time-max-age-minutes must be from 1 to {MAX_WAIT_TIME_MAX_AGE_MINUTES}"
        )));
    }
    let shutdown_drain_ms = options.shutdown_drain_ms.unwrap_or(DEFAULT_SHUTDOWN_DRAIN_MS);
    if shutdown_drain_ms > 600_000 {
        return Err(SettingsError("shutdown-drain-ms must be from 0 to 600000".into()));
    }
    Ok(Settings {
        database_url: SecretString::from(database_url),
        listen,
        demo_data: !options.no_demo_data.unwrap_or(false),
        token_ttl_seconds,
        public_base_url: public_base_url.trim_end_matches('/').to_owned(),
        tls,
        refresh_interval: Duration::from_millis(refresh_ms),
        workers: options.workers,
        atm_page_size,
        jwks_max_age: Duration::from_secs(u64::from(jwks_max_age_seconds)),
        key_encryption_key_file: None,
        limits,
        trusted_proxies,
        forwarded_header: options.forwarded_header.unwrap_or_default(),
        client_request_timeout: Duration::from_millis(client_request_timeout_ms),
        max_staleness: Duration::from_millis(max_staleness_ms),
        wait_time_max_age: Duration::from_secs(u64::from(wait_time_max_age_minutes) * 60),
        shutdown_drain: Duration::from_millis(shutdown_drain_ms),
        redis_url: options.redis_url.map(SecretString::from),
        metrics_listen: options.metrics_listen,
        access_log: options.access_log.unwrap_or_default(),
    })
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
