//! The `bowline` binary: loads configuration, starts the server and stops it on SIGINT or
//! SIGTERM. Exit codes: 0 after a requested shutdown, 1 when the server failed, 2 when the
//! configuration is invalid.

use std::process::ExitCode;

use bowline::{Application, Settings, telemetry};

/// mimalloc gives freed memory back to the system (glibc's malloc kept each 19 MiB argon2
/// buffer in its arenas) and packs small allocations of idle streams tightly.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
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
