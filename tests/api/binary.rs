//! The `bowline` binary as an operator runs it: configuration from the environment, JSON
//! log lines, a clear one-line refusal of bad configuration, graceful stop on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;

use crate::helpers::{TestDb, WAIT, init};

/// A started `bowline` process whose stdout lines arrive on a channel.
struct Process {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Process {
    fn start(db: &TestDb, env: &[(&str, &str)]) -> Self {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_bowline")), db, env)
    }

    /// The binary with its open-file limit lowered to `files` (`ulimit -n`).
    fn start_with_file_limit(db: &TestDb, env: &[(&str, &str)], files: u32) -> Self {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\""))
            .arg(env!("CARGO_BIN_EXE_bowline"));
        Self::spawn(command, db, env)
    }

    fn spawn(mut command: Command, db: &TestDb, env: &[(&str, &str)]) -> Self {
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PORT", "0")
            .env("METRICS_PORT", "0")
            .env("DATA_DIR", db.data_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(url) = db.database_url() {
            command.env("DATABASE_URL", url);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("start bowline");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines }
    }

    /// The next JSON log line satisfying `matches`, within the wait.
    fn expect_line(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no log line {what} within the wait"));
            let json: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("log line is not JSON: {line}"));
            if matches(&json) {
                return json;
            }
        }
    }

    /// Waits for stdout to close (the process exiting), then reaps it.
    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("process did not exit in time"),
            }
        }
        self.child.wait().expect("reap")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_to_exit(env: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let output = Command::new(env!("CARGO_BIN_EXE_bowline"))
        .env_clear()
        .env("DATA_DIR", dir.path())
        .env("PORT", "0")
        .env("METRICS_PORT", "0")
        .envs(env.iter().copied())
        .output()
        .expect("run bowline");
    let text = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    (output.status.code().unwrap_or(-1), text)
}

#[tokio::test]
async fn the_binary_serves_logs_json_and_stops_gracefully_on_sigterm() {
    init();
    let db = TestDb::create().await;
    let mut process = Process::start(&db, &[("LOG_LEVEL", "info")]);
    let started = process.expect_line("server.started", |l| l["message"] == "server.started");
    let http = started["http"].as_str().expect("bound address").to_owned();
    let expected_backend = if db.is_postgres() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(started["database"], expected_backend);

    let client = reqwest::Client::new();
    let response = client
        .get(format!(
            "http://{http}/api/v1/server/ok?token=secret-in-query"
        ))
        .header("x-request-id", "binary-test-1")
        .header("authorization", "Bearer do-not-log-me")
        .send()
        .await
        .expect("request");
    assert!(response.status().is_success());
    let access = process.expect_line("access log", |l| {
        l["message"] == "http.request.completed" && l["requestId"] == "binary-test-1"
    });
    assert_eq!(access["level"], "INFO");
    assert_eq!(access["route"], "/api/v1/server/ok");
    assert_eq!(access["method"], "GET");
    assert_eq!(access["status"], 200);
    assert!(access["durationMs"].is_number());
    let missing = client
        .get(format!("http://{http}/unknown/thing"))
        .header("x-request-id", "binary-test-2")
        .send()
        .await
        .expect("request");
    assert_eq!(missing.status(), 404);
    let warn = process.expect_line("404 access log", |l| l["requestId"] == "binary-test-2");
    assert_eq!(warn["level"], "WARN");
    assert_eq!(warn["route"], "<unmatched>");

    let pid = process.child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("send SIGTERM");
    assert!(status.success());
    process.expect_line("server.stopped", |l| l["message"] == "server.stopped");
    let exit = process.wait_exit();
    assert_eq!(exit.code(), Some(0));
    drop(process);

    // Nothing secret reached the log lines of those requests.
    let raw = access.to_string() + &warn.to_string();
    assert!(!raw.contains("do-not-log-me"));
    assert!(!raw.contains("secret-in-query"));
}

#[tokio::test]
async fn silent_connections_past_the_open_file_limit_leave_the_server_reachable() {
    init();
    let db = TestDb::create().await;
    let process = Process::start_with_file_limit(&db, &[("LOG_LEVEL", "info")], 256);
    let started = process.expect_line("server.started", |l| l["message"] == "server.started");
    let http = started["http"].as_str().expect("bound address").to_owned();
    // More silent connections than the server has descriptors.
    let mut silent = Vec::new();
    for _ in 0..300 {
        silent.push(
            tokio::net::TcpStream::connect(&http)
                .await
                .expect("connect"),
        );
    }
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let response = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            reqwest::Client::new()
                .get(format!("http://{http}/api/v1/server/ok"))
                .send(),
        )
        .await
        .expect("/server/ok answers")
        .expect("request");
        assert!(response.status().is_success());
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
    }
    drop(silent);
}

