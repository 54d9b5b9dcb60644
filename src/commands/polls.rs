//! Changes to scheduling polls. A poll is nobody's calendar, so these run in the request:
//! each is one unit of work ([`crate::store::Database::write`]) that locks or conditionally
//! updates the poll's row, which is what keeps two of them from disagreeing (an answer
//! after the poll closed, two decisions). Deciding is split around the event's creation,
//! which belongs to the calendar's actor: [`claim_decision`] closes the poll for one day
//! and names the event before it exists, and [`release_decision`] opens it again if the
//! event could not be made.

use chrono::{DateTime, Utc};
use entities::scheduling_polls as polls;

use crate::commands::not_allowed;
use crate::domain::ids::{CalendarId, EventId, UserId, random_token};
use crate::domain::polls::{
    DAY_MINUTES, Organizes, SlotTimes, Viewer, Vote, already_closed, already_decided,
    identity_taken, not_the_organizer, poll_not_found, refuses_answers,
};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::polls::{self as poll_store, NewParticipant, NewPoll};
use crate::store::{Database, calendars as calendar_store, members};
use ids::{PollId, PollSlotId};

/// A validated new poll.
#[derive(Debug, Clone)]
pub struct PollDraft {
    /// The organizer's account, when they are signed in.
    pub owner_id: Option<UserId>,
    /// The organizer's address.
    pub owner_email: String,
    /// The organizer's name.
    pub owner_name: String,
    /// The question.
    pub title: String,
    /// More about it.
    pub description: Option<String>,
    /// The wall-clock hint.
    pub approximate_start_time: Option<String>,
    /// When it stops taking answers by itself.
    pub deadline: Option<DateTime<Utc>>,
    /// Where the decided event lands (the caller may edit events there).
    pub calendar_id: Option<CalendarId>,
    /// Its days.
    pub days: Vec<SlotTimes>,
}

/// Stores a new poll and its days, with a new token, in one transaction.
pub async fn create(db: &Database, draft: PollDraft) -> Result<polls::Model, AppError> {
    let now = Utc::now();
    let new = NewPoll {
        owner_id: draft.owner_id,
        owner_email: draft.owner_email,
        owner_name: draft.owner_name,
        title: draft.title,
        description: draft.description,
        approximate_start_time: draft.approximate_start_time,
        duration_minutes: DAY_MINUTES,
        token: random_token(),
        deadline: draft.deadline,
        calendar_id: draft.calendar_id,
    };
    let days = draft.days;
    Ok(db
        .write(async |txn| poll_store::create(txn, new, &days, now).await)
        .await?)
}

/// 403 unless `user_id` may create events in `calendar` (a member with editEvents).
pub async fn require_editor(
    db: &Database,
    calendar: CalendarId,
    user_id: &UserId,
) -> Result<(), AppError> {
    match members::role_of(db, calendar, user_id).await? {
        Some(role) if role.allows(Action::EditEvents) => Ok(()),
        Some(_) => Err(not_allowed(Action::EditEvents)),
        None => Err(crate::commands::not_a_member()),
    }
}

/// The poll `viewer` means to decide, close or delete: theirs, or one made with the address
/// they proved, which becomes theirs now. 404 for no such poll, 403 for anyone else's.
pub async fn as_organizer(
    db: &Database,
    id: PollId,
    viewer: &Viewer<'_>,
) -> Result<polls::Model, AppError> {
    let poll = poll_store::find(db, id).await?.ok_or_else(poll_not_found)?;
    match viewer.organizes(poll.owner_id.as_ref(), &poll.owner_email) {
        Organizes::AsOwner => Ok(poll),
        Organizes::ByAddress => {
            let now = Utc::now();
            let user = viewer.id.clone();
            db.write(async |txn| poll_store::set_owner(txn, id, &user, now).await)
                .await?;
            Ok(polls::Model {
                owner_id: Some(user),
                ..poll
            })
        }
        Organizes::No => Err(not_the_organizer()),
    }
}

/// Where a decision of `poll` by `user_id` lands: the calendar asked for, else the poll's,
/// else their own default calendar, else any calendar they may add events to (400 with
/// none). 403 unless they may add events there.
pub async fn decision_calendar(
    db: &Database,
    requested: Option<CalendarId>,
    poll: &polls::Model,
    user_id: &UserId,
) -> Result<CalendarId, AppError> {
    let calendar = match requested.or(poll.calendar_id) {
        Some(calendar) => calendar,
        None => {
            let mut writable: Vec<_> = calendar_store::list_for_user(db, user_id)
                .await?
                .into_iter()
                .filter(|(_, role)| role.allows(Action::EditEvents))
                .map(|(calendar, _)| calendar)
                .collect();
            writable.sort_by_key(|calendar| {
                let own_default = calendar.is_default && calendar.creator_id == *user_id;
                (!own_default, calendar.created_at, calendar.id)
            });
            writable
                .first()
                .map(|calendar| calendar.id)
                .ok_or_else(|| AppError::bad_request("Make a calendar before picking a time..."))?
        }
    };
    require_editor(db, calendar, user_id).await?;
    Ok(calendar)
}

