//! Each test's own database: a SQLite file in a temporary directory, or, when
//! `TEST_DATABASE_URL` is set, a PostgreSQL database created for the test and dropped with it.
//!
//! On PostgreSQL a test's database is a copy of a template migrated once
//! (`bowline_test_template_<migrations>`, named after the migration history, so a new
//! migration makes a new template): running the 21 migrations for each of the suite's
//! several hundred databases cost about a second each. The server still runs its
//! migrations at start, finding them applied; [`TestDb::create_empty`] gives a test a
//! database no migration has touched. A test's commits do not wait for the disk
//! (`synchronous_commit = off` for its database): a crash of the database server is not
//! what the suite tests, and nothing a running server committed is lost without one.

use std::sync::OnceLock;

use bowline::config::{Secret, Settings};
use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, Database};

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
    /// Creates the database for one test: on PostgreSQL a copy of the migrated template.
    pub async fn create() -> Self {
        Self::create_from(true).await
    }

    /// Creates a database no migration has run on (SQLite's always is).
    pub async fn create_empty() -> Self {
        Self::create_from(false).await
    }

    async fn create_from(migrated: bool) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let Some(admin_url) = std::env::var("TEST_DATABASE_URL")
            .ok()
            .filter(|url| !url.is_empty())
        else {
            return Self::Sqlite(dir);
        };
        let name = format!("bowline_test_{}", uuid::Uuid::new_v4().simple());
        let template = if migrated {
            format!(" TEMPLATE \"{}\"", template(&admin_url))
        } else {
            String::new()
        };
        let admin = Database::connect(admin_connection(&admin_url).as_str())
            .await
            .expect("connect to TEST_DATABASE_URL");
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{name}\"{template}"))
            .await
            .expect("create test database");
        // A test outlives no crash of the database server: its commits need not wait for
        // the disk (the server process stays the same, so nothing committed is lost).
        admin
            .execute_unprepared(&format!(
                "ALTER DATABASE \"{name}\" SET synchronous_commit = off"
            ))
            .await
            .expect("configure test database");
        let _ = admin.close().await;
        Self::Postgres {
            url: database_url(&admin_url, &name),
            admin_url,
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
                if let Ok(admin) = Database::connect(admin_connection(&admin_url).as_str()).await {
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

/// `TEST_DATABASE_URL`'s own database, as [`database_url`] connects.
fn admin_connection(admin_url: &str) -> String {
    let path = reqwest::Url::parse(admin_url)
        .expect("TEST_DATABASE_URL is a URL")
        .path()
        .trim_start_matches('/')
        .to_owned();
    database_url(admin_url, &path)
}

/// `admin_url` pointing at database `name`, without TLS unless the URL asks for it: the
/// suite's server is on loopback, and a debug build's TLS handshake costs each of a test's
/// several connections tens of milliseconds.
fn database_url(admin_url: &str, name: &str) -> String {
    let mut url = reqwest::Url::parse(admin_url).expect("TEST_DATABASE_URL is a URL");
    url.set_path(name);
    if !url.query_pairs().any(|(key, _)| key == "sslmode") {
        url.query_pairs_mut().append_pair("sslmode", "disable");
    }
    url.to_string()
}

/// The migrated template's name, creating it on the first call of this process unless it
/// exists (another run made it): migrated under a name of its own, then renamed, so a
/// template is never seen half made; of two processes making it at once, one rename wins.
fn template(admin_url: &str) -> &'static str {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let admin_url = admin_url.to_owned();
        // Tests run on runtimes of their own; make it on a thread with its own.
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(make_template(&admin_url))
        })
        .join()
        .expect("the template is made")
    })
}

async fn make_template(admin_url: &str) -> String {
    let history: Vec<String> = Migrator::migrations()
        .iter()
        .map(|migration| migration.name().to_owned())
        .collect();
    let digest = bowline::domain::digest::sha256_hex(&history.join(","));
    let name = format!("bowline_test_template_{}", &digest[..12]);
    let admin = Database::connect(admin_connection(admin_url).as_str())
        .await
        .expect("connect to TEST_DATABASE_URL");
    let exists = admin
        .query_one_raw(sea_orm::Statement::from_string(
            admin.get_database_backend(),
            format!("SELECT 1 FROM pg_database WHERE datname = '{name}'"),
        ))
        .await
        .expect("look for the template")
        .is_some();
    if !exists {
        let making = format!("bowline_test_making_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute_unprepared(&format!("CREATE DATABASE \"{making}\""))
            .await
            .expect("create the template");
        let template = Database::connect(database_url(admin_url, &making).as_str())
            .await
            .expect("connect to the template");
        Migrator::up(&template, None)
            .await
            .expect("migrate the template");
        let _ = template.close().await;
        let renamed = admin
            .execute_unprepared(&format!("ALTER DATABASE \"{making}\" RENAME TO \"{name}\""))
            .await;
        if renamed.is_err() {
            // Another process made it first.
            let _ = admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{making}\""))
                .await;
        }
    }
    let _ = admin.close().await;
    name
}
