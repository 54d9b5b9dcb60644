//! The test harness: [`spawn_app`] starts a real Bowline server in-process on port 0 with a
//! fresh database (a SQLite file in a temporary directory, or, when `TEST_DATABASE_URL` is
//! set, a PostgreSQL database created for this test and dropped after it), and [`TestApp`]
//! talks to it over HTTP (the calls most tests share, on calendars, invites and events, are in
//! `resources`). Nothing is shared between tests.

pub mod caldav;
pub mod federation;
pub mod google;
pub mod oauth;
mod resources;
mod stored;
mod stress_tool;

pub use stored::{pg_value, until_pg_count};
pub use stress_tool::{StressRun, run_stress, stress_app};

use std::net::SocketAddr;
use std::sync::Once;
use std::time::Duration;

use bowline::config::{Secret, Settings, TEST_TOML};
use bowline::context::Ctx;
use bowline::startup::ApplicationBuilder;
use bowline::{Application, StartupError};
use sea_orm::Database;
use tokio::task::JoinHandle;

pub use resources::event_body;

pub use crate::support::test_db::TestDb;

/// How long tests wait for anything asynchronous before failing.
pub const WAIT: Duration = Duration::from_secs(10);

static INIT: Once = Once::new();

/// Process-wide set-up: the rustls provider (reqwest needs it) and, with `TEST_LOG=1`, logs.
pub fn init() {
    INIT.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        if std::env::var_os("TEST_LOG").is_some() {
            bowline::telemetry::init(bowline::config::LogLevel::Debug);
        }
    });
}

/// Settings for a test server: `default.toml` + `test.toml`, no environment.
pub fn test_settings() -> Settings {
    Settings::load_with(&[("test.toml", TEST_TOML)], &|_| None).expect("test settings load")
}

/// The test settings on `db`, a test's own database.
pub fn test_settings_on(db: &TestDb) -> Settings {
    let mut settings = test_settings();
    db.configure(&mut settings);
    settings
}

/// A running server and a client for it.
pub struct TestApp {
    /// `http://<bound address>`.
    pub base: String,
    /// The metrics listener's address.
    pub metrics_addr: Option<SocketAddr>,
    /// A plain HTTP client.
    pub client: reqwest::Client,
    ctx: Ctx,
    run: Option<JoinHandle<Result<(), StartupError>>>,
    _db: Option<TestDb>,
}

impl TestApp {
    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// GET `path`.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// The server's context (actors, database, metrics).
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    /// The metrics listener's text.
    pub async fn metrics_text(&self) -> String {
        let addr = self.metrics_addr.expect("metrics listener enabled");
        self.client
            .get(format!("http://{addr}/metrics"))
            .send()
            .await
            .expect("scrape")
            .text()
            .await
            .expect("metrics text")
    }

    /// POST `path` with a JSON body and a trusted `Origin` (what a browser or Node sends).
    pub async fn post_json(&self, path: &str, body: &serde_json::Value) -> reqwest::Response {
        self.client
            .post(self.url(path))
            .header("origin", self.base.as_str())
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// Signs up a password user and returns it with its session token.
    pub async fn sign_up(&self, email: &str) -> TestUser {
        let password = "correct horse battery staple";
        let response = self
            .post_json(
                "/api/auth/sign-up/email",
                &serde_json::json!({ "email": email, "password": password, "name": "Test User" }),
            )
            .await;
        assert_eq!(response.status(), 200, "sign-up of {email}");
        let signed = response.headers()["set-auth-token"]
            .to_str()
            .expect("set-auth-token")
            .to_owned();
        let body: serde_json::Value = response.json().await.expect("JSON");
        TestUser {
            id: body["user"]["id"].as_str().expect("user id").to_owned(),
            email: email.to_owned(),
            password: password.to_owned(),
            token: body["token"].as_str().expect("token").to_owned(),
            signed,
        }
    }

    /// Signs in with email and password (trusted Origin).
    pub async fn sign_in(&self, email: &str, password: &str) -> reqwest::Response {
        self.post_json(
            "/api/auth/sign-in/email",
            &serde_json::json!({ "email": email, "password": password }),
        )
        .await
    }

    /// `GET /api/auth/get-session` with `bearer`: the JSON body (`null` without a session).
    pub async fn session(&self, bearer: &str) -> serde_json::Value {
        self.client
            .get(self.url("/api/auth/get-session"))
            .bearer_auth(bearer)
            .send()
            .await
            .expect("request")
            .json()
            .await
            .expect("JSON")
    }

    /// A request with `user`'s bearer token.
    pub fn as_user(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &TestUser,
    ) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(&user.token)
    }

