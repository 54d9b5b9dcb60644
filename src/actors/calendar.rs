//! [`CalendarActor`]: one per active calendar, the single writer (within this process) of
//! its metadata, membership, invites and, later, events. It handles one command at a time
//! through [`crate::commands`], so changes to one calendar are ordered and their frames leave
//! in commit order; calendars never wait for each other.
//!
//! It receives commands only through its supervisor, and when it has been idle for
//! `ACTOR_CALENDAR_IDLE_MS` it tells the supervisor, which stops it if nothing was forwarded
//! in the meantime.

use std::time::Duration;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use uuid::Uuid;

use super::calendars::CalendarsMsg;
use super::{ActorKind, MessageTimer, reply};
use crate::commands::event_batch::PendingCreate;
use crate::commands::{self, calendar::CalendarChange, membership::RoleChanged};
use crate::context::Ctx;
use crate::domain::events::{Attendance, EventInput};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::views::calendars::{CalendarView, InviteView, MembershipView};
use crate::views::events::{AttendeeView, DeletedEventView, EventView};

/// A reply port of a command.
pub type Reply<T> = RpcReplyPort<Result<T, AppError>>;

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
}

/// Most creations committed together (a bigger queue is committed in several batches).
const MAX_BATCH: usize = 256;

impl CalendarState {
    /// Commits the queued creations (before any other command, to keep commit order).
    async fn flush_creates(&mut self) {
        while !self.pending_creates.is_empty() {
            let take = self.pending_creates.len().min(MAX_BATCH);
            let batch: Vec<PendingCreate> = self.pending_creates.drain(..take).collect();
            commands::event_batch::create_all(&self.ctx, self.calendar_id, batch).await;
        }
    }
}

/// Commands for a calendar.
#[derive(Debug)]
pub enum CalendarMsg {
    /// Rename / recolor.
    Update {
        /// Acting user.
        actor: String,
        /// New values.
        change: CalendarChange,
        /// The updated calendar.
        reply: Reply<CalendarView>,
    },
    /// Delete the calendar.
    Delete {
        /// Acting user.
        actor: String,
        /// The removed calendar.
        reply: Reply<CalendarView>,
    },
    /// Join with an invite.
    Join {
        /// Joining user.
        user: String,
        /// The invite token.
        invite: Uuid,
        /// The membership created, if any.
        reply: Reply<Vec<MembershipView>>,
    },
    /// Leave.
    Leave {
        /// Leaving user.
        user: String,
        /// Done.
        reply: Reply<()>,
    },
    /// Change a member's role.
    SetRole {
        /// Acting user.
        actor: String,
        /// Member.
        target: String,
        /// New role.
        role: Role,
        /// `{id, role}`.
        reply: Reply<RoleChanged>,
    },
    /// Remove a member.
    RemoveMember {
        /// Acting user.
        actor: String,
        /// Member.
        target: String,
        /// Done.
        reply: Reply<()>,
    },
    /// Create an invite.
    CreateInvite {
        /// Acting user.
        actor: String,
        /// Expiry.
        expires_at: Option<DateTime<Utc>>,
        /// Use limit.
        max_uses: Option<i32>,
        /// The invite.
        reply: Reply<InviteView>,
    },
    /// Revoke an invite.
    RevokeInvite {
        /// Acting user.
        actor: String,
        /// The invite.
        invite: Uuid,
        /// Done.
        reply: Reply<()>,
    },
    /// Create an event homed in this calendar.
    CreateEvent {
        /// Acting user.
        actor: String,
        /// The validated event.
        input: EventInput,
        /// The created event.
        reply: Reply<EventView>,
    },
    /// Update an event homed here.
    UpdateEvent {
        /// Acting user.
        actor: String,
        /// The validated event.
        input: EventInput,
        /// The `revision` the client last saw, if it sent one (a stale one is a 409).
        base_revision: Option<i64>,
        /// The updated event.
        reply: Reply<EventView>,
    },
    /// Delete (or unlink from one calendar) an event homed here.
    DeleteEvent {
        /// Acting user.
        actor: String,
        /// The event.
        event: Uuid,
        /// Only this calendar's link.
        unlink: Option<Uuid>,
        /// `{id, calendars, removed}`.
        reply: Reply<DeletedEventView>,
    },
    /// Link an event homed here into another calendar.
    LinkEvent {
        /// Acting user.
        actor: String,
        /// The event.
        event: Uuid,
        /// The calendar to link into.
        target: Uuid,
        /// The event.
        reply: Reply<EventView>,
    },
    /// Copy an event into this calendar.
    ForkEvent {
        /// Acting user.
        actor: String,
        /// The source event.
        event: Uuid,
        /// The new event.
        reply: Reply<EventView>,
    },
    /// Answer attendance for an event homed here.
    SetAttendance {
        /// Acting user.
        actor: String,
        /// The event.
        event: Uuid,
        /// The answer.
        answer: Attendance,
        /// The attendees now.
        reply: Reply<Vec<AttendeeView>>,
    },
    /// Sent to itself after queuing a `CreateEvent`: commit what is queued as one batch.
    FlushCreates,
    /// Sent to itself: still idle since `handled` commands?
    IdleCheck {
        /// The count when the check was scheduled.
        handled: u64,
    },
    /// Panic inside the handler, to exercise supervision (test builds only).
    #[cfg(feature = "fault-injection")]
    InjectPanic {
        /// Dropped unanswered by the panic.
        reply: Reply<()>,
    },
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
        Ok(CalendarState {
            ctx: args.ctx,
            calendar_id: args.calendar_id,
            supervisor: args.supervisor,
            idle_after,
            handled: 0,
            pending_creates: Vec::new(),
            flush_queued: false,
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
                reply(port, commands::calendar::delete(&ctx, id, &actor).await);
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
                commands::events::update(&ctx, &actor, input, base_revision).await,
            ),
            CalendarMsg::DeleteEvent {
                actor,
                event,
                unlink,
                reply: port,
            } => reply(
                port,
                commands::events::delete(&ctx, &actor, event, unlink).await,
            ),
            CalendarMsg::LinkEvent {
                actor,
                event,
                target,
                reply: port,
            } => reply(
                port,
                commands::event_links::link(&ctx, &actor, event, target).await,
            ),
            CalendarMsg::ForkEvent {
                actor,
                event,
                reply: port,
            } => reply(
                port,
                commands::event_links::fork(&ctx, &actor, event, id).await,
            ),
            CalendarMsg::SetAttendance {
                actor,
                event,
                answer,
                reply: port,
            } => reply(
                port,
                commands::event_links::set_attendance(&ctx, &actor, event, answer).await,
            ),
            CalendarMsg::IdleCheck { .. }
            | CalendarMsg::FlushCreates
            | CalendarMsg::CreateEvent { .. } => {}
            #[cfg(feature = "fault-injection")]
            CalendarMsg::InjectPanic { reply: _port } => {
                panic!("fault injected into calendar {id}");
            }
        }
        Ok(())
    }
}
