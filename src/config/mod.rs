//! Typed configuration: [`Settings`] mirrors `config/default.toml` key for key.
//!
//! Every struct denies unknown fields and no field has a serde default, so the compiled-in
//! `default.toml` is the single place defaults live, and a key that drifts between the file
//! and the structs fails the `default_toml_is_complete` test. Loading and layering are in
//! [`load`]; [`Settings::validate`] (in [`validate`]) adds the rules serde cannot express;
//! the outside services' sections are in [`providers`], and how values are read (secrets,
//! "not set", lists) in [`values`]. Nothing here is global: a server is built from a
//! `Settings` value, so several can run in one process.

pub mod capabilities;
mod load;
mod providers;
mod validate;
mod values;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use ipnet::IpNet;
pub use load::{ConfigError, DEFAULT_TOML, TEST_TOML};
pub use providers::{
    AppleSettings, CaldavSettings, FederationSettings, GoogleSettings, MicrosoftSettings,
};
pub use values::Secret;
use values::{network_list, optional_secret, optional_string, string_list};

/// All of Bowline's configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Public HTTP listener and client-facing identity.
    pub server: ServerSettings,
    /// The internal metrics listener.
    pub metrics: MetricsSettings,
    /// Database location.
    pub storage: StorageSettings,
    /// Logging.
    pub log: LogSettings,
    /// Actor supervision and call timeouts.
    pub actors: ActorSettings,
    /// Periodic tasks.
    pub scheduler: SchedulerSettings,
    /// Sign-in and sessions.
    pub auth: AuthSettings,
    /// Outgoing mail.
    pub mail: MailSettings,
    /// The realtime stream.
    pub stream: StreamSettings,
    /// Google (`provider_a`) credentials.
    pub google: GoogleSettings,
    /// Apple (`provider_b`) sign-in and app association.
    pub apple: AppleSettings,
    /// Microsoft (`provider_c`) credentials.
    pub microsoft: MicrosoftSettings,
    /// CalDAV connections.
    pub caldav: CaldavSettings,
    /// Federation between Bowline servers.
    pub federation: FederationSettings,
    /// Requests to other servers (the outbound guard).
    pub outbound: OutboundSettings,
    /// Reminders sent as web push.
    pub push: PushSettings,
}

/// `[outbound]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutboundSettings {
    /// `OUTBOUND_CA_FILE`: a PEM file of CA certificates trusted beside the public roots.
    #[serde(deserialize_with = "optional_string")]
    pub ca_file: Option<String>,
}

/// `[push]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSettings {
    /// `VAPID_PUBLIC_KEY`: the server's P-256 public key, base64url (65 bytes uncompressed).
    #[serde(deserialize_with = "optional_string")]
    pub vapid_public_key: Option<String>,
    /// `VAPID_PRIVATE_KEY`: its private key, base64url (32 bytes).
    #[serde(deserialize_with = "optional_secret")]
    pub vapid_private_key: Option<Secret>,
    /// `VAPID_SUBJECT`: `mailto:` address or `https:` URL push services may contact.
    #[serde(deserialize_with = "optional_string")]
    pub vapid_subject: Option<String>,
    /// `PUSH_TICK_MS`: how often the dispatcher looks for due reminders.
    pub tick_ms: u64,
    /// `PUSH_LEASE_MS`: how long an instance holds the dispatch before another may take it.
    pub lease_ms: u64,
    /// `PUSH_REQUEST_TIMEOUT_MS`: the longest one request to a push service may take.
    pub request_timeout_ms: u64,
    /// `PUSH_MAX_CATCHUP_MS`: the oldest a reminder may be and still be sent (older ones
    /// are skipped and counted).
    pub max_catchup_ms: u64,
}

/// `[server]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// `HOST`
    pub host: IpAddr,
    /// `PORT` (0 = any free port)
    pub port: u16,
    /// `BASE_URL`: public origin; `None` means `http://<host>:<bound port>`.
    #[serde(deserialize_with = "optional_string")]
    pub base_url: Option<String>,
    /// `CORS_ORIGINS`
    #[serde(deserialize_with = "string_list")]
    pub cors_origins: Vec<String>,
    /// `APP_SCHEME`
    pub app_scheme: String,
    /// `SHUTDOWN_GRACE_MS`
    pub shutdown_grace_ms: u64,
    /// `HEADER_READ_TIMEOUT_MS`: a request's head must arrive within this of the
    /// connection being ready for one (also how long an idle kept-alive connection stays).
    pub header_read_timeout_ms: u64,
    /// `BODY_READ_TIMEOUT_MS`: a request's body must arrive within this of its head.
    pub body_read_timeout_ms: u64,
    /// `IDLE_TIMEOUT_MS`: a connection on which no byte moves for this long is closed.
    pub idle_timeout_ms: u64,
    /// `MAX_CONNECTIONS`: open connections at most; 0 sizes it to the open-file limit.
    pub max_connections: u32,
}

