//! [`MailerActor`]: sends mail through the configured transport without holding up the
//! request that asked for it, and owns the timer of the batched change notifications.
//!
//! `Send` is fire-and-forget with retries (a transient SMTP failure is retried with backoff);
//! `Deliver` answers once the server accepted the mail, for routes whose response says
//! whether it was sent. Each send runs in its own task so a slow SMTP server never blocks
//! the mailbox. Batches: the pending rows live in the database; the actor wakes at the
//! earliest due time (told by `BatchQueued` after each commit, and reloaded from the
//! database at start, so a restart keeps the original due times) and sends what is due.
//! It also reads the next due time from the database every `MAIL_RESCAN_MS` whatever it was
//! told, so a batch whose announcement never came (its instance stopped between the commit
//! and the notice) is sent late rather than never.

use super::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ractor::concurrency::JoinHandle;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::Semaphore;

use super::{ActorKind, MessageTimer, reply};
use crate::error::AppError;
use crate::mail::{Mail, MailError};

/// Retry delays of a fire-and-forget mail.
const RETRY_DELAYS: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(10)];
/// Mails in flight at once.
const CONCURRENT_SENDS: usize = 4;

/// The mailer.
#[derive(Debug)]
pub struct MailerActor;

/// A scheduled wake-up: when, and the timer to cancel if an earlier one is needed.
type Wakeup = (
    DateTime<Utc>,
    JoinHandle<Result<(), ractor::MessagingErr<MailerMsg>>>,
);

/// The mailer's state.
pub struct MailerState {
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    /// The pending wake-up for due batches.
    wakeup: Option<Wakeup>,
    /// A batch drain is running.
    draining: bool,
    /// Another drain was asked for while one ran.
    drain_again: bool,
}

impl MailerState {
    /// Wakes the actor at `at`, unless an earlier wake-up is set.
    fn wake_at(&mut self, myself: &ActorRef<MailerMsg>, at: DateTime<Utc>) {
        if let Some((current, _)) = &self.wakeup
            && *current <= at
        {
            return;
        }
        if let Some((_, handle)) = self.wakeup.take() {
            handle.abort();
        }
        let delay = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        let handle = myself.send_after(delay, || MailerMsg::DrainBatches);
        self.wakeup = Some((at, handle));
    }
}

/// Messages to the mailer.
#[derive(Debug)]
pub enum MailerMsg {
    /// Send, retrying transient failures; nobody waits.
    Send {
        /// The mail.
        mail: Mail,
        /// When it was sent (`svc_actor_mailbox_wait_seconds`).
        sent: Instant,
    },
    /// Send once and answer whether the server accepted it.
    Deliver {
        /// The mail.
        mail: Mail,
        /// `Ok` once accepted.
        reply: RpcReplyPort<Result<(), AppError>>,
    },
    /// Notification rows were committed; their batch is due at `due_at`.
    BatchQueued {
        /// When the batch is due.
        due_at: DateTime<Utc>,
        /// When the notice was sent (`svc_actor_mailbox_wait_seconds`).
        sent: Instant,
    },
    /// Send the batches that are due (the timer).
    DrainBatches,
    /// A drain finished.
    DrainFinished,
}

impl Actor for MailerActor {
    type Msg = MailerMsg;
    type State = MailerState;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        shared: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        // Batches left pending by a previous run (or instance) keep their due times.
        myself.send_message(MailerMsg::DrainBatches)?;
        Ok(MailerState {
            shared,
            permits: Arc::new(Semaphore::new(CONCURRENT_SENDS)),
            wakeup: None,
            draining: false,
            drain_again: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let _timer = MessageTimer::start(&shared.metrics, ActorKind::Mailer);
        let permits = state.permits.clone();
        match message {
            MailerMsg::Send { mail, sent } => {
                shared
                    .metrics
                    .actor_mailbox_wait(ActorKind::Mailer.label(), sent);
                tokio::spawn(async move {
                    let Ok(_permit) = permits.acquire().await else {
                        return;
                    };
                    send_with_retries(&shared, &mail).await;
                });
            }
            MailerMsg::Deliver { mail, reply: port } => {
                tokio::spawn(async move {
                    let Ok(_permit) = permits.acquire().await else {
                        return;
                    };
                    let result = shared.mail.send(&mail).await.map_err(|err| {
                        tracing::warn!(kind = mail.kind, error = %err, "mail.failed");
                        AppError::BadGateway {
                            error: "MailNotSent".into(),
                            message: "The mail server did not accept the mail.".into(),
                            server: None,
                        }
                    });
                    reply(port, result);
                });
            }
            MailerMsg::BatchQueued { due_at, sent } => {
                shared
                    .metrics
                    .actor_mailbox_wait(ActorKind::Mailer.label(), sent);
                state.wake_at(&myself, due_at);
            }
            MailerMsg::DrainBatches => {
                state.wakeup = None;
                if state.draining {
                    state.drain_again = true;
                    return Ok(());
                }
                state.draining = true;
                let me = myself.clone();
                tokio::spawn(async move {
                    let sender = crate::mail::batches::Sender {
                        db: &shared.db,
                        mail: &shared.mail,
                        base_url: &shared.base_url,
                        retry_ms: shared.settings.mail.retry_ms,
                    };
                    if let Err(err) = crate::mail::batches::send_due(sender).await {
                        tracing::error!(error = %err, "notifications.drain_failed");
                    }
                    let _ = me.send_message(MailerMsg::DrainFinished);
                });
            }
            MailerMsg::DrainFinished => {
                state.draining = false;
                if std::mem::take(&mut state.drain_again) {
                    myself.send_message(MailerMsg::DrainBatches)?;
                } else {
                    // At least daily, whatever the setting.
                    let rescan_ms = i64::try_from(shared.settings.mail.rescan_ms)
                        .unwrap_or(i64::MAX)
                        .min(86_400_000);
                    state.wake_at(
                        &myself,
                        Utc::now() + chrono::Duration::milliseconds(rescan_ms),
                    );
                    match crate::store::notifications::next_wakeup(&shared.db).await {
                        Ok(Some(next)) => state.wake_at(&myself, next),
                        Ok(None) => {}
                        Err(err) => {
                            tracing::error!(error = %err, "notifications.schedule_failed");
                            let retry = Utc::now() + chrono::Duration::seconds(30);
                            state.wake_at(&myself, retry);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

async fn send_with_retries(shared: &Arc<Shared>, mail: &Mail) {
    let mut delays = RETRY_DELAYS.iter();
    loop {
        match shared.mail.send(mail).await {
            Ok(()) => return,
            Err(MailError::Invalid(reason)) => {
                tracing::warn!(kind = mail.kind, reason, "mail.dropped_invalid");
                return;
            }
            Err(err) => match delays.next() {
                Some(delay) => {
                    tracing::warn!(kind = mail.kind, error = %err, retry_in_ms = delay.as_millis() as u64, "mail.retrying");
                    tokio::time::sleep(*delay).await;
                }
                None => {
                    tracing::error!(kind = mail.kind, error = %err, "mail.failed");
                    return;
                }
            },
        }
    }
}
