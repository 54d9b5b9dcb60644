//! [`Shared`]: what the actors of one server share with each other and with its requests:
//! configuration, the database, metrics, the mail transport, the rate limits, the commands'
//! services, the actors' own handles and the shutdown signal.

use std::sync::Arc;

use super::calendar::{CalendarMsg, Reply};
use super::{Actors, EventHomes};
use crate::commands::Services;
use crate::commands::mirrors::Mirrors;
use crate::config::Settings;
use crate::domain::ids::{CalendarId, EventId};
use crate::error::AppError;
use crate::federation::Federation;
use crate::mail::MailService;
use crate::metrics::Metrics;
use crate::push::send::PushSender;
use crate::rate_limit::RateLimiter;
use crate::shutdown::Shutdown;
use crate::store::Database;
use crate::store::events::{self as event_store, EventHome};

/// What one server's actors share.
#[derive(Debug)]
pub struct Shared {
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
    /// The mail transport (used by the mailer actor).
    pub mail: Arc<MailService>,
    /// In-memory rate limits.
    pub limits: RateLimiter,
    /// What the commands use (the database, the actors as where changes are announced,
    /// the metrics), shared with the fields above.
    pub services: Services,
    /// Handles of the supervised actors.
    pub actors: Arc<Actors>,
    /// Shutdown signal shared by listeners, streams and actors.
    pub shutdown: Shutdown,
    /// What the provider mirrors use (outbound guard, sealed credentials).
    pub mirrors: Mirrors,
    /// What federation's home side uses (the same guard, the roaming tokens' key).
    pub federation: Federation,
    /// The web push sender, when VAPID keys are configured.
    pub push: Option<PushSender>,
    /// The homes of recently written events, by which edits are routed to their actors.
    pub event_homes: EventHomes,
}

impl Shared {
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
            .ask(self.settings.call_timeout(), calendar, |reply| {
                build(reply).into()
            })
            .await
    }

    /// Asks the actor of the calendar that serializes changes to `event` (its home, or with
    /// no home recorded the first calendar it is in), as [`Self::ask_calendar`]; an event
    /// that does not exist or is deleted is a 404.
    ///
    /// A recorded home never changes, so it is remembered ([`EventHomes`]: from the event's
    /// creation here, or from its first read) and later commands skip the read. An event
    /// deleted since is refused by the actor as it would have been here.
    pub async fn ask_event_home<T, C>(
        &self,
        event: EventId,
        build: impl FnOnce(Reply<T>) -> C,
    ) -> Result<T, AppError>
    where
        T: Send + 'static,
        C: Into<CalendarMsg>,
    {
        let home = match self.event_homes.get(event) {
            Some(home) => home,
            None => match event_store::home_calendar(&self.db, event).await? {
                Some(EventHome::Recorded(home)) => {
                    self.event_homes.remember(event, home);
                    home
                }
                Some(home) => home.calendar(),
                None => return Err(AppError::not_found("Event not found...")),
            },
        };
        self.ask_calendar(home, build).await
    }
}
