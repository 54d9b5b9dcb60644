//! Real peers the tests talk to (an SMTP sink, an identity provider serving JWKS and signing
//! id tokens, an SSE reader, a headless Chromium driven over WebDriver, and the Node
//! better-auth client, a fake Microsoft identity platform and Graph calendar API), each
//! test's own database, and the iCalendar helpers the import and export tests share.

pub mod browser;
pub mod caldav_servers;
pub mod graph_api;
pub mod ics;
pub mod idp;
pub mod node;
pub mod smtp;
pub mod sse;
pub mod test_db;
