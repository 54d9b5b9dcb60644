//! Bowline's schema history.
//!
//! Migrations are frozen: once one has been applied anywhere it is never edited, only
//! followed by a new one. Each migration declares its own identifiers (`DeriveIden` enums)
//! and never imports the `entities` crate, so history does not move when today's model does.
//! Names follow `mYYYYMMDD_NNNNNN_<verb>_<noun>` and run in the order listed below, on
//! SQLite and PostgreSQL alike.

pub use sea_orm_migration::prelude::*;

mod m20261122_000001_create_scheduled_tasks;
mod m20261122_000002_create_accounts;
mod m20261122_000003_create_calendars;
mod m20261122_000004_create_user_settings;
mod m20261122_000005_create_invites;
mod m20261122_000006_create_events;
mod m20261122_000007_create_pages_reminders_avatars;
mod m20261122_000008_create_event_view_changes;
mod m20261122_000009_add_pending_notifications_revision;
mod m20261122_000010_add_calendar_events_version;
mod m20261123_000011_add_calendar_members_version;
mod m20261124_000012_add_calendar_members_version_postgres;
mod m20261124_000013_repair_event_times_out_of_range;
mod m20261124_000014_add_calendar_events_linked_by;
mod m20261124_000015_add_calendar_members_seen_codes_postgres;
mod m20261125_000016_create_provider_mirrors;
mod m20261126_000017_add_account_calendar_tokens;
mod m20261126_000018_create_federation_connections;
mod m20261126_000019_create_instance_notices_postgres;
mod m20261126_000020_create_provider_leases;
mod m20261127_000021_revoke_member_tokens_with_last_membership;
mod m20261128_000022_create_event_shares;
mod m20261128_000023_create_scheduling_polls;
mod m20261128_000024_create_push_subscriptions;
mod m20261129_000025_raise_events_version_at_commit_postgres;
mod m20261130_000026_count_events_versions_apart_postgres;
mod m20261201_000027_count_events_raises_by_slot_postgres;

/// The ordered list of every migration Bowline has shipped.
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_create_scheduled_tasks::Migration),
            Box::new(m20261122_000002_create_accounts::Migration),
            Box::new(m20261122_000003_create_calendars::Migration),
            Box::new(m20261122_000004_create_user_settings::Migration),
            Box::new(m20261122_000005_create_invites::Migration),
            Box::new(m20261122_000006_create_events::Migration),
            Box::new(m20261122_000007_create_pages_reminders_avatars::Migration),
            Box::new(m20261122_000008_create_event_view_changes::Migration),
            Box::new(m20261122_000009_add_pending_notifications_revision::Migration),
            Box::new(m20261122_000010_add_calendar_events_version::Migration),
            Box::new(m20261123_000011_add_calendar_members_version::Migration),
            Box::new(m20261124_000012_add_calendar_members_version_postgres::Migration),
            Box::new(m20261124_000013_repair_event_times_out_of_range::Migration),
            Box::new(m20261124_000014_add_calendar_events_linked_by::Migration),
            Box::new(m20261124_000015_add_calendar_members_seen_codes_postgres::Migration),
            Box::new(m20261125_000016_create_provider_mirrors::Migration),
            Box::new(m20261126_000017_add_account_calendar_tokens::Migration),
            Box::new(m20261126_000018_create_federation_connections::Migration),
            Box::new(m20261126_000019_create_instance_notices_postgres::Migration),
            Box::new(m20261126_000020_create_provider_leases::Migration),
            Box::new(m20261127_000021_revoke_member_tokens_with_last_membership::Migration),
            Box::new(m20261128_000022_create_event_shares::Migration),
            Box::new(m20261128_000023_create_scheduling_polls::Migration),
            Box::new(m20261128_000024_create_push_subscriptions::Migration),
            Box::new(m20261129_000025_raise_events_version_at_commit_postgres::Migration),
            Box::new(m20261130_000026_count_events_versions_apart_postgres::Migration),
            Box::new(m20261201_000027_count_events_raises_by_slot_postgres::Migration),
        ]
    }
}
