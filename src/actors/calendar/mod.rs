//! [`CalendarActor`]: one per active calendar, the single writer (within this process) of
//! its metadata, membership, invites and the events homed in it. It handles one command at
//! a time through [`crate::commands`], so changes to one calendar are ordered and their
//! frames leave in commit order; calendars never wait for each other. Event commands that
//! queue up while it is busy are committed together, in arrival order, as one transaction:
//! creations alone as a batch of creations, and creations mixed with updates, deletes,
//! links and attendance answers as a batch of edits. On PostgreSQL a batch's answers wait
//! until this instance heard its frames, on a task of their own: the actor goes on to the
//! next batch as soon as one has committed, and a batch of creations begins the next
//! batch's transaction ([`NextWrite`]) while it is written, released at once if no event
//! command was waiting.
//!
//! It receives commands only through its supervisor, and when it has been idle for
//! `ACTOR_CALENDAR_IDLE_MS` it tells the supervisor, which stops it if nothing was forwarded
//! in the meantime. An actor whose calendar does not exist (an unknown id in a request, or
//! the calendar it just deleted) answers and asks to be stopped right away.

use super::Shared;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::calendars::CalendarsMsg;
use super::{ActorKind, MessageTimer, reply};
use crate::commands::events::edits::{self, Edit};
use crate::commands::{self, events::create::PendingCreate};
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::store::events::remembered_roles::RememberedRoles;
use crate::store::{NextWrite, Unheard};
use crate::views::events::EventView;

mod messages;

pub use messages::{CalendarCommand, CalendarMsg, EditReply, EventCommand, Reply};

/// A calendar's actor.
#[derive(Debug)]
pub struct CalendarActor;

/// What a calendar actor starts with.
pub struct CalendarArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// Its calendar.
    pub calendar_id: CalendarId,
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
    /// Event commands waiting for the next group commit, in arrival order, with their
    /// callers' ports.
    pending: Vec<Pending>,
    /// A `FlushEvents` is in the mailbox.
    flush_queued: bool,
    /// The roles its batches of creations were authorized by (checked when used).
    remembered_roles: RememberedRoles,
    /// Its next batch's write transaction, when a batch of creations began it ahead.
    next_write: NextWrite,
    /// The calendar does not exist (it never did, or it was deleted): the actor answers
    /// what it was sent and asks to be stopped at once instead of idling.
    missing: bool,
}

/// Most event commands committed together (a bigger queue is committed in several batches).
const MAX_BATCH: usize = 256;

/// Gives a batch's answers once this instance heard its committed frames (PostgreSQL,
/// [`crate::store::WriteTxn::hear_later`]): at once when nothing is left to hear, otherwise
/// from a task of their own, so the actor goes on to its next batch meanwhile.
fn answer_once_heard(unheard: Unheard, answer: impl FnOnce() + Send + 'static) {
    if unheard.is_empty() {
        answer();
    } else {
        tokio::spawn(async move {
            unheard.heard().await;
            answer();
        });
    }
}

/// An event command waiting for the next group commit.
enum Pending {
    /// A creation, committed with the creations queued next to it.
    Create(PendingCreate, Reply<EventView>),
    /// An update, delete, link or attendance answer, committed with the edits queued next
    /// to it.
    Edit(Edit, EditReply),
}

