//! Calls to servers outside Bowline: the one outbound guard every such request goes through,
//! and the CalDAV client built on it.

pub mod caldav;
pub mod outbound;
