//! Layering: compiled-in `default.toml` < `config/<BOWLINE_PROFILE>.toml` < environment.
//!
//! Environment variables are named explicitly in [`ENV_VARS`] (the spec's names, such as
//! `PORT`, `LOG_LEVEL`, `CALDAV_ENC_KEY`), and each value is parsed as the type its key has
//! in `default.toml`, so `GOOGLE_CLIENT_ID=1234` stays a string and `PORT=abc` is reported
//! against `PORT`. Errors render as one line naming the key and its variable.

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use figment::value::Value;

use super::Settings;

/// The defaults, compiled in so the binary starts from any working directory.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");
/// The test overlay (free ports, fast timers), used by the test suite.
pub const TEST_TOML: &str = include_str!("../../config/test.toml");

/// Alternative names from the interface spec; applied before [`ENV_VARS`] so that the
/// primary name wins when both are set.
const ENV_ALIASES: &[(&str, &str)] = &[
    ("BETTER_AUTH_SECRET", "auth.secret"),
    ("PROVIDER_B_TEAM_ID", "apple.team_id"),
    ("PROVIDER_B_CLIENT_ID", "apple.client_id"),
];

/// Every environment variable Bowline reads, with the key it overrides.
const ENV_VARS: &[(&str, &str)] = &[
    ("HOST", "server.host"),
    ("PORT", "server.port"),
    ("BASE_URL", "server.base_url"),
    ("CORS_ORIGINS", "server.cors_origins"),
    ("APP_SCHEME", "server.app_scheme"),
    ("SHUTDOWN_GRACE_MS", "server.shutdown_grace_ms"),
    ("HEADER_READ_TIMEOUT_MS", "server.header_read_timeout_ms"),
    ("BODY_READ_TIMEOUT_MS", "server.body_read_timeout_ms"),
    ("IDLE_TIMEOUT_MS", "server.idle_timeout_ms"),
    ("MAX_CONNECTIONS", "server.max_connections"),
    ("METRICS_HOST", "metrics.host"),
    ("METRICS_PORT", "metrics.port"),
    ("DATA_DIR", "storage.data_dir"),
    ("DATABASE_URL", "storage.database_url"),
    ("DATABASE_MAX_CONNECTIONS", "storage.max_connections"),
    ("READ_CACHE_BYTES", "storage.read_cache_bytes"),
    ("READ_CACHE_CONNECTIONS", "storage.read_cache_connections"),
    ("EVENTS_STREAM_ABOVE", "storage.events_stream_above"),
    ("EVENTS_STREAM_CHUNK", "storage.events_stream_chunk"),
    (
        "EVENTS_STREAM_TIMEOUT_MS",
        "storage.events_stream_timeout_ms",
    ),
    ("SESSION_CACHE_MS", "storage.session_cache_ms"),
    ("LOG_LEVEL", "log.level"),
    ("ACTOR_CALL_TIMEOUT_MS", "actors.call_timeout_ms"),
    ("ACTOR_RESTART_LIMIT", "actors.restart_limit"),
    ("ACTOR_RESTART_WINDOW_MS", "actors.restart_window_ms"),
    ("ACTOR_RESTART_BACKOFF_MS", "actors.restart_backoff_ms"),
    (
        "ACTOR_RESTART_BACKOFF_MAX_MS",
        "actors.restart_backoff_max_ms",
    ),
    ("CLEANUP_INTERVAL_MS", "scheduler.cleanup_interval_ms"),
    ("SCHEDULER_LEASE_MS", "scheduler.lease_ms"),
    ("AUTH_SECRET", "auth.secret"),
    ("TRUSTED_ORIGINS", "auth.trusted_origins"),
    ("AUTH_RATE_LIMIT", "auth.rate_limit"),
    (
        "PASSWORD_HASH_CONCURRENCY",
        "auth.password_hash_concurrency",
    ),
    ("TRUST_PROXY_HEADERS", "auth.trust_proxy_headers"),
    ("TRUSTED_PROXIES", "auth.trusted_proxies"),
    ("SMTP_URL", "mail.smtp_url"),
    ("MAIL_FROM", "mail.from"),
    ("BATCH_DELAY_MS", "mail.batch_delay_ms"),
    ("MAIL_RETRY_MS", "mail.retry_ms"),
    ("MAIL_RESCAN_MS", "mail.rescan_ms"),
    ("STREAM_KEEPALIVE_MS", "stream.keepalive_ms"),
    ("STREAM_BUFFER", "stream.buffer"),
    ("GOOGLE_CLIENT_ID", "google.client_id"),
    ("GOOGLE_CLIENT_SECRET", "google.client_secret"),
    ("GOOGLE_IOS_CLIENT_ID", "google.ios_client_id"),
    ("GOOGLE_JWKS_URL", "google.jwks_url"),
    ("GOOGLE_ISSUERS", "google.issuers"),
    ("GOOGLE_AUTHORIZATION_URL", "google.authorization_url"),
    ("GOOGLE_TOKEN_URL", "google.token_url"),
    ("GOOGLE_REVOCATION_URL", "google.revocation_url"),
    ("GOOGLE_CALENDAR_API_URL", "google.calendar_api_url"),
    ("APPLE_CLIENT_ID", "apple.client_id"),
    ("APPLE_BUNDLE_ID", "apple.bundle_id"),
    ("APPLE_TEAM_ID", "apple.team_id"),
    ("APPLE_JWKS_URL", "apple.jwks_url"),
    ("APPLE_ISSUER", "apple.issuer"),
    ("MICROSOFT_CLIENT_ID", "microsoft.client_id"),
    ("MICROSOFT_CLIENT_SECRET", "microsoft.client_secret"),
    ("MICROSOFT_JWKS_URL", "microsoft.jwks_url"),
    ("MICROSOFT_AUTHORIZATION_URL", "microsoft.authorization_url"),
    ("MICROSOFT_TOKEN_URL", "microsoft.token_url"),
    ("MICROSOFT_GRAPH_URL", "microsoft.graph_url"),
    ("MICROSOFT_SYNC_PAST_DAYS", "microsoft.sync_past_days"),
    ("MICROSOFT_SYNC_FUTURE_DAYS", "microsoft.sync_future_days"),
    ("CALDAV_ENC_KEY", "caldav.enc_key"),
    ("EXTERNAL_SYNC_INTERVAL_MS", "caldav.sync_interval_ms"),
    ("PROVIDER_CONNECT_TIMEOUT_MS", "caldav.connect_timeout_ms"),
    ("PROVIDER_REQUEST_TIMEOUT_MS", "caldav.request_timeout_ms"),
    ("OUTBOX_RETRY_BASE_MS", "caldav.outbox_retry_base_ms"),
    ("OUTBOX_RETRY_MAX_MS", "caldav.outbox_retry_max_ms"),
    ("OUTBOX_GIVE_UP_MS", "caldav.outbox_give_up_ms"),
    ("OUTBOX_LEASE_MS", "caldav.outbox_lease_ms"),
    ("PROVIDER_LEASE_MS", "caldav.provider_lease_ms"),
    (
        "FEDERATION_ALLOW_PRIVATE_HOSTS",
        "federation.allow_private_hosts",
    ),
    (
        "FEDERATION_REQUEST_TIMEOUT_MS",
        "federation.request_timeout_ms",
    ),
    ("FEDERATION_STREAM_RETRY_MS", "federation.stream_retry_ms"),
    ("OUTBOUND_CA_FILE", "outbound.ca_file"),
    ("VAPID_PUBLIC_KEY", "push.vapid_public_key"),
    ("VAPID_PRIVATE_KEY", "push.vapid_private_key"),
    ("VAPID_SUBJECT", "push.vapid_subject"),
    ("PUSH_TICK_MS", "push.tick_ms"),
    ("PUSH_LEASE_MS", "push.lease_ms"),
    ("PUSH_REQUEST_TIMEOUT_MS", "push.request_timeout_ms"),
    ("PUSH_MAX_CATCHUP_MS", "push.max_catchup_ms"),
];

