//! `bowline-stress`, the concurrent-edit stress tool and benchmark driver: it drives a
//! running server over HTTP the way real clients do (sign-up, shared calendars, invites,
//! events, `/api/stream`), measures throughput and latencies, and verifies exactly that
//! nothing acknowledged was lost. It prints the summary table (and writes `--json`); exit
//! code 0 when every check passed, 1 when one failed, 2 when the run could not be carried
//! out. `tests/api/stress.rs` runs the built binary against in-process servers.
//!
//! Modules: [`options`] (the CLI), [`client`] (HTTP and auth), [`setup`] (users, calendars,
//! memberships), [`writers`] (the op mix), [`model`] (what was acknowledged), [`sse`]
//! (streams and frame arrival times), [`verify`] (the checks), [`stats`] (histograms and
//! counters), [`report`] (table and JSON), [`progress`] (the live line),
//! [`server_metrics`] (the server's memory), [`scenarios`] (one per kind of figure),
//! [`wire`] (Bowline's wire or the original's: what identifies a change, which checks the
//! wire allows).

use std::process::ExitCode;

use clap::Parser;

mod client;
mod model;
mod options;
mod progress;
mod report;
mod scenarios;
mod server_metrics;
mod setup;
mod sse;
mod stats;
mod verify;
mod wire;
mod writers;

use options::{Options, Scenario};
use report::Report;

/// mimalloc, as in the server: the tool shares the machine's cores with the server it
/// measures, and with the C library's `malloc` a fifth of its CPU went to allocating the
/// frames and answers it parses.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Why a run could not be carried out (a failed check is not an error: it is in the
/// [`Report`]).
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// The options make no sense.
    #[error("{0}")]
    Invalid(String),
    /// The HTTP client could not be built or a request could not be sent.
    #[error("{0}")]
    Client(String),
    /// The server refused a step the run needs.
    #[error("{what}: {answer}")]
    Server {
        /// The step.
        what: String,
        /// The answer.
        answer: String,
    },
}

/// Runs the scenario `options` asks for and returns its figures and checks.
pub async fn run(options: &Options) -> Result<Report, StressError> {
    options.validate().map_err(StressError::Invalid)?;
    match options.scenario {
        Scenario::Mixed => scenarios::mixed::run(options).await,
        Scenario::Create | Scenario::List => scenarios::throughput::run(options).await,
        Scenario::Fanout => scenarios::fanout::run(options).await,
    }
}

fn main() -> ExitCode {
    // reqwest uses rustls; ring is the only provider compiled in.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let options = Options::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("bowline-stress: cannot start the runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let report = match runtime.block_on(run(&options)) {
        Ok(report) => report,
        Err(err) => {
            eprintln!("bowline-stress: {err}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.table());
    if let Some(path) = &options.json
        && let Err(err) = std::fs::write(path, report.to_json())
    {
        eprintln!("bowline-stress: writing {}: {err}", path.display());
        return ExitCode::from(2);
    }
    if report.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
