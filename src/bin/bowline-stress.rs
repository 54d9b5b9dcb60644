//! The `bowline-stress` binary: parses the command line, runs the scenario against a running
//! server, prints the summary table (and writes `--json`). Exit code 0 when every check
//! passed, 1 when one failed, 2 when the run could not be carried out.

use std::process::ExitCode;

use bowline::stress::{self, Options};
use clap::Parser;

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
    let report = match runtime.block_on(stress::run(&options)) {
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
