//! Invites: create (owner or editor) and revoke (immediately unusable everywhere).

use chrono::{DateTime, Utc};

use super::authorize;
use crate::commands::Services;
use crate::domain::ids::{CalendarId, InviteId, UserId};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::invites::{self, NewInvite};
use crate::views::calendars::InviteView;

/// Creates an invite to the calendar.
pub async fn create(
    services: &Services,
    calendar: CalendarId,
    by: &UserId,
    expires_at: Option<DateTime<Utc>>,
    max_uses: Option<i32>,
) -> Result<InviteView, AppError> {
    let calendar_id = calendar;
    let actor = by;
    let invite = services
        .db
        .write(async |txn| {
            authorize(txn, calendar_id, actor, Action::Invite).await?;
            let new = NewInvite {
                calendar_id,
                created_by: actor.clone(),
                expires_at,
                max_uses,
            };
            Ok::<_, AppError>(invites::create(txn, new, Utc::now()).await?)
        })
        .await?;
    Ok(InviteView::from(&invite))
}

/// Revokes an invite of the calendar.
pub async fn revoke(
    services: &Services,
    calendar: CalendarId,
    by: &UserId,
    invite_id: InviteId,
) -> Result<(), AppError> {
    let calendar_id = calendar;
    let actor = by;
    services
        .db
        .write(async |txn| {
            authorize(txn, calendar_id, actor, Action::Invite).await?;
            let belongs = invites::find(txn, invite_id).await?.is_some_and(|invite| {
                invite.calendar_id == calendar_id && invite.revoked_at.is_none()
            });
            if !belongs || !invites::revoke(txn, invite_id, Utc::now()).await? {
                return Err(AppError::not_found("Invite not found..."));
            }
            Ok(())
        })
        .await
}
