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

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use http::{HeaderMap, Method, StatusCode};
use parking_lot::Mutex;
use rand::Rng;
use rrule::{RRule, RRuleSet, Unvalidated};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use warp::Filter;
use warp::Reply as _;
use warp::path::FullPath;

use crate::helpers::WAIT;

/// The OAuth client id the fake knows (the only one).
pub const GOOGLE_CLIENT_ID: &str = "bowline-test.apps.googleusercontent.com";
/// That client's secret.
pub const GOOGLE_CLIENT_SECRET: &str = "google-test-secret";

/// `https://www.googleapis.com/auth/calendar`: everything.
const SCOPE_CALENDAR: &str = "https://www.googleapis.com/auth/calendar";
const SCOPE_CALENDAR_READONLY: &str = "https://www.googleapis.com/auth/calendar.readonly";
const SCOPE_EVENTS: &str = "https://www.googleapis.com/auth/calendar.events";
const SCOPE_EVENTS_READONLY: &str = "https://www.googleapis.com/auth/calendar.events.readonly";
const SCOPE_CALENDARLIST: &str = "https://www.googleapis.com/auth/calendar.calendarlist";
const SCOPE_CALENDARLIST_READONLY: &str =
    "https://www.googleapis.com/auth/calendar.calendarlist.readonly";
/// Scopes the consent screen accepts.
const KNOWN_SCOPES: &[&str] = &[
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
const READ_EVENTS: &[&str] = &[
    SCOPE_CALENDAR,
    SCOPE_CALENDAR_READONLY,
    SCOPE_EVENTS,
    SCOPE_EVENTS_READONLY,
];
const WRITE_EVENTS: &[&str] = &[SCOPE_CALENDAR, SCOPE_EVENTS];
const READ_LIST: &[&str] = &[
    SCOPE_CALENDAR,
    SCOPE_CALENDAR_READONLY,
    SCOPE_CALENDARLIST,
    SCOPE_CALENDARLIST_READONLY,
];
const WRITE_LIST: &[&str] = &[SCOPE_CALENDAR, SCOPE_CALENDARLIST];
const WRITE_CALENDARS: &[&str] = &[SCOPE_CALENDAR];

/// How long an authorization code can be redeemed.
const CODE_LIFETIME: StdDuration = StdDuration::from_secs(600);
/// `expires_in` of access tokens unless a test changes it.
const DEFAULT_ACCESS_TOKEN_LIFETIME: u64 = 3599;
/// Items per page unless a test changes it (also Google's default `maxResults` of events).
const DEFAULT_PAGE_SIZE: usize = 250;
/// The HS256 key of id tokens (Bowline does not check the signature of a token it got
/// straight from the token endpoint).
const ID_TOKEN_KEY: &[u8] = b"google-fake-id-token-key";
/// How far beyond now (or the series' start) `singleEvents=true` expands a series, and the
/// most instances it lists per series.
const EXPANSION_HORIZON_DAYS: i64 = 730;
const EXPANSION_LIMIT: u16 = 2500;
/// Colors (`colorId`, background, foreground) given to calendars in turn.
const CALENDAR_COLORS: &[(&str, &str, &str)] = &[
    ("14", "#9fe1e7", "#000000"),
    ("7", "#42d692", "#000000"),
    ("17", "#9a9cff", "#000000"),
    ("4", "#fa573c", "#000000"),
    ("12", "#fad165", "#000000"),
];

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

struct Shared {
    state: Mutex<State>,
    /// How many Calendar API requests were recorded (wakes `wait_for_request`).
    recorded: watch::Sender<usize>,
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
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            recorded: watch::Sender::new(0),
        });
        let route = {
            let shared = shared.clone();
            warp::method()
                .and(warp::path::full())
                .and(warp::query::raw().or(warp::any().map(String::new)).unify())
                .and(warp::header::headers_cloned())
                .and(warp::body::bytes())
                .map(
                    move |method: Method,
                          path: FullPath,
                          query: String,
                          headers: HeaderMap,
                          body: Bytes| {
                        let request = Request {
                            method,
                            raw_path: path.as_str().to_owned(),
                            query,
                            headers,
                            body,
                        };
                        shared.handle(&request).into_response()
                    },
                )
        };
        let server = tokio::spawn(warp::serve(route).incoming(listener).run());
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
        let request = self.authorization_request(authorization_url)?;
        let mut state = self.shared.state.lock();
        assert!(
            state.account(&user.email).is_some(),
            "Google fake: unknown user {}",
            user.email
        );
        let previous = state.granted.get(&user.sub).cloned().unwrap_or_default();
        let mut scopes = request.scopes.clone();
        if request.include_granted_scopes {
            scopes.extend(previous.into_iter().filter(|s| !request.scopes.contains(s)));
        }
        state.granted.insert(user.sub.clone(), scopes.clone());
        let code = format!("4/0A{}", random_token(70));
        state.codes.insert(
            code.clone(),
            AuthCode {
                client_id: request.client_id.clone(),
                redirect_uri: request.redirect_uri.clone(),
                challenge: request.code_challenge.clone(),
                scopes: scopes.clone(),
                sub: user.sub.clone(),
                issued: Instant::now(),
                used: false,
                offline: request.offline,
                prompt_consent: request.prompt_consent,
                nonce: request.nonce.clone(),
                expired: false,
            },
        );
        let mut params = Vec::new();
        if let Some(st) = &request.state {
            params.push(("state", st.clone()));
        }
        params.push(("code", code));
        params.push(("scope", scopes.join(" ")));
        params.push(("authuser", "0".to_owned()));
        params.push(("prompt", "consent".to_owned()));
        Ok(append_query(&request.redirect_uri, &params))
    }

    /// The user presses "Cancel" on the consent screen:
    /// `<redirect_uri>?error=access_denied&state=<state>`.
    pub fn deny(&self, authorization_url: &str) -> String {
        let request = self
            .authorization_request(authorization_url)
            .unwrap_or_else(|error| panic!("Google would show an error page: {error}"));
        let mut params = vec![("error", "access_denied".to_owned())];
        if let Some(st) = request.state {
            params.push(("state", st));
        }
        append_query(&request.redirect_uri, &params)
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

    fn authorization_request(
        &self,
        authorization_url: &str,
    ) -> Result<AuthorizationRequest, String> {
        let url = url::Url::parse(authorization_url)
            .map_err(|e| format!("invalid_request: not a URL ({e})"))?;
        let expected = url::Url::parse(&self.authorization_url()).expect("own URL");
        if url.origin() != expected.origin() || url.path() != expected.path() {
            return Err(format!(
                "the browser went to {authorization_url}, not to {}",
                self.authorization_url()
            ));
        }
        let mut params: HashMap<String, String> = HashMap::new();
        for (key, value) in url.query_pairs() {
            if params.insert(key.to_string(), value.to_string()).is_some() {
                return Err(format!(
                    "invalid_request: Parameter included more than once: {key}"
                ));
            }
        }
        let param = |name: &str| {
            params
                .get(name)
                .map(String::as_str)
                .filter(|v| !v.is_empty())
        };
        let client_id =
            param("client_id").ok_or("invalid_request: Missing required parameter: client_id")?;
        if client_id != GOOGLE_CLIENT_ID {
            return Err("invalid_client: The OAuth client was not found.".to_owned());
        }
        let redirect_uri = param("redirect_uri")
            .ok_or("invalid_request: Missing required parameter: redirect_uri")?;
        let redirect = url::Url::parse(redirect_uri)
            .map_err(|_| "invalid_request: Invalid parameter value for redirect_uri".to_owned())?;
        if !["http", "https"].contains(&redirect.scheme()) || redirect.fragment().is_some() {
            return Err("invalid_request: Invalid parameter value for redirect_uri".to_owned());
        }
        match param("response_type") {
            Some("code") => {}
            None => {
                return Err("invalid_request: Missing required parameter: response_type".to_owned());
            }
            Some(other) => return Err(format!("unsupported_response_type: {other}")),
        }
        let scope = param("scope").ok_or("invalid_request: Missing required parameter: scope")?;
        let mut scopes: Vec<String> = Vec::new();
        for s in scope.split(' ').filter(|s| !s.is_empty()) {
            if !KNOWN_SCOPES.contains(&s) {
                return Err(format!(
                    "invalid_scope: Some requested scopes were invalid: {s}"
                ));
            }
            if !scopes.iter().any(|known| known == s) {
                scopes.push(s.to_owned());
            }
        }
        if scopes.is_empty() {
            return Err("invalid_request: Missing required parameter: scope".to_owned());
        }
        let code_challenge = param("code_challenge")
            .ok_or("invalid_request: Missing required parameter: code_challenge")?;
        if param("code_challenge_method") != Some("S256") {
            return Err("invalid_request: code_challenge_method must be S256".to_owned());
        }
        if !(43..=128).contains(&code_challenge.len())
            || !code_challenge
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("invalid_request: Invalid code_challenge".to_owned());
        }
        let offline = match param("access_type") {
            None | Some("online") => false,
            Some("offline") => true,
            Some(other) => return Err(format!("invalid_request: Invalid access_type: {other}")),
        };
        let prompt = param("prompt").unwrap_or_default();
        for p in prompt.split(' ').filter(|p| !p.is_empty()) {
            if !["none", "consent", "select_account"].contains(&p) {
                return Err(format!("invalid_request: Invalid prompt: {p}"));
            }
        }
        let include_granted_scopes = match param("include_granted_scopes") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(format!(
                    "invalid_request: Invalid include_granted_scopes: {other}"
                ));
            }
        };
        Ok(AuthorizationRequest {
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            scopes,
            state: params.get("state").cloned(),
            code_challenge: code_challenge.to_owned(),
            offline,
            prompt_consent: prompt.split(' ').any(|p| p == "consent"),
            include_granted_scopes,
            nonce: param("nonce").map(str::to_owned),
        })
    }
}

// ---------------------------------------------------------------------------------------
// State

struct State {
    accounts: Vec<Account>,
    calendars: Vec<Calendar>,
    /// Scopes granted to the test client, per user `sub` (kept for `include_granted_scopes`).
    granted: HashMap<String, Vec<String>>,
    codes: HashMap<String, AuthCode>,
    refresh_tokens: HashMap<String, RefreshGrant>,
    access_tokens: HashMap<String, AccessGrant>,
    access_token_lifetime: u64,
    token_requests: Vec<Value>,
    revoked: Vec<String>,
    sync_tokens: HashMap<String, SyncToken>,
    sync_epoch: u64,
    page_tokens: HashMap<String, PageCursor>,
    page_size: usize,
    expire_after_pages: Option<usize>,
    rate_limit: Option<(usize, u64, RateLimit)>,
    failures: Option<(usize, u16)>,
    requests: Vec<Recorded>,
    etag_counter: u64,
    next_sub: u128,
    last_update: DateTime<Utc>,
    next_color: usize,
}