/// Why configuration was refused. `Display` is the one line start-up prints.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A key holds a value Bowline cannot use.
    #[error("invalid configuration: {key}{}: {reason}", env_hint(key))]
    Invalid {
        /// Dotted key path, e.g. `server.port`.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl ConfigError {
    /// An invalid value at `key`.
    pub fn invalid(key: &str, reason: String) -> Self {
        Self::Invalid {
            key: key.to_owned(),
            reason,
        }
    }

    fn from_figment(err: figment::Error) -> Self {
        let Some(first) = err.into_iter().next() else {
            return Self::invalid("(unknown)", "unreadable configuration".into());
        };
        let key = if first.path.is_empty() {
            "(root)".to_owned()
        } else {
            first.path.join(".")
        };
        Self::invalid(&key, first.kind.to_string())
    }
}

/// ` (PORT)` for keys that have an environment variable.
fn env_hint(key: &str) -> String {
    ENV_VARS
        .iter()
        .find(|(_, k)| *k == key)
        .map(|(name, _)| format!(" ({name})"))
        .unwrap_or_default()
}

impl Settings {
    /// Loads the server's configuration from the process environment: defaults, then
    /// `config/<BOWLINE_PROFILE>.toml` when that variable is set, then the variables.
    pub fn load() -> Result<Self, ConfigError> {
        let profile = std::env::var("BOWLINE_PROFILE")
            .ok()
            .filter(|p| !p.trim().is_empty());
        let overlay = match profile {
            Some(profile) => {
                let path = format!("config/{profile}.toml");
                let text = std::fs::read_to_string(&path).map_err(|err| {
                    ConfigError::invalid("BOWLINE_PROFILE", format!("cannot read {path}: {err}"))
                })?;
                Some((path, text))
            }
            None => None,
        };
        let overlays: Vec<(&str, &str)> = overlay
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        Self::load_with(&overlays, &|name| std::env::var(name).ok())
    }

