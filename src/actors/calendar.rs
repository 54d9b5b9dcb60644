//! [`CalendarActor`]: one per active calendar, the single writer (within this process) of
//! its metadata, membership, invites and, later, events. It handles one command at a time
//! through [`crate::commands`], so changes to one calendar are ordered and their frames leave
//! in commit order; calendars never wait for each other.
//!
//! It receives commands only through its supervisor, and when it has been idle for
//! `ACTOR_CALENDAR_IDLE_MS` it tells the supervisor, which stops it if nothing was forwarded
//! in the meantime. An actor whose calendar does not exist (an unknown id in a request, or
//! the calendar it just deleted) answers and asks to be stopped right away.

use super::Shared;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use uuid::Uuid;

use super::calendars::CalendarsMsg;
use super::{ActorKind, MessageTimer, reply};
use crate::commands::{self, events::create::PendingCreate};
use crate::domain::ids::CalendarId;
use crate::store::events::remembered_roles::RememberedRoles;
use crate::views::events::EventView;

pub use super::calendar_msg::{CalendarCommand, CalendarMsg, EventCommand, Reply};

/// A calendar's actor.
#[derive(Debug)]
pub struct CalendarActor;

/// What a calendar actor starts with.
pub struct CalendarArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// Its calendar.
    pub calendar_id: Uuid,
    /// Its supervisor (told when the actor is idle).
    pub supervisor: ActorRef<CalendarsMsg>,
}

/// The actor's state.
pub struct CalendarState {
    shared: Arc<Shared>,
    calendar_id: CalendarId,
    supervisor: ActorRef<CalendarsMsg>,
    idle_after: Duration,
    /// Commands handled so far (compared with the supervisor's forwarded count).
    handled: u64,
    /// `CreateEvent`s waiting for the next group commit, with their callers' ports.
    pending_creates: Vec<(PendingCreate, Reply<EventView>)>,
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
    /// Queues a creation for the next group commit: commands already in the mailbox arrive
    /// before the flush and join the batch.
    async fn queue_create(
        &mut self,
        myself: &ActorRef<CalendarMsg>,
        pending: PendingCreate,
        port: Reply<EventView>,
    ) {
        self.handled += 1;
        self.pending_creates.push((pending, port));
        if !self.flush_queued {
            self.flush_queued = myself.send_message(CalendarMsg::FlushCreates).is_ok();
        }
        if !self.flush_queued || self.pending_creates.len() >= MAX_BATCH {
            self.flush_creates().await;
        }
    }

    /// Commits the queued creations (before any other command, to keep commit order).
    async fn flush_creates(&mut self) {
        while !self.pending_creates.is_empty() {
            let take = self.pending_creates.len().min(MAX_BATCH);
            let (batch, ports): (Vec<PendingCreate>, Vec<_>) =
                self.pending_creates.drain(..take).unzip();
            let answers = commands::events::create::create_all(
                &self.shared.services,
                self.calendar_id,
                &batch,
                &self.remembered_roles,
            )
            .await;
            for (port, answer) in ports.into_iter().zip(answers) {
                reply(port, answer);
            }
        }
    }

    /// Tells the supervisor the actor is idle if nothing arrived since the last check (one
    /// check is outstanding at a time), and schedules the next.
    fn idle_check(&self, myself: &ActorRef<CalendarMsg>, handled: u64) {
        if handled == self.handled {
            let _ = self.supervisor.send_message(CalendarsMsg::Idle {
                calendar_id: self.calendar_id.0,
                handled,
            });
        }
        let handled = self.handled;
        myself.send_after(self.idle_after, move || CalendarMsg::IdleCheck { handled });
    }

    /// Asks the supervisor to stop this actor now if its calendar does not exist (it stops
    /// it unless a command was forwarded meanwhile, which then asks again).
    fn stop_if_missing(&self) {
        if self.missing && self.pending_creates.is_empty() {
            let _ = self.supervisor.send_message(CalendarsMsg::Idle {
                calendar_id: self.calendar_id.0,
                handled: self.handled,
            });
        }
    }

