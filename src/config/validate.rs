//! [`Settings::validate`]: the rules serde cannot express (origins, the app scheme, ranges,
//! keys that need one another). Each failure names its key.

use super::{ConfigError, Settings};

/// The longest a session may be reused from the cache: better-auth's session cookie cache
/// default (five minutes).
const MAX_SESSION_CACHE_MS: u64 = 300_000;
/// The shortest provider lease: it is renewed every quarter of it, over the network.
const MIN_PROVIDER_LEASE_MS: u64 = 400;

impl Settings {
    /// Rules beyond types: each failure names its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, reason: String| Err(ConfigError::invalid(key, reason));
        if let Some(url) = &self.server.base_url
            && let Err(reason) = parse_origin(url)
        {
            return invalid("server.base_url", reason);
        }
        for origin in &self.server.cors_origins {
            if let Err(reason) = parse_origin(origin) {
                return invalid("server.cors_origins", reason);
            }
        }
        let scheme = &self.server.app_scheme;
        if scheme.is_empty()
            || !scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return invalid(
                "server.app_scheme",
                format!("{scheme:?} is not a URL scheme"),
            );
        }
        if let Some(url) = &self.storage.database_url {
            let url = url.expose();
            if !["sqlite:", "postgres://", "postgresql://"]
                .iter()
                .any(|p| url.starts_with(p))
            {
                return invalid(
                    "storage.database_url",
                    "must start with postgres://, postgresql:// or sqlite:".into(),
                );
            }
        }
        for origin in &self.auth.trusted_origins {
            if !origin.contains("://") {
                return invalid(
                    "auth.trusted_origins",
                    format!("{origin:?} must be an origin such as https://app.example or myapp://"),
                );
            }
        }
        if let Some(secret) = &self.auth.secret
            && secret.expose().len() < 32
        {
            return invalid("auth.secret", "must be at least 32 characters".into());
        }
        if let Some(url) = &self.mail.smtp_url {
            let url = url.expose();
            if !(url.starts_with("smtp://") || url.starts_with("smtps://")) {
                return invalid(
                    "mail.smtp_url",
                    "must start with smtp:// or smtps://".into(),
                );
            }
        }
        if self.mail.from.parse::<lettre::message::Mailbox>().is_err() {
            return invalid(
                "mail.from",
                format!("{:?} is not a mail address", self.mail.from),
            );
        }
        for (key, url) in [
            ("google.jwks_url", &self.google.jwks_url),
            ("google.authorization_url", &self.google.authorization_url),
            ("google.token_url", &self.google.token_url),
            ("google.revocation_url", &self.google.revocation_url),
            ("google.calendar_api_url", &self.google.calendar_api_url),
            ("apple.jwks_url", &self.apple.jwks_url),
            ("microsoft.jwks_url", &self.microsoft.jwks_url),
            (
                "microsoft.authorization_url",
                &self.microsoft.authorization_url,
            ),
            ("microsoft.token_url", &self.microsoft.token_url),
            ("microsoft.graph_url", &self.microsoft.graph_url),
        ] {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return invalid(key, "must be an http(s) URL".into());
            }
        }
        if self.storage.max_connections == 0 {
            return invalid("storage.max_connections", "must be at least 1".into());
        }
        if self.storage.session_cache_ms > MAX_SESSION_CACHE_MS {
            return invalid(
                "storage.session_cache_ms",
                format!(
                    "must be at most {MAX_SESSION_CACHE_MS} (a revocation must not wait longer)"
                ),
            );
        }
        for (key, value) in [
            ("actors.call_timeout_ms", self.actors.call_timeout_ms),
            ("actors.restart_window_ms", self.actors.restart_window_ms),
            ("actors.calendar_idle_ms", self.actors.calendar_idle_ms),
            (
                "scheduler.cleanup_interval_ms",
                self.scheduler.cleanup_interval_ms,
            ),
            ("scheduler.lease_ms", self.scheduler.lease_ms),
            ("mail.batch_delay_ms", self.mail.batch_delay_ms),
            ("mail.retry_ms", self.mail.retry_ms),
            ("mail.rescan_ms", self.mail.rescan_ms),
            ("stream.keepalive_ms", self.stream.keepalive_ms),
            (
                "storage.events_stream_chunk",
                u64::from(self.storage.events_stream_chunk),
            ),
            (
                "storage.events_stream_timeout_ms",
                self.storage.events_stream_timeout_ms,
            ),
            (
                "server.header_read_timeout_ms",
                self.server.header_read_timeout_ms,
            ),
            (
                "server.body_read_timeout_ms",
                self.server.body_read_timeout_ms,
            ),
            ("server.idle_timeout_ms", self.server.idle_timeout_ms),
            ("stream.buffer", u64::from(self.stream.buffer)),
            (
                "federation.request_timeout_ms",
                self.federation.request_timeout_ms,
            ),
            (
                "federation.stream_retry_ms",
                self.federation.stream_retry_ms,
            ),
            (
                "auth.password_hash_concurrency",
                u64::from(self.auth.password_hash_concurrency),
            ),
        ] {
            if value == 0 {
                return invalid(key, "must be greater than 0".into());
            }
        }
        if self.stream.keepalive_ms >= self.server.idle_timeout_ms {
            return invalid(
                "stream.keepalive_ms",
                "must be shorter than server.idle_timeout_ms (open streams would be closed)".into(),
            );
        }
        if self.auth.trust_proxy_headers && self.auth.trusted_proxies.is_empty() {
            return invalid(
                "auth.trusted_proxies",
                "must name at least one network when auth.trust_proxy_headers is on".into(),
            );
        }
        if self.caldav.provider_lease_ms < MIN_PROVIDER_LEASE_MS {
            return invalid(
                "caldav.provider_lease_ms",
                format!("must be at least {MIN_PROVIDER_LEASE_MS} (renewed every quarter of it)"),
            );
        }
        if self.actors.restart_backoff_max_ms < self.actors.restart_backoff_ms {
            return invalid(
                "actors.restart_backoff_max_ms",
                "must not be below actors.restart_backoff_ms".into(),
            );
        }
        self.validate_push()?;
        if let Some(path) = &self.outbound.ca_file
            && let Err(reason) = crate::providers::outbound::read_ca_file(path)
        {
            return invalid("outbound.ca_file", reason);
        }
        if let Some(key) = &self.caldav.enc_key {
            let key = key.expose();
            if key.len() != 64 || !key.chars().all(|c| c.is_ascii_hexdigit()) {
                return invalid(
                    "caldav.enc_key",
                    "must be 64 hexadecimal characters (a 32-byte key)".into(),
                );
            }
        }
        Ok(())
    }
}

