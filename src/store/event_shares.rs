//! Published event pages (`event_shares`): an event's live publication, publishing and
//! revoking it, and what a token opens. Every read of a token filters on a live share of a
//! live event: a revoked token and a deleted event's token open nothing.

use chrono::{DateTime, Utc};
use entities::{event_shares, events, users};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter,
};

use crate::domain::event_pages::{AttendeeVisibility, PageMode, PageTheme, Publication};
use crate::domain::ids::{EventId, UserId, random_token};

/// A live publication of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedPage {
    /// The page's token.
    pub token: String,
    /// How it is published.
    pub publication: Publication,
}

impl From<event_shares::Model> for PublishedPage {
    fn from(row: event_shares::Model) -> Self {
        Self {
            publication: Publication {
                mode: PageMode::from_stored(&row.mode),
                indexable: row.indexable && row.mode == "public",
                attendee_visibility: AttendeeVisibility::from_stored(&row.attendee_visibility),
                theme: PageTheme::from_stored(&row.theme),
            },
            token: row.token,
        }
    }
}

/// A page a token opens: the publication, the event, and its organizer's display name.
#[derive(Debug, Clone)]
pub struct OpenedPage {
    /// The publication.
    pub page: PublishedPage,
    /// The (live) event.
    pub event: events::Model,
    /// Its creator's display name (the one identity the page shows).
    pub organizer: String,
}

fn live() -> sea_orm::sea_query::SimpleExpr {
    event_shares::Column::RevokedAt.is_null()
}

/// The event's live publication, if any.
pub async fn live_of(
    db: &impl ConnectionTrait,
    event_id: EventId,
) -> Result<Option<PublishedPage>, DbErr> {
    Ok(event_shares::Entity::find()
        .filter(event_shares::Column::EventId.eq(event_id))
        .filter(live())
        .one(db)
        .await?
        .map(PublishedPage::from))
}

/// Publishes the event, or changes how it is published: a live publication keeps its token
/// (links already sent keep working); otherwise a new token is issued.
pub async fn publish(
    txn: &impl ConnectionTrait,
    event_id: EventId,
    by: &UserId,
    publication: Publication,
    now: DateTime<Utc>,
) -> Result<PublishedPage, DbErr> {
    let existing = event_shares::Entity::find()
        .filter(event_shares::Column::EventId.eq(event_id))
        .filter(live())
        .one(txn)
        .await?;
    let settings = |row: &mut event_shares::ActiveModel| {
        row.mode = Set(publication.mode.as_str().to_owned());
        row.indexable = Set(publication.indexable);
        row.attendee_visibility = Set(publication.attendee_visibility.as_str().to_owned());
        row.theme = Set(publication.theme.stored());
        row.updated_at = Set(now);
    };
    let row = match existing {
        Some(row) => {
            let mut active: event_shares::ActiveModel = row.into();
            settings(&mut active);
            active.update(txn).await?
        }
        None => {
            let mut active = event_shares::ActiveModel {
                token: Set(random_token()),
                event_id: Set(event_id),
                created_by: Set(by.to_owned()),
                created_at: Set(now),
                revoked_at: Set(None),
                ..Default::default()
            };
            settings(&mut active);
            active.insert(txn).await?
        }
    };
    Ok(row.into())
}

/// Revokes the event's live publication (its token stays dead); whether there was one.
pub async fn revoke(
    txn: &impl ConnectionTrait,
    event_id: EventId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let revoked = event_shares::Entity::update_many()
        .col_expr(event_shares::Column::RevokedAt, Expr::value(now))
        .col_expr(event_shares::Column::UpdatedAt, Expr::value(now))
        .filter(event_shares::Column::EventId.eq(event_id))
        .filter(live())
        .exec(txn)
        .await?;
    Ok(revoked.rows_affected > 0)
}

/// Removes every publication of `events` (they were deleted: a tombstone has no page).
pub async fn remove_of(txn: &impl ConnectionTrait, events: &[EventId]) -> Result<(), DbErr> {
    removal_of(events).exec(txn).await?;
    Ok(())
}

/// The delete of [`remove_of`], to run with others.
pub fn removal_of(events: &[EventId]) -> sea_orm::DeleteMany<event_shares::Entity> {
    event_shares::Entity::delete_many()
        .filter(event_shares::Column::EventId.is_in(events.iter().copied()))
}

/// The live page `token` opens, if any.
pub async fn open(db: &impl ConnectionTrait, token: &str) -> Result<Option<OpenedPage>, DbErr> {
    let Some((share, Some(event))) = event_shares::Entity::find_by_id(token.to_owned())
        .filter(live())
        .find_also_related(events::Entity)
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    if event.deleted_at.is_some() {
        return Ok(None);
    }
    let organizer = users::Entity::find_by_id(event.creator_id.clone())
        .one(db)
        .await?
        .map(|user| user.name)
        .unwrap_or_default();
    Ok(Some(OpenedPage {
        page: share.into(),
        event,
        organizer,
    }))
}

/// Whether `token` is the live publication of `event_id` (checked inside the write that
/// records an answer from the page).
pub async fn is_live_page_of(
    db: &impl ConnectionTrait,
    token: &str,
    event_id: EventId,
) -> Result<bool, DbErr> {
    Ok(event_shares::Entity::find_by_id(token.to_owned())
        .filter(event_shares::Column::EventId.eq(event_id))
        .filter(live())
        .one(db)
        .await?
        .is_some())
}
