//! The test harness: [`spawn_app`] starts a real Bowline server in-process on port 0 with a
//! fresh database (a SQLite file in a temporary directory, or, when `TEST_DATABASE_URL` is
//! set, a PostgreSQL database created for this test and dropped after it), and [`TestApp`]
//! talks to it over HTTP. Nothing is shared between tests.

use std::net::SocketAddr;
use std::sync::Once;
use std::time::Duration;

use bowline::config::{Secret, Settings, TEST_TOML};
use bowline::context::Ctx;
use bowline::startup::ApplicationBuilder;
use bowline::{Application, StartupError};
use sea_orm::{ConnectionTrait, Database};
use tokio::task::JoinHandle;

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

    /// Creates a calendar owned by `owner`; returns its document.
    pub async fn create_calendar(&self, owner: &TestUser, name: &str) -> serde_json::Value {
        let response = self
            .as_user(reqwest::Method::POST, "/api/v1/calendars", owner)
            .json(&serde_json::json!({ "id": "new", "creatorID": "", "name": name, "color": "#7A8BA3", "members": [] }))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 201, "calendar created");
        response.json().await.expect("JSON")
    }

    /// Creates an invite to `calendar_id` as `user`; returns the invite document.
    pub async fn create_invite(
        &self,
        user: &TestUser,
        calendar_id: &str,
        max_uses: Option<i32>,
    ) -> serde_json::Value {
        let response = self
            .as_user(reqwest::Method::POST, "/api/v1/calendars/invites", user)
            .json(&serde_json::json!({ "id": "new", "calendarID": calendar_id, "expiresAt": null, "maxUses": max_uses }))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 201, "invite created");
        response.json().await.expect("JSON")
    }

    /// `user` joins `calendar_id` with `token`.
    pub async fn join(&self, user: &TestUser, calendar_id: &str, token: &str) -> reqwest::Response {
        self.as_user(
            reqwest::Method::POST,
            &format!("/api/v1/calendars/members/{calendar_id}"),
            user,
        )
        .json(&serde_json::json!({ "token": token }))
        .send()
        .await
        .expect("request")
    }

    /// `actor` sets `target`'s role.
    pub async fn set_role(
        &self,
        actor: &TestUser,
        calendar_id: &str,
        target: &str,
        role: &str,
    ) -> reqwest::Response {
        self.as_user(
            reqwest::Method::PUT,
            &format!("/api/v1/calendars/{calendar_id}/members/{target}"),
            actor,
        )
        .json(&serde_json::json!({ "role": role }))
        .send()
        .await
        .expect("request")
    }

    /// Sends an event request (`POST`, `PUT` or `DELETE /api/v1/events`) as `user`.
    pub async fn event_request(
        &self,
        method: reqwest::Method,
        user: &TestUser,
        body: &serde_json::Value,
    ) -> reqwest::Response {
        self.as_user(method, "/api/v1/events", user)
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// `GET /api/v1/events` with `query` as `user`: the JSON answer.
    pub async fn read_events(&self, user: &TestUser, query: &str) -> serde_json::Value {
        let response = self
            .as_user(
                reqwest::Method::GET,
                &format!("/api/v1/events{query}"),
                user,
            )
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), 200, "events read {query}");
        response.json().await.expect("JSON")
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

/// An Event body for `calendars` (the first is home), starting at `hour` UTC on 23 July
/// 2026, one hour long.
pub fn event_body(calendars: &[&str], title: &str, hour: u32) -> serde_json::Value {
    serde_json::json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "creatorID": "ignored",
        "organizer": "someone",
        "title": title,
        "color": "#C8553D",
        "start": format!("2026-07-23T{hour:02}:00:00.000Z"),
        "end": format!("2026-07-23T{:02}:00:00.000Z", hour + 1),
        "calendars": calendars,
        "isCanceled": false,
        "isAllDay": false,
        "hasAttendees": true,
        "description": null,
        "location": "Room 1",
        "recurrence": null,
        "url": null
    })
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
    let url = sink.url();
    spawn_app_with(move |s| s.mail.smtp_url = Some(Secret::new(url))).await
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
    let mut settings = test_settings();
    let db = TestDb::create().await;
    db.configure(&mut settings);
    configure(&mut settings);
    start(settings, build, Some(db)).await
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
    start(settings, |builder| builder, None).await
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

/// This test's database: a temporary SQLite directory, or a PostgreSQL database of its own.
pub enum TestDb {
    /// Embedded SQLite under a temporary data directory.
    Sqlite(tempfile::TempDir),
    /// A database created on the server `TEST_DATABASE_URL` points at.
    Postgres {
        /// Connection URL of the maintenance database.
        admin_url: String,
        /// Connection URL of this test's database.
        url: String,
        /// Its name.
        name: String,
        /// Still used as the data directory.
        dir: tempfile::TempDir,
    },
}

impl TestDb {
    /// Creates the database for one test.
    pub async fn create() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let Some(admin_url) = std::env::var("TEST_DATABASE_URL")
            .ok()
            .filter(|url| !url.is_empty())
        else {
            return Self::Sqlite(dir);
        };
        let name = format!("bowline_test_{}", uuid::Uuid::new_v4().simple());
        let admin = Database::connect(admin_url.as_str())
            .await
            .expect("connect to TEST_DATABASE_URL");
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create test database");
        let _ = admin.close().await;
        let mut url = reqwest::Url::parse(&admin_url).expect("TEST_DATABASE_URL is a URL");
        url.set_path(&name);
        Self::Postgres {
            admin_url,
            url: url.to_string(),
            name,
            dir,
        }
    }

    /// Points `settings` at this database.
    pub fn configure(&self, settings: &mut Settings) {
        match self {
            Self::Sqlite(dir) => {
                settings.storage.data_dir = dir.path().to_path_buf();
                settings.storage.database_url = None;
            }
            Self::Postgres { url, dir, .. } => {
                settings.storage.data_dir = dir.path().to_path_buf();
                settings.storage.database_url = Some(Secret::new(url.clone()));
            }
        }
    }

    /// The `DATABASE_URL` a separately started binary should use (`None`: SQLite).
    pub fn database_url(&self) -> Option<&str> {
        match self {
            Self::Sqlite(_) => None,
            Self::Postgres { url, .. } => Some(url),
        }
    }

    /// The data directory.
    pub fn data_dir(&self) -> &std::path::Path {
        match self {
            Self::Sqlite(dir) | Self::Postgres { dir, .. } => dir.path(),
        }
    }

    /// Whether this test runs on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres { .. })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Self::Postgres {
            admin_url, name, ..
        } = self
        else {
            return;
        };
        let (admin_url, name) = (admin_url.clone(), name.clone());
        // Drop runs inside the test's runtime; do the async clean-up on a thread of its own.
        let cleanup = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                if let Ok(admin) = Database::connect(admin_url.as_str()).await {
                    let _ = admin
                        .execute_unprepared(&format!(
                            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                        ))
                        .await;
                    let _ = admin.close().await;
                }
            });
        });
        let _ = cleanup.join();
    }
}
