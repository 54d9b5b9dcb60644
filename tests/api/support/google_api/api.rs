//! The Calendar API's route table: the faults the test armed (rate limits, failures) come
//! first, then the bearer token (401 `authError` unless it is live and its grant is not
//! revoked), then the scope each route needs, then the calendar and event routes.

use std::time::Instant;

use serde_json::{Value, json};

use super::RateLimit;
use super::events::Write;
use super::reply::{
    Answer, Reply, api_error, error_in, event_reply, not_found, unimplemented_route,
};
use super::scopes::{
    READ_EVENTS, READ_LIST, SCOPE_CALENDAR, SCOPE_CALENDAR_READONLY, WRITE_CALENDARS, WRITE_EVENTS,
    WRITE_LIST, need,
};
use super::server::Request;
use super::state::State;

impl State {
    /// A request under `/calendar/v3` (`path`: the segments after it, decoded): armed
    /// faults first, then the bearer token, then the route.
    pub(super) fn calendar_api(&mut self, request: &Request, path: &[&str]) -> Answer {
        if let Some((left, retry_after, kind)) = self.rate_limit {
            self.rate_limit = (left > 1).then_some((left - 1, retry_after, kind));
            if left > 0 {
                let reply = match kind {
                    RateLimit::TooManyRequests => error_in(
                        429,
                        "usageLimits",
                        "rateLimitExceeded",
                        "Rate Limit Exceeded",
                    ),
                    RateLimit::UserRateLimitExceeded => error_in(
                        403,
                        "usageLimits",
                        "userRateLimitExceeded",
                        "User Rate Limit Exceeded",
                    ),
                    RateLimit::RateLimitExceeded => error_in(
                        403,
                        "usageLimits",
                        "rateLimitExceeded",
                        "Rate Limit Exceeded",
                    ),
                };
                return Err(reply.with_header("retry-after", retry_after.to_string()));
            }
        }
        if let Some((left, status)) = self.failures {
            self.failures = (left > 1).then_some((left - 1, status));
            if left > 0 {
                return Err(match status {
                    500..=599 => api_error(status, "backendError", "Backend Error"),
                    _ => api_error(status, "failedByTest", "Failure injected by the test"),
                });
            }
        }
        let (sub, scopes) = self.authenticate(request)?;
        let method = request.method.as_str();
        match (method, path) {
            ("GET", ["users", "me", "calendarList"]) => {
                need(&scopes, READ_LIST)?;
                self.list_calendar_list(&sub, request)
            }
            ("GET", ["users", "me", "calendarList", cid]) => {
                need(&scopes, READ_LIST)?;
                let (ci, _) = self.resolve(&sub, cid)?;
                let ai = self.account_by_sub(&sub);
                let entry = self.accounts[ai]
                    .list
                    .iter()
                    .find(|e| e.calendar_id == self.calendars[ci].id && !e.deleted)
                    .ok_or_else(not_found)?;
                Ok(Reply::json(200, self.entry_json(entry)))
            }
            ("PATCH", ["users", "me", "calendarList", cid]) => {
                need(&scopes, WRITE_LIST)?;
                self.patch_list_entry(&sub, cid, request)
            }
            ("POST", ["calendars"]) => {
                need(&scopes, WRITE_CALENDARS)?;
                self.insert_calendar(&sub, request)
            }
            ("GET", ["calendars", cid]) => {
                need(&scopes, &[SCOPE_CALENDAR, SCOPE_CALENDAR_READONLY])?;
                let (ci, _) = self.resolve(&sub, cid)?;
                Ok(Reply::json(200, self.calendar_json(ci)))
            }
            ("PATCH" | "PUT", ["calendars", cid]) => {
                need(&scopes, WRITE_CALENDARS)?;
                self.update_calendar(&sub, cid, request, method == "PUT")
            }
            ("DELETE", ["calendars", cid]) => {
                need(&scopes, WRITE_CALENDARS)?;
                self.remove_calendar(&sub, cid)
            }
            ("GET", ["calendars", cid, "events"]) => {
                need(&scopes, READ_EVENTS)?;
                let (ci, role) = self.resolve(&sub, cid)?;
                self.list_events(ci, &role, request)
            }
            ("POST", ["calendars", cid, "events"]) => {
                need(&scopes, WRITE_EVENTS)?;
                let (ci, role) = self.resolve(&sub, cid)?;
                need_writer(&role)?;
                let body = request.json_body()?;
                let event = self.insert_event(ci, body)?;
                Ok(event_reply(event))
            }
            ("GET", ["calendars", cid, "events", eid]) => {
                need(&scopes, READ_EVENTS)?;
                let (ci, _) = self.resolve(&sub, cid)?;
                let event = self.get_event(ci, eid).ok_or_else(not_found)?;
                let etag = event
                    .get("etag")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if request.header("if-none-match") == Some(etag) {
                    return Ok(Reply::empty(304).with_header("etag", etag));
                }
                Ok(event_reply(event))
            }
            ("PUT" | "PATCH", ["calendars", cid, "events", eid]) => {
                need(&scopes, WRITE_EVENTS)?;
                let (ci, role) = self.resolve(&sub, cid)?;
                need_writer(&role)?;
                let body = request.json_body()?;
                let write = if method == "PUT" {
                    Write::Replace(body)
                } else {
                    Write::Patch(body)
                };
                let event = self.write_existing(ci, eid, request.header("if-match"), write)?;
                Ok(event_reply(event))
            }
            ("DELETE", ["calendars", cid, "events", eid]) => {
                need(&scopes, WRITE_EVENTS)?;
                let (ci, role) = self.resolve(&sub, cid)?;
                need_writer(&role)?;
                self.delete_event(ci, eid, request.header("if-match"))?;
                Ok(Reply::empty(204))
            }
            _ => Err(unimplemented_route(method, &request.raw_path)),
        }
    }

    /// The `sub` and scopes of a live bearer token, or 401 `authError`.
    fn authenticate(&self, request: &Request) -> Result<(String, Vec<String>), Reply> {
        let token = request
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        let grant = token.and_then(|t| self.access_tokens.get(t)).filter(|g| {
            !g.revoked
                && !g.expired
                && g.expires_at > Instant::now()
                && g.refresh_token
                    .as_ref()
                    .is_none_or(|r| self.refresh_tokens.get(r).is_some_and(|r| !r.revoked))
        });
        match grant {
            Some(grant) => Ok((grant.sub.clone(), grant.scopes.clone())),
            None => Err(Reply::json(
                401,
                json!({"error": {
                    "errors": [{
                        "domain": "global",
                        "reason": "authError",
                        "message": "Invalid Credentials",
                        "locationType": "header",
                        "location": "Authorization",
                    }],
                    "code": 401,
                    "message": "Invalid Credentials",
                }}),
            )
            .with_header(
                "www-authenticate",
                "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"",
            )),
        }
    }
}

/// Only owners and writers write events.
fn need_writer(role: &str) -> Result<(), Reply> {
    if role == "owner" || role == "writer" {
        Ok(())
    } else {
        Err(api_error(
            403,
            "requiredAccessLevel",
            "You need to have writer access to this calendar.",
        ))
    }
}
