//! Provider mirrors: connecting an account ([`connect`]), pulling its calendars' changes
//! into their local mirrors ([`pull`]), delivering the outbox of local changes
//! ([`deliver`]), and disconnecting accounts and mirrors ([`disconnect`]).
//!
//! Remote data goes through the same rules as every other write: each remote resource is
//! read by the iCalendar importer ([`resources`]), which gives the events Bowline stores
//! for it (a series and its edited occurrences become several events), and [`apply`]
//! writes the difference to what the mirror holds in one transaction per calendar.

pub mod apply;
pub mod calendars;
pub mod connect;
pub mod deliver;
pub mod disconnect;
pub mod intents;
pub mod pull;
pub mod resources;

use std::sync::Arc;
use std::time::Duration;

use entities::caldav_accounts;

use crate::commands::Services;
use crate::cpu::CpuWork;
use crate::error::AppError;
use crate::providers::caldav::CaldavClient;
use crate::providers::outbound::OutboundGuard;
use crate::secret_box::SecretBox;

/// What the mirror commands use besides the store.
#[derive(Debug, Clone)]
pub struct Mirrors {
    /// The store, frames and metrics.
    pub services: Services,
    /// Every request to a provider goes through it.
    pub guard: OutboundGuard,
    /// Seals stored credentials; `None` when `CALDAV_ENC_KEY` is not set (CalDAV is off).
    pub secrets: Option<SecretBox>,
    /// Reading remote calendars runs off the async runtime.
    pub cpu: Arc<CpuWork>,
    /// This process, as the holder of the outbox rows it claims.
    pub instance_id: String,
    /// How outbox rows are retried.
    pub outbox: OutboxPolicy,
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

    /// The box sealing credentials, or 400 when CalDAV is not configured.
    pub fn secrets(&self) -> Result<&SecretBox, AppError> {
        self.secrets.as_ref().ok_or_else(|| {
            AppError::bad_request("CalDAV connections are not enabled on this server.")
        })
    }

    /// A client for a stored account (its password opened with the configured key).
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
