//! Provider mirrors: the remote calendars of each connected account with their local
//! mirrors (and, for listings, what the accounts show of themselves), and which remote resource each mirrored event belongs to. The
//! provider writes still to deliver are in [`super::outbox`].

use std::collections::HashMap;

use crate::domain::ids::{AccountId, CalendarId, EventId, UserId};
use chrono::{DateTime, Utc};
use entities::{accounts, caldav_accounts, external_calendars, external_events};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DbErr, EntityTrait,
    QueryFilter, QueryOrder,
};
use uuid::Uuid;

/// The `provider` value of CalDAV rows.
pub const CALDAV: &str = "caldav";

/// The remote calendars known for an account (mirrored or disabled).
pub async fn calendars_of_account(
    db: &impl ConnectionTrait,
    provider: &str,
    account_id: &AccountId,
) -> Result<Vec<external_calendars::Model>, DbErr> {
    external_calendars::Entity::find()
        .filter(external_calendars::Column::Provider.eq(provider))
        .filter(external_calendars::Column::AccountId.eq(account_id))
        .order_by_asc(external_calendars::Column::CreatedAt)
        .order_by_asc(external_calendars::Column::Id)
        .all(db)
        .await
}

/// The mirror rows of local calendars, by calendar.
pub async fn mirrors_of(
    db: &impl ConnectionTrait,
    calendars: &[CalendarId],
) -> Result<HashMap<CalendarId, external_calendars::Model>, DbErr> {
    let mut found = HashMap::new();
    for chunk in calendars.chunks(500) {
        for row in external_calendars::Entity::find()
            .filter(external_calendars::Column::CalendarId.is_in(chunk.iter().copied()))
            .all(db)
            .await?
        {
            if let Some(calendar) = row.calendar_id {
                found.insert(calendar, row);
            }
        }
    }
    Ok(found)
}