struct Account {
    user: GoogleUser,
    list: Vec<ListEntry>,
    /// The calendarList's change sequence (sync tokens of the list are cut from it).
    list_seq: u64,
}

struct ListEntry {
    calendar_id: String,
    access_role: String,
    color_id: String,
    background: String,
    foreground: String,
    summary_override: Option<String>,
    hidden: bool,
    selected: bool,
    deleted: bool,
    etag: String,
    changed_at: u64,
}

struct Calendar {
    id: String,
    /// `sub` of the owner (empty: somebody outside the fake).
    owner: String,
    summary: String,
    description: Option<String>,
    time_zone: String,
    etag: String,
    primary: bool,
    deleted: bool,
    /// The change sequence events' sync tokens are cut from.
    seq: u64,
    updated: String,
    events: Vec<Stored>,
    index: HashMap<String, usize>,
}

struct Stored {
    body: Map<String, Value>,
    changed_at: u64,
}

struct AuthCode {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scopes: Vec<String>,
    sub: String,
    issued: Instant,
    used: bool,
    offline: bool,
    prompt_consent: bool,
    nonce: Option<String>,
    /// Set by `expire_authorization_codes`.
    expired: bool,
}

struct RefreshGrant {
    sub: String,
    scopes: Vec<String>,
    revoked: bool,
}

struct AccessGrant {
    sub: String,
    scopes: Vec<String>,
    refresh_token: Option<String>,
    expires_at: Instant,
    expired: bool,
    revoked: bool,
}

#[derive(Clone, PartialEq, Eq)]
enum SyncScope {
    Events(String),
    CalendarList(String),
}

struct SyncToken {
    scope: SyncScope,
    seq: u64,
    epoch: u64,
}

struct PageCursor {
    fingerprint: String,
    after: (usize, usize),
    snapshot_seq: u64,
    pages_before_expiry: Option<usize>,
}

struct AuthorizationRequest {
    client_id: String,
    redirect_uri: String,
    scopes: Vec<String>,
    state: Option<String>,
    code_challenge: String,
    offline: bool,
    prompt_consent: bool,
    include_granted_scopes: bool,
    nonce: Option<String>,
}

/// A calendar about to be made.
struct NewCalendar {
    id: String,
    summary: String,
    description: Option<String>,
    time_zone: String,
    primary: bool,
}

/// How an existing event is written.
enum Write {
    /// PUT: the body replaces every writable field.
    Replace(Map<String, Value>),
    /// PATCH: merged into the event.
    Patch(Map<String, Value>),
}

impl State {
    fn new() -> Self {
        Self {
            accounts: Vec::new(),
            calendars: Vec::new(),
            granted: HashMap::new(),
            codes: HashMap::new(),
            refresh_tokens: HashMap::new(),
            access_tokens: HashMap::new(),
            access_token_lifetime: DEFAULT_ACCESS_TOKEN_LIFETIME,
            token_requests: Vec::new(),
            revoked: Vec::new(),
            sync_tokens: HashMap::new(),
            sync_epoch: 0,
            page_tokens: HashMap::new(),
            page_size: DEFAULT_PAGE_SIZE,
            expire_after_pages: None,
            rate_limit: None,
            failures: None,
            requests: Vec::new(),
            etag_counter: 3_181_161_784_712_000,
            next_sub: 110_169_484_474_386_276_334,
            last_update: DateTime::<Utc>::MIN_UTC,
            next_color: 0,
        }
    }

    fn account(&self, email: &str) -> Option<usize> {
        self.accounts.iter().position(|a| a.user.email == email)
    }

    fn account_by_sub(&self, sub: &str) -> usize {
        self.accounts
            .iter()
            .position(|a| a.user.sub == sub)
            .expect("known account")
    }

    fn calendar_index(&self, id: &str) -> Option<usize> {
        self.calendars.iter().position(|c| c.id == id)
    }

    /// A quoted etag, different from every earlier one.
    fn next_etag(&mut self) -> String {
        self.etag_counter += 1000 + rand::rng().random_range(0..1000);
        format!("\"{}\"", self.etag_counter)
    }