/// Decides the open poll for `slot`, naming `event` (not created yet) as its outcome; 400
/// when it was decided or closed already.
pub async fn claim_decision(
    db: &Database,
    id: PollId,
    slot: PollSlotId,
    event: EventId,
) -> Result<(), AppError> {
    let now = Utc::now();
    let claimed = db
        .write(async |txn| poll_store::claim_decision(txn, id, slot, event, now).await)
        .await?;
    if claimed {
        Ok(())
    } else {
        Err(already_decided())
    }
}

/// Opens the poll again after its decision's event could not be made.
pub async fn release_decision(db: &Database, id: PollId, event: EventId) -> Result<(), AppError> {
    let now = Utc::now();
    let released = db
        .write(async |txn| poll_store::release_decision(txn, id, event, now).await)
        .await?;
    if !released {
        tracing::warn!(pollId = %id, "polls.decision_not_released");
    }
    Ok(())
}

/// Closes the open poll without a decision; 400 when it was decided or closed already.
pub async fn close(db: &Database, id: PollId) -> Result<(), AppError> {
    let now = Utc::now();
    let closed = db
        .write(async |txn| poll_store::close(txn, id, now).await)
        .await?;
    if closed {
        Ok(())
    } else {
        Err(already_closed())
    }
}

/// Deletes the poll and every answer on it (the event a decision made stays).
pub async fn delete(db: &Database, id: PollId) -> Result<(), AppError> {
    let deleted = db
        .write(async |txn| poll_store::delete(txn, id).await)
        .await?;
    if deleted {
        Ok(())
    } else {
        Err(poll_not_found())
    }
}

/// Someone signed in with a proven address opened the open poll: they join its grid
/// (without answers), or the participant with their address is linked to their account.
pub async fn opened_by(
    db: &Database,
    poll: &polls::Model,
    viewer: &Viewer<'_>,
) -> Result<(), AppError> {
    let Some(email) = viewer.verified_email() else {
        return Ok(());
    };
    let name = viewer.display_name();
    let keep_name = name.is_none();
    let new = NewParticipant {
        poll_id: poll.id,
        email,
        name: name.unwrap_or_else(|| "Guest".to_owned()),
        user_id: Some(viewer.id.clone()),
    };
    let now = Utc::now();
    db.write(async |txn| poll_store::ensure_participant(txn, new, keep_name, now).await)
        .await?;
    Ok(())
}

/// One person's answers to a poll.
#[derive(Debug, Clone)]
pub struct Ballot {
    /// Their address, lower case.
    pub email: String,
    /// Their name.
    pub name: String,
    /// The account signed in with that very address proven, if any: only it may replace
    /// answers given under the address before.
    pub proven_by: Option<UserId>,
    /// Their answers, each a day of the poll, each day once.
    pub votes: Vec<(PollSlotId, Vote)>,
}

/// Records `ballot` on the poll, replacing the answers its address gave before, in one
/// transaction that holds the poll's row: 404 when the poll is gone, 400 when it stopped
/// taking answers, 403 when the address answered already and the caller has not proved it.
pub async fn vote(db: &Database, id: PollId, ballot: Ballot) -> Result<(), AppError> {
    let now = Utc::now();
    db.write(async |txn| {
        let poll = poll_store::lock(txn, id)
            .await?
            .ok_or_else(crate::domain::polls::poll_unavailable)?;
        if let Some(refusal) = refuses_answers(poll.closed_at, poll.deadline, now) {
            return Err(refusal);
        }
        let existing = poll_store::participant_by_email(txn, id, &ballot.email).await?;
        let participant = match (existing, &ballot.proven_by) {
            (Some(participant), Some(user)) => {
                poll_store::update_participant(txn, participant.id, &ballot.name, Some(user), now)
                    .await?;
                participant.id
            }
            (Some(_), None) => return Err(identity_taken()),
            (None, proven_by) => {
                let new = NewParticipant {
                    poll_id: id,
                    email: ballot.email.clone(),
                    name: ballot.name.clone(),
                    user_id: proven_by.clone(),
                };
                poll_store::add_participant(txn, new, now)
                    .await?
                    .ok_or_else(identity_taken)?
            }
        };
        poll_store::replace_votes(txn, participant, &ballot.votes, now).await?;
        Ok::<_, AppError>(())
    })
    .await
}
