//! sea-orm entities of Bowline's schema: `Model`, `Relation` and `Linked` only, one module
//! per table. No HTTP or actor types live here, and no entity is ever serialized as an API
//! body: the `http` layer maps models to its own response types.

pub mod accounts;
pub mod avatars;
pub mod caldav_accounts;
pub mod calendar_events;
pub mod calendar_members;
pub mod calendars;
pub mod event_attendees;
pub mod event_reminders;
pub mod event_shares;
pub mod event_view_changes;
pub mod event_visibility_losses;
pub mod events;
pub mod external_calendars;
pub mod external_events;
pub mod federation_connections;
pub mod invites;
pub mod member_tokens;
pub mod pages;
pub mod pending_notifications;
pub mod prelude;
pub mod provider_leases;
pub mod provider_outbox;
pub mod push_dispatch;
pub mod push_subscriptions;
pub mod scheduled_tasks;
pub mod scheduling_participants;
pub mod scheduling_polls;
pub mod scheduling_slots;
pub mod scheduling_votes;
pub mod server_secrets;
pub mod sessions;
pub mod user_settings;
pub mod users;
pub mod verifications;
