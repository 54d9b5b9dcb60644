//! Calendar invites (the invite id is the token).

use chrono::{DateTime, Utc};
use entities::invites;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

use super::statements::Unique;
use crate::domain::ids::{CalendarId, InviteId, UserId};
use crate::domain::invites::InviteUse;

/// Whether `invite` may be previewed or used at `now` ([`InviteUse::is_usable`]).
pub fn is_usable(invite: &invites::Model, now: DateTime<Utc>) -> bool {
    InviteUse {
        revoked_at: invite.revoked_at,
        expires_at: invite.expires_at,
        max_uses: invite.max_uses,
        uses: invite.uses,
    }
    .is_usable(now)
}

/// An invite to create.
#[derive(Debug, Clone)]
pub struct NewInvite {
    /// The calendar.
    pub calendar_id: CalendarId,
    /// Its creator.
    pub created_by: UserId,
    /// Expiry (`None`: never).
    pub expires_at: Option<DateTime<Utc>>,
    /// Use limit (`None`: unlimited).
    pub max_uses: Option<i32>,
}

/// Inserts an invite with a new random token.
pub async fn create(
    db: &impl ConnectionTrait,
    new: NewInvite,
    now: DateTime<Utc>,
) -> Result<invites::Model, DbErr> {
    invites::ActiveModel {
        id: Set(InviteId::generate()),
        calendar_id: Set(new.calendar_id),
        created_by: Set(Some(new.created_by)),
        expires_at: Set(new.expires_at),
        max_uses: Set(new.max_uses),
        uses: Set(0),
        revoked_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await
}

/// The invite with this token, usable or not.
pub async fn find(
    db: &impl ConnectionTrait,
    id: InviteId,
) -> Result<Option<invites::Model>, DbErr> {
    invites::Entity::find_by_id(id).unique(db).await
}

/// The invite with this token, if it can still be used.
pub async fn find_usable(
    db: &impl ConnectionTrait,
    id: InviteId,
    now: DateTime<Utc>,
) -> Result<Option<invites::Model>, DbErr> {
    Ok(find(db, id).await?.filter(|invite| is_usable(invite, now)))
}

/// Locks the invite row for the rest of the transaction.
pub async fn lock(
    txn: &impl ConnectionTrait,
    id: InviteId,
) -> Result<Option<invites::Model>, DbErr> {
    invites::Entity::find_by_id(id)
        .lock_exclusive()
        .unique(txn)
        .await
}

/// The calendar's usable invites, newest first.
pub async fn list_usable(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
    now: DateTime<Utc>,
) -> Result<Vec<invites::Model>, DbErr> {
    Ok(invites::Entity::find()
        .filter(invites::Column::CalendarId.eq(calendar_id))
        .order_by_desc(invites::Column::CreatedAt)
        .all(db)
        .await?
        .into_iter()
        .filter(|invite| is_usable(invite, now))
        .collect())
}

/// Counts one more membership created by the invite.
pub async fn count_use(
    txn: &impl ConnectionTrait,
    id: InviteId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    invites::Entity::update_many()
        .col_expr(
            invites::Column::Uses,
            Expr::col(invites::Column::Uses).add(1),
        )
        .col_expr(invites::Column::UpdatedAt, now.into())
        .filter(invites::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Revokes an invite; `false` if it was already revoked or does not exist.
pub async fn revoke(
    txn: &impl ConnectionTrait,
    id: InviteId,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = invites::Entity::update_many()
        .col_expr(invites::Column::RevokedAt, now.into())
        .col_expr(invites::Column::UpdatedAt, now.into())
        .filter(invites::Column::Id.eq(id))
        .filter(invites::Column::RevokedAt.is_null())
        .exec(txn)
        .await?;
    Ok(result.rows_affected == 1)
}