/// `[metrics]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// `METRICS_HOST`
    pub host: IpAddr,
    /// `METRICS_PORT` (0 disables the listener)
    pub port: u16,
}

/// `[storage]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSettings {
    /// `DATA_DIR`
    pub data_dir: PathBuf,
    /// `DATABASE_URL`; `None` selects the embedded SQLite file.
    #[serde(deserialize_with = "optional_secret")]
    pub database_url: Option<Secret>,
    /// `DATABASE_MAX_CONNECTIONS`
    pub max_connections: u32,
    /// `READ_CACHE_BYTES`: memory for cached full events reads; `0` turns the cache off.
    pub read_cache_bytes: usize,
    /// `READ_CACHE_CONNECTIONS`: PostgreSQL connections beside the pool that check cached
    /// reads against the database; `0` checks them on the pool.
    pub read_cache_connections: u32,
    /// `EVENTS_STREAM_ABOVE`: full events reads listing more events are streamed, not cached.
    pub events_stream_above: u32,
    /// `EVENTS_STREAM_CHUNK`: events a streamed read reads and writes at a time.
    pub events_stream_chunk: u32,
    /// `EVENTS_STREAM_TIMEOUT_MS`: the longest a streamed read holds its snapshot.
    pub events_stream_timeout_ms: u64,
    /// `SESSION_CACHE_MS`: how long a session found by its token is reused; `0` asks the
    /// database on every request.
    pub session_cache_ms: u64,
}

/// `[log]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    /// `LOG_LEVEL`
    pub level: LogLevel,
}

/// The levels `LOG_LEVEL` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Everything, including provider-sync counts and timings.
    Debug,
    /// Successful requests and lifecycle events (the default).
    Info,
    /// 4xx responses and recoverable trouble.
    Warn,
    /// 5xx responses and failures.
    Error,
    /// Nothing at all.
    Silent,
}

/// `[actors]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActorSettings {
    /// `ACTOR_CALL_TIMEOUT_MS`
    pub call_timeout_ms: u64,
    /// `ACTOR_RESTART_LIMIT`
    pub restart_limit: u32,
    /// `ACTOR_RESTART_WINDOW_MS`
    pub restart_window_ms: u64,
    /// `ACTOR_RESTART_BACKOFF_MS`
    pub restart_backoff_ms: u64,
    /// `ACTOR_RESTART_BACKOFF_MAX_MS`
    pub restart_backoff_max_ms: u64,
    /// `ACTOR_CALENDAR_IDLE_MS`
    pub calendar_idle_ms: u64,
}

/// `[scheduler]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerSettings {
    /// `CLEANUP_INTERVAL_MS`
    pub cleanup_interval_ms: u64,
    /// `SCHEDULER_LEASE_MS`
    pub lease_ms: u64,
}

/// `[auth]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// `AUTH_SECRET`; `None`: generated once and kept in the database.
    #[serde(deserialize_with = "optional_secret")]
    pub secret: Option<Secret>,
    /// `TRUSTED_ORIGINS`
    #[serde(deserialize_with = "string_list")]
    pub trusted_origins: Vec<String>,
    /// `AUTH_RATE_LIMIT`
    pub rate_limit: bool,
    /// `PASSWORD_HASH_CONCURRENCY`
    pub password_hash_concurrency: u32,
    /// `TRUST_PROXY_HEADERS`
    pub trust_proxy_headers: bool,
    /// `TRUSTED_PROXIES`: the reverse proxies' networks.
    #[serde(deserialize_with = "network_list")]
    pub trusted_proxies: Vec<IpNet>,
}

/// `[mail]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailSettings {
    /// `SMTP_URL`; `None` writes `.eml` files instead.
    #[serde(deserialize_with = "optional_secret")]
    pub smtp_url: Option<Secret>,
    /// `MAIL_FROM`
    pub from: String,
    /// `BATCH_DELAY_MS`
    pub batch_delay_ms: u64,
    /// `MAIL_RETRY_MS`
    pub retry_ms: u64,
    /// `MAIL_RESCAN_MS`
    pub rescan_ms: u64,
}

/// `[stream]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSettings {
    /// `STREAM_KEEPALIVE_MS`
    pub keepalive_ms: u64,
    /// `STREAM_BUFFER`
    pub buffer: u32,
}

impl Settings {
    /// Origins trusted for cookie-carrying requests and callback URLs: the base URL, the CORS
    /// origins, the configured extras and the app scheme.
    pub fn trusted_origins(&self, base_url: &str) -> Vec<String> {
        let mut origins = vec![base_url.trim_end_matches('/').to_owned()];
        origins.extend(self.server.cors_origins.iter().cloned());
        origins.extend(self.auth.trusted_origins.iter().cloned());
        origins.push(format!("{}://", self.server.app_scheme));
        origins
    }

