//! Provider writes still to deliver, committed with the local change they carry.

use ids::{AccountId, CalendarId, EventId};
use sea_orm::entity::prelude::*;

/// One write to deliver.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "provider_outbox")]
pub struct Model {
    /// Order of commit.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// `caldav`, `google` or `microsoft`.
    pub provider: String,
    /// The account that delivers it.
    pub account_id: AccountId,
    /// The mirror calendar.
    pub calendar_id: CalendarId,
    /// The event.
    pub event_id: EventId,
    /// `put` (create or update with the event as it is at delivery) or `delete`.
    pub action: String,
    /// The remote resource, captured at commit for deletes.
    pub remote_href: Option<String>,
    /// Its entity tag, captured at commit for deletes.
    pub etag: Option<String>,
    /// Failed deliveries so far.
    pub attempts: i32,
    /// Not before.
    pub next_attempt_at: DateTimeUtc,
    /// The instance delivering it.
    pub claimed_by: Option<String>,
    /// Until when that instance holds it.
    pub claimed_until: Option<DateTimeUtc>,
    /// The last failure.
    pub last_error: Option<String>,
    /// Committed at.
    pub created_at: DateTimeUtc,
}

/// `provider_outbox` relations.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
