//! Attendance answers (`none` is the absence of a row).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use entities::{event_attendees, users};
use sea_orm::sea_query::{Expr, ExprTrait, InsertStatement, OnConflict, Query, SelectStatement};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter,
    QueryResult, QueryTrait,
};

use crate::domain::events::Attendance;
use crate::domain::ids::{EventId, UserId};
use crate::store::WriteTxn;

/// One attendee's answer, with who they are (never their email).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attendee {
    /// User id.
    pub id: UserId,
    /// Name.
    pub name: String,
    /// Avatar.
    pub image: Option<String>,
    /// `going`, `maybe` or `declined`.
    pub status: String,
}

/// The event's attendees: going, maybe, declined, then by name.
pub async fn list(db: &impl ConnectionTrait, event_id: EventId) -> Result<Vec<Attendee>, DbErr> {
    let rows = event_attendees::Entity::find()
        .filter(event_attendees::Column::EventId.eq(event_id))
        .find_also_related(users::Entity)
        .all(db)
        .await?;
    let mut attendees: Vec<Attendee> = rows
        .into_iter()
        .filter_map(|(row, user)| {
            let user = user?;
            Some(Attendee {
                id: user.id,
                name: user.name,
                image: user.image,
                status: row.status,
            })
        })
        .collect();
    in_order(&mut attendees);
    Ok(attendees)
}

/// Puts attendees in the order every list of them has: going, maybe, declined, then by name
/// (case aside), then by id.
fn in_order(attendees: &mut [Attendee]) {
    let rank = |status: &str| match status {
        "going" => 0,
        "maybe" => 1,
        _ => 2,
    };
    attendees.sort_by(|a, b| {
        (rank(&a.status), a.name.to_lowercase(), &a.id).cmp(&(
            rank(&b.status),
            b.name.to_lowercase(),
            &b.id,
        ))
    });
}

/// The attendee lists of the events a batch of edits answers for, read with its locks at
/// its start ([`super::events::change_locks::lock_for_changes`]) and kept as its answers
/// change them ([`AttendeeLists::answer`]): an answer costs the batch no read of its own.
#[derive(Debug, Default)]
pub struct AttendeeLists {
    /// Each event read (an event the batch created is not): its attendees, in order.
    lists: HashMap<EventId, Vec<Attendee>>,
    /// Who answers: name and avatar.
    people: HashMap<UserId, (String, Option<String>)>,
}

impl AttendeeLists {
    /// The reads for the attendees of `events` and for the `people` who answer, in that
    /// order, their keys as [`super::statements::padded_keys`] gives them for `backend`; none when
    /// there is no event.
    pub fn reads(
        backend: DbBackend,
        events: &[EventId],
        people: &[UserId],
    ) -> Vec<SelectStatement> {
        if events.is_empty() {
            return Vec::new();
        }
        let (events, people) = (
            super::statements::padded_keys(backend, events),
            super::statements::padded_keys(backend, people),
        );
        let attendees = Query::select()
            .column((event_attendees::Entity, event_attendees::Column::EventId))
            .column((event_attendees::Entity, event_attendees::Column::Status))
            .column((users::Entity, users::Column::Id))
            .column((users::Entity, users::Column::Name))
            .column((users::Entity, users::Column::Image))
            .from(event_attendees::Entity)
            .inner_join(
                users::Entity,
                Expr::col((users::Entity, users::Column::Id))
                    .equals((event_attendees::Entity, event_attendees::Column::UserId)),
            )
            .and_where(
                Expr::col((event_attendees::Entity, event_attendees::Column::EventId))
                    .is_in(events.iter().copied()),
            )
            .to_owned();
        let who = Query::select()
            .columns([users::Column::Id, users::Column::Name, users::Column::Image])
            .from(users::Entity)
            .and_where(users::Column::Id.is_in(people.iter().cloned()))
            .to_owned();
        vec![attendees, who]
    }