    /// Now as `updated` writes it, later than every earlier stamp.
    fn next_update(&mut self) -> String {
        let now = Utc::now().max(self.last_update + Duration::milliseconds(1));
        self.last_update = now;
        now.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// A calendar owned by `sub` (owner role) or by somebody outside the fake, in `sub`'s
    /// calendarList with `access_role`.
    fn create_calendar(&mut self, sub: &str, new: NewCalendar, access_role: &str) -> usize {
        let etag = self.next_etag();
        let updated = self.next_update();
        let id = new.id.clone();
        self.calendars.push(Calendar {
            id: new.id,
            owner: if access_role == "owner" {
                sub.to_owned()
            } else {
                String::new()
            },
            summary: new.summary,
            description: new.description,
            time_zone: new.time_zone,
            etag,
            primary: new.primary,
            deleted: false,
            seq: 1,
            updated,
            events: Vec::new(),
            index: HashMap::new(),
        });
        self.add_list_entry(sub, &id, access_role);
        self.calendars.len() - 1
    }

    fn add_list_entry(&mut self, sub: &str, calendar_id: &str, access_role: &str) {
        let (color_id, background, foreground) =
            CALENDAR_COLORS[self.next_color % CALENDAR_COLORS.len()];
        self.next_color += 1;
        let etag = self.next_etag();
        let ai = self.account_by_sub(sub);
        let account = &mut self.accounts[ai];
        account.list_seq += 1;
        account.list.push(ListEntry {
            calendar_id: calendar_id.to_owned(),
            access_role: access_role.to_owned(),
            color_id: color_id.to_owned(),
            background: background.to_owned(),
            foreground: foreground.to_owned(),
            summary_override: None,
            hidden: false,
            selected: true,
            deleted: false,
            etag,
            changed_at: account.list_seq,
        });
    }

    fn delete_calendar(&mut self, ci: usize) {
        self.calendars[ci].deleted = true;
        let id = self.calendars[ci].id.clone();
        for ai in 0..self.accounts.len() {
            let Some(ei) = self.accounts[ai]
                .list
                .iter()
                .position(|e| e.calendar_id == id && !e.deleted)
            else {
                continue;
            };
            let etag = self.next_etag();
            let account = &mut self.accounts[ai];
            account.list_seq += 1;
            let entry = &mut account.list[ei];
            entry.deleted = true;
            entry.etag = etag;
            entry.changed_at = account.list_seq;
        }
    }

    fn calendar_json(&self, ci: usize) -> Value {
        let calendar = &self.calendars[ci];
        let mut out = Map::new();
        out.insert("kind".into(), json!("calendar#calendar"));
        out.insert("etag".into(), json!(calendar.etag));
        out.insert("id".into(), json!(calendar.id));
        out.insert("summary".into(), json!(calendar.summary));
        if let Some(description) = &calendar.description {
            out.insert("description".into(), json!(description));
        }
        out.insert("timeZone".into(), json!(calendar.time_zone));
        out.insert(
            "conferenceProperties".into(),
            json!({"allowedConferenceSolutionTypes": ["hangoutsMeet"]}),
        );
        Value::Object(out)
    }

    fn entry_json(&self, entry: &ListEntry) -> Value {
        if entry.deleted {
            return json!({
                "kind": "calendar#calendarListEntry",
                "etag": entry.etag,
                "id": entry.calendar_id,
                "deleted": true,
            });
        }
        let ci = self
            .calendar_index(&entry.calendar_id)
            .expect("entry's calendar");
        let calendar = &self.calendars[ci];
        let mut out = Map::new();
        out.insert("kind".into(), json!("calendar#calendarListEntry"));
        out.insert("etag".into(), json!(entry.etag));
        out.insert("id".into(), json!(calendar.id));
        out.insert("summary".into(), json!(calendar.summary));
        if let Some(description) = &calendar.description {
            out.insert("description".into(), json!(description));
        }
        if let Some(summary_override) = &entry.summary_override {
            out.insert("summaryOverride".into(), json!(summary_override));
        }
        out.insert("timeZone".into(), json!(calendar.time_zone));
        out.insert("colorId".into(), json!(entry.color_id));
        out.insert("backgroundColor".into(), json!(entry.background));
        out.insert("foregroundColor".into(), json!(entry.foreground));
        if entry.hidden {
            out.insert("hidden".into(), json!(true));
        }
        if entry.selected {
            out.insert("selected".into(), json!(true));
        }
        out.insert("accessRole".into(), json!(entry.access_role));
        out.insert(
            "defaultReminders".into(),
            if calendar.primary {
                json!([{"method": "popup", "minutes": 30}])
            } else {
                json!([])
            },
        );
        if calendar.primary {
            out.insert("primary".into(), json!(true));
        }
        out.insert(
            "conferenceProperties".into(),
            json!({"allowedConferenceSolutionTypes": ["hangoutsMeet"]}),
        );
        Value::Object(out)
    }

    fn expire_sync_tokens(&mut self) {
        self.sync_epoch += 1;
    }

    /// The token for `scope` at `seq` (the same string while nothing changed).
    fn sync_token(&mut self, scope: SyncScope, seq: u64) -> String {
        let epoch = self.sync_epoch;
        if let Some((token, _)) = self
            .sync_tokens
            .iter()
            .find(|(_, t)| t.scope == scope && t.seq == seq && t.epoch == epoch)
        {
            return token.clone();
        }
        let token = format!("CP{}=", random_token(40));
        self.sync_tokens
            .insert(token.clone(), SyncToken { scope, seq, epoch });
        token
    }

    /// The sequence a presented sync token was cut at, or 410.
    fn check_sync_token(&self, token: &str, scope: &SyncScope) -> Result<u64, Reply> {
        match self.sync_tokens.get(token) {
            Some(t) if &t.scope == scope && t.epoch == self.sync_epoch => Ok(t.seq),
            _ => Err(full_sync_required()),
        }
    }

    fn revoke_grant(&mut self, sub: &str) {
        for grant in self.refresh_tokens.values_mut().filter(|g| g.sub == sub) {
            grant.revoked = true;
        }
        for grant in self.access_tokens.values_mut().filter(|g| g.sub == sub) {
            grant.revoked = true;
        }
        self.granted.remove(sub);
    }

    // --- events ---

    fn bump(&mut self, ci: usize) -> u64 {
        let updated = self.next_update();
        let calendar = &mut self.calendars[ci];
        calendar.seq += 1;
        calendar.updated = updated;
        calendar.seq
    }

    fn calendar_zone(&self, ci: usize) -> chrono_tz::Tz {
        self.calendars[ci]
            .time_zone
            .parse()
            .unwrap_or(chrono_tz::UTC)
    }

    fn insert_event(
        &mut self,
        ci: usize,
        body: Map<String, Value>,
    ) -> Result<Map<String, Value>, Reply> {
        let id = match body.get("id") {
            None | Some(Value::Null) => loop {
                let id = random_base32hex(26);
                if !self.calendars[ci].index.contains_key(&id) {
                    break id;
                }
            },
            Some(Value::String(id)) => {
                if !is_valid_event_id(id) {
                    return Err(api_error(
                        400,
                        "invalidResourceId",
                        "Invalid resource id value.",
                    ));
                }
                if self.calendars[ci].index.contains_key(id) {
                    return Err(api_error(
                        409,
                        "duplicate",
                        "The requested identifier already exists.",
                    ));
                }
                id.clone()
            }
            Some(_) => {
                return Err(api_error(
                    400,
                    "invalidResourceId",
                    "Invalid resource id value.",
                ));
            }
        };
        if body.get("status").and_then(Value::as_str) == Some("cancelled") {
            return Err(invalid("Invalid value for: status"));
        }
        if body.contains_key("recurringEventId") || body.contains_key("originalStartTime") {
            return Err(invalid(
                "Instances are created by their series, not inserted.",
            ));
        }
        let zone = self.calendar_zone(ci);
        let mut content = writable_fields(&body);
        normalize_and_validate(&mut content, zone, false)?;
        let ical_uid = match body.get("iCalUID").and_then(Value::as_str) {
            Some(uid) if !uid.is_empty() => uid.to_owned(),
            _ => format!("{id}@google.com"),
        };
        let etag = self.next_etag();
        let now = self.next_update();
        let calendar = &self.calendars[ci];
        let owner_email = self.owner_email(ci);
        let mut event = Map::new();
        event.insert("kind".into(), json!("calendar#event"));
        event.insert("etag".into(), json!(etag));
        event.insert("id".into(), json!(id));
        event.insert("status".into(), json!("confirmed"));
        event.insert("htmlLink".into(), json!(html_link(&id, &calendar.id)));
        event.insert("created".into(), json!(now));
        event.insert("updated".into(), json!(now));
        let sequence = content
            .remove("sequence")
            .and_then(|s| s.as_u64())
            .unwrap_or(0);
        for (key, value) in content {
            event.insert(key, value);
        }
        if !event.contains_key("status") {
            event.insert("status".into(), json!("confirmed"));
        }
        event.insert(
            "creator".into(),
            json!({"email": owner_email, "self": true}),
        );
        event.insert(
            "organizer".into(),
            organizer(&calendar.id, &calendar.summary, calendar.primary),
        );
        event.insert("iCalUID".into(), json!(ical_uid));
        event.insert("sequence".into(), json!(sequence));
        if !event.contains_key("reminders") {
            event.insert("reminders".into(), json!({"useDefault": true}));
        }
        if !event.contains_key("eventType") {
            event.insert("eventType".into(), json!("default"));
        }
        let seq = self.bump(ci);
        let calendar = &mut self.calendars[ci];
        calendar.index.insert(id, calendar.events.len());
        calendar.events.push(Stored {
            body: event.clone(),
            changed_at: seq,
        });
        Ok(event)
    }

    fn owner_email(&self, ci: usize) -> String {
        let owner = &self.calendars[ci].owner;
        self.accounts
            .iter()
            .find(|a| &a.user.sub == owner)
            .map(|a| a.user.email.clone())
            .unwrap_or_else(|| self.calendars[ci].id.clone())
    }

    /// The stored event or the instance of a series this id names, as `events.get` shows it.
    fn get_event(&self, ci: usize, event_id: &str) -> Option<Map<String, Value>> {
        let calendar = &self.calendars[ci];
        if let Some(&pos) = calendar.index.get(event_id) {
            return Some(calendar.events[pos].body.clone());
        }
        let (master, original) = self.virtual_instance(ci, event_id)?;
        Some(default_instance(&calendar.events[master].body, &original))
    }

    /// `(master position, original start)` of an instance id (`<master>_<stamp>`) of a
    /// live series that has no exception stored yet.
    fn virtual_instance(&self, ci: usize, event_id: &str) -> Option<(usize, When)> {
        let (master_id, stamp) = event_id.rsplit_once('_')?;
        let calendar = &self.calendars[ci];
        let &pos = calendar.index.get(master_id)?;
        let master = &calendar.events[pos].body;
        if is_cancelled(master) || !master.contains_key("recurrence") {
            return None;
        }
        let original = When::from_stamp(stamp)?;
        is_occurrence(master, original).then_some((pos, original))
    }

    /// The instance id of `master_id`'s occurrence at `original_start` (panics when the
    /// series has no such occurrence).
    fn instance_id(&self, ci: usize, master_id: &str, original_start: &Value) -> String {
        let calendar = &self.calendars[ci];
        let pos = *calendar.index.get(master_id).expect("known series");
        let master = &calendar.events[pos].body;
        let (original, _) = parse_event_time(original_start, "start", chrono_tz::UTC)
            .unwrap_or_else(|reply| panic!("original start: {:?}", reply.body));
        assert!(
            is_occurrence(master, original),
            "the series {master_id} has no instance at {original_start}"
        );
        format!("{master_id}_{}", original.stamp())
    }

    /// PUT or PATCH of an existing event or of an instance of a series (which becomes an
    /// exception). `if_match`: the etag the client expects.
    fn write_existing(
        &mut self,
        ci: usize,
        event_id: &str,
        if_match: Option<&str>,
        write: Write,
    ) -> Result<Map<String, Value>, Reply> {
        let zone = self.calendar_zone(ci);
        let (current, position) = match self.calendars[ci].index.get(event_id) {
            Some(&pos) => (self.calendars[ci].events[pos].body.clone(), Some(pos)),
            None => match self.virtual_instance(ci, event_id) {
                Some((master, original)) => (
                    default_instance(&self.calendars[ci].events[master].body, &original),
                    None,
                ),
                None => return Err(not_found()),
            },
        };
        if is_cancelled(&current) {
            return Err(not_found());
        }
        check_if_match(if_match, &current)?;
        let is_instance = current.contains_key("recurringEventId");
        let mut content = match write {
            Write::Replace(body) => writable_fields(&body),
            Write::Patch(patch) => {
                let mut merged = writable_fields(&current);
                for (key, value) in writable_fields(&patch) {
                    if value.is_null() {
                        merged.remove(&key);
                    } else if matches!(key.as_str(), "start" | "end") {
                        merged.insert(key, value);
                    } else {
                        let slot = merged.entry(key).or_insert(Value::Null);
                        merge_patch(slot, value);
                    }
                }
                merged
            }
        };
        if is_instance && content.contains_key("recurrence") {
            return Err(invalid("Invalid recurrence rule."));
        }
        normalize_and_validate(&mut content, zone, true)?;
        let current_sequence = current.get("sequence").and_then(Value::as_u64).unwrap_or(0);
        let sequence = match content.remove("sequence") {
            Some(given) => {
                let given = given
                    .as_u64()
                    .ok_or_else(|| invalid("Invalid sequence value."))?;
                if given < current_sequence {
                    return Err(invalid(
                        "Invalid sequence value. The specified sequence number is below the \
                         current sequence number of the resource.",
                    ));
                }
                given
            }
            None => current_sequence,
        };
        let timing_changed = ["start", "end", "recurrence"]
            .iter()
            .any(|key| content.get(*key) != current.get(*key));
        let etag = self.next_etag();
        let now = self.next_update();
        let mut event = Map::new();
        for key in [
            "kind", "etag", "id", "status", "htmlLink", "created", "updated",
        ] {
            if let Some(value) = current.get(key) {
                event.insert(key.to_owned(), value.clone());
            }
        }
        event.insert("etag".into(), json!(etag));
        event.insert("updated".into(), json!(now));
        if position.is_none() {
            // A new exception: its own creation.
            event.insert("created".into(), json!(now));
            event.insert(
                "htmlLink".into(),
                json!(html_link(event_id, &self.calendars[ci].id)),
            );
        }
        for (key, value) in content {
            event.insert(key, value);
        }
        if !event.contains_key("status") {
            event.insert("status".into(), json!("confirmed"));
        }
        for key in [
            "creator",
            "organizer",
            "recurringEventId",
            "originalStartTime",
            "iCalUID",
        ] {
            if let Some(value) = current.get(key) {
                event.insert(key.to_owned(), value.clone());
            }
        }
        event.insert(
            "sequence".into(),
            json!(sequence + u64::from(timing_changed && sequence == current_sequence)),
        );
        if !event.contains_key("reminders") {
            event.insert("reminders".into(), json!({"useDefault": true}));
        }
        if !event.contains_key("eventType") {
            event.insert("eventType".into(), json!("default"));
        }
        let cancelled_now = is_cancelled(&event);
        let seq = self.bump(ci);
        let calendar = &mut self.calendars[ci];
        let pos = match position {
            Some(pos) => {
                calendar.events[pos] = Stored {
                    body: event.clone(),
                    changed_at: seq,
                };
                pos
            }
            None => {
                calendar
                    .index
                    .insert(event_id.to_owned(), calendar.events.len());
                calendar.events.push(Stored {
                    body: event.clone(),
                    changed_at: seq,
                });
                calendar.events.len() - 1
            }
        };
        if cancelled_now {
            self.cancel_exceptions_of(ci, pos, seq);
        }
        Ok(event)
    }

    /// DELETE: the event (or an instance of a series) becomes a cancelled tombstone.
    fn delete_event(
        &mut self,
        ci: usize,
        event_id: &str,
        if_match: Option<&str>,
    ) -> Result<(), Reply> {
        match self.calendars[ci].index.get(event_id).copied() {
            Some(pos) => {
                let current = &self.calendars[ci].events[pos].body;
                if is_cancelled(current) {
                    return Err(api_error(410, "deleted", "Resource has been deleted"));
                }
                check_if_match(if_match, current)?;
                let etag = self.next_etag();
                let now = self.next_update();
                let seq = self.bump(ci);
                let stored = &mut self.calendars[ci].events[pos];
                stored.body.insert("status".into(), json!("cancelled"));
                stored.body.insert("etag".into(), json!(etag));
                stored.body.insert("updated".into(), json!(now));
                stored.changed_at = seq;
                self.cancel_exceptions_of(ci, pos, seq);
                Ok(())
            }
            None => {
                let Some((master, original)) = self.virtual_instance(ci, event_id) else {
                    return Err(not_found());
                };
                let mut instance =
                    default_instance(&self.calendars[ci].events[master].body, &original);
                check_if_match(if_match, &instance)?;
                let etag = self.next_etag();
                let now = self.next_update();
                instance.insert("status".into(), json!("cancelled"));
                instance.insert("etag".into(), json!(etag));
                instance.insert("created".into(), json!(now));
                instance.insert("updated".into(), json!(now));
                let seq = self.bump(ci);
                let calendar = &mut self.calendars[ci];
                calendar
                    .index
                    .insert(event_id.to_owned(), calendar.events.len());
                calendar.events.push(Stored {
                    body: instance,
                    changed_at: seq,
                });
                Ok(())
            }
        }
    }

    /// A deleted series takes its exceptions with it.
    fn cancel_exceptions_of(&mut self, ci: usize, master: usize, seq: u64) {
        let master_id = self.calendars[ci].events[master].body["id"].clone();
        if !self.calendars[ci].events[master]
            .body
            .contains_key("recurrence")
        {
            return;
        }
        let exceptions: Vec<usize> = self.calendars[ci]
            .events
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s.body.get("recurringEventId") == Some(&master_id) && !is_cancelled(&s.body)
            })
            .map(|(pos, _)| pos)
            .collect();
        for pos in exceptions {
            let etag = self.next_etag();
            let stored = &mut self.calendars[ci].events[pos];
            stored.body.insert("status".into(), json!("cancelled"));
            stored.body.insert("etag".into(), json!(etag));
            stored.changed_at = seq;
        }
    }

    /// The items of an events list, each with its stable position `(event, instance)`.
    fn event_items(&self, ci: usize, filter: &EventFilter) -> Vec<((usize, usize), Value)> {
        let events = &self.calendars[ci].events;
        let changed = |stored: &Stored| filter.since.is_none_or(|from| stored.changed_at > from);
        let uid_matches = |body: &Map<String, Value>| {
            filter
                .ical_uid
                .as_deref()
                .is_none_or(|uid| body.get("iCalUID").and_then(Value::as_str) == Some(uid))
        };
        let parent_live = |body: &Map<String, Value>| {
            body.get("recurringEventId")
                .and_then(Value::as_str)
                .and_then(|master| self.calendars[ci].index.get(master))
                .is_some_and(|&pos| !is_cancelled(&events[pos].body))
        };
        let mut items = Vec::new();
        for (pos, stored) in events.iter().enumerate() {
            let body = &stored.body;
            if !uid_matches(body) {
                continue;
            }
            let cancelled = is_cancelled(body);
            let is_exception = body.contains_key("recurringEventId");
            let is_master = body.contains_key("recurrence");
            if !filter.single_events || !(is_master || is_exception) {
                if !changed(stored) {
                    continue;
                }
                let listed = !cancelled
                    || filter.since.is_some()
                    || filter.show_deleted
                    || (is_exception && parent_live(body) && !filter.single_events);
                if listed {
                    items.push(((pos, 0), listed_event(body)));
                }
                continue;
            }
            if is_exception {
                continue; // listed with its series
            }
            // A series, expanded.
            if cancelled {
                if filter.since.is_some() && changed(stored) {
                    items.push(((pos, 0), listed_event(body)));
                }
                continue;
            }
            let master_id = body.get("id").cloned().unwrap_or(Value::Null);
            let exceptions: Vec<(When, &Stored)> = events
                .iter()
                .filter(|s| s.body.get("recurringEventId") == Some(&master_id))
                .filter_map(|s| {
                    let original = s.body.get("originalStartTime")?;
                    let (when, _) = parse_event_time(original, "start", chrono_tz::UTC).ok()?;
                    Some((when, s))
                })
                .collect();
            let mut starts = occurrences(body);
            for (when, _) in &exceptions {
                if !starts.contains(when) {
                    starts.push(*when);
                }
            }
            starts.sort();
            for (k, original) in starts.into_iter().enumerate() {
                let key = (pos, k + 1);
                match exceptions.iter().find(|(when, _)| *when == original) {
                    Some((_, exception)) => {
                        if !(changed(stored) || changed(exception)) {
                            continue;
                        }
                        if !is_cancelled(&exception.body)
                            || filter.since.is_some()
                            || filter.show_deleted
                        {
                            items.push((key, listed_event(&exception.body)));
                        }
                    }
                    None => {
                        if changed(stored) {
                            items.push((key, Value::Object(default_instance(body, &original))));
                        }
                    }
                }
            }
        }
        items
    }
}

