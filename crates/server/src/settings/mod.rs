//! Settings, each declared once, in sections of the code they configure: [`store`],
//! [`http`], [`tokens`], [`limits`], [`catalog`] and [`observability`]. A field of a
//! section is a flag, a `BRANCH_ATM_<NAME>` environment variable (upper case, `-` as `_`)
//! and a key of the TOML file named by `--config`, all at once; its doc comment is its
//! help, its `default_value_t` its default (the help's `[default: …]` is clap's
//! rendering of it; a setting whose default is an absence says what that means in its
//! doc), and its range check is in its section's `check`. They are layered with figment,
//! defaults → file → environment → flags, into [`CommonOptions`] (every command) and
//! [`Settings`] (`serve`). The environment is an argument ([`Environment`]): the binary
//! passes its own, a test passes what it sets, so no test reads the variables of whoever
//! runs it. [`table`] writes the configuration table of the docs from the same fields.
//!
//! # Layout
//! - [`store`] — the database and signing keys at rest ([`Store`], every command); the
//!   in-memory view's refresh and staleness ([`View`]).
//! - [`http`] — the listener: address, public URL, TLS, workers, timeouts, drain, proxies.
//! - [`tokens`] — token lifetime, JWKS cache lifetime.
//! - [`limits`] — the request limits and the Redis they are shared in.
//! - [`catalog`] — ATM page size, wait-time maximum age, demo data.
//! - [`observability`] — log filter and format ([`Logs`], every command), access log,
//!   metrics listener.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use adapters::formats::shown::quoted;
use clap::{ArgMatches, Args, FromArgMatches, parser::ValueSource};
use figment::Figment;
use figment::providers::{Format as _, Serialized, Toml};
use figment::value::{Dict, Map, Value};
use figment::{Metadata, Profile, Provider};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

// The types of the code each setting configures, one `use` each.
use api::caller::ForwardedHeader;
use domain::limits::{Rate, RateLimits};

use crate::access_log::AccessLog;
use crate::errors::one_line;
use crate::telemetry::LogFormat;

pub mod catalog;
pub mod http;
pub mod limits;
pub mod observability;
pub mod store;
pub mod table;
pub mod tokens;

pub use catalog::Catalog;
pub use http::{Http, TlsFiles};
pub use limits::Limits;
pub use observability::{Logs, Observability};
pub use store::{Store, View};
pub use tokens::Tokens;

/// Options of every command.
#[derive(Debug, Default, Clone, Args, Serialize)]
pub struct CommonOptions {
    /// The store.
    #[command(flatten)]
    #[serde(flatten)]
    pub store: Store,
    /// The log.
    #[command(flatten)]
    #[serde(flatten)]
    pub logs: Logs,
}

/// Options of `serve`.
#[derive(Debug, Default, Clone, Args, Serialize)]
pub struct ServeOptions {
    /// The in-memory view.
    #[command(flatten)]
    #[serde(flatten)]
    pub view: View,
    /// The HTTP listener.
    #[command(flatten)]
    #[serde(flatten)]
    pub http: Http,
    /// Access tokens and the JWKS.
    #[command(flatten)]
    #[serde(flatten)]
    pub tokens: Tokens,
    /// Request limits.
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: Limits,
    /// What the API serves.
    #[command(flatten)]
    #[serde(flatten)]
    pub catalog: Catalog,
    /// Access log and metrics.
    #[command(flatten)]
    #[serde(flatten)]
    pub observability: Observability,
}

/// A section's defaults, as clap gives them when no flag is: the `default_value_t`
/// beside each field, `None` for the others.
fn defaults<T: Args + FromArgMatches>() -> T {
    let command = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    command
        .try_get_matches_from(std::iter::empty::<String>())
        .and_then(|matches| T::from_arg_matches(&matches))
        .unwrap_or_else(|error| unreachable!("the defaults parse: {error}"))
}

/// Each section's `Default` is its [`defaults`].
macro_rules! defaults_of_clap {
    ($($section:ty),+) => {
        $(impl Default for $section {
            fn default() -> Self {
                defaults()
            }
        })+
    };
}

defaults_of_clap!(Store, View, Http, Tokens, Limits, Catalog, Logs, Observability);

/// The keys of every setting: the long names of the options of every command and of
/// `serve`.
fn setting_keys() -> BTreeSet<String> {
    let command = ServeOptions::augment_args(CommonOptions::augment_args(clap::Command::new("keys")));
    command.get_arguments().filter_map(|arg| arg.get_long().map(str::to_owned)).collect()
}

/// The options the command line gave, by key (`token-ttl-seconds`), as clap saw them
/// given (not filled in from a default).
pub fn given_on_command_line(matches: &ArgMatches) -> BTreeSet<String> {
    matches
        .ids()
        .filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| id.as_str().replace('_', "-"))
        .collect()
}

