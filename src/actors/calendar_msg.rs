//! The commands a [`CalendarActor`](super::calendar::CalendarActor) takes, each with the
//! reply port its caller waits on.

use chrono::{DateTime, Utc};
use ractor::RpcReplyPort;

use crate::commands::calendar::CalendarChange;
use crate::domain::events::{Attendance, EventInput};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::views::calendars::{CalendarView, InviteView, MembershipView};
use crate::views::events::{AttendeeView, DeletedEventView, EventView};
use uuid::Uuid;

/// A reply port of a command.
pub type Reply<T> = RpcReplyPort<Result<T, AppError>>;

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
        /// Done, or why not.
        reply: Reply<()>,
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
