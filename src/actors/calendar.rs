//! [`CalendarActor`]: one per active calendar, the single writer (within this process) of
//! its metadata, membership, invites and, later, events. It handles one command at a time
//! through [`crate::commands`], so changes to one calendar are ordered and their frames leave
//! in commit order; calendars never wait for each other.
//!
//! It receives commands only through its supervisor, and when it has been idle for
//! `ACTOR_CALENDAR_IDLE_MS` it tells the supervisor, which stops it if nothing was forwarded
//! in the meantime. An actor whose calendar does not exist (an unknown id in a request, or
//! the calendar it just deleted) answers and asks to be stopped right away.

use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use uuid::Uuid;

use super::calendars::CalendarsMsg;
use super::{ActorKind, MessageTimer, reply};
use crate::commands::event_batch::PendingCreate;
use crate::commands::{self, refuse_constraint, retry_transient};
use crate::context::Ctx;
use crate::store::events::remembered_roles::RememberedRoles;

pub use super::calendar_msg::{CalendarMsg, Reply};

/// A calendar's actor.
#[derive(Debug)]
pub struct CalendarActor;

/// What a calendar actor starts with.
pub struct CalendarArgs {
    /// The server's context.
    pub ctx: Ctx,
    /// Its calendar.
    pub calendar_id: Uuid,
    /// Its supervisor (told when the actor is idle).
    pub supervisor: ActorRef<CalendarsMsg>,
}

/// The actor's state.
pub struct CalendarState {
    ctx: Ctx,
    calendar_id: Uuid,
    supervisor: ActorRef<CalendarsMsg>,
    idle_after: Duration,
    /// Commands handled so far (compared with the supervisor's forwarded count).
    handled: u64,
    /// `CreateEvent`s waiting for the next group commit.
    pending_creates: Vec<PendingCreate>,
    /// A `FlushCreates` is in the mailbox.
    flush_queued: bool,
    /// The roles its batches of creations were authorized by (checked when used).
    remembered_roles: RememberedRoles,
    /// The calendar does not exist (it never did, or it was deleted): the actor answers
    /// what it was sent and asks to be stopped at once instead of idling.
    missing: bool,
}

/// Most creations committed together (a bigger queue is committed in several batches).
const MAX_BATCH: usize = 256;

impl CalendarState {
    /// Commits the queued creations (before any other command, to keep commit order).
    async fn flush_creates(&mut self) {
        while !self.pending_creates.is_empty() {
            let take = self.pending_creates.len().min(MAX_BATCH);
            let batch: Vec<PendingCreate> = self.pending_creates.drain(..take).collect();
            commands::event_batch::create_all(
                &self.ctx,
                self.calendar_id,
                batch,
                &self.remembered_roles,
            )
            .await;
        }
    }
}

impl CalendarState {
    /// Asks the supervisor to stop this actor now if its calendar does not exist (it stops
    /// it unless a command was forwarded meanwhile, which then asks again).
    fn stop_if_missing(&self) {
        if self.missing && self.pending_creates.is_empty() {
            let _ = self.supervisor.send_message(CalendarsMsg::Idle {
                calendar_id: self.calendar_id,
                handled: self.handled,
            });
        }
    }
}

