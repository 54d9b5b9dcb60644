//! Attendance answers (`none` is the absence of a row).

use chrono::{DateTime, Utc};
use entities::{event_attendees, users};
use sea_orm::sea_query::{InsertStatement, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryTrait,
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
    let rank = |status: &str| match status {
        "going" => 0,
        "maybe" => 1,
        _ => 2,
    };
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
    attendees.sort_by(|a, b| {
        (rank(&a.status), a.name.to_lowercase(), &a.id).cmp(&(
            rank(&b.status),
            b.name.to_lowercase(),
            &b.id,
        ))
    });
    Ok(attendees)
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