#[test]
fn invalid_configuration_stops_start_up_with_one_line_naming_the_key() {
    for (env, name) in [
        (("PORT", "http"), "PORT"),
        (("LOG_LEVEL", "verbose"), "LOG_LEVEL"),
        (("METRICS_PORT", "-1"), "METRICS_PORT"),
        (("DATABASE_URL", "mysql://x"), "DATABASE_URL"),
        (("CALDAV_ENC_KEY", "short"), "CALDAV_ENC_KEY"),
    ] {
        let (code, output) = run_to_exit(&[env]);
        assert_eq!(code, 2, "{name}: {output}");
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(lines.len(), 1, "{name}: {output}");
        assert!(lines[0].contains(name), "{name}: {output}");
        assert!(!output.contains("panicked"), "{output}");
        let json: Value = serde_json::from_str(lines[0]).expect("the line is JSON");
        assert_eq!(json["level"], "ERROR");
    }
}

#[test]
fn a_port_in_use_fails_start_up_clearly() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let (code, output) = run_to_exit(&[("PORT", &port)]);
    assert_eq!(code, 1, "{output}");
    assert!(output.contains("server.start_failed"), "{output}");
    assert!(output.contains("server.port"), "{output}");
    assert!(!output.contains("panicked"), "{output}");
}

/// The embedded database belongs to one process: a second `bowline` on the same data
/// directory exits with a message saying so, and the first keeps serving. (Always on SQLite:
/// it is the embedded database's rule.)
#[tokio::test]
async fn a_second_process_on_the_same_sqlite_file_refuses_to_start() {
    init();
    let db = TestDb::Sqlite(tempfile::tempdir().expect("temporary directory"));
    let first = Process::start(&db, &[("LOG_LEVEL", "info")]);
    let started = first.expect_line("server.started", |l| l["message"] == "server.started");
    let http = started["http"].as_str().expect("bound address").to_owned();

    let data_dir = db.data_dir().to_str().expect("utf-8 path").to_owned();
    let (code, output) = run_to_exit(&[("DATA_DIR", &data_dir)]);
    assert_eq!(code, 1, "{output}");
    assert!(
        output.contains("in use by another Bowline process"),
        "{output}"
    );
    assert!(!output.contains("panicked"), "{output}");

    let ok = reqwest::get(format!("http://{http}/api/v1/server/ok"))
        .await
        .expect("the first still answers");
    assert!(ok.status().is_success());
}

/// Runs the binary with `args` in an empty directory and a clean environment; fails the
/// test if it has not exited within `WAIT` (a command that serves never would).
async fn run_command(args: &[&str], env: &[(&str, &str)]) -> (i32, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_bowline"))
        .args(args)
        .current_dir(dir.path())
        .env_clear()
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT, output)
        .await
        .unwrap_or_else(|_| panic!("bowline {args:?} exits by itself"))
        .expect("run bowline");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), text, dir)
}

#[tokio::test]
async fn help_and_version_print_and_exit_without_starting_anything() {
    for args in [["--help"], ["-h"], ["help"]] {
        let (code, text, dir) = run_command(&args, &[]).await;
        assert_eq!(code, 0, "{args:?}: {text}");
        assert!(text.contains("Usage: bowline"), "{args:?}: {text}");
        assert!(
            text.contains("check-config") && text.contains("migrate"),
            "{text}"
        );
        assert!(!dir.path().join("data").exists(), "{args:?} created ./data");
    }
    for args in [["--version"], ["-V"]] {
        let (code, text, dir) = run_command(&args, &[]).await;
        assert_eq!(code, 0, "{args:?}: {text}");
        assert_eq!(text.trim(), concat!("bowline ", env!("CARGO_PKG_VERSION")));
        assert!(!dir.path().join("data").exists(), "{args:?} created ./data");
    }
    let (code, text, _) = run_command(&["--no-such-option"], &[]).await;
    assert_eq!(code, 2, "{text}");
}

#[tokio::test]
async fn check_config_reports_without_secrets_or_names_the_bad_key() {
    let secret = "a-session-signing-secret-of-forty-characters";
    let (code, text, dir) = run_command(
        &["check-config"],
        &[("AUTH_SECRET", secret), ("PORT", "7123")],
    )
    .await;
    assert_eq!(code, 0, "{text}");
    let summary: Value = serde_json::from_str(text.trim()).expect("one JSON line");
    assert_eq!(summary["valid"], true, "{summary}");
    assert_eq!(summary["listen"], "127.0.0.1:7123", "{summary}");
    assert!(!text.contains(secret), "the secret was printed: {text}");
    assert!(
        !dir.path().join("data").exists(),
        "check-config created ./data"
    );

    let (code, text, _) = run_command(&["check-config"], &[("PORT", "seventy")]).await;
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("PORT") && text.contains("server.port"),
        "{text}"
    );
}

#[tokio::test]
async fn migrate_applies_the_schema_and_exits() {
    let data = tempfile::tempdir().expect("temporary directory");
    let data_dir = data.path().to_str().expect("utf-8 path");
    let (code, text, _) = run_command(&["migrate"], &[("DATA_DIR", data_dir)]).await;
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("database.migrated"), "{text}");
    assert!(data.path().join("bowline.db").is_file(), "no database file");
    // Applying them again finds nothing to do.
    let (code, text, _) = run_command(&["migrate"], &[("DATA_DIR", data_dir)]).await;
    assert_eq!(code, 0, "{text}");
}
