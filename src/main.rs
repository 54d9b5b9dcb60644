//! The `bowline` binary: its command line (serve, check the configuration, apply the
//! migrations), then the server until SIGINT or SIGTERM. Exit codes: 0 after a requested
//! shutdown or a finished command, 1 when the server or the command failed, 2 when the
//! configuration is invalid.

use std::process::ExitCode;

use bowline::domain::version::WIRE_VERSION;
use bowline::store::Database;
use bowline::{Application, Settings, telemetry};
use clap::{Parser, Subcommand};

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "bowline",
    version,
    about = "Self-hostable shared-calendar server",
    after_help = concat!(
        "Configuration comes from config/default.toml (compiled in), BOWLINE_PROFILE's file ",
        "and environment variables; see docs/configuration.md."
    )
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// What to do (serving when none is given).
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Load and check the configuration as start-up does, print what it sets up (never a
    /// secret), and exit.
    CheckConfig,
    /// Apply the database migrations and exit.
    Migrate,
}

/// mimalloc gives freed memory back to the system (glibc's malloc kept each 19 MiB argon2
/// buffer in its arenas) and packs small allocations of idle streams tightly.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // reqwest, lettre and sqlx use rustls; ring is the only provider compiled in.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let settings = match Settings::load() {
        Ok(settings) => settings,
        Err(err) => {
            let line = serde_json::json!({
                "timestamp": bowline::domain::time::format_timestamp(chrono::Utc::now()),
                "level": "ERROR",
                "message": err.to_string(),
            });
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    if let Some(Command::CheckConfig) = cli.command {
        print_summary(&settings);
        return ExitCode::SUCCESS;
    }
    telemetry::init(settings.log.level);

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            tracing::error!(error = %err, "runtime.start_failed");
            return ExitCode::FAILURE;
        }
    };
    if let Some(Command::Migrate) = cli.command {
        return runtime.block_on(migrate(settings));
    }
    runtime.block_on(async move {
        let app = match Application::build(settings).await {
            Ok(app) => app,
            Err(err) => {
                tracing::error!(error = %err, "server.start_failed");
                return ExitCode::FAILURE;
            }
        };
        let shutdown = app.shutdown();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("server.signal_received");
            shutdown.trigger();
        });
        match app.run_until_stopped().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                tracing::error!(error = %err, "server.failed");
                ExitCode::FAILURE
            }
        }
    })
}

/// What `check-config` prints: where the server listens and what it uses, no secret.
fn print_summary(settings: &Settings) {
    let database = match &settings.storage.database_url {
        Some(url) if url.expose().starts_with("postgres") => "PostgreSQL".to_owned(),
        Some(_) => "SQLite (DATABASE_URL)".to_owned(),
        None => format!(
            "SQLite in {}",
            settings
                .storage
                .data_dir
                .join(bowline::store::SQLITE_FILE)
                .display()
        ),
    };
    let mut sign_in = vec!["email"];
    if settings.google.client_id.is_some() {
        sign_in.push("google");
    }
    if settings.apple.client_id.is_some() {
        sign_in.push("apple");
    }
    let summary = serde_json::json!({
        "valid": true,
        "version": env!("CARGO_PKG_VERSION"),
        "wireVersion": WIRE_VERSION,
        "listen": format!("{}:{}", settings.server.host, settings.server.port),
        "metrics": (settings.metrics.port != 0)
            .then(|| format!("{}:{}", settings.metrics.host, settings.metrics.port)),
        "baseUrl": settings.server.base_url,
        "database": database,
        "mail": if settings.mail.smtp_url.is_some() { "SMTP" } else { ".eml files" },
        "signIn": sign_in,
    });
    println!("{summary}");
}

/// `migrate`: applies the migrations to the configured database.
async fn migrate(settings: Settings) -> ExitCode {
    let migrated = async {
        let db = Database::connect(&settings.storage).await?;
        db.migrate().await?;
        db.close().await
    };
    match migrated.await {
        Ok(()) => {
            tracing::info!("database.migrated");
            ExitCode::SUCCESS
        }
        Err(err) => {
            tracing::error!(error = %err, "database.migrate_failed");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn wait_for_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(err) => {
                    tracing::warn!(error = %err, "signal.sigterm_unavailable");
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
