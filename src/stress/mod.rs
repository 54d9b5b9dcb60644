//! `bowline-stress`, the concurrent-edit stress tool and benchmark driver (issue 8): it
//! drives a running server over HTTP the way real clients do (sign-up, shared calendars,
//! invites, events, `/api/stream`), measures throughput and latencies, and verifies exactly
//! that nothing acknowledged was lost. `src/bin/bowline-stress.rs` is its command line; the
//! smoke test in `tests/api/stress.rs` runs [`run`] against an in-process server.
//!
//! Modules: [`options`] (the CLI), [`client`] (HTTP and auth), [`setup`] (users, calendars,
//! memberships), [`writers`] (the op mix), [`model`] (what was acknowledged), [`sse`]
//! (streams and frame arrival times), [`verify`] (the checks), [`stats`] (histograms and
//! counters), [`report`] (table and JSON), [`progress`] (the live line),
//! [`server_metrics`] (the server's memory), [`scenarios`] (one per kind of figure).

pub mod client;
pub mod model;
pub mod options;
pub mod progress;
pub mod report;
pub mod scenarios;
pub mod server_metrics;
pub mod setup;
pub mod sse;
pub mod stats;
pub mod verify;
pub mod writers;

pub use options::{Options, Scenario};
pub use report::Report;

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