/// A URL that may hold a password: never logged, never in `Debug` output.
#[derive(Clone)]
pub struct SecretUrl(SecretString);

impl FromStr for SecretUrl {
    type Err = std::convert::Infallible;

    fn from_str(url: &str) -> Result<Self, Self::Err> {
        Ok(Self(SecretString::from(url)))
    }
}

impl ExposeSecret<str> for SecretUrl {
    fn expose_secret(&self) -> &str {
        self.0.expose_secret()
    }
}

impl std::fmt::Debug for SecretUrl {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SecretUrl([REDACTED])")
    }
}

/// Written only into the layers settings are resolved from.
impl Serialize for SecretUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.expose_secret())
    }
}

impl<'de> Deserialize<'de> for SecretUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|url| Self(SecretString::from(url)))
    }
}

/// The prefix of the environment variables that are settings.
const ENV_PREFIX: &str = "BRANCH_ATM_";

/// OpenTelemetry's standard variables (its SDK's environment specification) as the
/// trace settings they give, each as its `BRANCH_ATM_*` name after the prefix, and a
/// warning for each it ignores:
/// - `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the whole URL)
///   and `OTEL_SERVICE_NAME`;
/// - `OTEL_TRACES_SAMPLER` with `OTEL_TRACES_SAMPLER_ARG` as the ratio. The service
///   always follows a caller's `traceparent` (parent-based), so `always_on` and
///   `parentbased_always_on` are a ratio of 1, the `always_off` pair 0, and the
///   `traceidratio` pair the argument (1 without one, as the specification says); a
///   sampler the service does not have (`jaeger_remote`, `xray`, a typo) is ignored with
///   a warning, as the specification says;
/// - a value the service cannot use (a ratio outside 0 to 1 or not a number, a URL that
///   is not http or https) is not set, with a warning naming the variable: the
///   specification's rule for a value out of range, so that a platform's setting cannot
///   keep the service from starting;
/// - `OTEL_SDK_DISABLED=true`: none of them (no traces unless a setting asks).
///
/// An empty variable is not set, as the specification says.
fn standard_settings(otel: &[(String, String)]) -> (Vec<(&'static str, String)>, Vec<String>) {
    let get = |name: &str| {
        otel.iter().find(|(otel, value)| otel == name && !value.trim().is_empty()).map(|(_, value)| value.trim())
    };
    if get("OTEL_SDK_DISABLED").is_some_and(|disabled| disabled.eq_ignore_ascii_case("true")) {
        return (Vec::new(), Vec::new());
    }
    let mut settings = Vec::new();
    let mut warnings = Vec::new();
    for (otel, setting) in [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTLP_ENDPOINT"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTLP_TRACES_ENDPOINT"),
    ] {
        let Some(url) = get(otel) else { continue };
        match observability::collector_url_problem(url) {
            None => settings.push((setting, url.to_owned())),
            // Not the value itself: a URL may carry a credential.
            Some(problem) => warnings.push(format!("{otel} is ignored: it {problem}")),
        }
    }
    if let Some(name) = get("OTEL_SERVICE_NAME") {
        settings.push(("OTEL_SERVICE_NAME", name.to_owned()));
    }
    // The argument as a number (`1e-2` too), when it is a ratio; what is not is said
    // where a sampler takes an argument.
    let argument = get("OTEL_TRACES_SAMPLER_ARG");
    let ratio_given =
        argument.and_then(|argument| argument.parse().ok().filter(|ratio| observability::is_ratio(*ratio)));
    let unusable = argument.filter(|_| ratio_given.is_none());
    let not_a_ratio =
        |argument: &str| format!("OTEL_TRACES_SAMPLER_ARG {argument:?} is ignored: it is not a ratio from 0 to 1");
    let sampler = get("OTEL_TRACES_SAMPLER");
    let ratio: Option<f64> = match sampler.map(str::to_ascii_lowercase).as_deref() {
        None => {
            warnings.extend(unusable.map(not_a_ratio));
            ratio_given
        }
        Some("always_on" | "parentbased_always_on") => Some(1.0),
        Some("always_off" | "parentbased_always_off") => Some(0.0),
        Some("traceidratio" | "parentbased_traceidratio") => {
            warnings.extend(unusable.map(|argument| {
                let sampler = sampler.unwrap_or_default();
                format!(
                    "{}, and OTEL_TRACES_SAMPLER {sampler:?} without one keeps every new trace",
                    not_a_ratio(argument)
                )
            }));
            Some(ratio_given.unwrap_or(1.0))
        }
        Some(_) => {
            warnings.push(format!(
                "OTEL_TRACES_SAMPLER {:?} is not a sampler of this service and is ignored: it samples new \
                 traces by a ratio and follows its callers' (traceidratio, always_on, always_off, each also \
                 parentbased_)",
                sampler.unwrap_or_default()
            ));
            None
        }
    };
    if let Some(ratio) = ratio {
        // Written as a number figment reads as one (`Display` never writes an exponent).
        settings.push(("TRACE_SAMPLE_RATIO", ratio.to_string()));
    }
    (settings, warnings)
}

