//! Calendar metadata: rename/recolor (owner) and delete (owner; never the default calendar).

use chrono::Utc;

use super::events::visibility as event_visibility;
use super::retry_transient;
use super::{announce_calendar, authorize, send_view};
use crate::commands::Services;
use crate::domain::ids::{CalendarId, UserId};
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::store::events::WriteDeadline;
use crate::store::{calendars as calendar_store, members};
use crate::views::calendars::CalendarView;

/// New name and colour, already validated.
#[derive(Debug, Clone)]
pub struct CalendarChange {
    /// Name.
    pub name: String,
    /// Colour.
    pub color: String,
}

/// Renames and recolours; `calendar_updated` to every member.
pub async fn update(
    services: &Services,
    calendar: CalendarId,
    by: &UserId,
    change: CalendarChange,
) -> Result<CalendarView, AppError> {
    let calendar_id = calendar;
    let actor = by;
    services
        .db
        .write(async |txn| {
            let (calendar, role) = authorize(txn, calendar_id, actor, Action::EditCalendar).await?;
            let updated =
                calendar_store::update_meta(txn, calendar, change.name, change.color, Utc::now())
                    .await?;
            let members = members::list(txn, calendar_id).await?;
            announce_calendar(&services.within(txn), &updated, &members);
            Ok::<_, AppError>(CalendarView::new(&updated, &members, Some(role)))
        })
        .await
}

/// Deletes the calendar with its memberships and invites, and the events homed there
/// (tombstoned for delta reads); the other events linked into it are unlinked, one revision
/// up. `calendar_removed` (the calendar with no members) to everyone who was a member,
/// `event_removed` to whoever lost sight of an event, `event_updated` to whoever still sees
/// an unlinked one.
pub async fn delete(
    services: &Services,
    calendar: CalendarId,
    by: &UserId,
) -> Result<CalendarView, AppError> {
    retry_transient(&services.metrics, || delete_once(services, calendar, by)).await
}

/// [`delete`], once.
async fn delete_once(
    services: &Services,
    calendar_id: CalendarId,
    actor: &UserId,
) -> Result<CalendarView, AppError> {
    services
        .db
        .write(async |txn| {
            calendar_store::lock_for_deletion(txn, calendar_id).await?;
            let (calendar, role) =
                authorize(txn, calendar_id, actor, Action::DeleteCalendar).await?;
            if calendar.is_default {
                return Err(AppError::bad_request(
                    "Your personal calendar can't be deleted.",
                ));
            }
            let former = members::list(txn, calendar_id).await?;
            let clock = WriteDeadline::start(txn).await?;
            let deletion =
                event_visibility::on_calendar_deleted(txn, calendar_id, clock.now).await?;
            calendar_store::delete(txn, calendar_id).await?;
            let announce = services.within(txn);
            let removed = CalendarView::new(&calendar, &[], None);
            for member in &former {
                send_view(&announce, &member.user.id, "calendar_removed", &removed);
            }
            deletion.announce(&announce);
            clock.check()?;
            Ok(CalendarView::new(&calendar, &[], Some(role)))
        })
        .await
}
