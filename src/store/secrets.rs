//! Server-wide secrets generated once: the first instance to start writes the secret, every
//! later one (and every restart) reads the same value.

use entities::server_secrets;
use sea_orm::{ActiveValue::Set, DbErr, EntityTrait};

use super::Database;
use super::statements::Unique;

/// The secret `name`, created from `generate` if it does not exist yet.
pub async fn get_or_create(
    db: &Database,
    name: &str,
    generate: impl FnOnce() -> String,
) -> Result<String, DbErr> {
    let row = server_secrets::ActiveModel {
        name: Set(name.to_owned()),
        value: Set(generate()),
        created_at: Set(chrono::Utc::now()),
    };
    server_secrets::Entity::insert(row)
        .on_conflict_do_nothing_on([server_secrets::Column::Name])
        .exec(db.conn())
        .await?;
    server_secrets::Entity::find_by_id(name.to_owned())
        .unique(db.conn())
        .await?
        .map(|row| row.value)
        .ok_or_else(|| DbErr::RecordNotFound(format!("server secret {name}")))
}