    /// Actor call timeout.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.actors.call_timeout_ms)
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn default_toml_is_complete() {
        let settings = Settings::load_with(&[], &|_| None).expect("defaults load");
        assert_eq!(settings.server.port, 7531);
        assert_eq!(settings.metrics.port, 9464);
        assert_eq!(settings.log.level, LogLevel::Info);
        assert!(settings.storage.database_url.is_none());
    }

    #[test]
    fn environment_overrides_files() {
        let env = env_of(&[
            ("PORT", "0"),
            ("METRICS_PORT", "0"),
            ("LOG_LEVEL", "silent"),
            ("CORS_ORIGINS", "https://a.example, https://b.example/"),
            ("PROVIDER_B_TEAM_ID", "TEAM123"),
            ("GOOGLE_CLIENT_ID", "1234567890"),
        ]);
        let settings = Settings::load_with(&[("test", TEST_TOML)], &env).expect("loads");
        assert_eq!(settings.server.port, 0);
        assert_eq!(settings.log.level, LogLevel::Silent);
        assert_eq!(
            settings.server.cors_origins,
            ["https://a.example", "https://b.example"]
        );
        assert_eq!(settings.apple.team_id.as_deref(), Some("TEAM123"));
        assert_eq!(settings.google.client_id.as_deref(), Some("1234567890"));
    }

    #[test]
    fn errors_name_the_key_and_variable() {
        let cases: [(&'static [(&'static str, &'static str)], &str); 5] = [
            (&[("PORT", "seventy")], "PORT"),
            (&[("PORT", "70000")], "PORT"),
            (&[("LOG_LEVEL", "verbose")], "LOG_LEVEL"),
            (&[("BASE_URL", "cal.example.com")], "BASE_URL"),
            (&[("CALDAV_ENC_KEY", "abc")], "CALDAV_ENC_KEY"),
        ];
        for (env, name) in cases {
            let err = Settings::load_with(&[], &env_of(env)).expect_err(name);
            let line = err.to_string();
            assert!(line.contains(name), "{line}");
            assert!(!line.contains('\n'), "one line: {line}");
        }
    }

    #[test]
    fn vapid_keys_are_set_together_and_must_belong_together() {
        let pair = crate::push::vapid::generate_key_pair();
        let other = crate::push::vapid::generate_key_pair();
        let load = |public: &str, private: &str, subject: &str| {
            let env = |name: &str| match name {
                "VAPID_PUBLIC_KEY" => Some(public.to_owned()),
                "VAPID_PRIVATE_KEY" => Some(private.to_owned()),
                "VAPID_SUBJECT" => Some(subject.to_owned()),
                _ => None,
            };
            Settings::load_with(&[], &env)
        };
        let settings = load(
            &pair.public_key,
            &pair.private_key,
            "mailto:ops@example.com",
        )
        .expect("a pair loads");
        assert!(
            crate::config::capabilities::Capabilities::new(&settings, false)
                .push_public_key
                .is_some()
        );
        assert!(
            crate::config::capabilities::Capabilities::new(
                &Settings::load_with(&[], &|_| None).expect("defaults"),
                false
            )
            .push_public_key
            .is_none(),
            "no keys, nothing advertised"
        );
        for (public, private, subject) in [
            (pair.public_key.as_str(), "", ""),
            ("", pair.private_key.as_str(), "mailto:ops@example.com"),
            (
                &pair.public_key,
                &other.private_key,
                "mailto:ops@example.com",
            ),
            (&pair.public_key, &pair.private_key, "ops@example.com"),
            (&pair.public_key, &pair.private_key, "http://example.com"),
            ("not-a-key", &pair.private_key, "mailto:ops@example.com"),
        ] {
            let err = load(public, private, subject).expect_err("refused");
            let line = err.to_string();
            assert!(line.contains("VAPID_PUBLIC_KEY"), "{line}");
            assert!(!line.contains(&pair.private_key), "no secret in {line}");
        }
        let hunter = load(
            &pair.public_key,
            &pair.private_key,
            "mailto:ops@example.com",
        )
        .expect("loads");
        assert!(!format!("{hunter:?}").contains(&pair.private_key));
    }

    #[test]
    fn an_unreadable_outbound_ca_file_is_refused() {
        let env = env_of(&[("OUTBOUND_CA_FILE", "/nonexistent/ca.pem")]);
        let err = Settings::load_with(&[], &env).expect_err("refused");
        assert!(err.to_string().contains("OUTBOUND_CA_FILE"), "{err}");
    }

    #[test]
    fn unknown_keys_in_files_are_refused() {
        let err = Settings::load_with(&[("typo", "[server]\nprot = 1\n")], &|_| None)
            .expect_err("typo refused");
        assert!(err.to_string().contains("prot"), "{err}");
    }

    #[test]
    fn secrets_are_redacted_in_debug() {
        let env = env_of(&[("MICROSOFT_CLIENT_SECRET", "hunter2")]);
        let settings = Settings::load_with(&[], &env).expect("loads");
        assert!(!format!("{settings:?}").contains("hunter2"));
    }
}