    /// Sends `method path` as `user`, with `body` as JSON when given; returns the status and
    /// the body as JSON (`Null` when empty or not JSON).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &TestUser,
        body: Option<&serde_json::Value>,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        let mut request = self.as_user(method, path, user);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let text = response.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
        )
    }

    /// Opens `user`'s realtime stream.
    pub async fn stream(&self, user: &TestUser) -> crate::support::sse::SseClient {
        crate::support::sse::SseClient::open(self.as_user(
            reqwest::Method::GET,
            "/api/stream",
            user,
        ))
        .await
    }

    /// A second, independent connection to this server's database (for arranging rows a
    /// test cannot create through the API, and for checking what was stored).
    pub async fn db_connection(&self) -> sea_orm::DatabaseConnection {
        let storage = &self.ctx.settings.storage;
        let url = match storage.database_url.as_ref() {
            Some(url) => url.expose().to_owned(),
            None => format!("sqlite://{}", storage.data_dir.join("bowline.db").display()),
        };
        Database::connect(url.as_str())
            .await
            .expect("second connection")
    }

    /// Stops the server gracefully and returns how it ended.
    pub async fn stop(mut self) -> Result<(), StartupError> {
        self.stop_in_place().await
    }

    /// Stops the server but keeps this handle (and its database) for later inspection or a
    /// second server on the same database.
    pub async fn stop_in_place(&mut self) -> Result<(), StartupError> {
        self.ctx.shutdown.trigger();
        let run = self.run.take().expect("running");
        tokio::time::timeout(WAIT, run)
            .await
            .expect("server stops within the wait")
            .expect("run task")
    }
}

impl TestApp {
    /// Stops the server as `kill -9` looks to the other instances on its database: what it
    /// holds there (accounts' leases) is left to expire, not released. The handle (and the
    /// database it may own) stays for the others.
    pub async fn kill_in_place(&mut self) {
        self.ctx.shutdown.abandon();
        let run = self.run.take().expect("running");
        let _ = tokio::time::timeout(WAIT, run)
            .await
            .expect("server stops within the wait");
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.ctx.shutdown.trigger();
    }
}

/// A signed-up user of a test server.
#[derive(Debug, Clone)]
pub struct TestUser {
    /// User id.
    pub id: String,
    /// Email.
    pub email: String,
    /// Password.
    pub password: String,
    /// Raw session token (bearer).
    pub token: String,
    /// The signed token (`set-auth-token`, the session cookie's value).
    pub signed: String,
}

/// The value of the metrics sample line starting with `series` (name and labels).
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

/// A client that does not follow redirects (to look at `Location`).
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// A server that sends mail to `sink`.
pub async fn spawn_app_with_mail(sink: &crate::support::smtp::SmtpSink) -> TestApp {
    spawn_app_with_mail_and(sink, |_| {}).await
}

/// A server that sends mail to `sink`, with its settings changed by `configure`.
pub async fn spawn_app_with_mail_and(
    sink: &crate::support::smtp::SmtpSink,
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    let url = sink.url();
    spawn_app_with(move |s| {
        s.mail.smtp_url = Some(Secret::new(url));
        configure(s);
    })
    .await
}

/// A server with the test settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// A server with the test settings changed by `configure`.
pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_app_built(configure, |builder| builder).await
}

/// A server with changed settings and extra builder steps (e.g. additional tasks).
pub async fn spawn_app_built(
    configure: impl FnOnce(&mut Settings),
    build: impl FnOnce(ApplicationBuilder) -> ApplicationBuilder,
) -> TestApp {
    init();
    let db = TestDb::create().await;
    let mut settings = test_settings_on(&db);
    configure(&mut settings);
    start(settings, build, Some(db)).await
}

/// A server with the test settings on `db`.
pub async fn spawn_app_on(db: TestDb) -> TestApp {
    let settings = test_settings_on(&db);
    start(settings, |builder| builder, Some(db)).await
}

/// A second server with `app`'s settings and database (another process, as far as
/// correctness goes).
pub async fn spawn_app_sharing_database(app: &TestApp) -> TestApp {
    spawn_app_sharing_database_with(app, |_| {}).await
}

/// A second server on `app`'s database with its settings changed by `configure`.
pub async fn spawn_app_sharing_database_with(
    app: &TestApp,
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    let mut settings = app.ctx.settings.clone();
    configure(&mut settings);
    let first = app.ctx.clone();
    start(
        settings,
        move |builder| builder.sharing_storage_of(&first),
        None,
    )
    .await
}

async fn start(
    settings: Settings,
    build: impl FnOnce(ApplicationBuilder) -> ApplicationBuilder,
    db: Option<TestDb>,
) -> TestApp {
    let metrics_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a metrics port");
    let builder = Application::builder(settings).with_metrics_listener(metrics_listener);
    let app = build(builder).build().await.expect("server starts");
    let addr = app.http_addr();
    let metrics_addr = app.metrics_addr();
    let ctx = app.ctx().clone();
    let run = tokio::spawn(app.run_until_stopped());
    TestApp {
        base: format!("http://{addr}"),
        metrics_addr,
        client: reqwest::Client::new(),
        ctx,
        run: Some(run),
        _db: db,
    }
}

/// Waits (up to 15 s, checking every 20 ms) until `check` holds.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    tokio::time::timeout(Duration::from_secs(15), async {
        while !check().await {
            tick.tick().await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("never: {what}"));
}
