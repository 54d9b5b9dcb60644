//! A stand-in for Microsoft on 127.0.0.1: the identity platform's OAuth 2.0 endpoints
//! (authorization code with PKCE, refresh-token rotation, AADSTS errors) and the Graph v1.0
//! calendar API (calendars, events with change keys and `If-Match`, series expanded into
//! occurrences, `calendarView/delta` rounds with skip and delta tokens), with the faults a
//! sync must survive: 410 resets (also in the middle of a round), replays, 429 with
//! `Retry-After`, answers lost after the change was made, times in the events' own zones,
//! expired tokens. Every request is recorded with its status and time of arrival.
//!
//! Each test starts its own with [`GraphApi::start`]; the test plays the user in Outlook
//! through the fixture's methods and the browser through [`GraphApi::consent`].

mod calendar_routes;
mod consent;
mod delta;
mod event_routes;
mod events;
mod graph;
mod oauth;
mod recurrence;
mod render;
mod reply;
mod server;
mod state;
mod times;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bowline::config::Secret;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::helpers::WAIT;

use self::events::find;
use self::render::{View, render};
use self::state::{Kind, State, random_text};

/// The client id Bowline is configured with.
pub const MICROSOFT_CLIENT_ID: &str = "00000000-0000-0000-0000-00000000b0a1";
/// The client secret Bowline is configured with.
pub const MICROSOFT_CLIENT_SECRET: &str = "microsoft-test-secret";
/// The tenant of every account (the one Microsoft uses for personal accounts).
pub const CONSUMER_TENANT: &str = "9188040d-6c67-4c5b-b112-36a304b66dad";

/// An account of the fake.
#[derive(Clone, Debug)]
pub struct GraphUser {
    /// Object id (a GUID, stable).
    pub oid: String,
    /// The id token's `sub` (pairwise, stable).
    pub sub: String,
    /// Tenant id.
    pub tid: String,
    /// `preferred_username` and `email`.
    pub email: String,
    /// Display name.
    pub name: String,
    /// Id of the default calendar ("Calendar").
    pub default_calendar: String,
}

/// How the delta and skip tokens issued so far stop working.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    /// 410 Gone with a `Location` header holding the round's initial URL.
    Gone,
    /// 400 with code `syncStateNotFound` and no `Location`.
    SyncStateNotFound,
}

/// A Graph request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path as sent, from `/v1.0`.
    pub path: String,
    /// The raw query string (may be empty).
    pub query: String,
    /// `If-Match`, if sent.
    pub if_match: Option<String>,
    /// Every preference of the `Prefer` headers, one per item (comma-joined ones split).
    pub prefer: Vec<String>,
    /// The body, when it is JSON.
    pub body: Option<Value>,
    /// The status answered.
    pub status: u16,
    /// When it arrived.
    pub at: std::time::Instant,
}

/// What the token endpoint answered to one request.
#[derive(Clone, Debug)]
pub struct TokenAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body (tokens, or the identity platform's error).
    pub body: Value,
}

/// The fake Microsoft server.
pub struct GraphApi {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    arrivals: Arc<watch::Sender<usize>>,
}

