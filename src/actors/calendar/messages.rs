//! What a [`CalendarActor`](super::CalendarActor) receives: the commands of
//! clients ([`CalendarCommand`], each with the reply port its caller waits on) and its own
//! messages ([`CalendarMsg`]).

use std::time::Instant;

use chrono::{DateTime, Utc};
use ractor::RpcReplyPort;

use crate::commands::calendar::CalendarChange;
use crate::commands::events::edits::Edited;
use crate::commands::federation::Accepted;
use crate::domain::event_pages::Publication;
use crate::domain::events::{Attendance, EventInput};
use crate::domain::federation::Profile;
use crate::domain::ids::{CalendarId, EventId, InviteId, UserId};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::store::event_shares::PublishedPage;
use crate::views::calendars::{CalendarView, InviteView, MembershipView};
use crate::views::events::{AttendeeView, DeletedEventView, EventView};

/// A reply port of a command.
pub type Reply<T> = RpcReplyPort<Result<T, AppError>>;

/// What a calendar actor receives.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "client commands arrive boxed by the supervisor; its own messages are rare"
)]
pub enum CalendarMsg {
    /// A client's command about the calendar, its members or its invites.
    Command(CalendarCommand),
    /// A client's command about an event homed in the calendar.
    Event(EventCommand),
    /// Sent to itself after queuing an event command: commit what is queued, in batches.
    FlushEvents,
    /// Sent to itself after a flush that left a write transaction begun ahead: if no event
    /// command arrived meanwhile (they would be ahead of this in the mailbox), none follows,
    /// and it is rolled back.
    ReleaseNextWrite,
    /// Sent to itself: still idle since `handled` commands?
    IdleCheck {
        /// The count when the check was scheduled.
        handled: u64,
    },
    /// A client's command (`Command` or `Event`) forwarded by the supervisor at `sent`
    /// (`svc_actor_mailbox_wait_seconds`); never nested.
    Forwarded {
        /// The command.
        message: Box<CalendarMsg>,
        /// When the supervisor forwarded it.
        sent: Instant,
    },
    /// Panic inside the handler, to exercise supervision (test builds only).
    #[cfg(feature = "fault-injection")]
    InjectPanic {
        /// Dropped unanswered by the panic.
        reply: Reply<()>,
    },
}

impl From<CalendarCommand> for CalendarMsg {
    fn from(command: CalendarCommand) -> Self {
        Self::Command(command)
    }
}

impl From<EventCommand> for CalendarMsg {
    fn from(command: EventCommand) -> Self {
        Self::Event(command)
    }
}

/// A client's command about the calendar, its members or its invites.
#[derive(Debug)]
pub enum CalendarCommand {
    /// Rename / recolor.
    Update {
        /// Acting user.
        by: UserId,
        /// New values.
        change: CalendarChange,
        /// The updated calendar.
        reply: Reply<CalendarView>,
    },
    /// Delete the calendar.
    Delete {
        /// Acting user.
        by: UserId,
        /// The removed calendar.
        reply: Reply<CalendarView>,
    },
    /// Join with an invite.
    Join {
        /// Joining user.
        user: UserId,
        /// The invite token.
        invite: InviteId,
        /// The membership created, if any.
        reply: Reply<Vec<MembershipView>>,
    },
    /// A member of another server joins with an invite (federation accept).
    AcceptFederated {
        /// The invite token.
        invite: InviteId,
        /// The member's display claims and home server.
        profile: Box<Profile>,
        /// SHA-256 of the member token presented to reuse a shadow user, if any.
        presented: Option<String>,
        /// The shadow's new member token and the calendar.
        reply: Reply<Accepted>,
    },
    /// Leave.
    Leave {
        /// Leaving user.
        user: UserId,
        /// Done.
        reply: Reply<()>,
    },
    /// Change a member's role.
    SetRole {
        /// Acting user.
        by: UserId,
        /// Member.
        target: UserId,
        /// New role.
        role: Role,
        /// Done, or why not.
        reply: Reply<()>,
    },
    /// Remove a member.
    RemoveMember {
        /// Acting user.
        by: UserId,
        /// Member.
        target: UserId,
        /// Done.
        reply: Reply<()>,
    },
    /// Create an invite.
    CreateInvite {
        /// Acting user.
        by: UserId,
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
        by: UserId,
        /// The invite.
        invite: InviteId,
        /// Done.
        reply: Reply<()>,
    },
}

