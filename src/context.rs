//! [`AppContext`]: the one value shared by the HTTP edge and the actors of one server.
//!
//! It holds configuration, the database pool, the metric registry, the handles of the
//! supervised actors and the shutdown signal. A server is built around one `Arc<AppContext>`;
//! nothing is global, so several servers can run in one process.

use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::actors::Actors;
use crate::actors::calendar::{CalendarMsg, Reply};
use crate::auth::Auth;
use crate::commands::Services;
use crate::config::Settings;
use crate::cpu::CpuWork;
use crate::domain::capabilities::Capabilities;
use crate::domain::ids::CalendarId;
use crate::error::AppError;
use crate::mail::MailService;
use crate::metrics::Metrics;
use crate::rate_limit::RateLimiter;
use crate::store::Database;

/// Everything one server shares between its requests and its actors.
#[derive(Debug)]
pub struct AppContext {
    /// Validated configuration.
    pub settings: Settings,
    /// The public origin (`BASE_URL`, or the bound address when unset).
    pub base_url: String,
    /// Identifies this process among instances sharing a database (task leases).
    pub instance_id: String,
    /// The database pool.
    pub db: Database,
    /// This server's metric registry.
    pub metrics: Arc<Metrics>,
    /// What this server offers clients (sign-in providers, sync providers, mail).
    pub capabilities: Capabilities,
    /// Sign-in, sessions and the origin rules.
    pub auth: Auth,
    /// The mail transport (used by the mailer actor).
    pub mail: Arc<MailService>,
    /// In-memory rate limits.
    pub limits: RateLimiter,
    /// Outgoing HTTP (JWKS, providers, federation), rustls with compiled-in roots.
    pub http_client: reqwest::Client,
    /// CPU-heavy request work, off the async runtime and a few pieces at a time.
    pub cpu: CpuWork,
    /// Handles of the supervised actors.
    pub actors: Arc<Actors>,
    /// What the commands use (the database, the actors as where changes are announced,
    /// the metrics), shared with the fields above.
    pub services: Services,
    /// Shutdown signal shared by listeners, streams and actors.
    pub shutdown: Shutdown,
}

impl AppContext {
    /// Asks calendar `calendar`'s actor: sends the command `build` makes with the reply
    /// port and waits for the answer (up to the call timeout; a dead actor or a timeout is
    /// [`AppError::Unavailable`]).
    pub async fn ask_calendar<T, C>(
        &self,
        calendar: CalendarId,
        build: impl FnOnce(Reply<T>) -> C,
    ) -> Result<T, AppError>
    where
        T: Send + 'static,
        C: Into<CalendarMsg>,
    {
        self.actors
            .calendars
            .ask(self.settings.call_timeout(), calendar.0, |reply| {
                build(reply).into()
            })
            .await
    }
}

/// Shared handle to a server's context.
pub type Ctx = Arc<AppContext>;

/// The server's shutdown signal, and why it fired if not on request.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    token: CancellationToken,
    fatal: Arc<OnceLock<String>>,
}

impl Shutdown {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a graceful shutdown.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// Starts a shutdown because the server cannot go on (e.g. a supervisor gave up), so the
    /// process exits with an error and its manager restarts it.
    pub fn escalate(&self, reason: String) {
        let _ = self.fatal.set(reason);
        self.token.cancel();
    }

    /// Resolves once shutdown has started.
    pub async fn triggered(&self) {
        self.token.cancelled().await;
    }

    /// Whether shutdown has started.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// The reason of an escalated shutdown.
    pub fn fatal_reason(&self) -> Option<&str> {
        self.fatal.get().map(String::as_str)
    }

    /// The underlying token, for stream combinators.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}
