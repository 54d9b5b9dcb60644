//! What the Google mirror tests share: a server pointed at a [`GoogleApi`] fake, the
//! better-auth linking dance played as the browser (link-social, consent at the fake, the
//! callback with the state cookie), syncing now, reading mirrors, their events, the stored
//! account and the outbox, and waiting for a kind of frame.

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

use super::caldav::{calendars, with_caldav};
use super::oauth;
pub use super::oauth::come_back;
use super::{TestApp, TestUser, spawn_app_with};
use crate::support::google_api::{GoogleApi, GoogleUser};
use crate::support::sse::SseClient;

/// A server with Google configured against `fake`, the pull timer off and quick retries.
pub async fn google_app(fake: &GoogleApi) -> TestApp {
    spawn_app_with(|s| {
        with_caldav(s);
        fake.configure(s);
        s.caldav.outbox_retry_base_ms = 50;
        s.caldav.outbox_retry_max_ms = 200;
    })
    .await
}

/// A started link: the authorization URL Bowline answered with and the state cookie it set
/// (`better-auth.state=<value>`, as the browser sends it back).
#[derive(Debug, Clone)]
pub struct StartedLink {
    /// The provider's authorization URL.
    pub url: String,
    /// The `Cookie` header value carrying the state.
    pub cookie: String,
}

/// `POST /api/auth/link-social` with `body` as `user`: status, headers and JSON body.
pub async fn link_social(
    app: &TestApp,
    user: &TestUser,
    body: &Value,
) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let response = app
        .as_user(Method::POST, "/api/auth/link-social", user)
        .header("origin", app.base.as_str())
        .json(body)
        .send()
        .await
        .expect("request");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    (
        status,
        headers,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Starts linking Google as `user` (success `/linked`, failure `/failed`).
pub async fn start_link(app: &TestApp, user: &TestUser) -> StartedLink {
    let started = oauth::start_link_with(
        app,
        user,
        &json!({"provider": "google", "callbackURL": "/linked", "errorCallbackURL": "/failed"}),
    )
    .await;
    StartedLink {
        url: started.url,
        cookie: format!("better-auth.state={}", started.cookie),
    }
}

/// Links `google_user` to `user` all the way (link-social, consent, callback) and waits
/// for the first pull to be done.
pub async fn link(app: &TestApp, user: &TestUser, fake: &GoogleApi, google_user: &GoogleUser) {
    let started = start_link(app, user).await;
    let back = fake.consent(&started.url, google_user);
    assert_eq!(come_back(&back, Some(&started.cookie)).await, "/linked");
    assert_eq!(sync_now(app, user).await, (StatusCode::OK, json!("OK")));
}

/// `GET /api/v1/calendars/google`: deliver and pull every account of `user` now. The status
/// and the body (JSON, or the text as a JSON string).
pub async fn sync_now(app: &TestApp, user: &TestUser) -> (StatusCode, Value) {
    let (status, text) = oauth::sync_now(app, user).await;
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `user`'s Google mirrors (calendar documents), by name.
pub async fn google_mirrors(app: &TestApp, user: &TestUser) -> Vec<Value> {
    let mut mirrors: Vec<Value> = calendars(app, user)
        .await
        .into_iter()
        .filter(|calendar| calendar["provider"] == "google")
        .collect();
    mirrors.sort_by_key(|calendar| calendar["name"].as_str().unwrap_or_default().to_owned());
    mirrors
}

/// The local id of `user`'s mirror named `name`.
pub async fn mirror_id(app: &TestApp, user: &TestUser, name: &str) -> String {
    google_mirrors(app, user)
        .await
        .iter()
        .find(|calendar| calendar["name"] == name)
        .unwrap_or_else(|| panic!("no mirror {name}"))["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// The events `user` sees in calendar `calendar`.
pub async fn events_in(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<Value> {
    let read = app.read_events(user, "").await;
    read["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| {
            event["calendars"]
                .as_array()
                .is_some_and(|c| c.contains(&json!(calendar)))
        })
        .cloned()
        .collect()
}

/// The sorted titles of the events `user` sees in calendar `calendar`.
pub async fn titles_in(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<String> {
    let mut titles: Vec<String> = events_in(app, user, calendar)
        .await
        .iter()
        .map(|event| event["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    titles.sort();
    titles
}

/// The one event titled `title` that `user` sees.
pub async fn event_titled(app: &TestApp, user: &TestUser, title: &str) -> Value {
    let read = app.read_events(user, "").await;
    let found: Vec<&Value> = read["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|event| event["title"] == title)
        .collect();
    assert_eq!(found.len(), 1, "one event titled {title}: {found:#?}");
    found[0].clone()
}

/// The Google `accounts` row's columns as stored (raw SQL), as strings (`None`: NULL).
pub async fn stored_google_account(app: &TestApp) -> Option<Value> {
    let db = app.db_connection().await;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT account_id, access_token, refresh_token, scope, label, sync_status, \
             sync_error_code FROM accounts WHERE provider_id = 'google'",
        ))
        .await
        .expect("select")?;
    let column = |name: &str| -> Value {
        row.try_get::<Option<String>>("", name)
            .expect(name)
            .map_or(Value::Null, Value::String)
    };
    Some(json!({
        "accountId": column("account_id"),
        "accessToken": column("access_token"),
        "refreshToken": column("refresh_token"),
        "scope": column("scope"),
        "label": column("label"),
        "syncStatus": column("sync_status"),
        "syncErrorCode": column("sync_error_code"),
    }))
}

/// How many outbox rows wait.
pub async fn outbox_rows(app: &TestApp) -> i64 {
    let db = app.db_connection().await;
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT count(*) AS n FROM provider_outbox",
        ))
        .await
        .expect("count")
        .expect("row");
    row.try_get::<i64>("", "n").expect("n")
}

/// The Google event id Bowline inserts a new event under: its UUID's 32 hex digits.
pub fn google_id(event_id: &str) -> String {
    event_id.replace('-', "")
}

/// The next frame of `kind` on `stream`, skipping others (each within the wait).
pub async fn until_frame(stream: &mut SseClient, kind: &str) -> Value {
    loop {
        let frame = stream.next_frame().await;
        if frame["type"] == kind {
            return frame;
        }
    }
}