/// What an events list asks for.
struct EventFilter {
    /// Changes after this sequence only (a sync token).
    since: Option<u64>,
    show_deleted: bool,
    single_events: bool,
    ical_uid: Option<String>,
}

// ---------------------------------------------------------------------------------------
// HTTP

struct Request {
    method: Method,
    raw_path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn params(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(self.query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    fn param(&self, name: &str) -> Option<String> {
        self.params()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    fn bool_param(&self, name: &str) -> Result<Option<bool>, Reply> {
        match self.param(name).as_deref() {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(other) => Err(invalid_parameter(
                name,
                &format!("Invalid boolean value: '{other}'."),
            )),
        }
    }

    fn max_results(&self, default: usize, max: usize) -> Result<usize, Reply> {
        match self.param("maxResults") {
            None => Ok(default),
            Some(text) => match text.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n.min(max)),
                _ => Err(invalid_parameter(
                    "maxResults",
                    &format!("Invalid value '{text}'. Values must be within the range: [1, {max}]"),
                )),
            },
        }
    }

    fn json_body(&self) -> Result<Map<String, Value>, Reply> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(body)) => Ok(body),
            _ => Err(api_error(400, "parseError", "Parse Error")),
        }
    }

    /// The query without `pageToken`, sorted: what a page token is tied to.
    fn fingerprint(&self, scope: &str) -> String {
        let mut params: Vec<(String, String)> = self
            .params()
            .into_iter()
            .filter(|(k, _)| k != "pageToken")
            .collect();
        params.sort();
        format!("{scope}?{params:?}")
    }
}

/// An answer before it becomes a warp response.
#[derive(Debug)]
struct Reply {
    status: u16,
    body: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body: Some(body),
            headers: Vec::new(),
        }
    }

    fn empty(status: u16) -> Self {
        Self {
            status,
            body: None,
            headers: Vec::new(),
        }
    }

    fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    fn into_response(self) -> warp::reply::Response {
        let mut response = match &self.body {
            Some(body) => warp::reply::with_header(
                warp::reply::json(body),
                "content-type",
                "application/json; charset=UTF-8",
            )
            .into_response(),
            None => warp::reply().into_response(),
        };
        *response.status_mut() = StatusCode::from_u16(self.status).expect("status");
        for (name, value) in self.headers {
            response
                .headers_mut()
                .insert(name, value.parse().expect("header value"));
        }
        response
    }
}

type Answer = Result<Reply, Reply>;

impl Shared {
    fn handle(&self, request: &Request) -> Reply {
        let segments: Vec<String> = request
            .raw_path
            .trim_start_matches('/')
            .split('/')
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            })
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let mut state = self.state.lock();
        match (request.method.as_str(), segments.as_slice()) {
            // The consent page itself: the tests consent through `GoogleApi::consent`.
            ("GET", ["o", "oauth2", "v2", "auth"]) => Reply {
                status: 200,
                body: None,
                headers: vec![("content-type", "text/html; charset=utf-8".into())],
            },
            ("POST", ["token"]) => state.token(request),
            ("POST", ["revoke"]) => state.revoke(request),
            (_, ["calendar", "v3", rest @ ..]) => {
                let reply = state.calendar_api(request, rest).unwrap_or_else(|e| e);
                let path = format!("/{}", segments.join("/"));
                state.requests.push(Recorded {
                    method: request.method.to_string(),
                    path,
                    raw_path: request.raw_path.clone(),
                    query: request.query.clone(),
                    if_match: request.header("if-match").map(str::to_owned),
                    body: serde_json::from_slice(&request.body).ok(),
                    status: reply.status,
                });
                let count = state.requests.len();
                drop(state);
                self.recorded.send_replace(count);
                reply
            }
            (method, _) => unimplemented_route(method, &request.raw_path),
        }
    }
}

impl State {
    // --- OAuth ---

    fn token(&mut self, request: &Request) -> Reply {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        self.token_requests.push(Value::Object(
            form.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        ));
        self.token_answer(request, &form).unwrap_or_else(|e| e)
    }

