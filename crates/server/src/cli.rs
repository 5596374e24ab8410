//! The `branch-atm` command line: its grammar only. What the options mean, their
//! defaults and the other places they can come from (a config file, the environment)
//! are in [`crate::settings`].

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use adapters::formats::shown::shortened;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

use crate::settings::{CommonOptions, Invocation, ServeOptions, given_on_command_line};

/// The `branch-atm` command line.
#[derive(Debug, Parser)]
#[command(name = "branch-atm", version, about = "Branch and ATM open-banking service")]
pub struct Cli {
    /// TOML file with any of the settings' keys, named like the flags
    /// (`token-ttl-seconds = 900`); BRANCH_ATM_CONFIG names one too [default: none].
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Options of every command.
    #[command(flatten)]
    pub common: CommonOptions,
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `serve`, also accepted before the word `serve` (or without it).
    #[command(flatten)]
    pub serve: ServeOptions,
    /// Which options the command line gave: a default clap filled in must not hide the
    /// file's or the environment's value.
    #[arg(skip)]
    given: Given,
}

/// The keys of the options given on the command line.
#[derive(Debug, Clone, Default)]
struct Given {
    /// Before any command word (or without one).
    before: BTreeSet<String>,
    /// After the word `serve`.
    after_serve: BTreeSet<String>,
}

impl Cli {
    /// This process's command line; on a mistake, or for `--help`, clap's answer and exit.
    pub fn from_process() -> Self {
        Self::try_from_args(std::env::args_os()).unwrap_or_else(|error| with_arguments_shortened(error).exit())
    }

    /// `args` (the binary's name first), with which options they gave: parse with this,
    /// not [`Parser::parse`], whose `Cli` takes every option's default for given.
    ///
    /// # Errors
    /// clap's, for a command line it does not accept.
    pub fn try_from_args(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Result<Self, clap::Error> {
        let matches = Self::command().try_get_matches_from(args)?;
        let mut cli = Self::from_arg_matches(&matches)?;
        cli.given = Given {
            before: given_on_command_line(&matches),
            after_serve: matches.subcommand_matches("serve").map(given_on_command_line).unwrap_or_default(),
        };
        Ok(cli)
    }

    /// What the settings are resolved from ([`crate::settings::resolve`]).
    pub fn invocation(&self) -> Invocation<'_> {
        let serve_after = match &self.command {
            Some(Command::Serve(after)) => Some(after),
            _ => None,
        };
        Invocation {
            config: self.config.as_deref(),
            common: &self.common,
            serve: &self.serve,
            serve_after,
            serves: matches!(self.command, None | Some(Command::Serve(_))),
            given: &self.given.before,
            given_after: &self.given.after_serve,
        }
    }
}

/// The subcommands.
// Parsed once per process: the size of the `serve` options does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service (the default).
    Serve(ServeOptions),
    /// Apply database migrations and exit.
    Migrate,
    /// Manage registered client applications.
    Clients {
        /// What to do with clients.
        #[command(subcommand)]
        action: ClientsAction,
    },
    /// Manage the bank's own systems (branch queue systems): OAuth clients that get
    /// tokens at POST /api/v1/token with an assertion signed by one of their keys.
    Systems {
        /// What to do with systems.
        #[command(subcommand)]
        action: SystemsAction,
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
    /// Announce, list and cancel planned outages, published at /api/v1/discovery/outages
    /// and, while one is under way, as the status at /api/v1/discovery/status.
    Outages {
        /// What to do with planned outages.
        #[command(subcommand)]
        action: OutagesAction,
    },
    /// Ask the instance this configuration serves (its --listen address, on loopback
    /// when it listens everywhere) whether it is ready; exit 0 if so. For container
    /// health checks: HTTP, or HTTPS trusting the instance's own --tls-cert when it
    /// terminates TLS; touches no store.
    HealthCheck,
    /// Act on the store as a whole.
    Store {
        /// What to do with the store.
        #[command(subcommand)]
        action: StoreAction,
    },
    /// Print the settings (every command's and serve's) as the docs' configuration table.
    #[command(hide = true)]
    Settings {
        /// As a markdown table (the only form).
        #[arg(long, required = true)]
        markdown: bool,
    },
}

