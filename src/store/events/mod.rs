//! Events, their links into calendars and who can see them.
//!
//! An event is visible to a user who is a member of any calendar it is linked to, until it
//! is deleted (tombstoned). Every write that takes an event out of someone's view records a
//! visibility loss for them (see [`history`]), which delta reads report as
//! `deletedIds`. New events are inserted by [`inserts`]; a batch of edits locks and reads
//! what it changes through [`change_locks`].

pub mod calendar_roles;
pub mod change_locks;
pub mod creations;
mod deadline;
pub mod history;
pub mod inserts;
pub(super) mod read_cache;
pub mod reads;
pub mod remembered_roles;
pub mod streamed;

pub use deadline::WriteDeadline;

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::domain::ids::{CalendarId, EventId, UserId};
use chrono::{DateTime, Utc};
use entities::{calendar_events, calendar_members, events};
use sea_orm::{
    ActiveModelTrait, ActiveValue, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr,
    EntityName, EntityTrait, IdenStatic, Iterable, QueryFilter, QueryOrder, QuerySelect,
    QueryTrait, TryIntoModel,
};

use super::db_errors::{BrokenKey, broken_key};
use super::statements::Unique;
use super::{RowUpdate, WriteTxn};
use crate::domain::event_fields::event_fields;
use crate::domain::events::EventInput;

/// A change an event write lost a race to: the database refused one of its rows because of
/// a row another writer deleted or wrote meanwhile. Writes lock the event (or its home
/// calendar), not every calendar or user their rows refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaceLost {
    /// A calendar the write links into was deleted.
    CalendarGone,
    /// The event was deleted.
    EventGone,
    /// A user the write refers to (an attendee) was deleted.
    UserGone,
    /// A row with the same key was written.
    KeyTaken,
}

/// Which race `err` says an event write lost, read from the constraint it broke: on
/// PostgreSQL by the foreign key's name (`<table>_<column>_fk`, as the migrations name
/// them); SQLite names no constraint, and there the one foreign key an event write can
/// break at all is a link's calendar (its writes are serialized, so the event and its
/// attendees cannot go meanwhile).
pub fn race_lost(err: &DbErr) -> Option<RaceLost> {
    match broken_key(err)? {
        BrokenKey::Unique => Some(RaceLost::KeyTaken),
        BrokenKey::Foreign(None) => Some(RaceLost::CalendarGone),
        BrokenKey::Foreign(Some(name)) => match name.as_str() {
            "calendar_events_event_id_fk"
            | "event_attendees_event_id_fk"
            | "event_reminders_event_id_fk" => Some(RaceLost::EventGone),
            "event_attendees_user_id_fk" | "event_reminders_user_id_fk" => Some(RaceLost::UserGone),
            "calendar_events_calendar_id_fk" => Some(RaceLost::CalendarGone),
            // A key no event write touches: not a race this module knows how to explain.
            _ => None,
        },
    }
}

/// The event with this id, deleted or not.
pub async fn find(db: &impl ConnectionTrait, id: EventId) -> Result<Option<events::Model>, DbErr> {
    events::Entity::find_by_id(id).unique(db).await
}

/// The calendar whose actor serializes changes to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventHome {
    /// The home calendar recorded when the event was created. It never changes (no write
    /// sets `origin_calendar_id` after the insert), so it may be remembered.
    Recorded(CalendarId),
    /// No home recorded: the first calendar the event is in, which its links can change.
    FirstLink(CalendarId),
}

impl EventHome {
    /// The calendar.
    pub fn calendar(self) -> CalendarId {
        match self {
            Self::Recorded(calendar) | Self::FirstLink(calendar) => calendar,
        }
    }
}

/// The calendar whose actor serializes changes to the event `id`: its recorded home, or
/// with none the first calendar it is in; `None` when the event does not exist, is deleted
/// or is in no calendar.
pub async fn home_calendar(
    db: &impl ConnectionTrait,
    id: EventId,
) -> Result<Option<EventHome>, DbErr> {
    let Some(event) = find(db, id)
        .await?
        .filter(|event| event.deleted_at.is_none())
    else {
        return Ok(None);
    };
    if let Some(home) = event.origin_calendar_id {
        return Ok(Some(EventHome::Recorded(home)));
    }
    Ok(links(db, id)
        .await?
        .first()
        .copied()
        .map(EventHome::FirstLink))
}

/// Locks the event row for the rest of the transaction. A write that changes events or
/// their links takes [`lock_for_changes`] instead, so that their calendars are locked first.
pub async fn lock(txn: &impl ConnectionTrait, id: EventId) -> Result<Option<events::Model>, DbErr> {
    events::Entity::find_by_id(id)
        .lock_exclusive()
        .unique(txn)
        .await
}

/// The calendars an event is linked to, in the order they were linked.
pub async fn links(db: &impl ConnectionTrait, event_id: EventId) -> Result<Vec<CalendarId>, DbErr> {
    Ok(calendar_events::Entity::find()
        .filter(calendar_events::Column::EventId.eq(event_id))
        .order_by_asc(calendar_events::Column::CreatedAt)
        .order_by_asc(calendar_events::Column::CalendarId)
        .all(db)
        .await?
        .into_iter()
        .map(|link| link.calendar_id)
        .collect())
}

