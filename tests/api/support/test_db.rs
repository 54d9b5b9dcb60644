//! Each test's own database: a SQLite file in a temporary directory, or, when
//! `TEST_DATABASE_URL` is set, a PostgreSQL database created for the test and dropped with it.

use bowline::config::{Secret, Settings};
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
