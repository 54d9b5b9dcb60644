//! A stand-in for Google on 127.0.0.1 (port 0): OAuth 2.0 (authorization code with PKCE,
//! refresh, revocation, an OpenID id token) and the Calendar API v3 (calendarList,
//! calendars, events with paging, sync tokens, tombstones, quoted etags and conditional
//! writes), answering as Google answers, errors in Google's envelope included.
//!
//! Bowline talks to it over real HTTP; the test plays the user at Google: it consents in
//! place of a browser ([`GoogleApi::consent`]), edits remote calendars the way Google's own
//! apps would (every change bumps etags, `updated` and the calendar's change sequence that
//! sync tokens are cut from), and switches faults on (expired sync or access tokens, rate
//! limits, failing requests, revoked grants). Everything lives in one lock, so a fake is a
//! value one test owns.
//!
//! Left out on purpose: push channels (`watch`), `events.import/move/instances/quickAdd`,
//! the `timeMin`/`timeMax`/`q`/`orderBy`/`updatedMin` filters (a 400 names the parameter
//! rather than a silently wrong answer), free/busy-only views, the colors palette, and
//! RS256 id tokens with a JWKS (ours are HS256, which Bowline does not verify).
//!
//! The parts: `server` (HTTP in and out, request recording), `reply` (answers and Google's
//! error envelopes), `state` (everything the fake knows, behind one lock), `consent` and
//! `oauth` (the consent screen, token and revocation endpoints), `scopes`, `api` (the
//! Calendar API's route table, faults and bearer tokens), `calendars` (calendarList and
//! calendars), `events` (storing, writing and deleting events and instances), `listing`
//! (events lists with paging and sync tokens), `validate`, `times` and `recurrence`.

mod api;
mod calendars;
mod consent;
mod events;
mod listing;
mod oauth;
mod recurrence;
mod reply;
mod scopes;
mod server;
mod state;
mod times;
mod validate;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::task::JoinHandle;

use crate::helpers::WAIT;

use self::calendars::NewCalendar;
use self::events::{Write, is_cancelled};
use self::server::Shared;
use self::state::{Account, TokenKind, random_base32hex};

/// The OAuth client id the fake knows (the only one).
pub const GOOGLE_CLIENT_ID: &str = "bowline-test.apps.googleusercontent.com";
/// That client's secret.
pub const GOOGLE_CLIENT_SECRET: &str = "google-test-secret";

/// A Google account the fake knows.
#[derive(Clone, Debug)]
pub struct GoogleUser {
    /// The stable account id (a numeric string), the id token's `sub`.
    pub sub: String,
    /// The address, also the id of the primary calendar.
    pub email: String,
    /// The display name.
    pub name: String,
}

/// How [`GoogleApi::rate_limit`] refuses requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // the names of Google's reasons
pub enum RateLimit {
    /// 429 `rateLimitExceeded` (domain `usageLimits`).
    TooManyRequests,
    /// 403 `userRateLimitExceeded`.
    UserRateLimitExceeded,
    /// 403 `rateLimitExceeded`.
    RateLimitExceeded,
}

/// One Calendar API request as the fake saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path with every segment percent-decoded, e.g.
    /// `/calendar/v3/calendars/alice@example.com/events/abc`.
    pub path: String,
    /// The path as sent (segments still percent-encoded).
    pub raw_path: String,
    /// The query string as sent (without `?`; empty when there is none).
    pub query: String,
    /// The `If-Match` header.
    pub if_match: Option<String>,
    /// The JSON body, when there was one.
    pub body: Option<Value>,
    /// The status the fake answered.
    pub status: u16,
    /// When the fake answered it.
    pub at: Instant,
}

impl Recorded {
    /// The value of query parameter `name` (decoded), if present.
    pub fn query_param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    }
}

/// The running fake. Dropping it stops the server.
pub struct GoogleApi {
    shared: Arc<Shared>,
    addr: SocketAddr,
    server: JoinHandle<()>,
}

