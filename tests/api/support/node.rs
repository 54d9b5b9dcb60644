//! Runs the Node scripts under `tests/clients` (the unmodified better-auth client, the test
//! push service). Each client's npm dependencies are installed on first use (`npm ci`), once
//! per test process.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tokio::sync::OnceCell;

/// One install per client directory under `tests/clients`.
static BETTER_AUTH: OnceCell<()> = OnceCell::const_new();
static PUSH_SERVICE: OnceCell<()> = OnceCell::const_new();

fn installed(name: &str) -> &'static OnceCell<()> {
    match name {
        "better-auth" => &BETTER_AUTH,
        "push-service" => &PUSH_SERVICE,
        other => panic!("no Node client tests/clients/{other} (add it to support::node)"),
    }
}

/// `tests/clients/<name>`.
pub fn client_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(name)
}

/// Installs the client's locked dependencies if they are missing, or older than its
/// `package-lock.json` (npm keeps its own copy of the lock in `node_modules`). A file lock
/// keeps test processes running at the same time from installing over each other.
pub async fn ensure_installed(name: &'static str) {
    installed(name)
        .get_or_init(|| async move {
            let dir = client_dir(name);
            if is_current(&dir) {
                return;
            }
            tokio::task::spawn_blocking(move || {
                let lock = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("npm-{name}.lock"));
                let lock = std::fs::File::create(&lock).expect("npm install lock file");
                lock.lock().expect("npm install lock");
                if is_current(&dir) {
                    return;
                }
                let status = Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                    .current_dir(dir)
                    .status()
                    .unwrap_or_else(|err| {
                        panic!("npm runs (tests/clients/{name} needs Node.js and npm): {err}")
                    });
                assert!(status.success(), "npm ci in tests/clients/{name} failed");
            })
            .await
            .expect("npm install");
        })
        .await;
}

/// Whether `npm ci` ran in `dir` since its `package-lock.json` last changed.
fn is_current(dir: &Path) -> bool {
    let modified = |path: PathBuf| std::fs::metadata(path).and_then(|meta| meta.modified());
    match (
        modified(dir.join("node_modules/.package-lock.json")),
        modified(dir.join("package-lock.json")),
    ) {
        (Ok(installed), Ok(locked)) => installed >= locked,
        _ => false,
    }
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
