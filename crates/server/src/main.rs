//! `branch-atm`: serve the API (the default) or run an operator's command.

use std::process::ExitCode;

use adapters::formats::shown::escaped;
use clap::CommandFactory as _;
use domain::services::demo::DemoOutcome;
use secrecy::ExposeSecret as _;
use server::cli::{Cli, Command, StoreAction, WaitTimesAction};
use server::commands::{self, CommandError};
use server::errors::one_line;
use server::settings::{Environment, Settings, resolve};
use server::startup::{Application, open_operators};
use server::telemetry::{self, Sink, TraceExport};

#[actix_web::main]
async fn main() -> ExitCode {
    // Before any thread of the service starts (actix's runtime here has none of its own).
    server::memory::use_one_arena();
    match run(Cli::from_process()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line, whatever a feed or a store put in it.
            eprintln!("branch-atm: {}", escaped(&error.to_string()));
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), CommandError> {
    if let Some(Command::Settings { .. }) = cli.command {
        print!("{}", server::settings::table::markdown(&Cli::command()));
        return Ok(());
    }
    let environment = Environment::of_process();
    let (common, settings) = resolve(&cli.invocation(), &environment).map_err(|e| CommandError(e.to_string()))?;
    let command = match cli.command {
        None | Some(Command::Serve(_)) => {
            // Held until the service returns: dropping it writes the log's last lines.
            let _flush_logs = telemetry::init(
                common.logs.log_filter.as_deref().unwrap_or("info"),
                common.logs.log_format,
                Sink::Stdout,
                common.logs.traces().as_ref(),
            );
            warn_of(&environment);
            let served = serve(settings).await;
            // The workers have stopped: their last access lines go to the log writer.
            server::access_log::flush();
            return served;
        }
        Some(command) => command,
    };
    // A command logs only when asked to; it exports traces when given a collector (an
    // import's spans), with its log off unless a filter is given. Its trace is one
    // operation an operator ran and asked to see: always kept, whatever the ratio that
    // thins out the service's requests.
    let traces = common.logs.traces().map(|traces| TraceExport { ratio: 1.0, ..traces });
    let _telemetry = (common.logs.log_filter.is_some() || traces.is_some()).then(|| {
        telemetry::init(
            common.logs.log_filter.as_deref().unwrap_or("off"),
            common.logs.log_format,
            Sink::Stderr,
            traces.as_ref(),
        )
    });
    // Not from the health check a container runs every few seconds.
    if !matches!(command, Command::HealthCheck) {
        warn_of(&environment);
    }
    if let Command::HealthCheck = command {
        let address = server::probe::probe_address(settings.http.listen);
        let tls_cert = settings.http.tls_cert.as_deref();
        server::probe::health_check(address, tls_cert).map_err(CommandError)?;
        println!("ready");
        return Ok(());
    }
    if let Command::Store { action: StoreAction::Copy { to } } = &command {
        // Keys move as stored, sealed or not; sealed ones must open with the key file.
        let key_file = common.store.key_encryption_key_file.as_deref();
        return commands::store::copy_store(common.store.database_url.expose_secret(), to, key_file).await;
    }
    if let Command::Waittimes { action: WaitTimesAction::Evaluate { events, per_ticket, references } } = &command {
        return commands::wait_times::evaluate(events, per_ticket.as_deref(), *references);
    }
    // An outage command's arguments are read before the store is opened.
    let outage_command = match &command {
        Command::Outages { action } => Some(commands::outages::parse(action.clone())?),
        _ => None,
    };
    let closure_command = match &command {
        Command::Atms { action } => commands::atms::closure_command(action)?,
        _ => None,
    };
    let store = &common.store;
    let operators = open_operators(store.database_url.expose_secret(), store.key_encryption_key_file.as_deref())
        .await
        .map_err(|e| CommandError::of(&e))?;
    let outcome = match command {
        Command::Migrate => {
            println!("migrations applied");
            Ok(())
        }
        Command::Clients { action } => commands::clients::clients(&operators.clients, action).await,
        Command::Access { action } => commands::access::access(&operators.access, action).await,
        Command::Systems { action } => commands::systems::systems(&operators.systems, action).await,
        Command::Waittimes { action: WaitTimesAction::Import { file, dry_run } } => {
            commands::wait_times::import(&operators, file, dry_run).await
        }
        Command::Atms { action } => match closure_command {
            Some(closure) => commands::atms::closures(&operators.closures, closure).await,
            None => commands::atms::atms(&operators.imports, action).await,
        },
        Command::Keys { action } => {
            commands::keys::keys(&operators.keys, action, settings.key_activation_delay()).await
        }
        Command::Tokens { action } => commands::tokens::tokens(&operators.tokens, action).await,
        Command::Outages { .. } => match outage_command {
            Some(outage) => commands::outages::run(&operators.outages, outage).await,
            None => Ok(()),
        },
        // Run before a store is opened, above.
        Command::Serve(_)
        | Command::Store { .. }
        | Command::HealthCheck
        | Command::Settings { .. }
        | Command::Waittimes { action: WaitTimesAction::Evaluate { .. } } => Ok(()),
    };
    // Before the telemetry's drop sends the last spans: see `Operators::close`.
    operators.close().await;
    outcome
}

async fn serve(settings: Settings) -> Result<(), CommandError> {
    let scheme = if settings.http.tls().is_some() { "https" } else { "http" };
    let ip = settings.http.listen.ip();
    let application = Application::build(settings).await.map_err(|e| CommandError(one_line(&e)))?;
    // The address actually bound (the port differs from the setting when it was 0).
    let local = format!("{scheme}://{ip}:{}", application.port());
    println!("branch-atm listening on {local}");
    match application.demo() {
        Some(demo) if demo.demo_is_served() => println!("{}", server::demo::curl_walkthrough(&local)),
        Some(DemoOutcome::Kept(contents)) => println!(
            "No demo data: it goes only into an empty store, and this one holds {contents}. \
             The docs are at {local}/api/docs/."
        ),
        _ => {}
    }
    application.run_until_stopped().await.map_err(|e| CommandError(format!("server failed: {e}")))
}

/// Says what of OpenTelemetry's standard variables `environment` ignores: in the log when
/// it takes warnings, else on the operator's terminal as a command's other warnings.
fn warn_of(environment: &Environment) {
    for warning in environment.warnings() {
        if tracing::enabled!(tracing::Level::WARN) {
            tracing::warn!("{warning}");
        } else {
            eprintln!("warning: {}", escaped(warning));
        }
    }
}