    fn token_answer(&mut self, request: &Request, form: &[(String, String)]) -> Answer {
        let content_type = request.header("content-type").unwrap_or_default();
        if !content_type.starts_with("application/x-www-form-urlencoded") {
            return Err(oauth_error(400, "invalid_request", "Invalid content type."));
        }
        let field = |name: &str| {
            form.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .filter(|v| !v.is_empty())
        };
        // client_secret_post or client_secret_basic.
        let basic = request
            .header("authorization")
            .and_then(|h| h.strip_prefix("Basic "))
            .and_then(|b| STANDARD.decode(b.trim()).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|pair| {
                let (id, secret) = pair.split_once(':')?;
                let decode = |s: &str| {
                    url::form_urlencoded::parse(format!("v={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                };
                Some((decode(id)?, decode(secret)?))
            });
        let (client_id, client_secret) = match &basic {
            Some((id, secret)) => (Some(id.as_str()), Some(secret.as_str())),
            None => (field("client_id"), field("client_secret")),
        };
        let Some(client_id) = client_id else {
            return Err(oauth_error(
                400,
                "invalid_request",
                "Could not determine client ID from request.",
            ));
        };
        if client_id != GOOGLE_CLIENT_ID {
            return Err(oauth_error(
                401,
                "invalid_client",
                "The OAuth client was not found.",
            ));
        }
        if client_secret != Some(GOOGLE_CLIENT_SECRET) {
            return Err(oauth_error(401, "invalid_client", "Unauthorized"));
        }
        match field("grant_type") {
            Some("authorization_code") => self.redeem_code(field),
            Some("refresh_token") => self.refresh(field),
            Some(other) => Err(oauth_error(
                400,
                "unsupported_grant_type",
                &format!("Invalid grant_type: {other}"),
            )),
            None => Err(oauth_error(
                400,
                "unsupported_grant_type",
                "Invalid grant_type: ",
            )),
        }
    }

    fn redeem_code<'a>(&mut self, field: impl Fn(&str) -> Option<&'a str>) -> Answer {
        let Some(code) = field("code") else {
            return Err(oauth_error(
                400,
                "invalid_request",
                "Missing required parameter: code",
            ));
        };
        let Some(grant) = self.codes.get(code) else {
            return Err(oauth_error(400, "invalid_grant", "Malformed auth code."));
        };
        if grant.used {
            return Err(oauth_error(400, "invalid_grant", "Bad Request"));
        }
        if grant.expired || grant.issued.elapsed() > CODE_LIFETIME {
            return Err(oauth_error(400, "invalid_grant", "Bad Request"));
        }
        if grant.client_id != GOOGLE_CLIENT_ID {
            return Err(oauth_error(400, "invalid_grant", "Unauthorized"));
        }
        match field("redirect_uri") {
            None => {
                return Err(oauth_error(
                    400,
                    "invalid_request",
                    "Missing parameter: redirect_uri",
                ));
            }
            Some(uri) if uri != grant.redirect_uri => {
                return Err(oauth_error(400, "redirect_uri_mismatch", "Bad Request"));
            }
            Some(_) => {}
        }
        let Some(verifier) = field("code_verifier") else {
            return Err(oauth_error(400, "invalid_grant", "Missing code verifier."));
        };
        let valid_verifier = (43..=128).contains(&verifier.len())
            && verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if !valid_verifier
            || URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != grant.challenge
        {
            return Err(oauth_error(400, "invalid_grant", "Invalid code verifier."));
        }
        let grant = self.codes.get_mut(code).expect("code");
        grant.used = true;
        let sub = grant.sub.clone();
        let scopes = grant.scopes.clone();
        let nonce = grant.nonce.clone();
        let has_refresh = self
            .refresh_tokens
            .values()
            .any(|g| g.sub == sub && !g.revoked);
        let refresh_token = (grant.offline && (grant.prompt_consent || !has_refresh)).then(|| {
            let token = format!("1//0{}", random_token(90));
            self.refresh_tokens.insert(
                token.clone(),
                RefreshGrant {
                    sub: sub.clone(),
                    scopes: scopes.clone(),
                    revoked: false,
                },
            );
            token
        });
        let access_token = self.issue_access_token(&sub, &scopes, refresh_token.clone());
        let mut body = Map::new();
        body.insert("access_token".into(), json!(access_token));
        body.insert("expires_in".into(), json!(self.access_token_lifetime));
        if let Some(refresh_token) = refresh_token {
            body.insert("refresh_token".into(), json!(refresh_token));
        }
        body.insert("scope".into(), json!(scopes.join(" ")));
        body.insert("token_type".into(), json!("Bearer"));
        if scopes.iter().any(|s| s == "openid") {
            body.insert(
                "id_token".into(),
                json!(self.id_token(&sub, nonce.as_deref())),
            );
        }
        Ok(token_reply(body))
    }

    fn refresh<'a>(&mut self, field: impl Fn(&str) -> Option<&'a str>) -> Answer {
        let Some(refresh_token) = field("refresh_token") else {
            return Err(oauth_error(
                400,
                "invalid_request",
                "Missing required parameter: refresh_token",
            ));
        };
        let Some(grant) = self
            .refresh_tokens
            .get(refresh_token)
            .filter(|g| !g.revoked)
        else {
            return Err(oauth_error(
                400,
                "invalid_grant",
                "Token has been expired or revoked.",
            ));
        };
        let sub = grant.sub.clone();
        let scopes = grant.scopes.clone();
        let access_token = self.issue_access_token(&sub, &scopes, Some(refresh_token.to_owned()));
        let mut body = Map::new();
        body.insert("access_token".into(), json!(access_token));
        body.insert("expires_in".into(), json!(self.access_token_lifetime));
        body.insert("scope".into(), json!(scopes.join(" ")));
        body.insert("token_type".into(), json!("Bearer"));
        if scopes.iter().any(|s| s == "openid") {
            body.insert("id_token".into(), json!(self.id_token(&sub, None)));
        }
        Ok(token_reply(body))
    }

    fn issue_access_token(
        &mut self,
        sub: &str,
        scopes: &[String],
        refresh_token: Option<String>,
    ) -> String {
        let token = format!("ya29.a0{}", random_token(120));
        self.access_tokens.insert(
            token.clone(),
            AccessGrant {
                sub: sub.to_owned(),
                scopes: scopes.to_vec(),
                refresh_token,
                expires_at: Instant::now() + StdDuration::from_secs(self.access_token_lifetime),
                expired: false,
                revoked: false,
            },
        );
        token
    }

    fn id_token(&self, sub: &str, nonce: Option<&str>) -> String {
        let user = &self.accounts[self.account_by_sub(sub)].user;
        let now = Utc::now().timestamp();
        let mut claims = json!({
            "iss": "https://accounts.google.com",
            "azp": GOOGLE_CLIENT_ID,
            "aud": GOOGLE_CLIENT_ID,
            "sub": user.sub,
            "email": user.email,
            "email_verified": true,
            "name": user.name,
            "iat": now,
            "exp": now + 3600,
        });
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some("google-fake".to_owned());
        jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(ID_TOKEN_KEY),
        )
        .expect("sign the id token")
    }