    /// Runs a command about the calendar, its members or its invites.
    async fn run(&mut self, command: CalendarCommand) {
        let (shared, id) = (&self.shared.services, self.calendar_id);
        match command {
            CalendarCommand::Update {
                by,
                change,
                reply: port,
            } => {
                reply(
                    port,
                    commands::calendar::update(shared, id, &by, change).await,
                );
            }
            CalendarCommand::Delete { by, reply: port } => {
                let deleted = commands::calendar::delete(shared, id, &by).await;
                self.missing |= deleted.is_ok();
                reply(port, deleted);
            }
            CalendarCommand::Join {
                user,
                invite,
                reply: port,
            } => {
                reply(
                    port,
                    commands::membership::join(shared, id, &user, invite).await,
                );
            }
            CalendarCommand::Leave { user, reply: port } => {
                reply(port, commands::membership::leave(shared, id, &user).await);
            }
            CalendarCommand::SetRole {
                by,
                target,
                role,
                reply: port,
            } => reply(
                port,
                commands::membership::set_role(shared, id, &by, &target, role).await,
            ),
            CalendarCommand::RemoveMember {
                by,
                target,
                reply: port,
            } => {
                reply(
                    port,
                    commands::membership::remove(shared, id, &by, &target).await,
                );
            }
            CalendarCommand::CreateInvite {
                by,
                expires_at,
                max_uses,
                reply: port,
            } => reply(
                port,
                commands::invites::create(shared, id, &by, expires_at, max_uses).await,
            ),
            CalendarCommand::RevokeInvite {
                by,
                invite,
                reply: port,
            } => {
                reply(
                    port,
                    commands::invites::revoke(shared, id, &by, invite).await,
                );
            }
        }
    }

    /// Runs a command about an event homed in the calendar (creations are batched
    /// instead: [`CalendarState::queue_create`]).
    async fn run_event(&self, command: EventCommand) {
        let (shared, id) = (&self.shared.services, self.calendar_id);
        match command {
            EventCommand::Update {
                by,
                input,
                base_revision,
                reply: port,
            } => reply(
                port,
                commands::events::update(shared, &by, input, base_revision).await,
            ),
            EventCommand::Delete {
                by,
                event,
                unlink,
                reply: port,
            } => {
                reply(
                    port,
                    commands::events::delete(shared, &by, event, unlink).await,
                );
            }
            EventCommand::Link {
                by,
                event,
                target,
                reply: port,
            } => {
                reply(
                    port,
                    commands::events::links::link(shared, &by, event, target).await,
                );
            }
            EventCommand::Fork {
                by,
                event,
                reply: port,
            } => {
                reply(
                    port,
                    commands::events::links::fork(shared, &by, event, id).await,
                );
            }
            EventCommand::SetAttendance {
                by,
                event,
                answer,
                reply: port,
            } => reply(
                port,
                commands::events::links::set_attendance(shared, &by, event, answer).await,
            ),
            EventCommand::Create {
                by,
                input,
                reply: port,
            } => {
                // A creation on its own, as a batch of one.
                let batch = [PendingCreate { by, input }];
                let answers = commands::events::create::create_all(
                    shared,
                    id,
                    &batch,
                    &self.remembered_roles,
                );
                if let Some(answer) = answers.await.pop() {
                    reply(port, answer);
                }
            }
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
        let idle_after = Duration::from_millis(args.shared.settings.actors.calendar_idle_ms);
        myself.send_after(idle_after, || CalendarMsg::IdleCheck { handled: 0 });
        // Commands may name any calendar id; one that does not exist must not keep an actor.
        let missing = match crate::store::calendars::find(args.shared.db.conn(), args.calendar_id)
            .await
        {
            Ok(found) => found.is_none(),
            Err(err) => {
                tracing::warn!(calendar = %args.calendar_id, error = %err, "calendar.lookup_failed");
                false
            }
        };
        Ok(CalendarState {
            shared: args.shared,
            calendar_id: CalendarId(args.calendar_id),
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
        let _timer = MessageTimer::start(&state.shared.metrics, ActorKind::Calendar);
        match message {
            CalendarMsg::IdleCheck { handled } => state.idle_check(&myself, handled),
            CalendarMsg::FlushCreates => {
                state.flush_queued = false;
                state.flush_creates().await;
                state.stop_if_missing();
            }
            CalendarMsg::Event(EventCommand::Create { by, input, reply }) => {
                state
                    .queue_create(&myself, PendingCreate { by, input }, reply)
                    .await;
            }
            CalendarMsg::Command(command) => {
                state.handled += 1;
                state.flush_creates().await;
                state.run(command).await;
                state.stop_if_missing();
            }
            CalendarMsg::Event(command) => {
                state.handled += 1;
                state.flush_creates().await;
                state.run_event(command).await;
                state.stop_if_missing();
            }
            #[cfg(feature = "fault-injection")]
            CalendarMsg::InjectPanic { reply: _port } => {
                panic!("fault injected into calendar {}", state.calendar_id);
            }
        }
        Ok(())
    }
}