    /// Loads defaults, then each `(name, toml)` overlay, then the variables `env` returns.
    /// Tests use this with an empty environment so that parallel servers never share state.
    pub fn load_with(
        overlays: &[(&str, &str)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let defaults = Figment::from(Toml::string(DEFAULT_TOML));
        let mut figment = defaults.clone();
        for (_, text) in overlays {
            figment = figment.merge(Toml::string(text));
        }
        for (name, key) in ENV_ALIASES.iter().chain(ENV_VARS) {
            let Some(raw) = env(name) else { continue };
            let kind = defaults
                .find_value(key)
                .map_err(ConfigError::from_figment)?;
            let value = parse_env_value(&kind, raw.trim()).map_err(|expected| {
                ConfigError::invalid(key, format!("expected {expected}, got {raw:?}"))
            })?;
            figment = figment.merge(Serialized::default(key, value));
        }
        let settings: Settings = figment.extract().map_err(ConfigError::from_figment)?;
        settings.validate()?;
        Ok(settings)
    }
}

/// Parses a variable as the type of its default value; `Err` says what was expected.
fn parse_env_value(default: &Value, raw: &str) -> Result<Value, &'static str> {
    match default {
        Value::Num(..) => raw
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| raw.parse::<u64>().map(Value::from))
            .map_err(|_| "a whole number"),
        Value::Bool(..) => match raw.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(Value::from(true)),
            "false" | "0" | "no" | "off" => Ok(Value::from(false)),
            _ => Err("true or false"),
        },
        _ => Ok(Value::from(raw.to_owned())),
    }
}