    fn revoke(&mut self, request: &Request) -> Reply {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let token = form
            .iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.clone())
            .or_else(|| request.param("token"));
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return oauth_error(400, "invalid_request", "Missing required parameter: token");
        };
        self.revoked.push(token.clone());
        let sub = match (
            self.refresh_tokens.get(&token),
            self.access_tokens.get(&token),
        ) {
            (Some(grant), _) if !grant.revoked => grant.sub.clone(),
            (_, Some(grant))
                if !grant.revoked && !grant.expired && grant.expires_at > Instant::now() =>
            {
                grant.sub.clone()
            }
            _ => return oauth_error(400, "invalid_token", "Token expired or revoked"),
        };
        // Google revokes the whole grant: every token of this user for this client.
        self.revoke_grant(&sub);
        Reply::json(200, json!({}))
    }

    // --- Calendar API ---

    fn calendar_api(&mut self, request: &Request, path: &[&str]) -> Answer {
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
                let body = request.json_body()?;
                let summary = body
                    .get("summary")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| api_error(400, "required", "Missing title."))?;
                let time_zone = match body.get("timeZone").and_then(Value::as_str) {
                    Some(tz) if tz.parse::<chrono_tz::Tz>().is_ok() => tz.to_owned(),
                    Some(_) => return Err(invalid("Invalid time zone definition.")),
                    None => "UTC".to_owned(),
                };
                let description = body
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let id = format!("{}@group.calendar.google.com", random_base32hex(26));
                let new = NewCalendar {
                    id,
                    summary: summary.to_owned(),
                    description,
                    time_zone,
                    primary: false,
                };
                let ci = self.create_calendar(&sub, new, "owner");
                Ok(Reply::json(200, self.calendar_json(ci)))
            }
            ("GET", ["calendars", cid]) => {
                need(&scopes, &[SCOPE_CALENDAR, SCOPE_CALENDAR_READONLY])?;
                let (ci, _) = self.resolve(&sub, cid)?;
                Ok(Reply::json(200, self.calendar_json(ci)))
            }
            ("PATCH" | "PUT", ["calendars", cid]) => {
                need(&scopes, WRITE_CALENDARS)?;
                let (ci, role) = self.resolve(&sub, cid)?;
                if role != "owner" {
                    return Err(api_error(403, "forbidden", "Forbidden"));
                }
                let body = request.json_body()?;
                if let Some(tz) = body.get("timeZone").and_then(Value::as_str)
                    && tz.parse::<chrono_tz::Tz>().is_err()
                {
                    return Err(invalid("Invalid time zone definition."));
                }
                if method == "PUT" && body.get("summary").and_then(Value::as_str).is_none() {
                    return Err(api_error(400, "required", "Missing title."));
                }
                let etag = self.next_etag();
                let calendar = &mut self.calendars[ci];
                if let Some(summary) = body.get("summary").and_then(Value::as_str) {
                    calendar.summary = summary.to_owned();
                }
                if let Some(description) = body.get("description") {
                    calendar.description = description.as_str().map(str::to_owned);
                }
                if let Some(tz) = body.get("timeZone").and_then(Value::as_str) {
                    calendar.time_zone = tz.to_owned();
                }
                calendar.etag = etag;
                Ok(Reply::json(200, self.calendar_json(ci)))
            }
            ("DELETE", ["calendars", cid]) => {
                need(&scopes, WRITE_CALENDARS)?;
                let (ci, role) = self.resolve(&sub, cid)?;
                if self.calendars[ci].primary {
                    return Err(api_error(
                        400,
                        "cannotDeletePrimaryCalendar",
                        "The primary calendar cannot be deleted.",
                    ));
                }
                if role != "owner" {
                    return Err(api_error(403, "forbidden", "Forbidden"));
                }
                self.delete_calendar(ci);
                Ok(Reply::empty(204))
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

    /// The calendar `cid` names for `sub` (`primary` included) and `sub`'s access role.
    fn resolve(&self, sub: &str, cid: &str) -> Result<(usize, String), Reply> {
        let ai = self.account_by_sub(sub);
        let account = &self.accounts[ai];
        let cid = if cid == "primary" {
            account.user.email.as_str()
        } else {
            cid
        };
        let ci = self
            .calendar_index(cid)
            .filter(|&ci| !self.calendars[ci].deleted)
            .ok_or_else(not_found)?;
        let entry = account
            .list
            .iter()
            .find(|e| e.calendar_id == cid && !e.deleted)
            .ok_or_else(not_found)?;
        Ok((ci, entry.access_role.clone()))
    }

    fn list_calendar_list(&mut self, sub: &str, request: &Request) -> Answer {
        let max_results = request.max_results(100, 250)?;
        let sync_token = request.param("syncToken");
        let show_deleted = request.bool_param("showDeleted")?;
        let show_hidden = request.bool_param("showHidden")?;
        let min_role = request.param("minAccessRole");
        let scope = SyncScope::CalendarList(sub.to_owned());
        if sync_token.is_some() {
            if min_role.is_some() {
                return Err(sync_token_restriction());
            }
            if show_deleted == Some(false) || show_hidden == Some(false) {
                return Err(invalid_parameter(
                    "syncToken",
                    "showDeleted and showHidden must not be false with a sync token.",
                ));
            }
        }
        let rank = |role: &str| {
            ["freeBusyReader", "reader", "writer", "owner"]
                .iter()
                .position(|r| *r == role)
        };
        let min_rank = match &min_role {
            None => 0,
            Some(role) => {
                rank(role).ok_or_else(|| invalid_parameter("minAccessRole", "Invalid value"))?
            }
        };
        let fingerprint = request.fingerprint(&format!("calendarList:{sub}"));
        let ai = self.account_by_sub(sub);
        let (since, snapshot, after) = match request.param("pageToken") {
            Some(page_token) => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                let cursor = self.cursor(&page_token, &fingerprint)?;
                (since, cursor.snapshot_seq, Some(cursor.after))
            }
            None => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                (since, self.accounts[ai].list_seq, None)
            }
        };
        let items: Vec<((usize, usize), Value)> = self.accounts[ai]
            .list
            .iter()
            .enumerate()
            .filter(|(_, e)| match since {
                Some(from) => e.changed_at > from,
                None => {
                    (!e.deleted || show_deleted == Some(true))
                        && (!e.hidden || show_hidden == Some(true))
                        && rank(&e.access_role).unwrap_or(0) >= min_rank
                }
            })
            .map(|(pos, e)| ((pos, 0), self.entry_json(e)))
            .filter(|(key, _)| after.is_none_or(|after| *key > after))
            .collect();
        let page_size = max_results.min(self.page_size);
        let more = items.len() > page_size;
        let page: Vec<((usize, usize), Value)> = items.into_iter().take(page_size).collect();
        let mut body = Map::new();
        body.insert("kind".into(), json!("calendar#calendarList"));
        body.insert("etag".into(), json!(format!("\"p3{:013}\"", snapshot)));
        if more {
            let last = page.last().map(|(key, _)| *key).unwrap_or((0, 0));
            let token = self.new_cursor(fingerprint, last, snapshot, None);
            body.insert("nextPageToken".into(), json!(token));
        } else {
            let token = self.sync_token(scope, snapshot);
            body.insert("nextSyncToken".into(), json!(token));
        }
        body.insert(
            "items".into(),
            Value::Array(page.into_iter().map(|(_, v)| v).collect()),
        );
        Ok(Reply::json(200, Value::Object(body)))
    }

    fn patch_list_entry(&mut self, sub: &str, cid: &str, request: &Request) -> Answer {
        let (ci, _) = self.resolve(sub, cid)?;
        let body = request.json_body()?;
        let rgb = request.bool_param("colorRgbFormat")? == Some(true);
        let color = |name: &str| -> Result<Option<String>, Reply> {
            match body.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(_) if !rgb => Err(invalid_parameter(
                    "colorRgbFormat",
                    "Setting RGB colors requires colorRgbFormat=true.",
                )),
                Some(Value::String(c))
                    if c.len() == 7
                        && c.starts_with('#')
                        && c[1..].bytes().all(|b| b.is_ascii_hexdigit()) =>
                {
                    Ok(Some(c.to_ascii_lowercase()))
                }
                Some(_) => Err(invalid(&format!("Invalid value for: {name}"))),
            }
        };
        let background = color("backgroundColor")?;
        let foreground = color("foregroundColor")?;
        let calendar_id = self.calendars[ci].id.clone();
        let etag = self.next_etag();
        let ai = self.account_by_sub(sub);
        let account = &mut self.accounts[ai];
        let ei = account
            .list
            .iter()
            .position(|e| e.calendar_id == calendar_id && !e.deleted)
            .ok_or_else(not_found)?;
        account.list_seq += 1;
        let seq = account.list_seq;
        let entry = &mut account.list[ei];
        if let Some(background) = background {
            entry.background = background;
        }
        if let Some(foreground) = foreground {
            entry.foreground = foreground;
        }
        if let Some(color_id) = body.get("colorId").and_then(Value::as_str) {
            entry.color_id = color_id.to_owned();
        }
        if let Some(summary_override) = body.get("summaryOverride") {
            entry.summary_override = summary_override.as_str().map(str::to_owned);
        }
        if let Some(hidden) = body.get("hidden").and_then(Value::as_bool) {
            entry.hidden = hidden;
        }
        if let Some(selected) = body.get("selected").and_then(Value::as_bool) {
            entry.selected = selected;
        }
        entry.etag = etag;
        entry.changed_at = seq;
        Ok(Reply::json(
            200,
            self.entry_json(&self.accounts[ai].list[ei]),
        ))
    }

    fn cursor(&self, page_token: &str, fingerprint: &str) -> Result<&PageCursor, Reply> {
        self.page_tokens
            .get(page_token)
            .filter(|c| c.fingerprint == fingerprint)
            .ok_or_else(|| invalid_parameter("pageToken", "Invalid page token value."))
    }

    fn new_cursor(
        &mut self,
        fingerprint: String,
        after: (usize, usize),
        snapshot_seq: u64,
        pages_before_expiry: Option<usize>,
    ) -> String {
        let token = format!("Eh{}", random_token(40));
        self.page_tokens.insert(
            token.clone(),
            PageCursor {
                fingerprint,
                after,
                snapshot_seq,
                pages_before_expiry,
            },
        );
        token
    }

    fn list_events(&mut self, ci: usize, role: &str, request: &Request) -> Answer {
        let max_results = request.max_results(DEFAULT_PAGE_SIZE, 2500)?;
        let sync_token = request.param("syncToken");
        let show_deleted = request.bool_param("showDeleted")?;
        let single_events = request.bool_param("singleEvents")?.unwrap_or(false);
        let ical_uid = request.param("iCalUID");
        const RESTRICTIONS: &[&str] = &[
            "timeMin",
            "timeMax",
            "q",
            "orderBy",
            "updatedMin",
            "iCalUID",
            "privateExtendedProperty",
            "sharedExtendedProperty",
        ];
        let params = request.params();
        if sync_token.is_some() {
            if params
                .iter()
                .any(|(k, _)| RESTRICTIONS.contains(&k.as_str()))
            {
                return Err(sync_token_restriction());
            }
            if show_deleted == Some(false) {
                return Err(invalid_parameter(
                    "showDeleted",
                    "showDeleted must not be false with a sync token.",
                ));
            }
        } else if let Some((name, _)) = params
            .iter()
            .find(|(k, _)| RESTRICTIONS.contains(&k.as_str()) && k != "iCalUID")
        {
            return Err(unimplemented_parameter(name));
        }
        let scope = SyncScope::Events(self.calendars[ci].id.clone());
        let fingerprint = request.fingerprint(&format!("events:{}", self.calendars[ci].id));
        let (since, snapshot, after, pages_before_expiry) = match request.param("pageToken") {
            Some(page_token) => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                let cursor = self.cursor(&page_token, &fingerprint)?;
                let (snapshot, after, pages) = (
                    cursor.snapshot_seq,
                    cursor.after,
                    cursor.pages_before_expiry,
                );
                if pages == Some(0) {
                    self.expire_sync_tokens();
                    return Err(full_sync_required());
                }
                (since, snapshot, Some(after), pages.map(|n| n - 1))
            }
            None => {
                let since = match &sync_token {
                    Some(token) => Some(self.check_sync_token(token, &scope)?),
                    None => None,
                };
                let pages = if since.is_some() {
                    self.expire_after_pages.take()
                } else {
                    None
                };
                if pages == Some(0) {
                    self.expire_sync_tokens();
                    return Err(full_sync_required());
                }
                (since, self.calendars[ci].seq, None, pages.map(|n| n - 1))
            }
        };
        let filter = EventFilter {
            since,
            show_deleted: show_deleted == Some(true),
            single_events,
            ical_uid,
        };
        let items: Vec<((usize, usize), Value)> = self
            .event_items(ci, &filter)
            .into_iter()
            .filter(|(key, _)| after.is_none_or(|after| *key > after))
            .collect();
        let page_size = max_results.min(self.page_size);
        let more = items.len() > page_size;
        let page: Vec<((usize, usize), Value)> = items.into_iter().take(page_size).collect();
        let calendar = &self.calendars[ci];
        let mut body = Map::new();
        body.insert("kind".into(), json!("calendar#events"));
        body.insert("etag".into(), json!(format!("\"p3{:013}\"", snapshot)));
        body.insert("summary".into(), json!(calendar.summary));
        body.insert(
            "description".into(),
            json!(calendar.description.clone().unwrap_or_default()),
        );
        body.insert("updated".into(), json!(calendar.updated));
        body.insert("timeZone".into(), json!(calendar.time_zone));
        body.insert("accessRole".into(), json!(role));
        body.insert(
            "defaultReminders".into(),
            if calendar.primary {
                json!([{"method": "popup", "minutes": 30}])
            } else {
                json!([])
            },
        );
        if more {
            let last = page.last().map(|(key, _)| *key).unwrap_or((0, 0));
            let token = self.new_cursor(fingerprint, last, snapshot, pages_before_expiry);
            body.insert("nextPageToken".into(), json!(token));
        } else {
            let token = self.sync_token(scope, snapshot);
            body.insert("nextSyncToken".into(), json!(token));
        }
        body.insert(
            "items".into(),
            Value::Array(page.into_iter().map(|(_, v)| v).collect()),
        );
        Ok(Reply::json(200, Value::Object(body)))
    }
}

// ---------------------------------------------------------------------------------------
// Events: times, validation, recurrence

/// A parsed `EventDateTime`: a day (all-day events) or an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum When {
    Day(NaiveDate),
    At(DateTime<Utc>),
}

impl When {
    /// The instance-id suffix: `YYYYMMDD` or `YYYYMMDDTHHMMSSZ` (UTC).
    fn stamp(self) -> String {
        match self {
            When::Day(day) => day.format("%Y%m%d").to_string(),
            When::At(at) => at.format("%Y%m%dT%H%M%SZ").to_string(),
        }
    }

    fn from_stamp(stamp: &str) -> Option<Self> {
        if stamp.len() == 8 {
            return NaiveDate::parse_from_str(stamp, "%Y%m%d")
                .ok()
                .map(When::Day);
        }
        NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ")
            .ok()
            .map(|at| When::At(at.and_utc()))
    }
}

