//! Pure rules and value types: no IO, no actors, no HTTP. Everything here can be unit-tested
//! in isolation and is shared by the HTTP edge, the actors and the store.

pub mod avatars;
pub mod digest;
pub mod email;
pub mod event_content;
pub mod event_fields;
pub mod event_pages;
pub mod events;
pub mod federation;
pub mod frames;
pub mod ids;
pub mod invites;
pub mod origins;
pub mod pages;
pub mod polls;
pub mod profile;
pub mod providers;
pub mod recurrence;
pub mod reminder_schedule;
pub mod reminder_window;
pub mod reminders;
pub mod roles;
pub mod settings;
pub mod time;
pub mod version;
