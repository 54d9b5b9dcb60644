//! Calls to servers outside Bowline: the one outbound guard every such request goes through,
//! the calendar providers' clients built on it (CalDAV, Google Calendar, Microsoft Graph),
//! OAuth for the two that link by consent, and the errors the sync engine acts on.

pub mod caldav;
pub mod error;
pub mod google;
pub mod graph;
pub mod oauth;
pub mod outbound;
pub mod rest;

pub use error::ProviderError;