/// `error` with each argument it quotes shortened as a command's errors quote one
/// ([`shortened`]): clap repeats a value it refuses whole, a 100,000-character line.
fn with_arguments_shortened(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    for kind in [ContextKind::InvalidValue, ContextKind::InvalidArg, ContextKind::InvalidSubcommand] {
        let short = match error.get(kind) {
            Some(ContextValue::String(value)) => ContextValue::String(shortened(value)),
            Some(ContextValue::Strings(values)) => ContextValue::Strings(values.iter().map(|v| shortened(v)).collect()),
            _ => continue,
        };
        error.insert(kind, short);
    }
    error
}

/// `store …`
#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Copy everything (clients, channels, wait times, ATMs, signing keys as stored,
    /// live token records) from the configured store into a new, empty one, for example
    /// from the SQLite default to PostgreSQL. A target holding anything is refused.
    Copy {
        /// The target database: `postgres://user@host:port/db` or `sqlite://path/to/file.db`.
        #[arg(long, value_name = "URL")]
        to: String,
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
        /// A redirect URI the client may send; repeat for several. A page at its origin
        /// may call the API from a browser.
        #[arg(long = "redirect-uri", value_name = "URI")]
        redirect_uris: Vec<String>,
        /// Another web origin whose pages may call the API (`https://app.example.mx`);
        /// repeat for several.
        #[arg(long = "allowed-origin", value_name = "ORIGIN")]
        allowed_origins: Vec<String>,
        /// Whether its tokens must be bound to a key of the app's (DPoP, RFC 9449):
        /// `required` refuses it bearer tokens; `optional` binds a token when the token
        /// request carries a proof.
        #[arg(long, value_name = "POLICY", value_parser = ["optional", "required"], default_value = "optional")]
        dpop: String,
    },
    /// Replace a client's redirect URIs, added origins or DPoP policy (those given; the
    /// others stay).
    Update {
        /// The client id.
        #[arg(allow_hyphen_values = true)]
        client_id: String,
        /// Its redirect URIs from now on; repeat for several.
        #[arg(long = "redirect-uri", value_name = "URI")]
        redirect_uris: Vec<String>,
        /// Its added web origins from now on; repeat for several.
        #[arg(long = "allowed-origin", value_name = "ORIGIN")]
        allowed_origins: Vec<String>,
        /// Remove every added origin (its redirect URIs' origins stay allowed).
        #[arg(long, conflicts_with = "allowed_origins")]
        no_allowed_origins: bool,
        /// Its DPoP policy from now on: `required` refuses its bearer tokens, those
        /// already issued too; `optional` accepts them again.
        #[arg(long, value_name = "POLICY", value_parser = ["optional", "required"])]
        dpop: Option<String>,
    },
    /// List registered clients, tab-separated.
    List,
    /// Disable a client and revoke its live tokens; its tokens are refused from then on,
    /// whenever they were issued.
    Disable {
        /// The client id.
        #[arg(allow_hyphen_values = true)]
        client_id: String,
    },
    /// Enable a disabled client again. Tokens it held stay refused; it gets new ones.
    Enable {
        /// The client id.
        #[arg(allow_hyphen_values = true)]
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

/// `systems …`
#[derive(Debug, Subcommand)]
pub enum SystemsAction {
    /// Register a system with its public keys (a JWKS file: ES256 or EdDSA public keys
    /// only) and the scopes it may be given.
    Add {
        /// The system's id, its client_id: 1 to 64 of [A-Za-z0-9._-].
        system_id: String,
        /// The JWKS file of its public keys.
        #[arg(long, value_name = "PATH")]
        jwks_file: PathBuf,
        /// Space-separated scopes: queue:write, atm:write.
        #[arg(long)]
        scopes: String,
    },
    /// Replace a system's keys or scopes.
    Update {
        /// The system's id.
        system_id: String,
        /// A JWKS file of its new public keys.
        #[arg(long, value_name = "PATH")]
        jwks_file: Option<PathBuf>,
        /// Its new scopes.
        #[arg(long)]
        scopes: Option<String>,
    },
    /// Disable a system: it gets no token, and its tokens are refused from the next request.
    Disable {
        /// The system's id.
        system_id: String,
    },
    /// Enable a disabled system.
    Enable {
        /// The system's id.
        system_id: String,
    },
    /// List the systems: id, status, scopes, how many keys.
    List,
}

/// `waittimes …`
#[derive(Debug, Subcommand)]
pub enum WaitTimesAction {
    /// Upsert wait times from a CSV file: header `branchId,timeTaken[,estimatedAt]`.
    /// Only branches whose estimate differs from the stored one are written.
    Import {
        /// The CSV file.
        file: PathBuf,
        /// Say how many branches would be added, changed and left as they are; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Replay queue events (a JSON-lines file, any dates) through the live estimator and
    /// print how far its estimates were from the waits that followed: one line, `tickets
    /// N, MAE X.XX min, P90 absolute error Y.YY min, bias Z.ZZ min`. Opens no store.
    Evaluate {
        /// The events, one JSON object per line, as posted to the queue-events operation.
        #[arg(long)]
        events: PathBuf,
        /// Also write each ticket's estimate and wait as CSV to this file.
        #[arg(long, value_name = "OUT.csv")]
        per_ticket: Option<PathBuf>,
        /// Also print, on the same tickets, three references: the queue length with the
        /// true mean service time, the last wait to enter service, and the day's mean.
        #[arg(long)]
        references: bool,
    },
}

/// `atms …`
#[derive(Debug, Subcommand)]
pub enum AtmsAction {
    /// Make the ATM set the one in an OBIE ATM file (version 2.2 or 2.3): nothing changes
    /// if any record is invalid, or if the file is the stored set; otherwise its
    /// differences are applied in one transaction. A file that would remove more than
    /// --max-shrink-percent of the stored ATMs, remove them all, or is dated before 2000
    /// is refused unless --allow-shrink.
    Import {
        /// The JSON file.
        file: PathBuf,
        /// Say how many ATMs would be added, removed and changed (and whether the file
        /// would be refused); write nothing.
        #[arg(long)]
        dry_run: bool,
        /// The largest share of the stored ATMs, in percent, a file may remove.
        #[arg(long, value_name = "PERCENT", default_value_t = 10, value_parser = clap::value_parser!(u8).range(0..=100))]
        max_shrink_percent: u8,
        /// Apply a file the shrink guard refuses (a set that really shrank).
        #[arg(long)]
        allow_shrink: bool,
    },
    /// Write the ATM set as an OBIE ATM 2.3 file (to FILE, or standard output);
    /// importing it back changes nothing.
    Export {
        /// The file to write; standard output when omitted.
        file: Option<PathBuf>,
    },
    /// Announce that an ATM closes from a date on (00:00 UTC), at least 84 days ahead
    /// unless --short-notice gives the reason for less: from then on it is gone from the
    /// listings and near-me and its state reads Closed, and until then no import may
    /// drop it. Announcing again replaces the closure; --cancel withdraws it.
    Closure {
        /// The ATM's OBIE Identification (every brand's ATM with it closes).
        atm_id: String,
        /// The first day it is closed.
        #[arg(long, value_name = "YYYY-MM-DD", required_unless_present = "cancel", conflicts_with = "cancel")]
        closes_on: Option<String>,
        /// What customers are told (1 to 500 characters).
        #[arg(long, required_unless_present = "cancel", conflicts_with = "cancel")]
        explanation: Option<String>,
        /// Why it is announced with less than 84 days' notice (kept with it).
        #[arg(long, value_name = "REASON", conflicts_with = "cancel")]
        short_notice: Option<String>,
        /// Withdraw the closure announced for the ATM.
        #[arg(long)]
        cancel: bool,
    },
    /// List the closures announced, soonest first, one a line: ATM, date, `closed` or
    /// `announced`, explanation, and the reason for a short notice.
    Closures,
}

/// `keys …`
#[derive(Debug, Subcommand)]
pub enum KeysAction {
    /// Publish a new signing key now; it signs once every verifier's cached JWKS has
    /// expired (jwks-max-age-seconds plus one refresh-interval-ms, as the config file and
    /// environment set them for serve). The old key stays published until its tokens expire.
    Rotate {
        /// Sign with the new key at once (a compromised key); verifiers holding a cached
        /// JWKS meet an unknown kid until they fetch it again. Drops a waiting next key.
        #[arg(long)]
        now: bool,
    },
    /// Withdraw a key at once (leaked, or used to forge tokens): it leaves the JWKS and
    /// every instance's verifier within a refresh, so every token it signed is refused.
    /// If it signs now (or waits to), a new key takes its place in the same step.
    Revoke {
        /// The key's id (`kid`), as `keys list` shows it (base64url: it may start
        /// with `-`, and is read as the key's id all the same).
        #[arg(allow_hyphen_values = true)]
        kid: String,
    },
    /// List the keys with their state (next, current, retired, revoked) and times,
    /// tab-separated.
    List,
}

/// `outages …`
#[derive(Debug, Clone, Subcommand)]
pub enum OutagesAction {
    /// Announce a planned outage; prints its id. A start less than 7 days ahead is
    /// accepted with a warning (the Consumer Data Right asks for a week's notice).
    Schedule {
        /// When it starts, RFC 3339 (`2026-12-05T02:00:00Z`, `2026-12-04T20:00:00-06:00`).
        #[arg(long, value_name = "RFC3339", allow_hyphen_values = true)]
        start: String,
        /// How long it lasts, ISO 8601 (`PT2H`, `PT90M`, `P1DT6H`): days, hours, minutes,
        /// seconds (or weeks alone), whole numbers, at most 31 days.
        #[arg(long, value_name = "ISO8601", allow_hyphen_values = true)]
        duration: String,
        /// What customers are told, one line of up to 500 characters.
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        explanation: String,
        /// Only part of the service goes (CDR's `isPartial`).
        #[arg(long)]
        partial: bool,
    },
    /// List the outages not over yet, soonest first: one a line, tab-separated (id,
    /// start, duration, `partial` or `full`, explanation).
    List,
    /// Cancel a planned outage by its id.
    Cancel {
        /// The id `outages schedule` printed.
        #[arg(allow_hyphen_values = true)]
        id: String,
    },
}

/// `tokens …`
#[derive(Debug, Subcommand)]
pub enum TokensAction {
    /// Show the record behind an opaque token.
    Show {
        /// The opaque token.
        #[arg(allow_hyphen_values = true)]
        opaque_token: String,
    },
    /// Revoke the token behind an opaque token.
    Revoke {
        /// The opaque token.
        #[arg(allow_hyphen_values = true)]
        opaque_token: String,
    },
    /// Delete the records of tokens that expired more than a day ago now, as every
    /// running service does each hour (PostgreSQL: by whole hours of expiry).
    Purge,
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::settings::{CommonSettings, Environment, Settings, SettingsError};

    fn cli(args: &[&str]) -> Cli {
        Cli::try_from_args(std::iter::once("branch-atm").chain(args.iter().copied())).unwrap()
    }

    /// `cli` resolved with `environment`, never the caller's.
    fn resolve_in(cli: &Cli, environment: &Environment) -> Result<(CommonSettings, Settings), SettingsError> {
        crate::settings::resolve(&cli.invocation(), environment)
    }

    /// `cli` resolved with no environment at all, whatever the caller of the tests exported.
    fn resolve(cli: &Cli) -> Result<(CommonSettings, Settings), SettingsError> {
        resolve_in(cli, &Environment::default())
    }

    /// The finding: one key in 32 has a `kid` starting with `-` (base64url), and so do
    /// opaque tokens and may client ids; `keys revoke -Ixyz…` was refused as an unknown
    /// option. Identifiers given as arguments are read as values whatever they start with.
    #[test]
    fn identifiers_starting_with_a_hyphen_are_values_not_options() {
        let identifier = "-Ixyz_0";
        let named = |args: &[&str]| match cli(args).command {
            Some(Command::Keys { action: KeysAction::Revoke { kid } }) => kid,
            Some(Command::Tokens {
                action: TokensAction::Show { opaque_token } | TokensAction::Revoke { opaque_token },
            }) => opaque_token,
            Some(Command::Clients {
                action:
                    ClientsAction::Disable { client_id }
                    | ClientsAction::Enable { client_id }
                    | ClientsAction::Update { client_id, .. },
            }) => client_id,
            other => panic!("{args:?} read as {other:?}"),
        };
        for command in [
            &["keys", "revoke"][..],
            &["tokens", "show"],
            &["tokens", "revoke"],
            &["clients", "disable"],
            &["clients", "enable"],
            &["clients", "update"],
        ] {
            let args: Vec<&str> = command.iter().copied().chain([identifier]).collect();
            assert_eq!(named(&args), identifier, "{args:?}");
        }
        // An option of the command is still an option.
        let update = cli(&["clients", "update", "-app", "--no-allowed-origins"]);
        assert!(matches!(
            update.command,
            Some(Command::Clients { action: ClientsAction::Update { no_allowed_origins: true, .. } })
        ));
    }

    #[test]
    fn defaults_serve_sqlite_on_loopback_with_demo_data() {
        let cli = cli(&[]);
        let (common, settings) = resolve(&cli).unwrap();
        use secrecy::ExposeSecret as _;
        assert_eq!(common.store.database_url.expose_secret(), "sqlite://data/branch-atm.db");
        assert_eq!(settings.http.listen.to_string(), "127.0.0.1:8080");
        assert!(settings.catalog.demo_data());
        assert_eq!(settings.tokens.token_ttl_seconds, 1800);
        assert_eq!(settings.http.public_base_url(), "http://127.0.0.1:8080");
    }

    #[test]
    fn flags_win_over_the_config_file_which_wins_over_defaults() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "token-ttl-seconds = 900\nlisten = \"127.0.0.1:9000\"\nno-demo-data = true").unwrap();
        let path = file.path().to_str().unwrap();
        let cli = cli(&["--config", path, "serve", "--listen", "127.0.0.1:9100"]);
        let (_, settings) = resolve(&cli).unwrap();
        assert_eq!(settings.http.listen.port(), 9100);
        assert_eq!(settings.tokens.token_ttl_seconds, 900);
        assert!(!settings.catalog.demo_data());
    }

    #[test]
    fn an_unknown_config_key_is_an_error_naming_the_file() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "tokn-ttl = 5").unwrap();
        let cli = cli(&["--config", file.path().to_str().unwrap()]);
        let error = resolve(&cli).unwrap_err().to_string();
        assert!(error.contains("tokn-ttl"), "{error}");
    }

    #[test]
    fn a_serve_flag_before_the_word_serve_is_honoured() {
        let (_, settings) = resolve(&cli(&["--listen", "127.0.0.1:9000", "serve"])).unwrap();
        assert_eq!(settings.http.listen.port(), 9000);
        let (_, both) = resolve(&cli(&["--listen", "127.0.0.1:9000", "serve", "--listen", "127.0.0.1:9100"])).unwrap();
        assert_eq!(both.http.listen.port(), 9100, "the one after the word serve wins");
    }

    #[test]
    fn a_serve_flag_given_to_another_command_is_refused() {
        let error = resolve(&cli(&["--listen", "127.0.0.1:9000", "clients", "list"])).unwrap_err().to_string();
        assert_eq!(error, "--listen is an option of serve, not of this command");
    }

    #[test]
    fn a_missing_config_file_is_an_error() {
        let error = resolve(&cli(&["--config", "/nonexistent/branch-atm.toml"])).unwrap_err().to_string();
        assert!(error.contains("/nonexistent/branch-atm.toml"), "{error}");
    }

    #[test]
    fn a_tls_certificate_without_its_key_is_refused() {
        let cli = cli(&["--tls-cert", "cert.pem"]);
        assert!(resolve(&cli).is_err());
    }

    #[test]
    fn a_zero_token_lifetime_is_refused() {
        let cli = cli(&["--token-ttl-seconds", "0"]);
        assert!(resolve(&cli).is_err());
    }

    #[test]
    fn limits_have_their_defaults_and_each_is_set_by_its_flag() {
        let (_, settings) = resolve(&cli(&[])).unwrap();
        assert_eq!(settings.limits.rates().per_session.per_second.get(), 10);
        assert_eq!(settings.limits.rates().per_client.burst.get(), 2000);
        assert!(settings.http.trusted_proxies().is_empty());
        let flags = ["--issue-rate-limit-per-second", "3", "--issue-rate-limit-burst", "4"];
        let (_, settings) = resolve(&cli(&flags)).unwrap();
        assert_eq!((settings.limits.issue_rate_limit_per_second, settings.limits.issue_rate_limit_burst), (3, 4));
        let error = resolve(&cli(&["--session-rate-limit-burst", "0"])).unwrap_err().to_string();
        assert_eq!(error, "session-rate-limit-burst must be at least 1");
    }

    #[test]
    fn the_environment_is_read_from_the_variables_given_and_flags_win_over_it() {
        let environment = Environment::of([
            ("BRANCH_ATM_LISTEN", "127.0.0.1:18800"),
            ("branch_atm_token_ttl_seconds", "900"),
            ("BRANCH_ATM_NO_DEMO_DATA", "true"),
            ("PATH", "/usr/bin"),
        ]);
        let (_, settings) = resolve_in(&cli(&[]), &environment).unwrap();
        assert_eq!(settings.http.listen.port(), 18800);
        assert_eq!(settings.tokens.token_ttl_seconds, 900);
        assert!(!settings.catalog.demo_data());
        let (_, flagged) = resolve_in(&cli(&["--listen", "127.0.0.1:9100"]), &environment).unwrap();
        assert_eq!(flagged.http.listen.port(), 9100);
        let misspelt = Environment::of([("BRANCH_ATM_TOKEN_TTL", "900")]);
        let error = resolve_in(&cli(&[]), &misspelt).unwrap_err().to_string();
        assert!(error.contains("token-ttl") && error.contains("BRANCH_ATM_"), "{error}");
    }

    /// The traces' settings (url, service name, ratio) under `environment`, with `flags`.
    fn traces_under(environment: &[(&str, &str)], flags: &[&str]) -> Result<Option<(String, String, f64)>, String> {
        let (common, _) = resolve_in(&cli(flags), &Environment::of(environment.iter().copied()))
            .map_err(|error| error.to_string())?;
        Ok(common.logs.traces().map(|traces| (traces.url, traces.service_name, traces.ratio)))
    }

    #[test]
    fn opentelemetrys_standard_variables_set_the_traces_and_the_services_own_win() {
        let standard = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
            ("OTEL_SERVICE_NAME", "atm-api-blue"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ];
        let traces = traces_under(&standard, &[]).unwrap();
        assert_eq!(traces, Some(("http://collector:4318/v1/traces".into(), "atm-api-blue".into(), 0.25)));
        // The traces' own URL is taken whole, and wins over the base URL.
        let whole = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/otlp/spans"), standard[0]];
        assert_eq!(traces_under(&whole, &[]).unwrap().unwrap().0, "http://collector:4318/otlp/spans");
        // The service's own variables and flags win over the standard ones.
        let own = [("BRANCH_ATM_TRACE_SAMPLE_RATIO", "0.5"), standard[3]];
        assert_eq!(traces_under(&[standard[0], own[0], own[1]], &[]).unwrap().unwrap().2, 0.5);
        let flagged = traces_under(&standard, &["--otlp-endpoint", "http://other:4318"]).unwrap().unwrap();
        assert_eq!(flagged.0, "http://other:4318/v1/traces");
    }

    /// The base URL and the traces URL are one setting: the traces URL wins over the base
    /// URL given beside it, never over one given by a higher source.
    #[test]
    fn the_collectors_urls_are_one_setting_whose_highest_source_wins() {
        let standard_traces = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://platform:4318/otlp/spans");
        let url = |environment: &[(&str, &str)], flags: &[&str]| traces_under(environment, flags).unwrap().unwrap().0;
        assert_eq!(url(&[standard_traces], &["--otlp-endpoint", "http://mine:4318"]), "http://mine:4318/v1/traces");
        let own = ("BRANCH_ATM_OTLP_ENDPOINT", "http://mine:4318");
        assert_eq!(url(&[standard_traces, own], &[]), "http://mine:4318/v1/traces");
        let both = ["--otlp-endpoint", "http://mine:4318", "--otlp-traces-endpoint", "http://mine:4318/spans"];
        assert_eq!(url(&[standard_traces], &both), "http://mine:4318/spans");
        // From the config file beneath, a traces URL loses to a base URL in the environment.
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "otlp-traces-endpoint = \"http://file:4318/spans\"").unwrap();
        let config = file.path().to_str().unwrap();
        assert_eq!(url(&[own], &["--config", config]), "http://mine:4318/v1/traces");
        assert_eq!(url(&[], &["--config", config]), "http://file:4318/spans");
    }

    #[test]
    fn opentelemetrys_sampler_variable_sets_the_ratio_and_one_the_service_has_not_is_ignored() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        let ratio = |sampler: &str, argument: Option<&str>| {
            let mut environment = vec![endpoint, ("OTEL_TRACES_SAMPLER", sampler)];
            environment.extend(argument.map(|argument| ("OTEL_TRACES_SAMPLER_ARG", argument)));
            traces_under(&environment, &[]).map(|traces| traces.unwrap().2)
        };
        assert_eq!(ratio("always_off", Some("0.5")), Ok(0.0), "the argument is for a ratio sampler only");
        assert_eq!(ratio("parentbased_always_on", None), Ok(1.0));
        assert_eq!(ratio("traceidratio", None), Ok(1.0), "the specification's default argument");
        assert_eq!(ratio("TraceIdRatio", Some("0.1")), Ok(0.1));
        assert_eq!(ratio("", None), Ok(0.01), "empty is not set: the service's default");
        // A sampler the service does not have is ignored with a warning (the
        // specification's rule), so a platform's setting cannot keep the service down.
        assert_eq!(ratio("jaeger_remote", Some("0.5")), Ok(0.01));
        let environment = Environment::of([endpoint, ("OTEL_TRACES_SAMPLER", "Jaeger_Remote")]);
        let warned = environment.warnings().join("\n");
        assert!(warned.contains("OTEL_TRACES_SAMPLER \"Jaeger_Remote\"") && warned.contains("ignored"), "{warned}");
        assert!(Environment::of([("OTEL_TRACES_SAMPLER", "always_on")]).warnings().is_empty());
    }

    /// OpenTelemetry's rule for a value out of range: warn, and treat it as not set. The
    /// warning names the variable the platform set, not the service's own setting.
    #[test]
    fn a_standard_variable_the_service_cannot_use_is_ignored_with_a_warning_naming_it() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        for (argument, sampler, expected) in
            [("abc", None, 0.01), ("2", None, 0.01), ("-0.5", Some("traceidratio"), 1.0), ("NaN", None, 0.01)]
        {
            let mut environment = vec![endpoint, ("OTEL_TRACES_SAMPLER_ARG", argument)];
            environment.extend(sampler.map(|sampler| ("OTEL_TRACES_SAMPLER", sampler)));
            let traces = traces_under(&environment, &[]);
            assert_eq!(traces.map(|traces| traces.unwrap().2), Ok(expected), "{argument} is not set");
            let warned = Environment::of(environment).warnings().join("\n");
            assert!(warned.contains(&format!("OTEL_TRACES_SAMPLER_ARG {argument:?} is ignored")), "{warned}");
            assert_eq!(sampler.is_some(), warned.contains("keeps every new trace"), "{warned}");
        }
        // A ratio however written is one: figment is given it as a number.
        for (argument, expected) in [("1e-2", 0.01), ("5E-1", 0.5), (".5", 0.5), ("1", 1.0), ("0", 0.0)] {
            let environment = [endpoint, ("OTEL_TRACES_SAMPLER_ARG", argument)];
            assert_eq!(traces_under(&environment, &[]).map(|traces| traces.unwrap().2), Ok(expected), "{argument}");
            assert!(Environment::of(environment).warnings().is_empty(), "{argument}");
        }
        // Always on and off take no argument: none is read, none is warned of.
        let unread = [endpoint, ("OTEL_TRACES_SAMPLER", "always_on"), ("OTEL_TRACES_SAMPLER_ARG", "1%")];
        assert!(Environment::of(unread).warnings().is_empty());
        for (variable, url) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not a url"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317"),
        ] {
            assert_eq!(traces_under(&[(variable, url)], &[]), Ok(None), "{variable}={url} sends nothing");
            let warned = Environment::of([(variable, url)]).warnings().join("\n");
            assert!(warned.contains(&format!("{variable} is ignored")), "{warned}");
            assert!(!warned.contains(url), "a URL may carry a credential: {warned}");
        }
        // The base URL still serves when only the traces URL is unusable.
        let beside = [endpoint, ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "not a url")];
        assert_eq!(traces_under(&beside, &[]).unwrap().unwrap().0, "http://collector:4318/v1/traces");
        // The service's own settings are still refused, naming the setting.
        let own = traces_under(&[("BRANCH_ATM_TRACE_SAMPLE_RATIO", "2"), endpoint], &[]).unwrap_err();
        assert!(own.contains("trace-sample-ratio"), "{own}");
    }

    #[test]
    fn opentelemetrys_sdk_disabled_turns_the_standard_variables_off_but_not_a_flag() {
        let disabled = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"), ("OTEL_SDK_DISABLED", "true")];
        assert_eq!(traces_under(&disabled, &[]), Ok(None));
        let flagged = traces_under(&disabled, &["--otlp-endpoint", "http://collector:4318"]).unwrap();
        assert!(flagged.is_some(), "a setting given asks for traces");
    }

    /// clap fills in every default of `serve`'s options after the word `serve` too; only
    /// the ones given there are layered over the environment.
    #[test]
    fn after_the_word_serve_a_default_does_not_hide_the_environment() {
        let environment = Environment::of([("BRANCH_ATM_TOKEN_TTL_SECONDS", "900")]);
        let (_, settings) = resolve_in(&cli(&["serve", "--listen", "127.0.0.1:9100"]), &environment).unwrap();
        assert_eq!((settings.tokens.token_ttl_seconds, settings.http.listen.port()), (900, 9100));
    }

    #[test]
    fn an_option_of_every_command_given_after_the_command_is_honoured() {
        let environment = Environment::of([("BRANCH_ATM_DATABASE_URL", "memory:environment")]);
        let (common, _) =
            resolve_in(&cli(&["clients", "list", "--database-url", "memory:flag"]), &environment).unwrap();
        use secrecy::ExposeSecret as _;
        assert_eq!(common.store.database_url.expose_secret(), "memory:flag");
    }

    #[test]
    fn the_database_and_redis_urls_stay_out_of_debug_output() {
        let flags = ["--database-url", "postgres://bank:hunter2@db/atm", "--redis-url", "redis://:hunter3@redis"];
        let (common, settings) = resolve(&cli(&flags)).unwrap();
        let written = format!("{common:?} {settings:?}");
        assert!(!written.contains("hunter2") && !written.contains("hunter3"), "{written}");
    }

    #[test]
    fn the_config_file_may_be_named_by_the_environment_and_a_flag_wins_over_it() {
        let mut named = tempfile::NamedTempFile::new().unwrap();
        writeln!(named, "token-ttl-seconds = 700").unwrap();
        let mut flagged = tempfile::NamedTempFile::new().unwrap();
        writeln!(flagged, "token-ttl-seconds = 600").unwrap();
        let environment = Environment::of([("BRANCH_ATM_CONFIG", named.path().to_str().unwrap())]);
        let (_, settings) = resolve_in(&cli(&[]), &environment).unwrap();
        assert_eq!(settings.tokens.token_ttl_seconds, 700);
        let (_, settings) = resolve_in(&cli(&["--config", flagged.path().to_str().unwrap()]), &environment).unwrap();
        assert_eq!(settings.tokens.token_ttl_seconds, 600);
    }

    #[test]
    fn trusted_proxies_are_addresses_or_networks() {
        let (_, settings) = resolve(&cli(&["--trusted-proxies", "10.0.0.0/8, 192.0.2.1,2001:db8::/32"])).unwrap();
        let written: Vec<String> = settings.http.trusted_proxies().iter().map(ToString::to_string).collect();
        assert_eq!(written, ["10.0.0.0/8", "192.0.2.1/32", "2001:db8::/32"]);
        let error = resolve(&cli(&["--trusted-proxies", "10.0.0.0/33"])).unwrap_err().to_string();
        assert!(error.contains("\"10.0.0.0/33\""), "{error}");
    }
}