/// Links an event into calendars on behalf of `linked_by` (already linked ones are left
/// alone).
pub async fn add_links(
    txn: &WriteTxn,
    event_id: EventId,
    calendars: &[CalendarId],
    linked_by: &UserId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if calendars.is_empty() {
        return Ok(());
    }
    let rows = calendars
        .iter()
        .map(|calendar| calendar_events::ActiveModel {
            event_id: Set(event_id),
            calendar_id: Set(*calendar),
            created_at: Set(now),
            linked_by: Set(Some(linked_by.clone())),
        });
    let insert = calendar_events::Entity::insert_many(rows)
        .on_conflict_do_nothing_on([
            calendar_events::Column::EventId,
            calendar_events::Column::CalendarId,
        ])
        .into_query();
    txn.defer(insert).await
}

/// Unlinks an event from calendars.
pub async fn remove_links(
    txn: &WriteTxn,
    event_id: EventId,
    calendars: &[CalendarId],
) -> Result<(), DbErr> {
    if calendars.is_empty() {
        return Ok(());
    }
    let delete = calendar_events::Entity::delete_many()
        .filter(calendar_events::Column::EventId.eq(event_id))
        .filter(calendar_events::Column::CalendarId.is_in(calendars.iter().copied()))
        .into_query();
    txn.defer(delete).await
}

