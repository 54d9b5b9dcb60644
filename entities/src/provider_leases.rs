//! Which instance runs a connected account's sync, and "sync now" requests between
//! instances (see the `provider_sync` actor).

use ids::AccountId;
use sea_orm::entity::prelude::*;

/// One connected account's lease.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_leases")]
pub struct Model {
    /// `caldav`, `google` or `microsoft`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub provider: String,
    /// The account.
    #[sea_orm(primary_key, auto_increment = false)]
    pub account_id: AccountId,
    /// Instance holding the lease, if any.
    pub lease_owner: Option<String>,
    /// The lease is free once this instant has passed.
    pub lease_until: Option<DateTimeUtc>,
    /// When another instance last asked for a pull.
    pub pull_requested_at: Option<DateTimeUtc>,
    /// The last pull the holder ran for a request (never before the request it answered).
    pub pulled_at: Option<DateTimeUtc>,
    /// Whether that pull succeeded.
    pub pull_ok: Option<bool>,
}

/// `provider_leases` has no relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
