//! Federated connections (home side): a user's link to another server, with the member
//! token it issued, sealed. One per (user, server origin).

use chrono::{DateTime, Utc};
use entities::federation_connections as connections;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set};

use super::Database;
use super::statements::Unique;
use crate::domain::ids::{ConnectionId, UserId};

/// A connection to store (or refresh, when the user already has one to that server).
#[derive(Debug, Clone)]
pub struct NewConnection {
    /// The local user.
    pub user_id: UserId,
    /// The other server's canonical origin.
    pub server: String,
    /// The shadow user's id there.
    pub remote_user_id: String,
    /// The member token, sealed.
    pub sealed_token: String,
    /// When that server stops accepting it.
    pub token_expires_at: DateTime<Utc>,
}

/// Stores the connection, replacing the shadow and token of an existing one to the same
/// server (its id is kept); returns the row.
pub async fn save(
    db: &Database,
    new: NewConnection,
    now: DateTime<Utc>,
) -> Result<connections::Model, DbErr> {
    let row = connections::ActiveModel {
        id: Set(ConnectionId::generate()),
        user_id: Set(new.user_id.clone()),
        server: Set(new.server.clone()),
        remote_user_id: Set(new.remote_user_id),
        token: Set(new.sealed_token),
        token_expires_at: Set(new.token_expires_at),
        created_at: Set(now),
        updated_at: Set(now),
    };
    connections::Entity::insert(row)
        .on_conflict(
            OnConflict::columns([connections::Column::UserId, connections::Column::Server])
                .update_columns([
                    connections::Column::RemoteUserId,
                    connections::Column::Token,
                    connections::Column::TokenExpiresAt,
                    connections::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec(db.conn())
        .await?;
    find_by_server(db, &new.user_id, &new.server)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("federation connection just saved".into()))
}

/// The user's connections, oldest first.
pub async fn of_user(db: &Database, user_id: &UserId) -> Result<Vec<connections::Model>, DbErr> {
    connections::Entity::find()
        .filter(connections::Column::UserId.eq(user_id))
        .order_by_asc(connections::Column::CreatedAt)
        .order_by_asc(connections::Column::Id)
        .all(db.conn())
        .await
}

/// The user's connection with this id (none for another user's).
pub async fn find(
    db: &Database,
    user_id: &UserId,
    id: ConnectionId,
) -> Result<Option<connections::Model>, DbErr> {
    connections::Entity::find_by_id(id)
        .filter(connections::Column::UserId.eq(user_id))
        .unique(db.conn())
        .await
}

/// The user's connection to `server`.
pub async fn find_by_server(
    db: &Database,
    user_id: &UserId,
    server: &str,
) -> Result<Option<connections::Model>, DbErr> {
    connections::Entity::find()
        .filter(connections::Column::UserId.eq(user_id))
        .filter(connections::Column::Server.eq(server))
        .unique(db.conn())
        .await
}

/// Replaces the connection's token with a rotated one, unless another rotation already
/// replaced `old_sealed`; whether it did.
pub async fn replace_token(
    db: &Database,
    id: ConnectionId,
    old_sealed: &str,
    new_sealed: String,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let updated = connections::Entity::update_many()
        .col_expr(connections::Column::Token, new_sealed.into())
        .col_expr(connections::Column::TokenExpiresAt, expires_at.into())
        .col_expr(connections::Column::UpdatedAt, now.into())
        .filter(connections::Column::Id.eq(id))
        .filter(connections::Column::Token.eq(old_sealed))
        .exec(db.conn())
        .await?;
    Ok(updated.rows_affected == 1)
}

/// Removes the user's connection to `server`; the removed row, if there was one.
pub async fn remove(
    db: &Database,
    user_id: &UserId,
    server: &str,
) -> Result<Option<connections::Model>, DbErr> {
    let Some(found) = find_by_server(db, user_id, server).await? else {
        return Ok(None);
    };
    let removed = connections::Entity::delete_by_id(found.id)
        .exec(db.conn())
        .await?
        .rows_affected;
    Ok((removed == 1).then_some(found))
}