/// The `BRANCH_ATM_*` variables settings are read from: the process's own for the
/// binary, exactly those a test gives for a test.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// Each variable's name after the prefix, in upper case, and its value.
    vars: Vec<(String, String)>,
    /// What of OpenTelemetry's standard variables is ignored, and why.
    warnings: Vec<String>,
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

    /// The `BRANCH_ATM_*` variables among `vars`, and the trace settings OpenTelemetry's
    /// standard variables give (`OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`
    /// with `OTEL_TRACES_SAMPLER_ARG`, unless `OTEL_SDK_DISABLED=true`) where no
    /// `BRANCH_ATM_*` one sets the same; any other is left out. An unknown sampler, and
    /// a value the service cannot use, are ignored and said in [`Environment::warnings`].
    pub fn of<N: AsRef<str>, V: Into<String>>(vars: impl IntoIterator<Item = (N, V)>) -> Self {
        let mut otel = Vec::new();
        let mut vars: Vec<(String, String)> = vars
            .into_iter()
            .filter_map(|(name, value)| {
                let name = name.as_ref().trim().to_ascii_uppercase();
                if name.starts_with("OTEL_") {
                    otel.push((name, value.into()));
                    return None;
                }
                let setting = name.strip_prefix(ENV_PREFIX).filter(|rest| !rest.is_empty())?.to_owned();
                Some((setting, value.into()))
            })
            .collect();
        let (standard, warnings) = standard_settings(&otel);
        // The collector's two URLs are one setting: a variable of the service's own for
        // either sets both standard ones aside.
        let own_url = vars.iter().any(|(name, _)| ENDPOINTS.contains(&name.as_str()));
        for (setting, value) in standard {
            let set_aside = own_url && ENDPOINTS.contains(&setting);
            if !set_aside && !vars.iter().any(|(name, _)| name == setting) {
                vars.push((setting.to_owned(), value));
            }
        }
        Self { vars, warnings }
    }

    /// What of OpenTelemetry's standard variables is ignored, and why: for the log, once
    /// it is set up.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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
        Ok(Profile::Default.collect(with_one_collector_url(dict)))
    }
}

/// Settings are wrong; the message says which and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

impl SettingsError {
    fn new(message: &str) -> Self {
        Self(message.to_owned())
    }
}

/// Settings shared by every command.
pub type CommonSettings = CommonOptions;

/// Everything `serve` needs, resolved and checked, by section.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The store and its signing keys at rest.
    pub store: Store,
    /// The in-memory view.
    pub view: View,
    /// The HTTP listener.
    pub http: Http,
    /// Access tokens and the JWKS.
    pub tokens: Tokens,
    /// Request limits.
    pub limits: Limits,
    /// What the API serves.
    pub catalog: Catalog,
    /// Access log and metrics.
    pub observability: Observability,
    /// How requests are sampled for traces, when traces are exported (`--otlp-endpoint`,
    /// a setting of every command, [`Logs`]).
    pub trace_sampling: Option<api::trace::Sampling>,
}

impl Settings {
    /// `serve`'s settings: the shared ones and its own.
    fn of(store: Store, serve: ServeOptions) -> Self {
        let ServeOptions { view, http, tokens, limits, catalog, observability } = serve;
        Self { store, view, http, tokens, limits, catalog, observability, trace_sampling: None }
    }

    /// How long after publishing a new signing key it may start signing: every
    /// verifier's cached JWKS has expired and every instance has refreshed by then.
    pub fn key_activation_delay(&self) -> Duration {
        self.tokens.jwks_max_age() + self.view.refresh_interval()
    }

    /// Settings for tests and embedding: `database_url`, listening on `127.0.0.1:0`,
    /// without demo data, every other value its default, the rate limits out of the way.
    pub fn for_database(database_url: &str) -> Self {
        let mut settings = Self::of(Store::default(), ServeOptions::default());
        settings.store.database_url = SecretUrl(SecretString::from(database_url));
        settings.http.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        settings.http.workers = Some(2);
        settings.http.public_base_url = Some("http://127.0.0.1".to_owned());
        settings.catalog.no_demo_data = true;
        settings.limits = Limits::unlimited();
        // Tests read answers, not access lines; a test of the access log runs the binary.
        settings.observability.access_log = AccessLog::Off;
        settings
    }
}