impl Actor for CalendarActor {
    type Msg = CalendarMsg;
    type State = CalendarState;
    type Arguments = CalendarArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let idle_after = Duration::from_millis(args.ctx.settings.actors.calendar_idle_ms);
        myself.send_after(idle_after, || CalendarMsg::IdleCheck { handled: 0 });
        // Commands may name any calendar id; one that does not exist must not keep an actor.
        let missing = match crate::store::calendars::find(args.ctx.db.conn(), args.calendar_id)
            .await
        {
            Ok(found) => found.is_none(),
            Err(err) => {
                tracing::warn!(calendar = %args.calendar_id, error = %err, "calendar.lookup_failed");
                false
            }
        };
        Ok(CalendarState {
            ctx: args.ctx,
            calendar_id: args.calendar_id,
            supervisor: args.supervisor,
            idle_after,
            handled: 0,
            pending_creates: Vec::new(),
            flush_queued: false,
            remembered_roles: RememberedRoles::default(),
            missing,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let ctx = state.ctx.clone();
        let _timer = MessageTimer::start(&ctx.metrics, ActorKind::Calendar);
        let id = state.calendar_id;
        let message = match message {
            CalendarMsg::IdleCheck { handled } => {
                // One check is outstanding at a time: idle when nothing arrived since the
                // last one (the supervisor stops us unless it forwarded something meanwhile).
                if handled == state.handled {
                    let _ = state.supervisor.send_message(CalendarsMsg::Idle {
                        calendar_id: id,
                        handled,
                    });
                }
                let handled = state.handled;
                myself.send_after(state.idle_after, move || CalendarMsg::IdleCheck { handled });
                return Ok(());
            }
            CalendarMsg::FlushCreates => {
                state.flush_queued = false;
                state.flush_creates().await;
                state.stop_if_missing();
                return Ok(());
            }
            CalendarMsg::CreateEvent {
                actor,
                input,
                reply,
            } => {
                state.handled += 1;
                state.pending_creates.push(PendingCreate {
                    actor,
                    input,
                    reply,
                });
                // Commands already in the mailbox arrive before the flush and join the batch.
                if !state.flush_queued {
                    state.flush_queued = myself.send_message(CalendarMsg::FlushCreates).is_ok();
                }
                if !state.flush_queued || state.pending_creates.len() >= MAX_BATCH {
                    state.flush_creates().await;
                }
                return Ok(());
            }
            other => other,
        };
        state.handled += 1;
        state.flush_creates().await;
        match message {
            CalendarMsg::Update {
                actor,
                change,
                reply: port,
            } => reply(
                port,
                commands::calendar::update(&ctx, id, &actor, change).await,
            ),
            CalendarMsg::Delete { actor, reply: port } => {
                let deleted =
                    retry_transient(|| commands::calendar::delete(&ctx, id, &actor)).await;
                state.missing |= deleted.is_ok();
                reply(port, deleted);
            }
            CalendarMsg::Join {
                user,
                invite,
                reply: port,
            } => reply(
                port,
                commands::membership::join(&ctx, id, &user, invite).await,
            ),
            CalendarMsg::Leave { user, reply: port } => {
                reply(port, commands::membership::leave(&ctx, id, &user).await);
            }
            CalendarMsg::SetRole {
                actor,
                target,
                role,
                reply: port,
            } => reply(
                port,
                commands::membership::set_role(&ctx, id, &actor, &target, role).await,
            ),
            CalendarMsg::RemoveMember {
                actor,
                target,
                reply: port,
            } => reply(
                port,
                commands::membership::remove(&ctx, id, &actor, &target).await,
            ),
            CalendarMsg::CreateInvite {
                actor,
                expires_at,
                max_uses,
                reply: port,
            } => reply(
                port,
                commands::invites::create(&ctx, id, &actor, expires_at, max_uses).await,
            ),
            CalendarMsg::RevokeInvite {
                actor,
                invite,
                reply: port,
            } => reply(
                port,
                commands::invites::revoke(&ctx, id, &actor, invite).await,
            ),
            CalendarMsg::UpdateEvent {
                actor,
                input,
                base_revision,
                reply: port,
            } => reply(
                port,
                retry_transient(|| {
                    commands::events::update(&ctx, &actor, input.clone(), base_revision)
                })
                .await
                .map_err(refuse_constraint),
            ),
            CalendarMsg::DeleteEvent {
                actor,
                event,
                unlink,
                reply: port,
            } => reply(
                port,
                retry_transient(|| commands::events::delete(&ctx, &actor, event, unlink))
                    .await
                    .map_err(refuse_constraint),
            ),
            CalendarMsg::LinkEvent {
                actor,
                event,
                target,
                reply: port,
            } => reply(
                port,
                retry_transient(|| commands::event_links::link(&ctx, &actor, event, target))
                    .await
                    .map_err(refuse_constraint),
            ),
            CalendarMsg::ForkEvent {
                actor,
                event,
                reply: port,
            } => reply(
                port,
                retry_transient(|| commands::event_links::fork(&ctx, &actor, event, id))
                    .await
                    .map_err(refuse_constraint),
            ),
            CalendarMsg::SetAttendance {
                actor,
                event,
                answer,
                reply: port,
            } => reply(
                port,
                retry_transient(|| {
                    commands::event_links::set_attendance(&ctx, &actor, event, answer)
                })
                .await
                .map_err(refuse_constraint),
            ),
            CalendarMsg::IdleCheck { .. }
            | CalendarMsg::FlushCreates
            | CalendarMsg::CreateEvent { .. } => {}
            #[cfg(feature = "fault-injection")]
            CalendarMsg::InjectPanic { reply: _port } => {
                panic!("fault injected into calendar {id}");
            }
        }
        state.stop_if_missing();
        Ok(())
    }
}