impl Settings {
    /// The web push settings: the VAPID keys and subject together or not at all, a key pair
    /// that belongs together, and timings that fit one another.
    fn validate_push(&self) -> Result<(), ConfigError> {
        let push = &self.push;
        let invalid = |key: &str, reason: String| Err(ConfigError::invalid(key, reason));
        match (
            &push.vapid_public_key,
            &push.vapid_private_key,
            &push.vapid_subject,
        ) {
            (None, None, None) => {}
            (Some(public), Some(private), Some(subject)) => {
                if let Err(reason) =
                    crate::push::vapid::Vapid::new(public, private.expose(), subject)
                {
                    return invalid("push.vapid_public_key", reason.to_string());
                }
            }
            _ => {
                return invalid(
                    "push.vapid_public_key",
                    "VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY and VAPID_SUBJECT must be set together \
                     (one without the others would advertise push this server cannot send)"
                        .into(),
                );
            }
        }
        if push.tick_ms < 10 {
            return invalid("push.tick_ms", "must be at least 10".into());
        }
        if push.lease_ms < push.tick_ms.saturating_mul(2) {
            return invalid(
                "push.lease_ms",
                "must be at least twice push.tick_ms (the holder renews it every tick)".into(),
            );
        }
        if push.max_catchup_ms < push.tick_ms {
            return invalid(
                "push.max_catchup_ms",
                "must not be below push.tick_ms".into(),
            );
        }
        if push.request_timeout_ms == 0 {
            return invalid("push.request_timeout_ms", "must be positive".into());
        }
        Ok(())
    }
}

/// Checks that `url` is a bare http(s) origin (`https://host[:port]`, no path or query).
fn parse_origin(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("{url:?} must start with http:// or https://"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(format!(
            "{url:?} must be an origin such as https://cal.example.com"
        ));
    }
    Ok(())
}
