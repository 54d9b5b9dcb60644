//! Runs the Node scripts under `tests/clients` (the unmodified better-auth client). Their
//! npm dependencies are installed on first use (`npm ci`), once per test process.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;
use tokio::sync::OnceCell;

static INSTALLED: OnceCell<()> = OnceCell::const_new();

fn client_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
}

/// Installs the client's locked dependencies if they are missing.
async fn ensure_installed(name: &'static str) {
    INSTALLED
        .get_or_init(|| async move {
            let dir = client_dir(name);
            if dir.join("node_modules").exists() {
                return;
            }
            let status = tokio::task::spawn_blocking(move || {
                Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                    .current_dir(dir)
                    .status()
            })
            .await
            .expect("npm task")
            .expect("npm runs (the better-auth client test needs Node.js and npm)");
            assert!(status.success(), "npm ci failed");
        })
        .await;
}

/// Runs `tests/clients/<client>/<script>` with `args`; its last stdout line is JSON.
pub async fn run_script(client: &'static str, script: &str, args: &[&str]) -> Value {
    ensure_installed(client).await;
    let dir = client_dir(client);
    let mut command = Command::new("node");
    command.arg(dir.join(script)).args(args).current_dir(&dir);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("node task")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "node {script} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| panic!("not JSON: {stdout}"))
}