/// Replaces an event's content (identity fields stay), one revision up.
pub async fn update_content(
    txn: &WriteTxn,
    current: events::Model,
    input: &EventInput,
    now: DateTime<Utc>,
) -> Result<events::Model, DbErr> {
    let revision = current.revision + 1;
    let mut active: events::ActiveModel = current.into();
    macro_rules! set_content {
        ($($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
            $(active.$name = Set(input.$name.clone());)*
        };
    }
    event_fields!(set_content {});
    active.revision = Set(revision);
    active.updated_at = Set(now);
    write_over(txn, active).await
}

/// Marks a change that is not a content change (a link), one revision up.
pub async fn touch(
    txn: &WriteTxn,
    current: events::Model,
    now: DateTime<Utc>,
) -> Result<events::Model, DbErr> {
    let revision = current.revision + 1;
    let mut active: events::ActiveModel = current.into();
    active.revision = Set(revision);
    active.updated_at = Set(now);
    write_over(txn, active).await
}

/// Writes the columns `active` sets over its row, as a deferred write of one row
/// ([`WriteTxn::defer_row`]: on PostgreSQL with the other event rows a batch changes, in
/// one statement; nothing else deferred reads an event's row): the row as it is then (the
/// caller read it in this transaction, under its lock).
async fn write_over(txn: &WriteTxn, active: events::ActiveModel) -> Result<events::Model, DbErr> {
    let id = active
        .id
        .clone()
        .take()
        .ok_or_else(|| DbErr::Custom("an event's change needs its id".into()))?;
    let row = RowUpdate {
        table: events::Entity.table_name(),
        key: (events::Column::Id.as_str(), id.into()),
        columns: events::Column::iter()
            .filter_map(|column| match active.get(column) {
                ActiveValue::Set(value) => Some((column.as_str(), value)),
                _ => None,
            })
            .collect(),
    };
    let update = events::Entity::update_many()
        .set(active.clone())
        .filter(events::Column::Id.eq(id))
        .into_query();
    txn.defer_row(update, &row).await?;
    active.try_into_model()
}

/// Turns the event's attendee list on (a published page collects answers into it), one
/// revision up.
pub async fn open_attendees(
    txn: &WriteTxn,
    current: events::Model,
    now: DateTime<Utc>,
) -> Result<events::Model, DbErr> {
    let revision = current.revision + 1;
    let mut active: events::ActiveModel = current.into();
    active.has_attendees = Set(true);
    active.revision = Set(revision);
    active.updated_at = Set(now);
    write_over(txn, active).await
}

/// Marks many events changed at once (unlinked from a deleted calendar), one revision up
/// each.
pub async fn touch_many(
    txn: &impl ConnectionTrait,
    ids: &[EventId],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    for chunk in ids.chunks(500) {
        events::Entity::update_many()
            .col_expr(events::Column::UpdatedAt, Expr::value(now))
            .col_expr(
                events::Column::Revision,
                Expr::col(events::Column::Revision).add(1),
            )
            .filter(events::Column::Id.is_in(chunk.iter().copied()))
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// Live events by id (in no particular order).
pub async fn find_live(
    db: &impl ConnectionTrait,
    ids: &[EventId],
) -> Result<Vec<events::Model>, DbErr> {
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        found.extend(
            events::Entity::find()
                .filter(events::Column::Id.is_in(chunk.iter().copied()))
                .filter(events::Column::DeletedAt.is_null())
                .all(db)
                .await?,
        );
    }
    Ok(found)
}

/// Deletes an event, keeping a tombstone; its links go.
pub async fn tombstone(
    txn: &WriteTxn,
    current: events::Model,
    now: DateTime<Utc>,
) -> Result<events::Model, DbErr> {
    let id = current.id;
    let revision = current.revision + 1;
    let mut active: events::ActiveModel = current.into();
    active.revision = Set(revision);
    active.updated_at = Set(now);
    active.deleted_at = Set(Some(now));
    let event = write_over(txn, active).await?;
    let unlink = calendar_events::Entity::delete_many()
        .filter(calendar_events::Column::EventId.eq(id))
        .into_query();
    txn.defer(unlink).await?;
    let unpublish = crate::store::event_shares::removal_of(&[id]).into_query();
    txn.defer(unpublish).await?;
    Ok(event)
}

/// Deletes many events at once (a calendar's deletion), keeping tombstones.
pub async fn tombstone_many(
    txn: &impl ConnectionTrait,
    ids: &[EventId],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use sea_orm::sea_query::{Expr, ExprTrait};
    for chunk in ids.chunks(500) {
        events::Entity::update_many()
            .col_expr(events::Column::DeletedAt, Expr::value(now))
            .col_expr(events::Column::UpdatedAt, Expr::value(now))
            .col_expr(
                events::Column::Revision,
                Expr::col(events::Column::Revision).add(1),
            )
            .filter(events::Column::Id.is_in(chunk.iter().copied()))
            .exec(txn)
            .await?;
        calendar_events::Entity::delete_many()
            .filter(calendar_events::Column::EventId.is_in(chunk.iter().copied()))
            .exec(txn)
            .await?;
        crate::store::event_shares::remove_of(txn, chunk).await?;
    }
    Ok(())
}

/// Live events homed in a calendar.
pub async fn homed_in(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<Vec<events::Model>, DbErr> {
    events::Entity::find()
        .filter(events::Column::OriginCalendarId.eq(calendar_id))
        .filter(events::Column::DeletedAt.is_null())
        .all(txn)
        .await
}

/// The links `user` made from live events homed in `home` into other calendars (event → those
/// calendars).
pub async fn links_made_from(
    txn: &impl ConnectionTrait,
    home: CalendarId,
    user: &UserId,
) -> Result<BTreeMap<EventId, Vec<CalendarId>>, DbErr> {
    let links = calendar_events::Entity::find()
        .inner_join(events::Entity)
        .filter(calendar_events::Column::LinkedBy.eq(user))
        .filter(calendar_events::Column::CalendarId.ne(home))
        .filter(events::Column::OriginCalendarId.eq(home))
        .filter(events::Column::DeletedAt.is_null())
        .all(txn)
        .await?;
    let mut made: BTreeMap<EventId, Vec<CalendarId>> = BTreeMap::new();
    for link in links {
        made.entry(link.event_id)
            .or_default()
            .push(link.calendar_id);
    }
    Ok(made)
}

/// Every link of the events linked to `calendar_id` (event → its calendars).
pub async fn links_of_events_in(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<HashMap<EventId, Vec<CalendarId>>, DbErr> {
    let event_ids: Vec<EventId> = calendar_events::Entity::find()
        .filter(calendar_events::Column::CalendarId.eq(calendar_id))
        .all(txn)
        .await?
        .into_iter()
        .map(|link| link.event_id)
        .collect();
    links_of(txn, &event_ids).await
}

/// The links of several events, each in the order they were linked.
pub async fn links_of(
    db: &impl ConnectionTrait,
    event_ids: &[EventId],
) -> Result<HashMap<EventId, Vec<CalendarId>>, DbErr> {
    let mut by_event: HashMap<EventId, Vec<CalendarId>> = HashMap::new();
    for chunk in event_ids.chunks(500) {
        let links = calendar_events::Entity::find()
            .filter(calendar_events::Column::EventId.is_in(chunk.iter().copied()))
            .order_by_asc(calendar_events::Column::CreatedAt)
            .order_by_asc(calendar_events::Column::CalendarId)
            .all(db)
            .await?;
        for link in links {
            by_event
                .entry(link.event_id)
                .or_default()
                .push(link.calendar_id);
        }
    }
    Ok(by_event)
}

/// Which of `event_ids` `user_id` can see.
pub async fn visible_among(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    event_ids: &[EventId],
) -> Result<HashSet<EventId>, DbErr> {
    let calendars: Vec<CalendarId> = calendar_members::Entity::find()
        .filter(calendar_members::Column::UserId.eq(user_id))
        .all(db)
        .await?
        .into_iter()
        .map(|m| m.calendar_id)
        .collect();
    let mut visible = HashSet::new();
    if calendars.is_empty() {
        return Ok(visible);
    }
    for chunk in event_ids.chunks(500) {
        let rows = calendar_events::Entity::find()
            .find_also_related(events::Entity)
            .filter(calendar_events::Column::EventId.is_in(chunk.iter().copied()))
            .filter(calendar_events::Column::CalendarId.is_in(calendars.iter().copied()))
            .filter(events::Column::DeletedAt.is_null())
            .all(db)
            .await?;
        visible.extend(rows.into_iter().map(|(link, _)| link.event_id));
    }
    Ok(visible)
}
