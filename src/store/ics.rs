//! Calendar import and export: the bulk write that creates an imported calendar with all
//! its events in one transaction, and the read of a calendar's live events for an export.
//!
//! The import writes multi-row INSERTs in chunks (well under SQLite's 32,766 and
//! PostgreSQL's 65,535 bound parameters per statement), so 10,000 events are a few dozen
//! statements. Nothing is visible before the commit, and a failure leaves nothing behind.

use chrono::{DateTime, Utc};
use entities::{calendar_events, calendar_members, calendars, events};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};
use uuid::Uuid;

use super::Database;
use super::calendars::NewCalendar;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::domain::roles::Role;
use crate::ical::ImportedEvent;

/// Events per INSERT (19 columns each).
const EVENT_ROWS_PER_STATEMENT: usize = 1_000;
/// Links per INSERT (3 columns each).
const LINK_ROWS_PER_STATEMENT: usize = 5_000;

/// Creates `new` owned by its creator with `imported` events homed and linked in it, in one
/// transaction, whose stamp ([`crate::store::WriteTxn::stamp`]) stamps the calendar, the
/// events and the owner's membership. Each event gets a new id, the creator as creator and
/// organizer, the calendar's colour and revision 1.
pub async fn create_imported(
    db: &Database,
    new: NewCalendar,
    imported: &[ImportedEvent],
) -> Result<calendars::Model, DbErr> {
    let txn = db.begin_write().await?;
    let now = txn.stamp().await?;
    let calendar = calendars::ActiveModel {
        id: Set(CalendarId::generate()),
        creator_id: Set(new.creator_id.clone()),
        name: Set(new.name),
        color: Set(new.color.clone()),
        is_default: Set(false),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    add_imported(&txn, &calendar, &new.creator_id, imported, now).await?;
    let joined = now;
    calendar_members::ActiveModel {
        id: Set(Uuid::new_v4()),
        calendar_id: Set(calendar.id),
        user_id: Set(new.creator_id),
        role: Set(Role::Owner.as_str().to_owned()),
        reminder: Set(None),
        created_at: Set(joined),
        updated_at: Set(joined),
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(calendar)
}

/// Adds `imported` events to `calendar` (homed and linked there, `creator` as creator and
/// organizer, the calendar's colour, revision 1) in the caller's transaction; their ids.
pub async fn add_imported(
    txn: &impl ConnectionTrait,
    calendar: &calendars::Model,
    creator: &UserId,
    imported: &[ImportedEvent],
    now: DateTime<Utc>,
) -> Result<Vec<EventId>, DbErr> {
    let ids: Vec<EventId> = imported.iter().map(|_| EventId::generate()).collect();
    for (chunk, chunk_ids) in imported
        .chunks(EVENT_ROWS_PER_STATEMENT)
        .zip(ids.chunks(EVENT_ROWS_PER_STATEMENT))
    {
        let rows = chunk
            .iter()
            .zip(chunk_ids)
            .map(|(event, id)| events::ActiveModel {
                id: Set(*id),
                creator_id: Set(creator.clone()),
                organizer: Set(creator.to_string()),
                title: Set(event.title.clone()),
                color: Set(calendar.color.clone()),
                start: Set(event.start),
                end: Set(event.end),
                is_all_day: Set(event.is_all_day),
                is_canceled: Set(event.is_canceled),
                has_attendees: Set(false),
                description: Set(event.description.clone()),
                location: Set(event.location.clone()),
                recurrence: Set(event.recurrence.clone()),
                url: Set(event.url.clone()),
                origin_calendar_id: Set(Some(calendar.id)),
                revision: Set(1),
                created_at: Set(now),
                updated_at: Set(now),
                deleted_at: Set(None),
            });
        events::Entity::insert_many(rows)
            .exec_without_returning(txn)
            .await?;
    }
    for chunk in ids.chunks(LINK_ROWS_PER_STATEMENT) {
        let rows = chunk.iter().map(|id| calendar_events::ActiveModel {
            event_id: Set(*id),
            calendar_id: Set(calendar.id),
            created_at: Set(now),
            linked_by: Set(None),
        });
        calendar_events::Entity::insert_many(rows)
            .exec_without_returning(txn)
            .await?;
    }
    Ok(ids)
}

/// The live (not deleted) events linked into `calendar_id`, by start then id.
pub async fn live_events_in(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<Vec<events::Model>, DbErr> {
    let rows = calendar_events::Entity::find()
        .find_also_related(events::Entity)
        .filter(calendar_events::Column::CalendarId.eq(calendar_id))
        .filter(events::Column::DeletedAt.is_null())
        .order_by_asc(events::Column::Start)
        .order_by_asc(events::Column::Id)
        .all(db)
        .await?;
    Ok(rows.into_iter().filter_map(|(_, event)| event).collect())
}