impl Pending {
    /// The command as it waits for a group commit, or the fork it is (a fork runs on its
    /// own: who forks, which event, the caller's port).
    fn of(command: EventCommand) -> Result<Self, (UserId, EventId, Reply<EventView>)> {
        Ok(match command {
            EventCommand::Create { by, input, reply } => {
                Self::Create(PendingCreate { by, input }, reply)
            }
            EventCommand::Update {
                by,
                input,
                base_revision,
                reply,
            } => Self::Edit(
                Edit::Update {
                    by,
                    input,
                    base_revision,
                },
                EditReply::Event(reply),
            ),
            EventCommand::Delete {
                by,
                event,
                unlink,
                reply,
            } => Self::Edit(
                Edit::Delete { by, event, unlink },
                EditReply::Deleted(reply),
            ),
            EventCommand::Link {
                by,
                event,
                target,
                reply,
            } => Self::Edit(Edit::Link { by, event, target }, EditReply::Event(reply)),
            EventCommand::SetAttendance {
                by,
                event,
                answer,
                page,
                reply,
            } => Self::Edit(
                Edit::SetAttendance {
                    by,
                    event,
                    answer,
                    page,
                },
                EditReply::Attendees(reply),
            ),
            EventCommand::Publish {
                by,
                event,
                publication,
                reply,
            } => Self::Edit(
                Edit::Publish {
                    by,
                    event,
                    publication,
                },
                EditReply::Published(reply),
            ),
            EventCommand::Unpublish { by, event, reply } => {
                Self::Edit(Edit::Unpublish { by, event }, EditReply::Published(reply))
            }
            EventCommand::Fork { by, event, reply } => return Err((by, event, reply)),
        })
    }
}

impl CalendarState {
    /// Queues an event command for the next group commit: commands already in the mailbox
    /// arrive before the flush and join the batch.
    async fn queue(&mut self, myself: &ActorRef<CalendarMsg>, pending: Pending) {
        self.handled += 1;
        self.pending.push(pending);
        if !self.flush_queued {
            self.flush_queued = myself.send_message(CalendarMsg::FlushEvents).is_ok();
        }
        if !self.flush_queued || self.pending.len() >= MAX_BATCH {
            self.flush_events(myself).await;
        }
    }

    /// Commits the queued event commands (before any other command, to keep commit order),
    /// up to [`MAX_BATCH`] at a time in arrival order: creations alone as one batch of
    /// creations (which may be written with the roles the actor remembers), anything else,
    /// creations mixed with edits, as one batch of edits.
    async fn flush_events(&mut self, myself: &ActorRef<CalendarMsg>) {
        while !self.pending.is_empty() {
            let take = self.pending.len().min(MAX_BATCH);
            let taken: Vec<Pending> = self.pending.drain(..take).collect();
            if taken
                .iter()
                .all(|pending| matches!(pending, Pending::Create(..)))
            {
                let creates = taken
                    .into_iter()
                    .filter_map(|pending| match pending {
                        Pending::Create(create, port) => Some((create, port)),
                        Pending::Edit(..) => None,
                    })
                    .collect();
                self.commit_creates(creates).await;
            } else {
                let home = self.calendar_id;
                let edits = taken
                    .into_iter()
                    .map(|pending| match pending {
                        Pending::Create(PendingCreate { by, input }, port) => {
                            (Edit::Create { by, input, home }, EditReply::Event(port))
                        }
                        Pending::Edit(edit, port) => (edit, port),
                    })
                    .collect();
                self.commit_edits(edits).await;
            }
        }
        if self.next_write.is_begun() {
            // Event commands that arrived meanwhile are in the mailbox ahead of this.
            if myself.send_message(CalendarMsg::ReleaseNextWrite).is_err() {
                self.next_write.release();
            }
        }
    }

    /// Commits a run of creations as one batch and answers their callers.
    async fn commit_creates(&self, run: Vec<(PendingCreate, Reply<EventView>)>) {
        if run.is_empty() {
            return;
        }
        let (batch, ports): (Vec<PendingCreate>, Vec<_>) = run.into_iter().unzip();
        let unheard = Unheard::default();
        let answers = commands::events::create::create_all(
            &self.shared.services,
            self.calendar_id,
            &batch,
            &self.remembered_roles,
            &self.next_write,
            &unheard,
        )
        .await;
        answer_once_heard(unheard, move || {
            for (port, answer) in ports.into_iter().zip(answers) {
                reply(port, answer);
            }
        });
    }