/// Where the last pull of a mirror ended.
pub async fn set_sync_token(
    txn: &impl ConnectionTrait,
    id: Uuid,
    token: Option<&str>,
) -> Result<(), DbErr> {
    external_calendars::Entity::update_many()
        .col_expr(
            external_calendars::Column::SyncToken,
            Expr::value(token.map(str::to_owned)),
        )
        .col_expr(
            external_calendars::Column::UpdatedAt,
            Expr::value(Utc::now()),
        )
        .filter(external_calendars::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Marks a mirror disabled (kept so discovery does not bring it back) and forgets its local
/// calendar.
pub async fn disable_mirror(txn: &impl ConnectionTrait, id: Uuid) -> Result<(), DbErr> {
    external_calendars::Entity::update_many()
        .col_expr(external_calendars::Column::Disabled, Expr::value(true))
        .col_expr(
            external_calendars::Column::CalendarId,
            Expr::value(Option::<Uuid>::None),
        )
        .col_expr(
            external_calendars::Column::SyncToken,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            external_calendars::Column::UpdatedAt,
            Expr::value(Utc::now()),
        )
        .filter(external_calendars::Column::Id.eq(id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Forgets remote calendars (gone at the provider, or their account disconnected).
pub async fn delete_mirrors(txn: &impl ConnectionTrait, ids: &[Uuid]) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    external_calendars::Entity::delete_many()
        .filter(external_calendars::Column::Id.is_in(ids.iter().copied()))
        .exec(txn)
        .await?;
    Ok(())
}

/// The resources of a mirror: href → its events' rows in position order.
pub async fn resources_of(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
) -> Result<HashMap<String, Vec<external_events::Model>>, DbErr> {
    let rows = external_events::Entity::find()
        .filter(external_events::Column::CalendarId.eq(calendar_id))
        .order_by_asc(external_events::Column::RemoteHref)
        .order_by_asc(external_events::Column::Position)
        .all(db)
        .await?;
    let mut by_href: HashMap<String, Vec<external_events::Model>> = HashMap::new();
    for row in rows {
        by_href
            .entry(row.remote_href.clone())
            .or_default()
            .push(row);
    }
    Ok(by_href)
}

/// Where an event lives in mirror `calendar_id`, if it was read from or pushed there.
pub async fn resource_of_event(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
    event_id: EventId,
) -> Result<Option<external_events::Model>, DbErr> {
    external_events::Entity::find_by_id((calendar_id, event_id))
        .one(db)
        .await
}

/// The rows of the events of one resource, replacing what was recorded for it.
pub async fn replace_resource(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
    href: &str,
    rows: Vec<external_events::Model>,
) -> Result<(), DbErr> {
    forget_resource(txn, calendar_id, href).await?;
    if rows.is_empty() {
        return Ok(());
    }
    external_events::Entity::insert_many(rows.into_iter().map(external_events::ActiveModel::from))
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

/// Forgets a resource's rows.
pub async fn forget_resource(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
    href: &str,
) -> Result<(), DbErr> {
    external_events::Entity::delete_many()
        .filter(external_events::Column::CalendarId.eq(calendar_id))
        .filter(external_events::Column::RemoteHref.eq(href))
        .exec(txn)
        .await?;
    Ok(())
}

/// Forgets where an event lives in a mirror.
pub async fn forget_event(
    txn: &impl ConnectionTrait,
    calendar_id: CalendarId,
    event_id: EventId,
) -> Result<(), DbErr> {
    external_events::Entity::delete_by_id((calendar_id, event_id))
        .exec(txn)
        .await?;
    Ok(())
}

/// A remote calendar to mirror into a new local calendar.
#[derive(Debug, Clone)]
pub struct NewMirror {
    /// Provider.
    pub provider: String,
    /// Account.
    pub account_id: AccountId,
    /// The account's owner (owner of the new calendar).
    pub owner: UserId,
    /// The calendar at the provider.
    pub remote_id: String,
    /// Name.
    pub name: String,
    /// Colour.
    pub color: String,
    /// Whether the provider lets the account write.
    pub read_only: bool,
}

/// Creates the local calendar of a new mirror (the owner its only member) and records the
/// mirror, in the caller's transaction. `None` when the remote calendar is mirrored
/// already (by a concurrent pull): the caller drops its transaction.
pub async fn create_mirror(
    txn: &impl ConnectionTrait,
    new: NewMirror,
    now: DateTime<Utc>,
) -> Result<Option<(entities::calendars::Model, external_calendars::Model)>, DbErr> {
    use entities::{calendar_members, calendars};
    let calendar = calendars::ActiveModel {
        id: Set(CalendarId::generate()),
        creator_id: Set(new.owner.clone()),
        name: Set(new.name),
        color: Set(new.color),
        is_default: Set(false),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    calendar_members::ActiveModel {
        id: Set(Uuid::new_v4()),
        calendar_id: Set(calendar.id),
        user_id: Set(new.owner.clone()),
        role: Set(owner_role(new.read_only).as_str().to_owned()),
        reminder: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    let mirror = external_calendars::Model {
        id: Uuid::new_v4(),
        provider: new.provider,
        account_id: new.account_id,
        user_id: new.owner,
        remote_id: new.remote_id,
        calendar_id: Some(calendar.id),
        disabled: false,
        read_only: new.read_only,
        sync_token: None,
        created_at: now,
        updated_at: now,
    };
    // Another process may be mirroring the same remote calendar right now: the first one
    // wins, and the other's transaction is to be dropped (`None`).
    let inserted =
        external_calendars::Entity::insert(external_calendars::ActiveModel::from(mirror.clone()))
            .on_conflict_do_nothing_on([
                external_calendars::Column::Provider,
                external_calendars::Column::AccountId,
                external_calendars::Column::RemoteId,
            ])
            .exec_without_returning(txn)
            .await?;
    if !matches!(inserted, sea_orm::TryInsertResult::Inserted(rows) if rows > 0) {
        return Ok(None);
    }
    Ok(Some((calendar, mirror)))
}

/// The account owner's role in a mirror: owner, or viewer when the provider lets the
/// account only read the calendar (so nothing can be written that could not be delivered).
fn owner_role(read_only: bool) -> crate::domain::roles::Role {
    use crate::domain::roles::Role;
    if read_only { Role::Viewer } else { Role::Owner }
}

/// The provider now lets the account write to a mirror, or no longer does: the mirror
/// remembers it and its account owner's role follows ([`owner_role`]).
pub async fn set_read_only(
    txn: &impl ConnectionTrait,
    mirror: &external_calendars::Model,
    read_only: bool,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    external_calendars::Entity::update_many()
        .col_expr(external_calendars::Column::ReadOnly, Expr::value(read_only))
        .col_expr(external_calendars::Column::UpdatedAt, Expr::value(now))
        .filter(external_calendars::Column::Id.eq(mirror.id))
        .exec(txn)
        .await?;
    if let Some(calendar) = mirror.calendar_id {
        super::members::set_role(txn, calendar, &mirror.user_id, owner_role(read_only), now)
            .await?;
    }
    Ok(())
}

/// What a listing shows of a mirror's account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderLink {
    /// `caldav`, `google` or `microsoft`.
    pub provider: String,
    /// The account.
    pub account_id: AccountId,
    /// The account's label (a CalDAV user name).
    pub account_label: Option<String>,
    /// The CalDAV server.
    pub server_url: Option<String>,
    /// The user who owns the account.
    pub owner: UserId,
    /// `reconnect_required` when the provider refused the credentials.
    pub sync_status: Option<String>,
    /// Why.
    pub sync_error_code: Option<String>,
}

/// The provider links of the mirrors among `calendars`.
pub async fn provider_links(
    db: &impl ConnectionTrait,
    calendars: &[CalendarId],
) -> Result<HashMap<CalendarId, ProviderLink>, DbErr> {
    let mirrors = mirrors_of(db, calendars).await?;
    if mirrors.is_empty() {
        return Ok(HashMap::new());
    }
    let caldav_ids: Vec<Uuid> = mirrors
        .values()
        .filter(|mirror| mirror.provider == CALDAV)
        .filter_map(|mirror| Uuid::parse_str(mirror.account_id.as_str()).ok())
        .collect();
    let caldav: HashMap<AccountId, caldav_accounts::Model> = if caldav_ids.is_empty() {
        HashMap::new()
    } else {
        caldav_accounts::Entity::find()
            .filter(caldav_accounts::Column::Id.is_in(caldav_ids))
            .all(db)
            .await?
            .into_iter()
            .map(|account| (AccountId::from(account.id), account))
            .collect()
    };
    let linked_ids: Vec<AccountId> = mirrors
        .values()
        .filter(|mirror| mirror.provider != CALDAV)
        .map(|mirror| mirror.account_id.clone())
        .collect();
    let linked: HashMap<(String, AccountId), accounts::Model> = if linked_ids.is_empty() {
        HashMap::new()
    } else {
        accounts::Entity::find()
            .filter(accounts::Column::AccountId.is_in(linked_ids))
            .all(db)
            .await?
            .into_iter()
            .map(|account| {
                (
                    (account.provider_id.clone(), account.account_id.clone()),
                    account,
                )
            })
            .collect()
    };
    Ok(mirrors
        .into_iter()
        .map(|(calendar, mirror)| {
            let link = match caldav
                .get(&mirror.account_id)
                .filter(|_| mirror.provider == CALDAV)
            {
                Some(account) => ProviderLink {
                    account_label: Some(account.username.clone()),
                    server_url: Some(account.server_url.clone()),
                    sync_status: account.sync_status.clone(),
                    sync_error_code: account.sync_error_code.clone(),
                    provider: mirror.provider,
                    account_id: mirror.account_id,
                    owner: mirror.user_id,
                },
                None => {
                    let account = linked.get(&(mirror.provider.clone(), mirror.account_id.clone()));
                    // An OAuth account's owner sees `active` unless it needs reconnecting.
                    let status = account.map(|account| {
                        account
                            .sync_status
                            .clone()
                            .unwrap_or_else(|| "active".to_owned())
                    });
                    ProviderLink {
                        account_label: account.and_then(|account| account.label.clone()),
                        server_url: None,
                        sync_status: status,
                        sync_error_code: account
                            .and_then(|account| account.sync_error_code.clone()),
                        provider: mirror.provider,
                        account_id: mirror.account_id,
                        owner: mirror.user_id,
                    }
                }
            };
            (calendar, link)
        })
        .collect())
}