/// Parses `{date}` or `{dateTime, timeZone?}`; returns it with the value Google stores
/// (`dateTime` written with the offset of its `timeZone`, or of the calendar's zone).
fn parse_event_time(
    value: &Value,
    which: &str,
    calendar_zone: chrono_tz::Tz,
) -> Result<(When, Value), Reply> {
    let object = value
        .as_object()
        .ok_or_else(|| invalid(&format!("Invalid {which} time.")))?;
    let date = object.get("date").and_then(Value::as_str);
    let date_time = object.get("dateTime").and_then(Value::as_str);
    let zone = match object.get("timeZone") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(
            name.parse::<chrono_tz::Tz>()
                .map_err(|_| invalid(&format!("Invalid time zone definition for {which} time.")))?,
        ),
        Some(_) => {
            return Err(invalid(&format!(
                "Invalid time zone definition for {which} time."
            )));
        }
    };
    match (date, date_time) {
        (Some(date), None) => {
            let day = NaiveDate::parse_from_str(date, "%Y-%m-%d")
                .map_err(|_| invalid(&format!("Invalid {which} time.")))?;
            Ok((
                When::Day(day),
                json!({"date": day.format("%Y-%m-%d").to_string()}),
            ))
        }
        (None, Some(text)) => {
            let at = match DateTime::parse_from_rfc3339(text) {
                Ok(at) => at.with_timezone(&Utc),
                Err(_) => {
                    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                        .map_err(|_| invalid(&format!("Invalid {which} time.")))?;
                    let zone = zone.ok_or_else(|| {
                        invalid(&format!("Missing time zone definition for {which} time."))
                    })?;
                    zone.from_local_datetime(&naive)
                        .earliest()
                        .ok_or_else(|| invalid(&format!("Invalid {which} time.")))?
                        .with_timezone(&Utc)
                }
            };
            let at = at - Duration::nanoseconds(i64::from(at.timestamp_subsec_nanos()));
            let shown = at
                .with_timezone(&zone.unwrap_or(calendar_zone))
                .to_rfc3339_opts(SecondsFormat::Secs, true);
            let mut out = Map::new();
            out.insert("dateTime".into(), json!(shown));
            if let Some(zone) = zone {
                out.insert("timeZone".into(), json!(zone.name()));
            }
            Ok((When::At(at), Value::Object(out)))
        }
        (Some(_), Some(_)) => Err(invalid(&format!(
            "Invalid {which} time: give either date or dateTime."
        ))),
        (None, None) => Err(api_error(
            400,
            "required",
            &format!("Missing {which} time."),
        )),
    }
}

/// Fields a client may write (read-only ones are the server's).
fn writable_fields(body: &Map<String, Value>) -> Map<String, Value> {
    const READ_ONLY: &[&str] = &[
        "kind",
        "etag",
        "id",
        "htmlLink",
        "created",
        "updated",
        "creator",
        "organizer",
        "iCalUID",
        "recurringEventId",
        "originalStartTime",
        "hangoutLink",
        "privateCopy",
    ];
    body.iter()
        .filter(|(k, _)| !READ_ONLY.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Checks an event's writable fields as Google does and normalizes `start`/`end`.
fn normalize_and_validate(
    content: &mut Map<String, Value>,
    zone: chrono_tz::Tz,
    update: bool,
) -> Result<(), Reply> {
    let start = content
        .get("start")
        .filter(|v| !v.is_null())
        .ok_or_else(|| api_error(400, "required", "Missing start time."))?;
    let end = content
        .get("end")
        .filter(|v| !v.is_null())
        .ok_or_else(|| api_error(400, "required", "Missing end time."))?;
    let (start_when, start_value) = parse_event_time(start, "start", zone)?;
    let (end_when, end_value) = parse_event_time(end, "end", zone)?;
    match (start_when, end_when) {
        (When::Day(s), When::Day(e)) if e <= s => {
            return Err(api_error(
                400,
                "timeRangeEmpty",
                "The specified time range is empty.",
            ));
        }
        (When::At(s), When::At(e)) if e < s => {
            return Err(api_error(
                400,
                "timeRangeEmpty",
                "The specified time range is empty.",
            ));
        }
        (When::Day(_), When::At(_)) | (When::At(_), When::Day(_)) => {
            return Err(invalid(
                "Start and end times must either both be date or both be dateTime.",
            ));
        }
        _ => {}
    }
    let timed = matches!(start_when, When::At(_));
    match content.get("recurrence") {
        None | Some(Value::Null) => {
            content.remove("recurrence");
        }
        Some(Value::Array(lines)) if lines.is_empty() => {
            content.remove("recurrence");
        }
        Some(Value::Array(lines)) => {
            for line in lines {
                let text = line
                    .as_str()
                    .ok_or_else(|| invalid("Invalid recurrence rule."))?;
                let name = text
                    .split([':', ';'])
                    .next()
                    .unwrap_or_default()
                    .to_ascii_uppercase();
                if !["RRULE", "EXRULE", "RDATE", "EXDATE"].contains(&name.as_str()) {
                    return Err(invalid("Invalid recurrence rule."));
                }
            }
            if timed {
                for (which, value) in [("start", &start_value), ("end", &end_value)] {
                    if value.get("timeZone").is_none() {
                        return Err(invalid(&format!(
                            "Missing time zone definition for {which} time."
                        )));
                    }
                }
            }
        }
        Some(_) => return Err(invalid("Invalid recurrence rule.")),
    }
    content.insert("start".into(), start_value);
    content.insert("end".into(), end_value);
    if content.contains_key("recurrence") && recurrence_set(content).is_err() {
        return Err(invalid("Invalid recurrence rule."));
    }
    if let Some(status) = content.get("status") {
        let allowed: &[&str] = if update {
            &["confirmed", "tentative", "cancelled"]
        } else {
            &["confirmed", "tentative"]
        };
        if !status.as_str().is_some_and(|s| allowed.contains(&s)) {
            return Err(invalid("Invalid value for: status"));
        }
    }
    for (field, allowed) in [
        ("transparency", &["opaque", "transparent"][..]),
        (
            "visibility",
            &["default", "public", "private", "confidential"][..],
        ),
    ] {
        if let Some(value) = content.get(field)
            && !value.as_str().is_some_and(|v| allowed.contains(&v))
        {
            return Err(invalid(&format!("Invalid value for: {field}")));
        }
    }
    if let Some(color) = content.get("colorId") {
        let valid = color
            .as_str()
            .and_then(|c| c.parse::<u8>().ok())
            .is_some_and(|c| (1..=11).contains(&c));
        if !valid {
            return Err(invalid("Invalid value for: colorId"));
        }
    }
    if let Some(reminders) = content.get("reminders") {
        let overrides = reminders
            .get("overrides")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if reminders.get("useDefault").and_then(Value::as_bool) == Some(true)
            && !overrides.is_empty()
        {
            return Err(api_error(
                400,
                "cannotUseDefaultRemindersAndSpecifyOverride",
                "Cannot specify both default reminders and overrides at the same time.",
            ));
        }
        if overrides.len() > 5 {
            return Err(api_error(400, "tooManyReminders", "Too many reminders."));
        }
        for reminder in &overrides {
            let minutes_ok = reminder
                .get("minutes")
                .and_then(Value::as_i64)
                .is_some_and(|m| (0..=40320).contains(&m));
            let method_ok = reminder
                .get("method")
                .and_then(Value::as_str)
                .is_some_and(|m| m == "email" || m == "popup");
            if !minutes_ok || !method_ok {
                return Err(invalid("Invalid value for: reminders.overrides"));
            }
        }
    }
    if let Some(attendees) = content.get("attendees") {
        let valid = attendees.as_array().is_some_and(|list| {
            list.iter().all(|a| {
                a.get("email")
                    .and_then(Value::as_str)
                    .is_some_and(|e| e.contains('@'))
            })
        });
        if !valid {
            return Err(api_error(400, "required", "Missing attendee email."));
        }
    }
    Ok(())
}

/// The series' rule set: `start` (with its zone, or a day at midnight UTC) and the
/// recurrence lines.
fn recurrence_set(event: &Map<String, Value>) -> Result<RRuleSet, String> {
    let start = event.get("start").ok_or("no start")?;
    let lines: Vec<&str> = event
        .get("recurrence")
        .and_then(Value::as_array)
        .ok_or("no recurrence")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let (dt_start, all_day, zone) = if let Some(date) = start.get("date").and_then(Value::as_str) {
        let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").map_err(|e| e.to_string())?;
        let midnight = day.and_hms_opt(0, 0, 0).ok_or("midnight")?.and_utc();
        (
            midnight.with_timezone(&rrule::Tz::UTC),
            true,
            chrono_tz::UTC,
        )
    } else {
        let zone: chrono_tz::Tz = start
            .get("timeZone")
            .and_then(Value::as_str)
            .ok_or("no zone")?
            .parse()
            .map_err(|_| "bad zone")?;
        let at = start
            .get("dateTime")
            .and_then(Value::as_str)
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .ok_or("bad start")?;
        (at.with_timezone(&rrule::Tz::Tz(zone)), false, zone)
    };
    let local_time = dt_start.with_timezone(&zone).time();
    let mut set = RRuleSet::new(dt_start);
    for line in lines {
        let (head, values) = line.split_once(':').ok_or("no ':'")?;
        let mut head = head.split(';');
        let name = head.next().unwrap_or_default().to_ascii_uppercase();
        let params: Vec<(String, String)> = head
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.to_ascii_uppercase(), v.to_owned()))
            .collect();
        match name.as_str() {
            "RRULE" => {
                let fixed = utc_until(values, all_day, zone)?;
                let rule: RRule<Unvalidated> = fixed.parse().map_err(|e| format!("{e}"))?;
                set = set.rrule(rule.validate(dt_start).map_err(|e| format!("{e}"))?);
            }
            "EXRULE" => {}
            "RDATE" | "EXDATE" => {
                let tzid = params
                    .iter()
                    .find(|(k, _)| k == "TZID")
                    .map(|(_, v)| v.parse::<chrono_tz::Tz>().map_err(|_| "bad TZID"))
                    .transpose()?
                    .unwrap_or(zone);
                for value in values.split(',') {
                    let at: DateTime<Utc> = if value.len() == 8 {
                        let day = NaiveDate::parse_from_str(value, "%Y%m%d")
                            .map_err(|e| e.to_string())?;
                        let local = day.and_time(if all_day {
                            chrono::NaiveTime::MIN
                        } else {
                            local_time
                        });
                        zone.from_local_datetime(&local)
                            .earliest()
                            .ok_or("bad date")?
                            .with_timezone(&Utc)
                    } else if let Some(utc) = value.strip_suffix('Z') {
                        NaiveDateTime::parse_from_str(utc, "%Y%m%dT%H%M%S")
                            .map_err(|e| e.to_string())?
                            .and_utc()
                    } else {
                        let local = NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S")
                            .map_err(|e| e.to_string())?;
                        tzid.from_local_datetime(&local)
                            .earliest()
                            .ok_or("bad local time")?
                            .with_timezone(&Utc)
                    };
                    let at = at.with_timezone(&dt_start.timezone());
                    set = if name == "RDATE" {
                        set.rdate(at)
                    } else {
                        set.exdate(at)
                    };
                }
            }
            other => return Err(format!("unknown line {other}")),
        }
    }
    Ok(set)
}