impl GraphApi {
    /// Starts the fake on a free port (and installs the TLS provider reqwest needs).
    pub async fn start() -> Self {
        crate::helpers::init();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the Graph fake");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State::new(format!("http://{addr}"))));
        let arrivals = Arc::new(watch::Sender::new(0));
        server::serve(listener, state.clone(), arrivals.clone());
        Self {
            addr,
            state,
            arrivals,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `{base}/common/oauth2/v2.0/authorize`.
    pub fn authorization_url(&self) -> String {
        format!("{}/common/oauth2/v2.0/authorize", self.base())
    }

    /// `{base}/common/oauth2/v2.0/token`.
    pub fn token_url(&self) -> String {
        format!("{}/common/oauth2/v2.0/token", self.base())
    }

    /// `{base}/v1.0`.
    pub fn graph_url(&self) -> String {
        format!("{}/v1.0", self.base())
    }

    /// Points a Bowline configuration at this fake (client id and secret, the three URLs)
    /// and lets Bowline reach a loopback host.
    pub fn configure(&self, settings: &mut bowline::Settings) {
        settings.microsoft.client_id = Some(MICROSOFT_CLIENT_ID.to_owned());
        settings.microsoft.client_secret = Some(Secret::new(MICROSOFT_CLIENT_SECRET));
        settings.microsoft.authorization_url = self.authorization_url();
        settings.microsoft.token_url = self.token_url();
        settings.microsoft.graph_url = self.graph_url();
        settings.federation.allow_private_hosts = true;
    }

    /// An account with a default calendar named "Calendar".
    pub fn add_user(&self, email: &str, name: &str) -> GraphUser {
        let mut state = self.state.lock();
        let oid = uuid::Uuid::new_v4().to_string();
        let default_calendar =
            calendar_routes::new_calendar(&mut state, &oid, "Calendar", "auto", true, true);
        let user = GraphUser {
            oid,
            sub: random_text(32).replace(['-', '_', '='], "A"),
            tid: CONSUMER_TENANT.to_owned(),
            email: email.to_owned(),
            name: name.to_owned(),
            default_calendar,
        };
        state.users.push(user.clone());
        user
    }

    /// The browser at the consent screen: checks the authorization URL (client id,
    /// redirect_uri, `response_type=code`, S256 challenge, space-separated scopes with
    /// Calendars.ReadWrite) and returns `<redirect_uri>?code=…&state=…&session_state=…`.
    /// Panics, naming the problem, on a URL Microsoft would refuse.
    pub fn consent(&self, authorization_url: &str, user: &GraphUser) -> String {
        consent::consent(&mut self.state.lock(), authorization_url, user)
    }

    /// The user declines: `<redirect_uri>?error=access_denied&error_description=…&state=…`.
    pub fn deny(&self, authorization_url: &str) -> String {
        consent::deny(&self.state.lock(), authorization_url)
    }

    /// A calendar added to `user`'s list (read-only when `can_edit` is false); its id.
    pub fn add_calendar(&self, user: &GraphUser, name: &str, can_edit: bool) -> String {
        calendar_routes::new_calendar(
            &mut self.state.lock(),
            &user.oid,
            name,
            "auto",
            can_edit,
            false,
        )
    }

    /// Removes a calendar and its events (its delta then answers 404).
    pub fn remove_calendar(&self, calendar_id: &str) {
        calendar_routes::remove_calendar(&mut self.state.lock(), calendar_id);
    }

    /// A calendar as `GET /me/calendars/{id}` shows it.
    pub fn calendar(&self, calendar_id: &str) -> Option<Value> {
        let state = self.state.lock();
        state
            .calendar(calendar_id)
            .map(|c| calendar_routes::render_calendar(&state, c))
    }

    fn object(value: Value, what: &str) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("{what} must be a JSON object, not {other}"),
        }
    }

    fn rendered(state: &State, id: &str) -> Option<Value> {
        find(state, id).map(|record| render(state, &record, &View::fixture()))
    }

    /// An event made by the user in Outlook (same checks as `POST`, plus `isCancelled`);
    /// returns it as Graph shows it (UTC, text body).
    pub fn insert_event(&self, calendar_id: &str, event: Value) -> Value {
        let mut state = self.state.lock();
        assert!(
            state.calendar(calendar_id).is_some(),
            "no calendar {calendar_id}"
        );
        let id = events::create(
            &mut state,
            calendar_id,
            &Self::object(event, "an event"),
            true,
        )
        .unwrap_or_else(|f| panic!("the event is refused: {f:?}"));
        Self::rendered(&state, &id).expect("the new event")
    }

    /// A series (`recurrence` as patternedRecurrence), expanded into occurrences inside any
    /// requested window; returns the series master.
    pub fn insert_series(&self, calendar_id: &str, master: Value) -> Value {
        assert!(
            master.get("recurrence").is_some_and(Value::is_object),
            "a series needs a recurrence"
        );
        self.insert_event(calendar_id, master)
    }

    /// An edit in Outlook (merge; a new change key; an occurrence becomes an exception).
    pub fn update_event(&self, event_id: &str, patch: Value) -> Value {
        let mut state = self.state.lock();
        events::patch(&mut state, event_id, &Self::object(patch, "a patch"), true)
            .unwrap_or_else(|f| panic!("the edit is refused: {f:?}"));
        Self::rendered(&state, event_id).expect("the edited event")
    }

    /// A deletion in Outlook (a series master takes its occurrences with it; an occurrence
    /// is removed from its series).
    pub fn delete_event(&self, event_id: &str) {
        events::delete(&mut self.state.lock(), event_id)
            .unwrap_or_else(|f| panic!("cannot delete {event_id}: {f:?}"));
    }

    /// An event (single, master, exception or occurrence) as Graph shows it, if it exists.
    pub fn event(&self, event_id: &str) -> Option<Value> {
        Self::rendered(&self.state.lock(), event_id)
    }

    /// The singles and series masters of a calendar, in creation order.
    pub fn events(&self, calendar_id: &str) -> Vec<Value> {
        let state = self.state.lock();
        let mut records: Vec<_> = state
            .events
            .values()
            .filter(|e| {
                e.calendar_id == calendar_id && matches!(e.kind, Kind::Single | Kind::Master { .. })
            })
            .collect();
        records.sort_by_key(|e| e.seq);
        records
            .into_iter()
            .map(|record| render(&state, record, &View::fixture()))
            .collect()
    }