    /// The lists of `events` (those that exist) from what [`Self::reads`] answered.
    pub fn from_rows(
        events: impl IntoIterator<Item = EventId>,
        attendees: &[QueryResult],
        people: &[QueryResult],
    ) -> Result<Self, DbErr> {
        let mut lists: HashMap<EventId, Vec<Attendee>> =
            events.into_iter().map(|id| (id, Vec::new())).collect();
        for row in attendees {
            let event: EventId = row.try_get("", "event_id")?;
            if let Some(list) = lists.get_mut(&event) {
                list.push(Attendee {
                    id: row.try_get("", "id")?,
                    name: row.try_get("", "name")?,
                    image: row.try_get("", "image")?,
                    status: row.try_get("", "status")?,
                });
            }
        }
        for list in lists.values_mut() {
            in_order(list);
        }
        let people = people
            .iter()
            .map(|row| {
                Ok((
                    row.try_get("", "id")?,
                    (row.try_get("", "name")?, row.try_get("", "image")?),
                ))
            })
            .collect::<Result<_, DbErr>>()?;
        Ok(Self { lists, people })
    }

    /// `who`'s answer to `event` applied to its list, as [`set`] writes it: the list now, or
    /// `None` when the list was not read (the batch created the event) or `who` was not.
    pub fn answer(
        &mut self,
        event: EventId,
        who: &UserId,
        answer: Attendance,
    ) -> Option<Vec<Attendee>> {
        let (name, image) = self.people.get(who)?;
        let list = self.lists.get_mut(&event)?;
        list.retain(|attendee| attendee.id != *who);
        if answer != Attendance::None {
            list.push(Attendee {
                id: who.clone(),
                name: name.clone(),
                image: image.clone(),
                status: answer.as_str().to_owned(),
            });
            in_order(list);
        }
        Some(list.clone())
    }
}

/// Sets (or, for `none`, removes) `user_id`'s answer.
pub async fn set(
    txn: &WriteTxn,
    event_id: EventId,
    user_id: &UserId,
    answer: Attendance,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    if answer == Attendance::None {
        let delete = event_attendees::Entity::delete_many()
            .filter(event_attendees::Column::EventId.eq(event_id))
            .filter(event_attendees::Column::UserId.eq(user_id))
            .into_query();
        return txn.defer(delete).await;
    }
    let row = event_attendees::ActiveModel {
        event_id: Set(event_id),
        user_id: Set(user_id.to_owned()),
        status: Set(answer.as_str().to_owned()),
        created_at: Set(now),
        updated_at: Set(now),
    };
    let upsert = event_attendees::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([
                event_attendees::Column::EventId,
                event_attendees::Column::UserId,
            ])
            .update_columns([
                event_attendees::Column::Status,
                event_attendees::Column::UpdatedAt,
            ])
            .to_owned(),
        )
        .into_query();
    txn.defer(upsert).await
}

/// The insert recording each new event's creator as going (run with the events' own inserts,
/// see [`super::events::inserts::insert_many`]).
pub(super) fn creators_going(
    events: &[entities::events::Model],
    now: DateTime<Utc>,
) -> InsertStatement {
    let rows = events.iter().map(|event| event_attendees::ActiveModel {
        event_id: Set(event.id),
        user_id: Set(event.creator_id.clone()),
        status: Set(Attendance::Going.as_str().to_owned()),
        created_at: Set(now),
        updated_at: Set(now),
    });
    event_attendees::Entity::insert_many(rows).into_query()
}

/// Attendees who have not declined, except `actor`: who hears about a move or cancellation.
pub async fn to_notify(
    db: &impl ConnectionTrait,
    event_id: EventId,
    actor: &UserId,
) -> Result<Vec<UserId>, DbErr> {
    Ok(event_attendees::Entity::find()
        .filter(event_attendees::Column::EventId.eq(event_id))
        .filter(event_attendees::Column::Status.ne("declined"))
        .filter(event_attendees::Column::UserId.ne(actor))
        .all(db)
        .await?
        .into_iter()
        .map(|row| row.user_id)
        .collect())
}

/// Which of `events` `user_id` declined.
pub async fn declined_among(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    events: &[EventId],
) -> Result<std::collections::HashSet<EventId>, DbErr> {
    let mut declined = std::collections::HashSet::new();
    for chunk in events.chunks(500) {
        let rows = event_attendees::Entity::find()
            .filter(event_attendees::Column::UserId.eq(user_id))
            .filter(event_attendees::Column::Status.eq("declined"))
            .filter(event_attendees::Column::EventId.is_in(chunk.iter().copied()))
            .all(db)
            .await?;
        declined.extend(rows.into_iter().map(|row| row.event_id));
    }
    Ok(declined)
}
