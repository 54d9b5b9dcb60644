//! Running the built `bowline-stress` binary from a test: a server it may sign up many users
//! on, and one run of the tool with its exit code, its JSON report and its output.

use std::time::Duration;

use serde_json::Value;

use super::{TestApp, spawn_app_with};

/// A server without the sign-up rate limit (the tool signs up many users from one address).
pub async fn stress_app() -> TestApp {
    spawn_app_with(|settings| settings.auth.rate_limit = false).await
}

/// What one run of the tool left.
pub struct StressRun {
    /// Its exit code (-1: killed by a signal).
    pub code: i32,
    /// The report it wrote with `--json`, if it wrote one.
    pub report: Option<Value>,
    /// What it printed, stdout then stderr.
    pub output: String,
}

/// Runs `bowline-stress` against `base` with `args` (and quiet, writing its JSON report).
/// Fails the test if it has not finished within a minute.
pub async fn run_stress(base: &str, args: &[&str]) -> StressRun {
    let dir = tempfile::tempdir().expect("temporary directory");
    let json = dir.path().join("report.json");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_bowline-stress"));
    command
        .args(["--base", base, "--quiet", "--json"])
        .arg(&json)
        .args(args)
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("bowline-stress finishes within a minute")
        .expect("run bowline-stress");
    let report = std::fs::read_to_string(&json)
        .ok()
        .map(|text| serde_json::from_str(&text).expect("a JSON report"));
    StressRun {
        code: output.status.code().unwrap_or(-1),
        report,
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

impl StressRun {
    /// The exit code and the report; fails the test if it wrote none.
    pub fn reported(self) -> (i32, Value) {
        let Self {
            code,
            report,
            output,
        } = self;
        let report = report.unwrap_or_else(|| panic!("no report, exit {code}: {output}"));
        (code, report)
    }
}