impl Drop for GoogleApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl GoogleApi {
    /// Starts the fake on a free loopback port, with no accounts.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the Google fake");
        let addr = listener.local_addr().expect("addr");
        let (shared, server) = server::serve(listener);
        Self {
            shared,
            addr,
            server,
        }
    }

    /// `http://127.0.0.1:<port>`
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `{base}/o/oauth2/v2/auth`
    pub fn authorization_url(&self) -> String {
        format!("{}/o/oauth2/v2/auth", self.base())
    }

    /// `{base}/token`
    pub fn token_url(&self) -> String {
        format!("{}/token", self.base())
    }

    /// `{base}/revoke`
    pub fn revocation_url(&self) -> String {
        format!("{}/revoke", self.base())
    }

    /// `{base}/calendar/v3`
    pub fn calendar_api_url(&self) -> String {
        format!("{}/calendar/v3", self.base())
    }

    /// Points a Bowline configuration at this fake: client id and secret, the four URLs
    /// (`settings.google.{client_id, client_secret, authorization_url, token_url,
    /// revocation_url, calendar_api_url}`) and `settings.federation.allow_private_hosts =
    /// true`.
    pub fn configure(&self, settings: &mut bowline::Settings) {
        settings.google.client_id = Some(GOOGLE_CLIENT_ID.to_owned());
        settings.google.client_secret = Some(bowline::config::Secret::new(GOOGLE_CLIENT_SECRET));
        settings.google.authorization_url = self.authorization_url();
        settings.google.token_url = self.token_url();
        settings.google.revocation_url = self.revocation_url();
        settings.google.calendar_api_url = self.calendar_api_url();
        settings.federation.allow_private_hosts = true;
    }

    /// A Google account with a primary calendar (id = its email, summary = email, time
    /// zone UTC).
    pub fn add_user(&self, email: &str, name: &str) -> GoogleUser {
        let mut state = self.shared.state.lock();
        assert!(
            state.account(email).is_none() && state.calendar_index(email).is_none(),
            "Google fake: {email} exists already"
        );
        state.next_sub += 7919;
        let user = GoogleUser {
            sub: state.next_sub.to_string(),
            email: email.to_owned(),
            name: name.to_owned(),
        };
        state.accounts.push(Account {
            user: user.clone(),
            list: Vec::new(),
            list_seq: 0,
        });
        state.create_calendar(
            &user.sub,
            NewCalendar {
                id: email.to_owned(),
                summary: email.to_owned(),
                description: None,
                time_zone: "UTC".to_owned(),
                primary: true,
            },
            "owner",
        );
        user
    }

    /// The browser at the consent screen: validates the authorization URL as Google does
    /// (client id known, redirect_uri present, response_type=code, S256 challenge present,
    /// scopes known) and returns the URL Google sends the browser back to:
    /// `<redirect_uri>?state=<state>&code=<code>&scope=<granted>&authuser=0&prompt=consent`.
    /// Panics with Google's error (which Google shows on its own page, never redirecting)
    /// when the URL is not acceptable.
    pub fn consent(&self, authorization_url: &str, user: &GoogleUser) -> String {
        self.try_consent(authorization_url, user)
            .unwrap_or_else(|error| panic!("Google would show an error page: {error}"))
    }

    /// [`Self::consent`] without panicking: `Err` is the error Google's page would show
    /// (`invalid_client`, `invalid_request`, `invalid_scope`, ...).
    pub fn try_consent(
        &self,
        authorization_url: &str,
        user: &GoogleUser,
    ) -> Result<String, String> {
        let request =
            consent::AuthorizationRequest::parse(authorization_url, &self.authorization_url())?;
        Ok(self.shared.state.lock().grant(&request, user))
    }

    /// The user presses "Cancel" on the consent screen:
    /// `<redirect_uri>?error=access_denied&state=<state>`.
    pub fn deny(&self, authorization_url: &str) -> String {
        consent::AuthorizationRequest::parse(authorization_url, &self.authorization_url())
            .unwrap_or_else(|error| panic!("Google would show an error page: {error}"))
            .denied()
    }

    /// Calendar `summary` shared with `user` with `access_role` (`owner` makes it the
    /// user's own secondary calendar; `writer`, `reader` or `freeBusyReader` one somebody
    /// else shared). Returns its id (`...@group.calendar.google.com`).
    pub fn add_calendar(&self, user: &GoogleUser, summary: &str, access_role: &str) -> String {
        let id = format!("{}@group.calendar.google.com", random_base32hex(26));
        self.add_calendar_with_id(user, &id, summary, access_role);
        id
    }

    /// [`Self::add_calendar`] with a given id, such as a subscribed calendar's
    /// `en.usa#holiday@group.v.calendar.google.com` (ids may hold `@` and `#`).
    pub fn add_calendar_with_id(
        &self,
        user: &GoogleUser,
        calendar_id: &str,
        summary: &str,
        access_role: &str,
    ) {
        assert!(
            ["owner", "writer", "reader", "freeBusyReader"].contains(&access_role),
            "Google fake: unknown access role {access_role}"
        );
        let mut state = self.shared.state.lock();
        assert!(
            state.calendar_index(calendar_id).is_none(),
            "Google fake: calendar {calendar_id} exists already"
        );
        state.create_calendar(
            &user.sub,
            NewCalendar {
                id: calendar_id.to_owned(),
                summary: summary.to_owned(),
                description: None,
                time_zone: "UTC".to_owned(),
                primary: false,
            },
            access_role,
        );
    }

    /// Deletes a (secondary) calendar at Google: gone from every calendarList (incremental
    /// lists report it `deleted`), its API answers 404.
    pub fn remove_calendar(&self, calendar_id: &str) {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        assert!(
            !state.calendars[ci].primary,
            "a primary calendar cannot be removed"
        );
        state.delete_calendar(ci);
    }

    /// Renames a calendar at Google. As Google documents, a change of calendar properties
    /// does not bring the calendarList entry back in an incremental list; full lists and
    /// `calendars.get` show the new summary.
    pub fn rename_calendar(&self, calendar_id: &str, summary: &str) {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        let etag = state.next_etag();
        let calendar = &mut state.calendars[ci];
        calendar.summary = summary.to_owned();
        calendar.etag = etag;
    }

    /// Sets a calendar's time zone (new calendars are in UTC, or the body's `timeZone`).
    /// Event times without a `timeZone` of their own are written in this zone's offset.
    pub fn set_time_zone(&self, calendar_id: &str, time_zone: &str) {
        assert!(time_zone.parse::<chrono_tz::Tz>().is_ok(), "IANA zone");
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        state.calendars[ci].time_zone = time_zone.to_owned();
    }

    /// A calendar resource (`calendars.get`), deleted ones included.
    pub fn calendar(&self, calendar_id: &str) -> Option<Value> {
        let state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id)?;
        Some(state.calendar_json(ci))
    }

    /// `user`'s calendarList entries (not deleted; hidden ones included), in order.
    pub fn calendar_list(&self, user: &GoogleUser) -> Vec<Value> {
        let state = self.shared.state.lock();
        let account = state.account(&user.email).expect("known user");
        state.accounts[account]
            .list
            .iter()
            .filter(|entry| !entry.deleted)
            .map(|entry| state.entry_json(entry))
            .collect()
    }

    /// Inserts an event as the calendar's owner would at Google (fills `id`, `etag`,
    /// `iCalUID`, `created`, ...; `id` may be given). Panics when Google would refuse it.
    pub fn insert_event(&self, calendar_id: &str, event: Value) -> Value {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        let body = event.as_object().cloned().expect("an event object");
        let inserted = state
            .insert_event(ci, body)
            .unwrap_or_else(|reply| panic!("Google refuses the event: {:?}", reply.body));
        Value::Object(inserted)
    }

    /// Changes an event (JSON merge patch: `null` removes a field, arrays are replaced,
    /// `start`/`end` are replaced whole), bumping its etag and `updated`.
    pub fn update_event(&self, calendar_id: &str, event_id: &str, patch: Value) -> Value {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        let patch = patch.as_object().cloned().expect("a patch object");
        let updated = state
            .write_existing(ci, event_id, None, Write::Patch(patch))
            .unwrap_or_else(|reply| panic!("Google refuses the change: {:?}", reply.body));
        Value::Object(updated)
    }

    /// Deletes an event: it becomes a `cancelled` tombstone (a series' exceptions with it).
    pub fn delete_event(&self, calendar_id: &str, event_id: &str) {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        state
            .delete_event(ci, event_id, None)
            .unwrap_or_else(|reply| panic!("Google refuses the delete: {:?}", reply.body));
    }

    /// Cancels one instance of a recurring event (a cancelled exception with
    /// `recurringEventId` and `originalStartTime`), as "delete this event only" does.
    /// `original_start` is the instance's start as the series gives it (`{date}` or
    /// `{dateTime, timeZone?}`). Returns the instance id.
    pub fn cancel_instance(
        &self,
        calendar_id: &str,
        master_id: &str,
        original_start: Value,
    ) -> String {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        let instance_id = state.instance_id(ci, master_id, &original_start);
        state
            .delete_event(ci, &instance_id, None)
            .unwrap_or_else(|reply| panic!("Google refuses the cancel: {:?}", reply.body));
        instance_id
    }

    /// Edits one instance (an exception with its own id, `recurringEventId`,
    /// `originalStartTime`), as "change this event only" does. Returns the exception.
    pub fn edit_instance(
        &self,
        calendar_id: &str,
        master_id: &str,
        original_start: Value,
        patch: Value,
    ) -> Value {
        let mut state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        let instance_id = state.instance_id(ci, master_id, &original_start);
        let patch = patch.as_object().cloned().expect("a patch object");
        let edited = state
            .write_existing(ci, &instance_id, None, Write::Patch(patch))
            .unwrap_or_else(|reply| panic!("Google refuses the change: {:?}", reply.body));
        Value::Object(edited)
    }

    /// An event as `events.get` returns it (cancelled ones included; instance ids of a
    /// series too), or `None`.
    pub fn event(&self, calendar_id: &str, event_id: &str) -> Option<Value> {
        let state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id)?;
        state.get_event(ci, event_id).map(Value::Object)
    }

    /// The stored events that are not cancelled (singles, series masters and their
    /// exceptions), in the calendar's order.
    pub fn live_events(&self, calendar_id: &str) -> Vec<Value> {
        let state = self.shared.state.lock();
        let ci = state.calendar_index(calendar_id).expect("known calendar");
        state.calendars[ci]
            .events
            .iter()
            .filter(|stored| !is_cancelled(&stored.body))
            .map(|stored| Value::Object(stored.body.clone()))
            .collect()
    }

    /// Every sync token issued so far (events and calendarList) answers 410 from now on.
    pub fn expire_sync_tokens(&self) {
        self.shared.state.lock().expire_sync_tokens();
    }

    /// The next incremental events list (a first page with `syncToken`) answers `pages`
    /// pages, then 410 `fullSyncRequired` for its next page (and every sync token issued
    /// so far expires). A listing that ends sooner uses the switch up.
    pub fn expire_sync_tokens_after_pages(&self, pages: usize) {
        self.shared.state.lock().expire_after_pages = Some(pages);
    }

    /// Pages of events and calendarList hold at most this many items (default 250), even
    /// when `maxResults` allows more.
    pub fn set_page_size(&self, items: usize) {
        assert!(items > 0, "a page holds at least one item");
        self.shared.state.lock().page_size = items;
    }

    /// The next `requests` Calendar API calls fail with 429 (`TooManyRequests`) or 403
    /// (`rateLimitExceeded` / `userRateLimitExceeded`), each with `Retry-After`.
    pub fn rate_limit(&self, requests: usize, retry_after_secs: u64, kind: RateLimit) {
        self.shared.state.lock().rate_limit = Some((requests, retry_after_secs, kind));
    }

    /// The next `requests` Calendar API calls fail with `status` (5xx: `backendError`).
    pub fn fail_next(&self, requests: usize, status: u16) {
        self.shared.state.lock().failures = Some((requests, status));
    }

    /// The next `requests` calls of the token endpoint fail with `status` (e.g. 503), an
    /// OAuth error body `temporarily_unavailable`; they are still recorded.
    pub fn fail_token_requests(&self, requests: usize, status: u16) {
        self.shared.state.lock().token_failures = Some((requests, status));
    }

    /// Every access token issued so far answers 401 from now on.
    pub fn expire_access_tokens(&self) {
        for grant in self.shared.state.lock().access_tokens.values_mut() {
            grant.expired = true;
        }
    }

    /// `expires_in` of tokens issued from now on (default 3599); they stop working after it.
    pub fn set_access_token_lifetime(&self, seconds: u64) {
        self.shared.state.lock().access_token_lifetime = seconds;
    }

    /// The user removes Bowline's access in their Google account: every refresh token (the
    /// next refresh answers `invalid_grant`) and access token of theirs dies.
    pub fn revoke_refresh_tokens(&self, user: &GoogleUser) {
        self.shared.state.lock().revoke_grant(&user.sub);
    }

    /// Every authorization code issued so far is older than Google's ten minutes.
    pub fn expire_authorization_codes(&self) {
        for code in self.shared.state.lock().codes.values_mut() {
            code.expired = true;
        }
    }

    /// The token endpoint's form bodies (`grant_type`, `code`, ...) in order, as JSON
    /// objects of strings.
    pub fn token_requests(&self) -> Vec<Value> {
        self.shared.state.lock().token_requests.clone()
    }

    /// The refresh tokens issued to `user`, oldest first (revoked ones included).
    pub fn refresh_tokens(&self, user: &GoogleUser) -> Vec<String> {
        self.shared
            .state
            .lock()
            .issued_tokens(&user.sub, TokenKind::Refresh)
    }

    /// The access tokens issued to `user`, oldest first (expired and revoked ones included).
    pub fn access_tokens(&self, user: &GoogleUser) -> Vec<String> {
        self.shared
            .state
            .lock()
            .issued_tokens(&user.sub, TokenKind::Access)
    }

    /// Every token posted to the revocation endpoint, in order (known or not).
    pub fn revoked_tokens(&self) -> Vec<String> {
        self.shared.state.lock().revoked.clone()
    }

    /// Every Calendar API request, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.state.lock().requests.clone()
    }

    /// Waits (panicking after the tests' 10 s) until a recorded Calendar API request (one
    /// made before the call counts) matches, and returns it.
    pub async fn wait_for_request(
        &self,
        what: &str,
        matches: impl Fn(&Recorded) -> bool,
    ) -> Recorded {
        let mut recorded = self.shared.recorded.subscribe();
        let found = tokio::time::timeout(WAIT, async {
            loop {
                if let Some(found) = self.requests().into_iter().find(|r| matches(r)) {
                    return found;
                }
                if recorded.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
        .await;
        found.unwrap_or_else(|_| {
            let seen: Vec<String> = self
                .requests()
                .iter()
                .map(|r| format!("{} {}?{} -> {}", r.method, r.path, r.query, r.status))
                .collect();
            panic!("no Calendar API request {what} within {WAIT:?}; seen: {seen:#?}")
        })
    }
}