/// The limits `serve` applies when none is set.
pub fn default_limits() -> RateLimits {
    Limits::default().rates()
}

/// The options in one layer among `given`: a flag not given must not hide the file's or
/// the environment's value.
fn given(options: &impl Serialize, given: &BTreeSet<String>) -> Result<Dict, SettingsError> {
    let Value::Dict(_, mut values) = Value::serialize(options).map_err(|e| SettingsError(e.to_string()))? else {
        return Ok(Dict::new());
    };
    values.retain(|key, value| given.contains(key) && !matches!(value, Value::Empty(..)));
    Ok(values)
}

/// The collector's base URL and traces URL (`--otlp-endpoint`, `--otlp-traces-endpoint`)
/// as their `BRANCH_ATM_*` names after the prefix.
const ENDPOINTS: [&str; 2] = ["OTLP_ENDPOINT", "OTLP_TRACES_ENDPOINT"];

/// A layer's settings where a base URL given without a traces URL also sets aside a
/// traces URL from the layers beneath (the traces URL would otherwise win over the base
/// URL however it was given: the two are one setting).
fn with_one_collector_url(mut layer: Dict) -> Dict {
    if layer.contains_key("otlp-endpoint") && !layer.contains_key("otlp-traces-endpoint") {
        layer.insert("otlp-traces-endpoint".to_owned(), Value::from(String::new()));
    }
    layer
}

/// Every default, the first layer: what no file, variable or flag sets.
fn default_layer() -> Result<Dict, SettingsError> {
    let mut every = given(&CommonOptions::default(), &setting_keys())?;
    every.extend(given(&ServeOptions::default(), &setting_keys())?);
    Ok(every)
}

/// One invocation of the binary, as its command line gave it.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    /// `--config FILE`, if given.
    pub config: Option<&'a Path>,
    /// Options of every command.
    pub common: &'a CommonOptions,
    /// Options of `serve` given before the word `serve` (or without it).
    pub serve: &'a ServeOptions,
    /// Options given after the word `serve`, when the command is `serve`.
    pub serve_after: Option<&'a ServeOptions>,
    /// Whether the command is `serve` (named or, with no command, by default).
    pub serves: bool,
    /// The keys of the options given on the command line before any command word.
    pub given: &'a BTreeSet<String>,
    /// The keys of the options given after the word `serve`.
    pub given_after: &'a BTreeSet<String>,
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
    let serve_flags = given(invocation.serve, invocation.given)?;
    if !invocation.serves
        && let Some(flag) = serve_flags.keys().next()
    {
        return Err(SettingsError(format!("--{flag} is an option of serve, not of this command")));
    }
    let mut layers = Figment::from(Serialized::defaults(default_layer()?));
    if let Some(file) = invocation.config.map(Path::to_path_buf).or_else(|| environment.config_file()) {
        if !file.is_file() {
            return Err(SettingsError(format!("cannot read config file {}", quoted(&file.to_string_lossy()))));
        }
        layers = layers.merge(Toml::file_exact(&file));
    }
    layers = layers
        .merge(environment.clone())
        .merge(Serialized::defaults(with_one_collector_url(given(invocation.common, invocation.given)?)))
        .merge(Serialized::defaults(serve_flags));
    if let Some(after) = invocation.serve_after {
        layers = layers.merge(Serialized::defaults(given(after, invocation.given_after)?));
    }
    // Each section on its own, so that an error names its key and its source.
    let invalid = |error: figment::Error| SettingsError(one_line(&error));
    let common = CommonOptions { store: layers.extract().map_err(invalid)?, logs: layers.extract().map_err(invalid)? };
    let serve = ServeOptions {
        view: layers.extract().map_err(invalid)?,
        http: layers.extract().map_err(invalid)?,
        tokens: layers.extract().map_err(invalid)?,
        limits: layers.extract().map_err(invalid)?,
        catalog: layers.extract().map_err(invalid)?,
        observability: layers.extract().map_err(invalid)?,
    };
    let known = setting_keys();
    let every: Dict = layers.extract().map_err(invalid)?;
    if let Some(key) = every.keys().find(|key| !known.contains(*key)) {
        let source = layers.find_metadata(key).map_or_else(String::new, |found| match &found.source {
            Some(source) => format!(" in {} {source}", found.name),
            None => format!(" in {}", found.name),
        });
        return Err(SettingsError(format!("unknown setting {key:?}{source}")));
    }
    let mut settings = Settings::of(common.store.clone(), serve);
    settings.trace_sampling = common.logs.traces().map(|traces| api::trace::Sampling { ratio: traces.ratio });
    settings.tokens.check()?;
    settings.http.check()?;
    settings.view.check()?;
    settings.catalog.check()?;
    settings.limits.check()?;
    common.logs.check()?;
    Ok((common, settings))
}