    /// The occurrences and exceptions of a series inside `window`, in full, by start.
    pub fn occurrences(
        &self,
        master_id: &str,
        window: (DateTime<Utc>, DateTime<Utc>),
    ) -> Vec<Value> {
        let state = self.state.lock();
        let Some(master) = state.events.get(master_id) else {
            return Vec::new();
        };
        events::view(&state, &master.calendar_id, window)
            .iter()
            .filter_map(|item| find(&state, &item.id))
            .filter(|record| record.kind.master_id() == Some(master_id))
            .map(|record| render(&state, &record, &View::fixture()))
            .collect()
    }

    /// Every delta and skip token issued so far answers `reset` from now on.
    pub fn expire_delta_tokens(&self, reset: Reset) {
        for token in self.state.lock().delta_tokens.values_mut() {
            token.reset = Some(reset);
        }
    }

    /// The next request for a round's next page (a `$skiptoken` link) answers `reset`, as
    /// when Graph drops the sync state in the middle of a round.
    pub fn reset_next_page(&self, reset: Reset) {
        self.state.lock().faults.reset_next_page = Some(reset);
    }

    /// The next delta round (first or incremental) delivers items already delivered again.
    pub fn replay_next_round(&self) {
        self.state.lock().faults.replay_next_round = true;
    }

    /// From now on, every delta round starts with an empty page that has a nextLink.
    pub fn empty_first_pages(&self, on: bool) {
        self.state.lock().faults.empty_first_page = on;
    }

    /// Status of an `If-Match` mismatch: 412 (default) or 409, code
    /// `ErrorIrresolvableConflict` either way.
    pub fn conflict_status(&self, status: u16) {
        assert!(status == 412 || status == 409, "412 or 409");
        self.state.lock().faults.conflict_status = status;
    }

    /// The next `requests` Graph requests answer 429 with `Retry-After: retry_after_secs`.
    pub fn rate_limit(&self, requests: usize, retry_after_secs: u64) {
        let mut state = self.state.lock();
        state.faults.rate_limited = requests;
        state.faults.retry_after_secs = retry_after_secs;
    }

    /// The next `requests` Graph requests fail with `status` and Graph's error body.
    pub fn fail_next(&self, requests: usize, status: u16) {
        let mut state = self.state.lock();
        state.faults.failing = requests;
        state.faults.fail_status = status;
    }

    /// The next `requests` Graph requests that succeed take effect, but their answers are
    /// lost: the client gets `504 GatewayTimeout` (as when Graph times out after the mailbox
    /// wrote the change).
    pub fn lose_next_answers(&self, requests: usize) {
        self.state.lock().faults.lost_answers = requests;
    }

    /// Every access token issued so far is expired (Graph answers 401).
    pub fn expire_access_tokens(&self) {
        let now = std::time::Instant::now();
        for token in self.state.lock().access_tokens.values_mut() {
            token.expires = now;
        }
    }

    /// `expires_in` (and the real lifetime) of access tokens issued from now on.
    pub fn set_access_token_lifetime(&self, seconds: u64) {
        self.state.lock().faults.access_token_lifetime = Duration::from_secs(seconds);
    }

    /// `user`'s refresh tokens issued so far answer `invalid_grant` (AADSTS700082).
    pub fn expire_refresh_tokens(&self, user: &GraphUser) {
        for token in self.state.lock().refresh_tokens.values_mut() {
            if token.oid == user.oid {
                token.expired = true;
            }
        }
    }

    /// The authorization codes issued so far are older than their ten minutes.
    pub fn expire_authorization_codes(&self) {
        for code in self.state.lock().codes.values_mut() {
            code.expired = true;
        }
    }

    /// The forms posted to the token endpoint, as JSON objects, in order.
    pub fn token_requests(&self) -> Vec<Value> {
        self.state.lock().token_requests.clone()
    }

    /// What the token endpoint answered, in the order of [`Self::token_requests`].
    pub fn token_answers(&self) -> Vec<TokenAnswer> {
        self.state.lock().token_answers.clone()
    }

    /// From now on (`on`), Graph writes times in each event's own zone (IANA or Windows
    /// name, as the event was written) instead of the zone of `Prefer: outlook.timezone`,
    /// as Graph does for a client that does not state the preference.
    pub fn answer_in_original_zones(&self, on: bool) {
        self.state.lock().faults.original_zones = on;
    }

    /// The Graph requests received, in order (token requests are in `token_requests`).
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().requests.clone()
    }

    /// The first Graph request (received before or after the call) that `matches`;
    /// panics naming `what` when none arrives within the tests' wait (10 s).
    pub async fn wait_for_request(
        &self,
        what: &str,
        matches: impl Fn(&Recorded) -> bool,
    ) -> Recorded {
        let mut arrivals = self.arrivals.subscribe();
        let found = tokio::time::timeout(WAIT, async {
            loop {
                let hit = self
                    .state
                    .lock()
                    .requests
                    .iter()
                    .find(|r| matches(r))
                    .cloned();
                if let Some(hit) = hit {
                    return hit;
                }
                if arrivals.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("no Graph request {what} within the wait"))
    }
}
