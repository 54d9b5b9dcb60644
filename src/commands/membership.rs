//! Membership: join by invite, leave, change a role (including ownership transfer), remove
//! a member. Frames: `calendar_updated` to the members after the change (each with their own
//! role), `calendar_removed {id}` to whoever lost access, and `event_removed` to them for
//! each event they saw only through that calendar.

use chrono::{DateTime, Utc};
use entities::calendars;

use super::{announce_calendar, announce_removed, authorize, events, not_a_member};
use crate::commands::Services;
use crate::domain::frames::FrameBatch;
use crate::domain::ids::{CalendarId, InviteId, UserId};
use crate::domain::roles::{Action, Role};
use crate::error::AppError;
use crate::store::invites::is_usable;
use crate::store::{WriteTxn, calendars as calendar_store, invites, members, users};
use crate::views::calendars::MembershipView;

fn invite_not_found() -> AppError {
    AppError::not_found("Invite not found...")
}

fn member_not_found() -> AppError {
    AppError::not_found("Member not found on this calendar...")
}

/// Joins `user` as a viewer with `invite`, which must be usable and belong to this calendar
/// (checked before anything is written). Joining twice changes nothing and does not count a
/// use. Returns the membership created (none when already a member).
pub async fn join(
    services: &Services,
    calendar: CalendarId,
    user: &UserId,
    invite_id: InviteId,
) -> Result<Vec<MembershipView>, AppError> {
    let calendar_id = calendar;
    services
        .db
        .write(async |txn| {
            let now = txn.stamp().await?;
            let Some(calendar) = calendar_store::lock(txn, calendar_id).await? else {
                return Err(invite_not_found());
            };
            let invite = invites::lock(txn, invite_id)
                .await?
                .filter(|invite| is_usable(invite, now))
                .ok_or_else(invite_not_found)?;
            if invite.calendar_id != calendar_id {
                return Err(AppError::forbidden(
                    "A valid invite is required to join this calendar.",
                ));
            }
            let joined = members::add_viewer(txn, calendar_id, user, now).await?;
            if joined.is_some() {
                invites::count_use(txn, invite_id, now).await?;
                calendar_store::touch(txn, calendar_id, now).await?;
            }
            let members = members::list(txn, calendar_id).await?;
            if joined.is_some() {
                announce_calendar(&services.within(txn), &calendar, &members);
            }
            Ok(joined.iter().map(MembershipView::from).collect())
        })
        .await
}

/// `user` leaves; the owner cannot. Without a membership (or a calendar), 403.
pub async fn leave(
    services: &Services,
    calendar: CalendarId,
    user: &UserId,
) -> Result<(), AppError> {
    let calendar_id = calendar;
    services
        .db
        .write(async |txn| {
            let now = txn.stamp().await?;
            let Some(calendar) =
                calendar_store::lock_for_membership_loss(txn, calendar_id, user).await?
            else {
                return Err(not_a_member());
            };
            match members::role_of(txn, calendar_id, user).await? {
                None => return Err(not_a_member()),
                Some(Role::Owner) => {
                    return Err(AppError::bad_request(
                        "The owner can't leave. Transfer ownership or delete the calendar.",
                    ));
                }
                Some(_) => {}
            }
            take_out(services, txn, &calendar, user, now).await
        })
        .await
}

/// Changes `target`'s role (needs manageMembers). `owner` transfers ownership of a
/// non-default calendar that mirrors no provider account to a user of this server (never a
/// federated shadow), demoting the previous owner to editor in the same transaction.
pub async fn set_role(
    services: &Services,
    calendar: CalendarId,
    by: &UserId,
    target: &UserId,
    role: Role,
) -> Result<(), AppError> {
    let calendar_id = calendar;
    let actor = by;
    let now = Utc::now();
    services.db
        .write(async |txn| {
            let (calendar, _) = authorize(txn, calendar_id, actor, Action::ManageMembers).await?;
            if *target == calendar.creator_id {
                return Err(AppError::bad_request(
                    "The calendar owner's role can't be changed.",
                ));
            }
            if members::role_of(txn, calendar_id, target).await?.is_none() {
                return Err(member_not_found());
            }
            let calendar = if role == Role::Owner {
                if users::find(txn, target)
                    .await?
                    .is_some_and(|user| user.is_external)
                {
                    return Err(AppError::bad_request(
                        "A member from another server can't own a calendar here.",
                    ));
                }
                if calendar.is_default {
                    return Err(AppError::bad_request(
                        "A personal calendar's ownership can't be transferred.",
                    ));
                }
                // A mirror stays with the user whose account it mirrors.
                if !crate::store::mirrors::mirrors_of(txn, &[calendar_id])
                    .await?
                    .is_empty()
                {
                    return Err(AppError::bad_request(
                        "A connected calendar's ownership can't be transferred; it stays with the owner of its account.",
                    ));
                }
                let previous_owner = calendar.creator_id.clone();
                members::set_role(txn, calendar_id, target, Role::Owner, now).await?;
                members::set_role(txn, calendar_id, &previous_owner, Role::Editor, now).await?;
                calendar_store::set_creator(txn, calendar, target, now).await?
            } else {
                members::set_role(txn, calendar_id, target, role, now).await?;
                calendar_store::touch(txn, calendar_id, now).await?;
                calendar
            };
            let members = members::list(txn, calendar_id).await?;
            announce_calendar(&services.within(txn), &calendar, &members);
            Ok(())
        })
        .await
}

/// Removes `target` (owner only; the owner cannot be removed).
pub async fn remove(
    services: &Services,
    calendar: CalendarId,
    by: &UserId,
    target: &UserId,
) -> Result<(), AppError> {
    let calendar_id = calendar;
    let actor = by;
    services
        .db
        .write(async |txn| {
            let now = txn.stamp().await?;
            let Some(calendar) =
                calendar_store::lock_for_membership_loss(txn, calendar_id, target).await?
            else {
                return Err(not_a_member());
            };
            match members::role_of(txn, calendar_id, actor).await? {
                None => return Err(not_a_member()),
                Some(role) if !role.allows(Action::ManageMembers) => {
                    return Err(AppError::forbidden("Only the owner can remove members."));
                }
                Some(_) => {}
            }
            if *target == calendar.creator_id {
                return Err(AppError::bad_request("The owner can't be removed."));
            }
            if members::role_of(txn, calendar_id, target).await?.is_none() {
                return Err(member_not_found());
            }
            take_out(services, txn, &calendar, target, now).await
        })
        .await
}

/// Takes `user` out of `calendar` (checked already): what they saw only through it leaves
/// their view, events they made there with its home lost are undone, and everyone is told.
async fn take_out(
    services: &Services,
    txn: &WriteTxn,
    calendar: &calendars::Model,
    user: &UserId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let calendar_id = calendar.id;
    let lost = events::visibility::on_membership_lost(txn, calendar_id, user, now).await?;
    members::remove(txn, calendar_id, user).await?;
    let undone = events::visibility::on_home_membership_lost(txn, calendar_id, user, now).await?;
    calendar_store::touch(txn, calendar_id, now).await?;
    let remaining = members::list(txn, calendar_id).await?;
    let announce = services.within(txn);
    announce_removed(&announce, user, calendar_id);
    undone.announce(&announce);
    let mut frames = FrameBatch::default();
    for event in lost {
        events::add_removed(&announce, &mut frames, event, [user]);
    }
    announce.announce.deliver(frames);
    announce_calendar(&announce, calendar, &remaining);
    Ok(())
}
