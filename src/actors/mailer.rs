//! [`MailerActor`]: sends mail through the configured transport without holding up the
//! request that asked for it.
//!
//! `Send` is fire-and-forget with retries (a transient SMTP failure is retried with backoff);
//! `Deliver` answers once the server accepted the mail, for routes whose response says
//! whether it was sent. Each send runs in its own task so a slow SMTP server never blocks
//! the mailbox.

use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use tokio::sync::Semaphore;

use super::{ActorKind, MessageTimer, reply};
use crate::context::Ctx;
use crate::error::AppError;
use crate::mail::{Mail, MailError};

/// Retry delays of a fire-and-forget mail.
const RETRY_DELAYS: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(10)];
/// Mails in flight at once.
const CONCURRENT_SENDS: usize = 4;

/// The mailer.
#[derive(Debug)]
pub struct MailerActor;

/// The mailer's state.
pub struct MailerState {
    ctx: Ctx,
    permits: Arc<Semaphore>,
}

/// Messages to the mailer.
#[derive(Debug)]
pub enum MailerMsg {
    /// Send, retrying transient failures; nobody waits.
    Send {
        /// The mail.
        mail: Mail,
    },
    /// Send once and answer whether the server accepted it.
    Deliver {
        /// The mail.
        mail: Mail,
        /// `Ok` once accepted.
        reply: RpcReplyPort<Result<(), AppError>>,
    },
}

impl Actor for MailerActor {
    type Msg = MailerMsg;
    type State = MailerState;
    type Arguments = Ctx;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        ctx: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(MailerState {
            ctx,
            permits: Arc::new(Semaphore::new(CONCURRENT_SENDS)),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let _timer = MessageTimer::start(&state.ctx.metrics, ActorKind::Mailer);
        let ctx = state.ctx.clone();
        let permits = state.permits.clone();
        match message {
            MailerMsg::Send { mail } => {
                tokio::spawn(async move {
                    let Ok(_permit) = permits.acquire().await else {
                        return;
                    };
                    send_with_retries(&ctx, &mail).await;
                });
            }
            MailerMsg::Deliver { mail, reply: port } => {
                tokio::spawn(async move {
                    let Ok(_permit) = permits.acquire().await else {
                        return;
                    };
                    let result = ctx.mail.send(&mail).await.map_err(|err| {
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
        }
        Ok(())
    }
}

async fn send_with_retries(ctx: &Ctx, mail: &Mail) {
    let mut delays = RETRY_DELAYS.iter();
    loop {
        match ctx.mail.send(mail).await {
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
