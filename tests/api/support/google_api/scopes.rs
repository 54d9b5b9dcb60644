//! OAuth scopes: the ones the consent screen accepts, and which of them each part of the
//! Calendar API needs (403 `insufficientPermissions` otherwise).

use super::reply::Reply;
use serde_json::json;

/// `https://www.googleapis.com/auth/calendar`: everything.
pub(super) const SCOPE_CALENDAR: &str = "https://www.googleapis.com/auth/calendar";
pub(super) const SCOPE_CALENDAR_READONLY: &str =
    "https://www.googleapis.com/auth/calendar.readonly";
pub(super) const SCOPE_EVENTS: &str = "https://www.googleapis.com/auth/calendar.events";
pub(super) const SCOPE_EVENTS_READONLY: &str =
    "https://www.googleapis.com/auth/calendar.events.readonly";
pub(super) const SCOPE_CALENDARLIST: &str = "https://www.googleapis.com/auth/calendar.calendarlist";
pub(super) const SCOPE_CALENDARLIST_READONLY: &str =
    "https://www.googleapis.com/auth/calendar.calendarlist.readonly";
/// Scopes the consent screen accepts.
pub(super) const KNOWN_SCOPES: &[&str] = &[
    "openid",
    "email",
    "profile",
    "https://www.googleapis.com/auth/userinfo.email",
    "https://www.googleapis.com/auth/userinfo.profile",
    SCOPE_CALENDAR,
    SCOPE_CALENDAR_READONLY,
    SCOPE_EVENTS,
    SCOPE_EVENTS_READONLY,
    SCOPE_CALENDARLIST,
    SCOPE_CALENDARLIST_READONLY,
    "https://www.googleapis.com/auth/calendar.settings.readonly",
];
/// Scopes that may read events.
pub(super) const READ_EVENTS: &[&str] = &[
    SCOPE_CALENDAR,
    SCOPE_CALENDAR_READONLY,
    SCOPE_EVENTS,
    SCOPE_EVENTS_READONLY,
];
/// Scopes that may write events.
pub(super) const WRITE_EVENTS: &[&str] = &[SCOPE_CALENDAR, SCOPE_EVENTS];
/// Scopes that may read the calendarList.
pub(super) const READ_LIST: &[&str] = &[
    SCOPE_CALENDAR,
    SCOPE_CALENDAR_READONLY,
    SCOPE_CALENDARLIST,
    SCOPE_CALENDARLIST_READONLY,
];
/// Scopes that may change calendarList entries.
pub(super) const WRITE_LIST: &[&str] = &[SCOPE_CALENDAR, SCOPE_CALENDARLIST];
/// Scopes that may create, change and delete calendars.
pub(super) const WRITE_CALENDARS: &[&str] = &[SCOPE_CALENDAR];

/// `Ok` when the token holds one of `any_of`.
pub(super) fn need(scopes: &[String], any_of: &[&str]) -> Result<(), Reply> {
    if scopes.iter().any(|s| any_of.contains(&s.as_str())) {
        return Ok(());
    }
    Err(Reply::json(
        403,
        json!({"error": {
            "errors": [{
                "domain": "global",
                "reason": "insufficientPermissions",
                "message": "Insufficient Permission",
            }],
            "code": 403,
            "message": "Request had insufficient authentication scopes.",
        }}),
    ))
}