/// A client's command about an event homed in the calendar.
#[derive(Debug)]
pub enum EventCommand {
    /// Create an event homed in this calendar.
    Create {
        /// Acting user.
        by: UserId,
        /// The validated event.
        input: EventInput,
        /// The created event.
        reply: Reply<EventView>,
    },
    /// Update an event homed here.
    Update {
        /// Acting user.
        by: UserId,
        /// The validated event.
        input: EventInput,
        /// The `revision` the client last saw, if it sent one (a stale one is a 409).
        base_revision: Option<i64>,
        /// The updated event.
        reply: Reply<EventView>,
    },
    /// Delete (or unlink from one calendar) an event homed here.
    Delete {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// Only this calendar's link.
        unlink: Option<CalendarId>,
        /// `{id, calendars, removed}`.
        reply: Reply<DeletedEventView>,
    },
    /// Link an event homed here into another calendar.
    Link {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// The calendar to link into.
        target: CalendarId,
        /// The event.
        reply: Reply<EventView>,
    },
    /// Copy an event into this calendar.
    Fork {
        /// Acting user.
        by: UserId,
        /// The source event.
        event: EventId,
        /// The new event.
        reply: Reply<EventView>,
    },
    /// Answer attendance for an event homed here.
    SetAttendance {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// The answer.
        answer: Attendance,
        /// The token of the event's published page the answer came through (the page, not
        /// a membership, lets the user answer).
        page: Option<String>,
        /// The attendees now.
        reply: Reply<Vec<AttendeeView>>,
    },
    /// Publish an event homed here as a page, or change how it is published.
    Publish {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// How.
        publication: Publication,
        /// The live publication.
        reply: Reply<Option<PublishedPage>>,
    },
    /// Revoke an event's published page.
    Unpublish {
        /// Acting user.
        by: UserId,
        /// The event.
        event: EventId,
        /// Nothing published any more.
        reply: Reply<Option<PublishedPage>>,
    },
}

/// The reply port of a batched edit, by what it answers.
#[derive(Debug)]
pub enum EditReply {
    /// An update or a link: the event.
    Event(Reply<EventView>),
    /// A delete.
    Deleted(Reply<DeletedEventView>),
    /// An attendance answer.
    Attendees(Reply<Vec<AttendeeView>>),
    /// A publication's change: the live publication, if any.
    Published(Reply<Option<PublishedPage>>),
}

impl EditReply {
    /// Answers the caller with the edit's outcome.
    pub fn send(self, outcome: Result<Edited, AppError>) {
        let mismatch = || AppError::internal("an edit answered with another kind of answer");
        match self {
            Self::Event(port) => super::reply(
                port,
                outcome.and_then(|edited| match edited {
                    Edited::Event(view) => Ok(view),
                    _ => Err(mismatch()),
                }),
            ),
            Self::Deleted(port) => super::reply(
                port,
                outcome.and_then(|edited| match edited {
                    Edited::Deleted(view) => Ok(view),
                    _ => Err(mismatch()),
                }),
            ),
            Self::Attendees(port) => super::reply(
                port,
                outcome.and_then(|edited| match edited {
                    Edited::Attendees(list) => Ok(list),
                    _ => Err(mismatch()),
                }),
            ),
            Self::Published(port) => super::reply(
                port,
                outcome.and_then(|edited| match edited {
                    Edited::Published(page) => Ok(page),
                    _ => Err(mismatch()),
                }),
            ),
        }
    }
}
