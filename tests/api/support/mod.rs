//! Real peers the tests talk to (an SMTP sink, an identity provider serving JWKS and signing
//! id tokens, stand-ins for Google's OAuth and Calendar API and for Microsoft's identity
//! platform and Graph calendars, an SSE reader, a headless Chromium driven over WebDriver, and
//! the Node better-auth client), each test's own database, and the iCalendar helpers the
//! import and export tests share.

pub mod browser;
pub mod caldav_servers;
pub mod google_api;
pub mod graph_api;
pub mod ics;
pub mod idp;
pub mod node;
pub mod openapi;
pub mod push_service;
pub mod smtp;
pub mod sse;
pub mod test_db;
