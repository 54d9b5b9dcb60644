//! Federation on the origin side: a member of another server accepting an invite here
//! (a shadow user joins as a viewer and receives a member token), and the exchange of a
//! member token for a new one. Each is one transaction; the accept runs in the calendar's
//! actor like any join.

use chrono::Utc;
use serde::Serialize;

use super::announce_calendar;
use crate::commands::Services;
use crate::domain::federation::Profile;
use crate::domain::ids::{CalendarId, InviteId, UserId, random_alphanumeric};
use crate::error::AppError;
use crate::store::invites::is_usable;
use crate::store::users::NewShadow;
use crate::store::{Database, calendars as calendar_store, invites, member_tokens, members, users};
use crate::views::calendars::CalendarRowView;
use crate::views::timestamp;

/// `{memberToken, memberTokenExpiresAt, userID, calendar}`: the answer to an accept.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The new member token (shown this once).
    pub member_token: String,
    /// When it stops authenticating.
    #[serde(serialize_with = "timestamp")]
    pub member_token_expires_at: chrono::DateTime<Utc>,
    /// The shadow user.
    #[serde(rename = "userID")]
    pub user_id: String,
    /// The calendar joined.
    pub calendar: CalendarRowView,
}

/// `{memberToken, memberTokenExpiresAt}`: the answer to a rotation.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rotated {
    /// The new member token.
    pub member_token: String,
    /// When it stops authenticating.
    #[serde(serialize_with = "timestamp")]
    pub member_token_expires_at: chrono::DateTime<Utc>,
}

/// 404 for an invite that is unknown, revoked, used up or expired.
pub fn invite_not_found() -> AppError {
    AppError::not_found("Invite not found...")
}

/// 401 for a bearer that is no live member token of a shadow from the profile's server.
pub fn invalid_credential() -> AppError {
    AppError::Unauthorized("The existing federation credential is invalid.".into())
}

/// 401 for a rotation that lost the race.
pub fn already_rotated() -> AppError {
    AppError::Unauthorized("The federation credential was already rotated.".into())
}

/// A member of `profile.home_server` accepts `invite` to `calendar`. `presented` is the
/// SHA-256 of the bearer the request carried, if any: it must be a live member token of a
/// shadow user from that same server, which is then reused (its token exchanged); without
/// one a new shadow user is always made. The shadow joins as a viewer (a member already
/// stays as is, and no use of the invite is counted).
pub async fn accept(
    services: &Services,
    calendar: CalendarId,
    invite_id: InviteId,
    profile: Profile,
    presented: Option<String>,
) -> Result<Accepted, AppError> {
    let calendar_id = calendar;
    services
        .db
        .write(async |txn| {
            let now = txn.stamp().await?;
            let Some(mut calendar) = calendar_store::lock(txn, calendar_id).await? else {
                return Err(invite_not_found());
            };
            let invite = invites::lock(txn, invite_id)
                .await?
                .filter(|invite| is_usable(invite, now) && invite.calendar_id == calendar_id)
                .ok_or_else(invite_not_found)?;
            let (shadow, issued) = match presented {
                Some(hash) => {
                    let (shadow, _) = member_tokens::find_user_in(txn, &hash, now)
                        .await?
                        .filter(|(shadow, _)| {
                            shadow.home_server.as_deref() == Some(profile.home_server.as_str())
                        })
                        .ok_or_else(invalid_credential)?;
                    let issued = member_tokens::exchange(txn, &shadow.id, &hash, now)
                        .await?
                        .ok_or_else(already_rotated)?;
                    txn.credentials_changed(&shadow.id);
                    (shadow, issued)
                }
                None => {
                    let stand_in_email = crate::domain::federation::stand_in_email(
                        &profile.home_server,
                        &random_alphanumeric(8).to_lowercase(),
                    );
                    let shadow = users::create_shadow(
                        txn,
                        NewShadow {
                            name: profile.name,
                            email: profile.email,
                            stand_in_email,
                            image: profile.image,
                            home_server: profile.home_server,
                        },
                        now,
                    )
                    .await?;
                    let issued = member_tokens::issue(txn, &shadow.id, now).await?;
                    (shadow, issued)
                }
            };
            let joined = members::add_viewer(txn, calendar_id, &shadow.id, now).await?;
            if joined.is_some() {
                invites::count_use(txn, invite.id, now).await?;
                calendar_store::touch(txn, calendar_id, now).await?;
                calendar.updated_at = now;
            }
            let members = members::list(txn, calendar_id).await?;
            if joined.is_some() {
                announce_calendar(&services.within(txn), &calendar, &members);
            }
            Ok(Accepted {
                member_token: issued.token,
                member_token_expires_at: issued.expires_at,
                user_id: shadow.id.into_string(),
                calendar: CalendarRowView::from(&calendar),
            })
        })
        .await
}

/// Exchanges the member token hashed `presented` of shadow `user_id` for a new one, by
/// compare-and-swap: of two rotations of one token, the second finds it gone (401).
pub async fn rotate(db: &Database, user_id: &UserId, presented: &str) -> Result<Rotated, AppError> {
    let now = Utc::now();
    db.write(async |txn| {
        let issued = member_tokens::exchange(txn, user_id, presented, now)
            .await?
            .ok_or_else(already_rotated)?;
        txn.credentials_changed(user_id);
        Ok::<_, AppError>(Rotated {
            member_token: issued.token,
            member_token_expires_at: issued.expires_at,
        })
    })
    .await
}