    /// Commits a run of edits (perhaps with creations among them) as one batch and answers
    /// their callers.
    async fn commit_edits(&self, run: Vec<(Edit, EditReply)>) {
        if run.is_empty() {
            return;
        }
        let (batch, ports): (Vec<Edit>, Vec<EditReply>) = run.into_iter().unzip();
        let unheard = Unheard::default();
        let answers =
            edits::edit_all(&self.shared.services, &batch, &self.next_write, &unheard).await;
        answer_once_heard(unheard, move || {
            for (port, answer) in ports.into_iter().zip(answers) {
                port.send(answer);
            }
        });
    }

    /// Tells the supervisor the actor is idle if nothing arrived since the last check (one
    /// check is outstanding at a time), and schedules the next.
    fn idle_check(&self, myself: &ActorRef<CalendarMsg>, handled: u64) {
        if handled == self.handled {
            let _ = self.supervisor.send_message(CalendarsMsg::Idle {
                calendar_id: self.calendar_id,
                handled,
            });
        }
        let handled = self.handled;
        myself.send_after(self.idle_after, move || CalendarMsg::IdleCheck { handled });
    }

    /// Asks the supervisor to stop this actor now if its calendar does not exist (it stops
    /// it unless a command was forwarded meanwhile, which then asks again).
    fn stop_if_missing(&self) {
        if self.missing && self.pending.is_empty() {
            let _ = self.supervisor.send_message(CalendarsMsg::Idle {
                calendar_id: self.calendar_id,
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
            CalendarCommand::AcceptFederated {
                invite,
                profile,
                presented,
                reply: port,
            } => {
                reply(
                    port,
                    commands::federation::accept(shared, id, invite, *profile, presented).await,
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

    /// Copies an event into this calendar (the one event command not batched).
    async fn fork(&self, by: UserId, event: EventId, port: Reply<EventView>) {
        let shared = &self.shared.services;
        reply(
            port,
            commands::events::links::fork(shared, &by, event, self.calendar_id).await,
        );
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
        let missing = match crate::store::calendars::find(&args.shared.db, args.calendar_id).await {
            Ok(found) => found.is_none(),
            Err(err) => {
                tracing::warn!(calendar = %args.calendar_id, error = %err, "calendar.lookup_failed");
                false
            }
        };
        Ok(CalendarState {
            shared: args.shared,
            calendar_id: args.calendar_id,
            supervisor: args.supervisor,
            idle_after,
            handled: 0,
            pending: Vec::new(),
            flush_queued: false,
            remembered_roles: RememberedRoles::default(),
            next_write: NextWrite::default(),
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
        let message = match message {
            CalendarMsg::Forwarded { message, sent } => {
                let kind = ActorKind::Calendar.label();
                state.shared.metrics.actor_mailbox_wait(kind, sent);
                *message
            }
            message => message,
        };
        match message {
            // The supervisor wraps each command once: nothing is left inside.
            CalendarMsg::Forwarded { .. } => {}
            CalendarMsg::IdleCheck { handled } => state.idle_check(&myself, handled),
            CalendarMsg::FlushEvents => {
                state.flush_queued = false;
                state.flush_events(&myself).await;
                state.stop_if_missing();
            }
            CalendarMsg::ReleaseNextWrite => {
                if state.pending.is_empty() {
                    state.next_write.release();
                }
            }
            CalendarMsg::Command(command) => {
                state.handled += 1;
                state.flush_events(&myself).await;
                // Its write does not wait in a transaction begun for event batches.
                state.next_write.release();
                state.run(command).await;
                state.stop_if_missing();
            }
            CalendarMsg::Event(command) => match Pending::of(command) {
                Ok(pending) => state.queue(&myself, pending).await,
                Err((by, event, reply)) => {
                    state.handled += 1;
                    state.flush_events(&myself).await;
                    state.next_write.release();
                    state.fork(by, event, reply).await;
                    state.stop_if_missing();
                }
            },
            #[cfg(feature = "fault-injection")]
            CalendarMsg::InjectPanic { reply: _port } => {
                panic!("fault injected into calendar {}", state.calendar_id);
            }
        }
        Ok(())
    }
}
