//! The `branch-atm` command line: its grammar only. What the options mean, their
//! defaults and the other places they can come from (a config file, the environment)
//! are in [`crate::settings`].

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::settings::{CommonOptions, ServeOptions};

/// The `branch-atm` command line.
#[derive(Debug, Parser)]
#[command(name = "branch-atm", version, about = "Branch and ATM open-banking service")]
pub struct Cli {
    /// TOML file of settings, keys named like the flags (`token-ttl-seconds = 900`)
    /// [env: BRANCH_ATM_CONFIG].
    #[arg(long, env = "BRANCH_ATM_CONFIG", global = true, value_name = "FILE", hide_env = true)]
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
    /// Ask the instance this configuration serves (its --listen address, on loopback
    /// when it listens everywhere) whether it is ready; exit 0 if so. For container
    /// health checks: plain HTTP, touches no store.
    HealthCheck,
    /// Act on the store as a whole.
    Store {
        /// What to do with the store.
        #[command(subcommand)]
        action: StoreAction,
    },
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
    },
    /// Replace a client's redirect URIs or added origins (the lists given; the others stay).
    Update {
        /// The client id.
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
    /// Only branches whose estimate differs from the stored one are written.
    Import {
        /// The CSV file.
        file: PathBuf,
        /// Say how many branches would be added, changed and left as they are; write nothing.
        #[arg(long)]
        dry_run: bool,
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
    /// List the keys with their state (next, current, retired) and times, tab-separated.
    List,
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
    /// Delete the records of tokens that expired more than a day ago now, as every
    /// running service does each hour (PostgreSQL: by whole hours of expiry).
    Purge,
}
