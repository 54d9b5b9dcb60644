//! Headless Chromium driven over WebDriver (Debian's `chromium` and `chromium-driver`;
//! `.ci/run` installs them). Waiting uses WebDriver's implicit wait: finding
//! `#status[data-state=success]` blocks until the page reaches that state or times out.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::helpers::WAIT;

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// One browser session.
pub struct Browser {
    driver: Child,
    endpoint: String,
    http: reqwest::Client,
    profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and opens a headless session.
    pub async fn start() -> Self {
        assert!(
            std::path::Path::new(CHROMEDRIVER).exists() && std::path::Path::new(CHROMIUM).exists(),
            "browser tests need Debian's chromium and chromium-driver (`.ci/run` installs them: \
             apt-get install -y chromium chromium-driver)"
        );
        let (driver, port) = start_driver().await;
        let profile = tempfile::tempdir().expect("profile directory");
        let mut browser = Self {
            driver,
            endpoint: format!("http://127.0.0.1:{port}/session"),
            http: reqwest::Client::new(),
            profile,
        };
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-quic", "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--disable-crash-reporter", "--disable-breakpad",
                        format!("--user-data-dir={}", browser.profile.path().display()),
                    ]
                }
            }}
        });
        let created = browser.call(reqwest::Method::POST, "", capabilities).await;
        let session = created["sessionId"]
            .as_str()
            .expect("session id")
            .to_owned();
        browser.endpoint = format!("{}/{session}", browser.endpoint);
        let wait_ms = u64::try_from(WAIT.as_millis()).expect("wait fits");
        browser
            .call(
                reqwest::Method::POST,
                "/timeouts",
                json!({ "implicit": wait_ms, "pageLoad": wait_ms }),
            )
            .await;
        browser
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let request = self
            .http
            .request(method, format!("{}{path}", self.endpoint));
        let request = if body.is_null() {
            request
        } else {
            request.json(&body)
        };
        let response = request.send().await.expect("webdriver request");
        let status = response.status();
        let value: Value = response.json().await.expect("webdriver JSON");
        assert!(status.is_success(), "webdriver {path}: {status} {value}");
        value["value"].clone()
    }

    /// Opens `url` and waits for it to load.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({ "url": url }))
            .await;
    }

    /// The element matching `css`, waiting for it to appear.
    pub async fn find(&self, css: &str) -> String {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                json!({ "using": "css selector", "value": css }),
            )
            .await;
        found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .expect("element reference")
            .to_owned()
    }

    /// Types `text` into the element matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    /// Clicks the element matching `css`.
    pub async fn click(&self, css: &str) {
        let element = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            json!({}),
        )
        .await;
    }

    /// The visible text of the element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        self.call(
            reqwest::Method::GET,
            &format!("/element/{element}/text"),
            Value::Null,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }
}

impl Drop for Browser {
    /// Ends chromedriver and every browser process it started (its process group).
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Starts chromedriver on a free port and reads the port it reports. A chromedriver that
/// exits before reporting one (seen once in a full CI run, under load) is started again,
/// up to three times; the last one's error output is the failure.
async fn start_driver() -> (Child, u16) {
    let mut last_error = String::new();
    for _ in 0..3 {
        // Its own process group: the browsers it starts are ended with it.
        let mut driver = Command::new(CHROMEDRIVER)
            .arg("--port=0")
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chromedriver");
        let stdout = driver.stdout.take().expect("chromedriver stdout");
        let stderr = driver.stderr.take().expect("chromedriver stderr");
        // Kept draining so chromedriver never blocks on a full pipe; its first lines are kept.
        let errors = std::thread::spawn(move || {
            let mut kept = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if kept.len() < 20 {
                    kept.push(line);
                }
            }
            kept.join("\n")
        });
        let port = tokio::task::spawn_blocking(move || {
            let mut lines = BufReader::new(stdout).lines();
            let port = lines.find_map(|line| {
                let line = line.ok()?;
                let rest = line.split("started successfully on port ").nth(1)?;
                rest.trim_end_matches('.').trim().parse::<u16>().ok()
            });
            std::thread::spawn(move || for _ in lines {});
            port
        })
        .await
        .expect("read chromedriver output");
        if let Some(port) = port {
            return (driver, port);
        }
        // Its output ended without a port: it has exited, or is ended here.
        let _ = driver.kill();
        let status = driver.wait().expect("chromedriver's exit");
        last_error = format!(
            "{status}: {}",
            tokio::task::spawn_blocking(move || errors.join())
                .await
                .expect("join")
                .unwrap_or_default()
        );
    }
    panic!("chromedriver reports no port: {last_error}");
}
