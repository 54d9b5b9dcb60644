//! Provider mirrors: connecting an account (CalDAV credentials in [`connect`], Google and
//! Microsoft by OAuth consent in [`link`]), pulling its calendars' changes into their local
//! mirrors ([`pull`]), delivering the outbox of local changes ([`deliver`]), calendar-level
//! writes that go to the provider first ([`calendars`]), and disconnecting accounts and
//! mirrors ([`disconnect`]).
//!
//! The engine is written once against [`source::Source`]; [`sources`] holds an adapter per
//! provider and [`accounts`] finds an account and the adapter it needs. Remote data goes
//! through the same rules as every other write: each remote item is read by the iCalendar
//! importer ([`resources`]), and [`apply`] writes the difference to what the mirror holds in
//! one transaction per calendar.

pub mod accounts;
pub mod apply;
pub mod calendars;
pub mod connect;
pub mod deliver;
pub mod disconnect;
pub mod intents;
pub mod link;
pub mod pull;
pub mod resources;
pub mod source;
pub mod sources;
pub mod sync;
pub mod tokens;

use std::sync::Arc;
use std::time::Duration;

use entities::caldav_accounts;

use crate::commands::Services;
use crate::cpu::CpuWork;
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::providers::caldav::CaldavClient;
use crate::providers::oauth::OAuthApp;
use crate::providers::outbound::OutboundGuard;
use crate::secret_box::SecretBox;

/// What the mirror commands use besides the store.
#[derive(Debug, Clone)]
pub struct Mirrors {
    /// The store, frames and metrics.
    pub services: Services,
    /// Every request to a provider goes through it.
    pub guard: OutboundGuard,
    /// Seals stored credentials; `None` when `CALDAV_ENC_KEY` is not set (no provider can
    /// be connected then: nothing could be stored sealed).
    pub secrets: Option<SecretBox>,
    /// Reading remote calendars runs off the async runtime.
    pub cpu: Arc<CpuWork>,
    /// This process, as the holder of the outbox rows it claims.
    pub instance_id: String,
    /// How outbox rows are retried.
    pub outbox: OutboxPolicy,
    /// The OAuth providers calendars can be linked with.
    pub oauth: OAuthApps,
    /// The public origin: OAuth redirect URIs are `<origin>/api/auth/callback/<provider>`.
    pub public_origin: String,
}

/// The OAuth applications configured (client id and secret set).
#[derive(Debug, Clone, Default)]
pub struct OAuthApps {
    /// Google, and its Calendar API base URL.
    pub google: Option<(OAuthApp, String)>,
    /// Microsoft, its Graph base URL, and the window of time mirrored (days back, days
    /// ahead).
    pub microsoft: Option<(OAuthApp, String, (u32, u32))>,
}

/// How outbox rows are claimed and retried.
#[derive(Debug, Clone, Copy)]
pub struct OutboxPolicy {
    /// How long a claim holds rows from other deliverers.
    pub lease: Duration,
    /// The first retry's delay; each further one doubles it.
    pub retry_base: Duration,
    /// The longest delay between retries.
    pub retry_max: Duration,
    /// A row still failing this long after its commit is given up and reported.
    pub give_up_after: Duration,
}

/// The message of every failed discovery (the reference's, word for word).
pub const DISCOVERY_FAILED: &str = "Could not connect to CalDAV server — check URL and credentials. (iCloud requires an app-specific password.)";

/// The start of the message of a failed initial sync.
pub const INITIAL_SYNC_FAILED: &str =
    "Credentials were accepted, but the initial calendar sync failed.";

impl Mirrors {
    /// Whether CalDAV accounts can be connected (a key to seal their passwords is set).
    pub fn caldav_enabled(&self) -> bool {
        self.secrets.is_some()
    }

    /// Whether `provider`'s calendars can be connected here: its app is configured and
    /// there is a key to seal what connecting stores.
    pub fn enabled(&self, provider: Provider) -> bool {
        match provider {
            Provider::Caldav => self.caldav_enabled(),
            Provider::Google | Provider::Microsoft => {
                self.secrets.is_some() && self.oauth_app(provider).is_some()
            }
        }
    }

    /// The OAuth application of `provider`, if configured.
    pub fn oauth_app(&self, provider: Provider) -> Option<&OAuthApp> {
        match provider {
            Provider::Google => self.oauth.google.as_ref().map(|(app, _)| app),
            Provider::Microsoft => self.oauth.microsoft.as_ref().map(|(app, _, _)| app),
            Provider::Caldav => None,
        }
    }

    /// Where `provider` sends the browser back after consent.
    pub fn redirect_uri(&self, provider: Provider) -> String {
        format!(
            "{}/api/auth/callback/{}",
            self.public_origin.trim_end_matches('/'),
            provider.as_str()
        )
    }

    /// The box sealing credentials, or 400 when no key is configured.
    pub fn secrets(&self) -> Result<&SecretBox, AppError> {
        self.secrets.as_ref().ok_or_else(|| {
            AppError::bad_request("CalDAV connections are not enabled on this server.")
        })
    }

    /// A client for a stored CalDAV account (its password opened with the configured key).
    pub fn caldav_client(
        &self,
        account: &caldav_accounts::Model,
    ) -> Result<CaldavClient, AppError> {
        let password = self
            .secrets()?
            .open(&account.encrypted_password)
            .map_err(|err| AppError::internal(err.to_string()))?;
        Ok(CaldavClient::new(
            self.guard.clone(),
            account.username.clone(),
            password,
        ))
    }
}
