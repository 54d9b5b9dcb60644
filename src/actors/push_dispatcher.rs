//! [`PushDispatcherActor`]: sends reminders as web push. Every `PUSH_TICK_MS` it runs one
//! pass of the dispatcher ([`crate::push::dispatch`]): it claims the dispatch lease in the
//! database (one instance sends at a time; another takes over when a holder stops renewing
//! it), sends what fell due since the durable cursor, and moves the cursor. The pass runs
//! in the actor's handler, so a pass never overlaps the next, and a pass that panics fails
//! the actor, which the root counts and restarts like its other children. Without VAPID keys
//! it does nothing. On stop it lets go of the lease, so another instance takes over at once.

use super::Shared;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::{ActorKind, MessageTimer};
use crate::push::dispatch::{DISPATCHER, Dispatcher};
use crate::store::push as push_store;

/// The reminder push dispatcher.
#[derive(Debug)]
pub struct PushDispatcherActor;

/// Messages to the dispatcher.
#[derive(Debug)]
pub enum PushDispatcherMsg {
    /// Run a pass, then schedule the next.
    Tick,
}

/// The dispatcher's state.
pub struct PushDispatcherState {
    shared: Arc<Shared>,
}

impl Actor for PushDispatcherActor {
    type Msg = PushDispatcherMsg;
    type State = PushDispatcherState;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        shared: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        if shared.push.is_some() {
            myself.send_message(PushDispatcherMsg::Tick)?;
        }
        Ok(PushDispatcherState { shared })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let _timer = MessageTimer::start(&shared.metrics, ActorKind::PushDispatcher);
        let PushDispatcherMsg::Tick = message;
        let Some(sender) = &shared.push else {
            return Ok(());
        };
        let settings = &shared.settings.push;
        let dispatcher = Dispatcher {
            db: &shared.db,
            sender,
            metrics: &shared.metrics,
            holder: &shared.instance_id,
            lease: Duration::from_millis(settings.lease_ms),
            max_catchup: Duration::from_millis(settings.max_catchup_ms),
        };
        match dispatcher.pass(Utc::now()).await {
            Ok(report) if report.held => {
                if report.sent + report.skipped + report.dropped > 0 {
                    tracing::info!(
                        sent = report.sent,
                        skipped = report.skipped,
                        dropped = report.dropped,
                        "push.dispatch.pass"
                    );
                }
            }
            Ok(_) => {}
            Err(err) => tracing::error!(error = %err, "push.dispatch.failed"),
        }
        myself.send_after(Duration::from_millis(settings.tick_ms), || {
            PushDispatcherMsg::Tick
        });
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = &state.shared;
        // A server abandoned as if killed leaves its lease to expire, as a dead process would.
        if shared.push.is_some()
            && !shared.shutdown.is_abandoned()
            && let Err(err) = push_store::release(&shared.db, DISPATCHER, &shared.instance_id).await
        {
            tracing::warn!(error = %err, "push.dispatch.release_failed");
        }
        Ok(())
    }
}