/// An RRULE's `UNTIL` in UTC, as the `rrule` crate wants it with a zoned start (a date
/// means the end of that day in the series' zone; all-day series run in UTC here).
fn utc_until(rule: &str, all_day: bool, zone: chrono_tz::Tz) -> Result<String, String> {
    let parts: Result<Vec<String>, String> = rule
        .split(';')
        .map(|part| {
            let Some(value) = part.strip_prefix("UNTIL=") else {
                return Ok(part.to_owned());
            };
            if value.ends_with('Z') {
                return Ok(part.to_owned());
            }
            let local = if value.len() == 8 {
                let day = NaiveDate::parse_from_str(value, "%Y%m%d").map_err(|e| e.to_string())?;
                if all_day {
                    day.and_hms_opt(0, 0, 0).ok_or("time")?
                } else {
                    day.and_hms_opt(23, 59, 59).ok_or("time")?
                }
            } else {
                NaiveDateTime::parse_from_str(value, "%Y%m%dT%H%M%S").map_err(|e| e.to_string())?
            };
            let utc = zone
                .from_local_datetime(&local)
                .earliest()
                .ok_or("bad UNTIL")?
                .with_timezone(&Utc);
            Ok(format!("UNTIL={}", utc.format("%Y%m%dT%H%M%SZ")))
        })
        .collect();
    Ok(parts?.join(";"))
}

fn to_when(at: DateTime<rrule::Tz>, all_day: bool) -> When {
    let utc = at.with_timezone(&Utc);
    if all_day {
        When::Day(utc.date_naive())
    } else {
        When::At(utc)
    }
}

/// The original starts of a series' instances (up to the expansion horizon).
fn occurrences(master: &Map<String, Value>) -> Vec<When> {
    let Ok(set) = recurrence_set(master) else {
        return Vec::new();
    };
    let all_day = master.get("start").is_some_and(|s| s.get("date").is_some());
    let start = set.get_dt_start().with_timezone(&Utc);
    let horizon = start.max(Utc::now()) + Duration::days(EXPANSION_HORIZON_DAYS);
    set.before(horizon.with_timezone(&rrule::Tz::UTC))
        .all(EXPANSION_LIMIT)
        .dates
        .into_iter()
        .map(|at| to_when(at, all_day))
        .collect()
}

/// Whether the series has an instance starting at `original`.
fn is_occurrence(master: &Map<String, Value>, original: When) -> bool {
    let Ok(set) = recurrence_set(master) else {
        return false;
    };
    let all_day = master.get("start").is_some_and(|s| s.get("date").is_some());
    let at = match (original, all_day) {
        (When::Day(day), true) => day.and_hms_opt(0, 0, 0).map(|t| t.and_utc()),
        (When::At(at), false) => Some(at),
        _ => None,
    };
    let Some(at) = at else {
        return false;
    };
    let second = Duration::seconds(1);
    !set.after((at - second).with_timezone(&rrule::Tz::UTC))
        .before((at + second).with_timezone(&rrule::Tz::UTC))
        .all(1)
        .dates
        .is_empty()
}

/// A series' instance at `original` as Google shows one without an exception.
fn default_instance(master: &Map<String, Value>, original: &When) -> Map<String, Value> {
    let master_id = master.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut instance = master.clone();
    instance.remove("recurrence");
    instance.insert(
        "id".into(),
        json!(format!("{master_id}_{}", original.stamp())),
    );
    let start = master.get("start").cloned().unwrap_or(Value::Null);
    let end = master.get("end").cloned().unwrap_or(Value::Null);
    let (original_start, instance_start, instance_end) = match original {
        When::Day(day) => {
            let length = match (
                parse_event_time(&start, "start", chrono_tz::UTC),
                parse_event_time(&end, "end", chrono_tz::UTC),
            ) {
                (Ok((When::Day(s), _)), Ok((When::Day(e), _))) => e - s,
                _ => Duration::days(1),
            };
            let date = |d: NaiveDate| json!({"date": d.format("%Y-%m-%d").to_string()});
            (date(*day), date(*day), date(*day + length))
        }
        When::At(at) => {
            let (s, e) = match (
                parse_event_time(&start, "start", chrono_tz::UTC),
                parse_event_time(&end, "end", chrono_tz::UTC),
            ) {
                (Ok((When::At(s), _)), Ok((When::At(e), _))) => (s, e),
                _ => (*at, *at),
            };
            let zoned = |value: &Value, at: DateTime<Utc>| {
                let zone: chrono_tz::Tz = value
                    .get("timeZone")
                    .and_then(Value::as_str)
                    .and_then(|z| z.parse().ok())
                    .unwrap_or(chrono_tz::UTC);
                json!({
                    "dateTime": at.with_timezone(&zone).to_rfc3339_opts(SecondsFormat::Secs, true),
                    "timeZone": zone.name(),
                })
            };
            (
                zoned(&start, *at),
                zoned(&start, *at),
                zoned(&end, *at + (e - s)),
            )
        }
    };
    instance.insert("start".into(), instance_start);
    instance.insert("end".into(), instance_end);
    instance.insert("recurringEventId".into(), json!(master_id));
    instance.insert("originalStartTime".into(), original_start);
    instance
}

/// An event as lists show it: the whole resource, or a tombstone when cancelled.
fn listed_event(body: &Map<String, Value>) -> Value {
    if !is_cancelled(body) {
        return Value::Object(body.clone());
    }
    let mut tombstone = Map::new();
    for key in [
        "kind",
        "etag",
        "id",
        "status",
        "recurringEventId",
        "originalStartTime",
    ] {
        if let Some(value) = body.get(key) {
            tombstone.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(tombstone)
}

fn is_cancelled(body: &Map<String, Value>) -> bool {
    body.get("status").and_then(Value::as_str) == Some("cancelled")
}

/// Google's rule for client-chosen ids: base32hex (`a-v`, `0-9`), 5 to 1024 characters.
fn is_valid_event_id(id: &str) -> bool {
    (5..=1024).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'v').contains(&b))
}

fn html_link(event_id: &str, calendar_id: &str) -> String {
    let eid = STANDARD.encode(format!("{event_id} {calendar_id}"));
    format!(
        "https://www.google.com/calendar/event?eid={}",
        eid.trim_end_matches('=')
    )
}

fn organizer(calendar_id: &str, summary: &str, primary: bool) -> Value {
    if primary {
        json!({"email": calendar_id, "self": true})
    } else {
        json!({"email": calendar_id, "displayName": summary, "self": true})
    }
}

/// RFC 7396 merge of `patch` into `target`.
fn merge_patch(target: &mut Value, patch: Value) {
    match patch {
        Value::Object(patch) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let target = target.as_object_mut().expect("object");
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(&key);
                } else {
                    merge_patch(target.entry(key).or_insert(Value::Null), value);
                }
            }
        }
        other => *target = other,
    }
}

fn check_if_match(if_match: Option<&str>, current: &Map<String, Value>) -> Result<(), Reply> {
    let Some(expected) = if_match else {
        return Ok(());
    };
    let etag = current
        .get("etag")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if expected == "*" || expected == etag {
        Ok(())
    } else {
        Err(Reply::json(
            412,
            json!({"error": {
                "errors": [{
                    "domain": "global",
                    "reason": "conditionNotMet",
                    "message": "Precondition Failed",
                    "locationType": "header",
                    "location": "If-Match",
                }],
                "code": 412,
                "message": "Precondition Failed",
            }}),
        ))
    }
}

fn event_reply(event: Map<String, Value>) -> Reply {
    let etag = event
        .get("etag")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Reply::json(200, Value::Object(event)).with_header("etag", etag)
}

fn token_reply(body: Map<String, Value>) -> Reply {
    Reply::json(200, Value::Object(body))
        .with_header(
            "cache-control",
            "no-cache, no-store, max-age=0, must-revalidate",
        )
        .with_header("pragma", "no-cache")
}

// ---------------------------------------------------------------------------------------
// Errors

fn api_error(code: u16, reason: &str, message: &str) -> Reply {
    error_in(code, "global", reason, message)
}

fn error_in(code: u16, domain: &str, reason: &str, message: &str) -> Reply {
    Reply::json(
        code,
        json!({"error": {
            "errors": [{"domain": domain, "reason": reason, "message": message}],
            "code": code,
            "message": message,
        }}),
    )
}

fn invalid(message: &str) -> Reply {
    api_error(400, "invalid", message)
}

fn invalid_parameter(name: &str, message: &str) -> Reply {
    Reply::json(
        400,
        json!({"error": {
            "errors": [{
                "domain": "global",
                "reason": "invalid",
                "message": message,
                "locationType": "parameter",
                "location": name,
            }],
            "code": 400,
            "message": message,
        }}),
    )
}

fn not_found() -> Reply {
    api_error(404, "notFound", "Not Found")
}

fn need(scopes: &[String], any_of: &[&str]) -> Result<(), Reply> {
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

/// 410 as Google answers a sync token it no longer knows.
fn full_sync_required() -> Reply {
    let message = "Sync token is no longer valid, a full sync is required.";
    Reply::json(
        410,
        json!({"error": {
            "code": 410,
            "message": message,
            "errors": [{
                "domain": "calendar",
                "reason": "fullSyncRequired",
                "message": message,
                "locationType": "parameter",
                "location": "syncToken",
            }],
        }}),
    )
}

fn sync_token_restriction() -> Reply {
    let message = "Sync token cannot be used with other request restrictions.";
    Reply::json(
        400,
        json!({"error": {
            "errors": [{
                "domain": "calendar",
                "reason": "syncTokenWithRequestRestrictions",
                "message": message,
                "locationType": "parameter",
                "location": "syncToken",
            }],
            "code": 400,
            "message": message,
        }}),
    )
}

/// A parameter Google has but the fake does not implement: a loud 400 rather than a
/// silently wrong answer.
fn unimplemented_parameter(name: &str) -> Reply {
    invalid_parameter(
        name,
        &format!("The Google fake does not implement the parameter {name}."),
    )
}

fn unimplemented_route(method: &str, path: &str) -> Reply {
    api_error(
        404,
        "notFound",
        &format!("The Google fake does not implement {method} {path}."),
    )
}

fn oauth_error(status: u16, error: &str, description: &str) -> Reply {
    Reply::json(
        status,
        json!({"error": error, "error_description": description}),
    )
}

// ---------------------------------------------------------------------------------------
// Small helpers

/// `len` random characters from `[A-Za-z0-9_-]`.
fn random_token(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// `len` random base32hex characters (`0-9a-v`), the alphabet of Google's event ids.
fn random_base32hex(len: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuv";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// `uri` with `params` added to its query, percent-encoded (`%20` for spaces).
fn append_query(uri: &str, params: &[(&str, String)]) -> String {
    let encode = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC)
            .to_string()
            .replace("%2D", "-")
            .replace("%2E", ".")
            .replace("%5F", "_")
            .replace("%7E", "~")
    };
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}{}", query.join("&"))
}
