//! Users, and creating one together with everything a new user starts with.

use chrono::{DateTime, Utc};
use entities::{accounts, calendar_members, calendars, user_settings, users};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QuerySelect, SqlErr,
};

use super::statements::Unique;
use super::{Database, WriteTxn};
use crate::domain::ids::{AccountId, CalendarId, UserId};
use crate::domain::settings;

/// Colour of a new personal calendar.
pub const PERSONAL_CALENDAR_COLOR: &str = "#C8553D";

/// A user to create.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// Display name.
    pub name: String,
    /// Email, lower-cased by [`create`].
    pub email: String,
    /// Whether the address is already verified (provider sign-in).
    pub email_verified: bool,
    /// Avatar URL.
    pub image: Option<String>,
}

/// The first sign-in account of a new user.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// `credential`, `google`, `apple`.
    pub provider_id: String,
    /// The provider's subject; `None` for `credential` (the user id is used).
    pub account_id: Option<String>,
    /// argon2 PHC string for `credential`.
    pub password_hash: Option<String>,
}

/// Why a user could not be created.
#[derive(Debug, thiserror::Error)]
pub enum CreateUserError {
    /// The email is taken (compared lower-cased, enforced by a unique index).
    #[error("email already in use")]
    EmailTaken,
    /// The database failed.
    #[error(transparent)]
    Database(#[from] DbErr),
}

/// Creates the user, its sign-in account (none for a user who signs in by emailed code),
/// its personal calendar (with the user as owner) and its settings row (`onboarded: false`),
/// in one transaction.
pub async fn create(
    db: &Database,
    new: NewUser,
    account: Option<NewAccount>,
    now: DateTime<Utc>,
) -> Result<users::Model, CreateUserError> {
    let txn = db.begin_write().await?;
    let user_id = UserId::new(crate::domain::ids::new_id());
    let email = new.email.trim().to_lowercase();
    let user = users::ActiveModel {
        id: Set(user_id.clone()),
        name: Set(new.name.clone()),
        email: Set(email),
        email_verified: Set(new.email_verified),
        image: Set(new.image),
        is_external: Set(false),
        home_server: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await
    .map_err(|err| match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => CreateUserError::EmailTaken,
        _ => CreateUserError::Database(err),
    })?;
    if let Some(account) = account {
        accounts::ActiveModel {
            id: Set(crate::domain::ids::new_id()),
            user_id: Set(user_id.clone()),
            provider_id: Set(account.provider_id),
            account_id: Set(AccountId::new(
                account.account_id.unwrap_or_else(|| user_id.to_string()),
            )),
            password_hash: Set(account.password_hash),
            scope: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(&txn)
        .await?;
    }
    let calendar_id = CalendarId::generate();
    let calendar_name = match new.name.trim() {
        "" => "Personal".to_owned(),
        name => name.to_owned(),
    };
    calendars::ActiveModel {
        id: Set(calendar_id),
        creator_id: Set(user_id.clone()),
        name: Set(calendar_name),
        color: Set(PERSONAL_CALENDAR_COLOR.to_owned()),
        is_default: Set(true),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    calendar_members::ActiveModel {
        id: Set(uuid::Uuid::new_v4()),
        calendar_id: Set(calendar_id),
        user_id: Set(user_id.clone()),
        role: Set("owner".to_owned()),
        reminder: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    user_settings::ActiveModel {
        user_id: Set(user_id.clone()),
        value: Set(settings::defaults()),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(user)
}

/// A shadow user to create for a member of another server.
#[derive(Debug, Clone)]
pub struct NewShadow {
    /// Display name (a claim of the home server).
    pub name: String,
    /// The claimed address, lower-cased.
    pub email: String,
    /// The address stored instead when the claimed one is taken here.
    pub stand_in_email: String,
    /// Avatar URL (a claim).
    pub image: Option<String>,
    /// The home server's origin.
    pub home_server: String,
}

/// Creates a shadow user (`fed_<uuid>`, external, not verified, no sign-in account, no
/// calendar of its own) and its settings row in `txn`. Claims never bind it to an existing
/// user: a taken address is stored as the stand-in.
pub async fn create_shadow(
    txn: &impl ConnectionTrait,
    new: NewShadow,
    now: DateTime<Utc>,
) -> Result<users::Model, DbErr> {
    let taken = users::Entity::find()
        .filter(users::Column::Email.eq(new.email.as_str()))
        .unique(txn)
        .await?
        .is_some();
    let user = users::ActiveModel {
        id: Set(UserId::new(format!("fed_{}", uuid::Uuid::new_v4()))),
        name: Set(new.name),
        email: Set(if taken { new.stand_in_email } else { new.email }),
        email_verified: Set(false),
        image: Set(new.image),
        is_external: Set(true),
        home_server: Set(Some(new.home_server)),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    user_settings::ActiveModel {
        user_id: Set(user.id.clone()),
        value: Set(settings::defaults()),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    Ok(user)
}

/// The user with this (lower-cased) email.
pub async fn find_by_email(db: &Database, email: &str) -> Result<Option<users::Model>, DbErr> {
    users::Entity::find()
        .filter(users::Column::Email.eq(email.trim().to_lowercase()))
        .unique(db.conn())
        .await
}

/// The user with this id.
pub async fn find(db: &impl ConnectionTrait, id: &UserId) -> Result<Option<users::Model>, DbErr> {
    users::Entity::find_by_id(id.to_owned()).unique(db).await
}

/// Changes name and/or image; `image: Some(None)` clears it.
pub async fn update_profile(
    db: &Database,
    id: &UserId,
    name: Option<String>,
    image: Option<Option<String>>,
    now: DateTime<Utc>,
) -> Result<Option<users::Model>, DbErr> {
    let Some(user) = find(db.conn(), id).await? else {
        return Ok(None);
    };
    let mut active: users::ActiveModel = user.into();
    if let Some(name) = name {
        active.name = Set(name);
    }
    if let Some(image) = image {
        active.image = Set(image);
    }
    active.updated_at = Set(now);
    let user = active.update(db.conn()).await?;
    db.credentials_changed(id);
    Ok(Some(user))
}

/// Gives a nameless account the name it just typed (on a published page); a name already
/// there is never replaced. Whether it was named now.
pub async fn name_if_nameless(
    db: &Database,
    id: &UserId,
    name: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    use sea_orm::sea_query::Expr;
    let named = db
        .write(async |txn| {
            users::Entity::update_many()
                .col_expr(users::Column::Name, Expr::value(name))
                .col_expr(users::Column::UpdatedAt, Expr::value(now))
                .filter(users::Column::Id.eq(id))
                .filter(users::Column::Name.eq(""))
                .exec(txn)
                .await
        })
        .await?
        .rows_affected
        > 0;
    if named {
        db.credentials_changed(id);
    }
    Ok(named)
}

/// The owner of an unverified address proved it (an emailed code): whatever the account
/// gathered before that proof — its sign-in accounts (a password someone else may have set,
/// provider links) and its sessions — is removed, and the address is marked verified, in
/// one transaction. Returns the user as it now is (`None` if it is gone); a verified user
/// is returned untouched.
pub async fn prove_email(
    db: &Database,
    id: &UserId,
    now: DateTime<Utc>,
) -> Result<Option<users::Model>, DbErr> {
    db.write(async |txn| {
        let Some(user) = users::Entity::find_by_id(id.to_owned())
            .lock_exclusive()
            .one(txn)
            .await?
        else {
            return Ok(None);
        };
        if user.email_verified {
            return Ok(Some(user));
        }
        accounts::Entity::delete_many()
            .filter(accounts::Column::UserId.eq(id))
            .exec(txn)
            .await?;
        super::sessions::delete_all_for_user(txn, id, None).await?;
        let mut user: users::ActiveModel = user.into();
        user.email_verified = Set(true);
        user.updated_at = Set(now);
        user.update(txn).await.map(Some)
    })
    .await
}

/// Marks the user's email verified.
pub async fn set_email_verified(
    db: &Database,
    id: &UserId,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    users::Entity::update_many()
        .col_expr(users::Column::EmailVerified, true.into())
        .col_expr(users::Column::UpdatedAt, now.into())
        .filter(users::Column::Id.eq(id))
        .exec(db.conn())
        .await?;
    db.credentials_changed(id);
    Ok(())
}

/// Changes the user's email (already verified by the caller's flow).
pub async fn set_email(
    db: &Database,
    id: &UserId,
    email: &str,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let result = users::Entity::update_many()
        .col_expr(users::Column::Email, email.trim().to_lowercase().into())
        .col_expr(users::Column::UpdatedAt, now.into())
        .filter(users::Column::Id.eq(id))
        .exec(db.conn())
        .await;
    db.credentials_changed(id);
    match result {
        Ok(result) => Ok(result.rows_affected == 1),
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

/// Deletes the user; sessions, accounts, memberships, owned calendars and settings go with
/// it (foreign keys cascade). Runs in `txn` (one that consumes a token, say); the user's
/// cached sessions and streams end once it commits. Outside a transaction, [`delete_now`].
pub async fn delete(txn: &WriteTxn, id: &UserId) -> Result<bool, DbErr> {
    let owned: Vec<CalendarId> = calendars::Entity::find()
        .filter(calendars::Column::CreatorId.eq(id))
        .all(txn)
        .await?
        .into_iter()
        .map(|calendar| calendar.id)
        .collect();
    super::members::shadows_lose(txn, &owned).await?;
    txn.credentials_changed(id);
    let result = users::Entity::delete_by_id(id.to_owned()).exec(txn).await?;
    Ok(result.rows_affected == 1)
}

/// [`delete`] in a transaction of its own.
pub async fn delete_now(db: &Database, id: &UserId) -> Result<bool, DbErr> {
    let txn = db.begin_write().await?;
    let deleted = delete(&txn, id).await?;
    txn.commit().await?;
    Ok(deleted)
}
