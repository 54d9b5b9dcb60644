//! The sections of the outside services Bowline talks to: identity providers (Google,
//! Apple, Microsoft), CalDAV credentials and federation.

use serde::Deserialize;

use super::values::{Secret, optional_secret, optional_string, string_list};

/// `[google]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoogleSettings {
    /// `GOOGLE_CLIENT_ID`
    #[serde(deserialize_with = "optional_string")]
    pub client_id: Option<String>,
    /// `GOOGLE_CLIENT_SECRET`
    #[serde(deserialize_with = "optional_secret")]
    pub client_secret: Option<Secret>,
    /// `GOOGLE_IOS_CLIENT_ID`
    #[serde(deserialize_with = "optional_string")]
    pub ios_client_id: Option<String>,
    /// `GOOGLE_JWKS_URL`
    pub jwks_url: String,
    /// `GOOGLE_ISSUERS`
    #[serde(deserialize_with = "string_list")]
    pub issuers: Vec<String>,
    /// `GOOGLE_AUTHORIZATION_URL`: where the browser is sent to consent to calendar access.
    pub authorization_url: String,
    /// `GOOGLE_TOKEN_URL`: code exchange and token refresh.
    pub token_url: String,
    /// `GOOGLE_REVOCATION_URL`: revoking a refresh token on disconnect.
    pub revocation_url: String,
    /// `GOOGLE_CALENDAR_API_URL`: Google Calendar API v3.
    pub calendar_api_url: String,
}

/// `[apple]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppleSettings {
    /// `APPLE_CLIENT_ID`
    #[serde(deserialize_with = "optional_string")]
    pub client_id: Option<String>,
    /// `APPLE_BUNDLE_ID`
    pub bundle_id: String,
    /// `APPLE_TEAM_ID`
    #[serde(deserialize_with = "optional_string")]
    pub team_id: Option<String>,
    /// `APPLE_JWKS_URL`
    pub jwks_url: String,
    /// `APPLE_ISSUER`
    pub issuer: String,
}

/// `[microsoft]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MicrosoftSettings {
    /// `MICROSOFT_CLIENT_ID`
    #[serde(deserialize_with = "optional_string")]
    pub client_id: Option<String>,
    /// `MICROSOFT_CLIENT_SECRET`
    #[serde(deserialize_with = "optional_secret")]
    pub client_secret: Option<Secret>,
    /// `MICROSOFT_JWKS_URL`: keys that sign Microsoft id tokens (native sign-in).
    pub jwks_url: String,
    /// `MICROSOFT_AUTHORIZATION_URL`: where the browser is sent to consent to calendar access.
    pub authorization_url: String,
    /// `MICROSOFT_TOKEN_URL`: code exchange and token refresh.
    pub token_url: String,
    /// `MICROSOFT_GRAPH_URL`: Microsoft Graph v1.0.
    pub graph_url: String,
    /// `MICROSOFT_SYNC_PAST_DAYS`: how far back the mirrored window of an Outlook calendar
    /// reaches (Graph's delta works on a window of time).
    pub sync_past_days: u32,
    /// `MICROSOFT_SYNC_FUTURE_DAYS`: how far ahead it reaches.
    pub sync_future_days: u32,
}

/// `[caldav]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaldavSettings {
    /// `CALDAV_ENC_KEY`
    #[serde(deserialize_with = "optional_secret")]
    pub enc_key: Option<Secret>,
    /// `EXTERNAL_SYNC_INTERVAL_MS` (0: no timer)
    pub sync_interval_ms: u64,
    /// `PROVIDER_CONNECT_TIMEOUT_MS`
    pub connect_timeout_ms: u64,
    /// `PROVIDER_REQUEST_TIMEOUT_MS`
    pub request_timeout_ms: u64,
    /// `OUTBOX_RETRY_BASE_MS`
    pub outbox_retry_base_ms: u64,
    /// `OUTBOX_RETRY_MAX_MS`
    pub outbox_retry_max_ms: u64,
    /// `OUTBOX_GIVE_UP_MS`
    pub outbox_give_up_ms: u64,
    /// `OUTBOX_LEASE_MS`
    pub outbox_lease_ms: u64,
    /// `PROVIDER_LEASE_MS`: the longest a connected account waits for another instance
    /// after the one running its sync died.
    pub provider_lease_ms: u64,
}

/// `[federation]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FederationSettings {
    /// `FEDERATION_ALLOW_PRIVATE_HOSTS`
    pub allow_private_hosts: bool,
    /// `FEDERATION_REQUEST_TIMEOUT_MS`
    pub request_timeout_ms: u64,
    /// `FEDERATION_STREAM_RETRY_MS`
    pub stream_retry_ms: u64,
}
