//! Reminder rule changes: a member's rule for a calendar (any role), and a user's override
//! for an event they can see. Each answers with `reminders_updated {}` to every connection
//! of the user.

use chrono::Utc;
use serde_json::{Value, json};

use super::events::links::visible_event;
use crate::commands::Services;
use crate::domain::frames::Frame;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::error::AppError;
use crate::store::reminders;

/// 403 for a calendar rule of a non-member. The reminders route words it as Musubi's does
/// ("You are not…"); the calendar and member routes keep their "You're not…"
/// ([`super::not_a_member`]).
pub fn not_a_member_for_reminders() -> AppError {
    AppError::forbidden("You are not a member of this calendar.")
}

fn announce(services: &Services, user_id: &UserId) {
    services.broadcast([user_id], &Frame::new("reminders_updated", json!({})));
}

/// Sets (`Some`) or clears (`None`: inherit the default) the user's rule for a calendar.
pub async fn set_calendar_rule(
    services: &Services,
    user_id: &UserId,
    calendar_id: CalendarId,
    rule: Option<Value>,
) -> Result<(), AppError> {
    services
        .db
        .write(async |txn| {
            let member =
                reminders::set_calendar_rule(txn, calendar_id, user_id, rule, Utc::now()).await?;
            if !member {
                return Err(not_a_member_for_reminders());
            }
            announce(&services.within(txn), user_id);
            Ok(())
        })
        .await
}

/// Sets (`Some`) or clears (`None`) the user's override for an event they can see.
pub async fn set_event_rule(
    services: &Services,
    user_id: &UserId,
    event_id: EventId,
    rule: Option<Value>,
) -> Result<(), AppError> {
    services
        .db
        .write(async |txn| {
            visible_event(txn, event_id, user_id).await?;
            match rule {
                Some(rule) => {
                    reminders::set_event_rule(txn, user_id, event_id, rule, Utc::now()).await?
                }
                None => reminders::clear_event_rule(txn, user_id, event_id).await?,
            }
            announce(&services.within(txn), user_id);
            Ok::<_, AppError>(())
        })
        .await
}
