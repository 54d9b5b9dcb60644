//! The pull side of CalDAV mirrors, black-box against real servers (Radicale and Xandikos,
//! started per test): a refused sync token falls back to a full resync, edits keep the
//! local event and raise its revision (and show in delta reads), remote calendars come and
//! go, the timer pulls by itself and skips ticks while a run hangs, a password changed at
//! the provider marks the account for reconnection, a panicking sync actor is restarted
//! without touching other accounts, a server that is down is a 400 (no hang), and two
//! Bowline servers on one database keep one copy of each remote event.
//!
//! Nothing here sleeps to wait for state: frames are awaited with the stream's timeout,
//! counters and rows are polled against a deadline.

use std::time::{Duration, Instant};

use bowline::actors::providers::ProvidersMsg;
use bowline::domain::providers::{AccountKey, Provider};
use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, EntityTrait};
use serde_json::{Value, json};

use crate::helpers::caldav::{CALDAV_KEY, calendars, connect_caldav};
use crate::helpers::{
    TestApp, TestUser, eventually, sample, spawn_app_sharing_database_with, spawn_app_with,
};
use crate::support::caldav_servers::{CaldavKind, CaldavServer};

/// A sync-now must answer well within this (the route's own limit is 4× the provider
/// request timeout; a server that refuses connections must not come near it).
const SYNC_WAIT: Duration = Duration::from_secs(30);

const ACCOUNT_FAILURES: &str =
    r#"svc_external_sync_failures_total{provider="caldav",stage="account"}"#;
const RESTARTS: &str = r#"svc_actor_restarts_total{actor="provider_sync"}"#;
const FAILURES: &str = r#"svc_actor_failures_total{actor="provider_sync"}"#;
const SKIPS: &str = r#"svc_scheduled_task_skips_total{task="external_sync"}"#;

/// One plain timed event (UTC).
fn event(uid: &str, summary: &str, start: &str, end: &str) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:{uid}\r\n\
         DTSTAMP:20260101T000000Z\r\nDTSTART:{start}\r\nDTEND:{end}\r\nSUMMARY:{summary}\r\n\
         END:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

/// An event on 15 December 2026, 12:00–13:00 UTC.
fn simple(uid: &str, summary: &str) -> String {
    event(uid, summary, "20261215T120000Z", "20261215T130000Z")
}

async fn app_with_interval(interval_ms: u64) -> TestApp {
    spawn_app_with(move |s| {
        s.caldav.enc_key = Some(bowline::config::Secret::new(CALDAV_KEY));
        s.caldav.sync_interval_ms = interval_ms;
    })
    .await
}

async fn app() -> TestApp {
    app_with_interval(0).await
}

/// Connects with the server's current password; must succeed.
async fn connect(app: &TestApp, user: &TestUser, server: &CaldavServer) {
    let (status, body) = connect_caldav(app, user, server, &server.password.clone()).await;
    assert_eq!(status, StatusCode::OK, "connect: {body}");
}

/// The id of the user's (only) calendar called `name`.
async fn calendar_named(app: &TestApp, user: &TestUser, name: &str) -> String {
    let all = calendars(app, user).await;
    let found: Vec<&Value> = all.iter().filter(|c| c["name"] == name).collect();
    assert_eq!(found.len(), 1, "one calendar called {name}: {all:?}");
    found[0]["id"].as_str().expect("id").to_owned()
}

/// Every event the user sees (a full read).
async fn events(app: &TestApp, user: &TestUser) -> Vec<Value> {
    full_read(app, user).await.0
}

/// A full read: the events and the `serverTime`.
async fn full_read(app: &TestApp, user: &TestUser) -> (Vec<Value>, String) {
    let (status, body) = app.call(Method::GET, "/api/v1/events", user, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (
        body["events"].as_array().expect("events").clone(),
        body["serverTime"].as_str().expect("serverTime").to_owned(),
    )
}

/// `GET /api/v1/events?since=` — the whole answer.
async fn delta(app: &TestApp, user: &TestUser, since: &str) -> Value {
    let encoded: String = url::form_urlencoded::byte_serialize(since.as_bytes()).collect();
    let (status, body) = app
        .call(
            Method::GET,
            &format!("/api/v1/events?since={encoded}"),
            user,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn titles_in(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<String> {
    let mut titles: Vec<String> = events(app, user)
        .await
        .iter()
        .filter(|event| {
            event["calendars"]
                .as_array()
                .is_some_and(|c| c.contains(&json!(calendar)))
        })
        .map(|event| event["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    titles.sort();
    titles
}

/// `GET /api/v1/calendars/google` within [`SYNC_WAIT`]: status and body (JSON, or the text).
async fn sync_now_answer(app: &TestApp, user: &TestUser) -> (StatusCode, Value) {
    tokio::time::timeout(SYNC_WAIT, async {
        let response = app
            .as_user(Method::GET, "/api/v1/calendars/google", user)
            .send()
            .await
            .expect("request");
        let status = response.status();
        let text = response.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    })
    .await
    .expect("sync-now answers within the wait")
}

async fn sync_now(app: &TestApp, user: &TestUser) {
    let (status, body) = sync_now_answer(app, user).await;
    assert_eq!(status, StatusCode::OK, "sync now: {body}");
}

/// The user's CalDAV account ids.
async fn account_ids(app: &TestApp, user: &TestUser) -> Vec<String> {
    let (status, body) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", user, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    body["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .map(|account| account["id"].as_str().expect("id").to_owned())
        .collect()
}

/// A counter's value (0 while it was never incremented).
async fn metric(app: &TestApp, series: &str) -> f64 {
    sample(&app.metrics_text().await, series).unwrap_or(0.0)
}

/// The stored account row.
async fn account_row(app: &TestApp, id: &str) -> entities::caldav_accounts::Model {
    let db = app.db_connection().await;
    entities::caldav_accounts::Entity::find_by_id(uuid::Uuid::parse_str(id).expect("uuid"))
        .one(&db)
        .await
        .expect("read the account")
        .expect("the account row")
}

/// The stored mirror row of the remote calendar whose URL ends with `/<slug>/`.
async fn mirror_row(app: &TestApp, slug: &str) -> entities::external_calendars::Model {
    let db = app.db_connection().await;
    let suffix = format!("/{slug}/");
    let rows: Vec<_> = entities::external_calendars::Entity::find()
        .all(&db)
        .await
        .expect("read the mirrors")
        .into_iter()
        .filter(|row| row.remote_id.ends_with(&suffix))
        .collect();
    assert_eq!(rows.len(), 1, "one mirror of {slug}: {rows:?}");
    rows.into_iter().next().expect("one")
}

async fn next_external_sync(stream: &mut crate::support::sse::SseClient) -> Vec<Value> {
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "external_sync", "{frame}");
    frame["payload"]["calendars"]
        .as_array()
        .expect("calendars")
        .clone()
}

async fn stop(app: TestApp) {
    tokio::time::timeout(Duration::from_secs(10), app.stop())
        .await
        .ok();
}

// 1. An expired / unknown sync token ---------------------------------------------------------

async fn a_refused_token_falls_back_to_a_full_resync(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    let other = server.make_calendar("other", "Other").await;
    server
        .put_event(&work, "keep.ics", &simple("keep-1", "Keep"))
        .await;
    server
        .put_event(&work, "gone.ics", &simple("gone-1", "Goes away"))
        .await;

    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;
    let work_id = calendar_named(&app, &ana, "Work").await;
    let other_id = calendar_named(&app, &ana, "Other").await;
    assert_eq!(titles_in(&app, &ana, &work_id).await, ["Goes away", "Keep"]);
    let first_token = mirror_row(&app, "work").await.sync_token;
    assert!(first_token.is_some(), "the initial import stored a token");

    // A token the server no longer knows (well-formed: an expired one).
    let expired = match kind {
        CaldavKind::Radicale => format!("http://radicale.org/ns/sync/{}", "0".repeat(64)),
        CaldavKind::Xandikos => "0".repeat(40),
    };
    let db = app.db_connection().await;
    let updated = db
        .execute_unprepared(&format!(
            "UPDATE external_calendars SET sync_token = '{expired}' WHERE remote_id LIKE '%/work/'"
        ))
        .await
        .expect("overwrite the token");
    assert_eq!(updated.rows_affected(), 1);
    // The server's token moves on, so the stored one is used (and refused).
    server.delete(&format!("{work}gone.ics")).await;
    server
        .put_event(&work, "new.ics", &simple("new-1", "Arrived"))
        .await;

    let mut stream = app.stream(&ana).await;
    sync_now(&app, &ana).await;
    assert_eq!(next_external_sync(&mut stream).await, [json!(work_id)]);
    assert_eq!(
        titles_in(&app, &ana, &work_id).await,
        ["Arrived", "Keep"],
        "the full resync swept what vanished and brought what is new"
    );
    let token = mirror_row(&app, "work").await.sync_token;
    assert!(
        token
            .as_deref()
            .is_some_and(|t| !t.is_empty() && t != expired),
        "a valid token is stored again: {token:?}"
    );

    // The stored token is valid: a second pull changes nothing and sends nothing; the next
    // frame is the one a change in the other calendar causes.
    sync_now(&app, &ana).await;
    assert_eq!(mirror_row(&app, "work").await.sync_token, token);
    server
        .put_event(&other, "else.ics", &simple("else-1", "Elsewhere"))
        .await;
    sync_now(&app, &ana).await;
    assert_eq!(
        next_external_sync(&mut stream).await,
        [json!(other_id)],
        "exactly one frame for the resync"
    );
    assert_eq!(titles_in(&app, &ana, &other_id).await, ["Elsewhere"]);
    assert_eq!(titles_in(&app, &ana, &work_id).await, ["Arrived", "Keep"]);
    stop(app).await;
}

#[tokio::test]
async fn radicale_refused_token_falls_back_to_a_full_resync() {
    a_refused_token_falls_back_to_a_full_resync(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_refused_token_falls_back_to_a_full_resync() {
    a_refused_token_falls_back_to_a_full_resync(CaldavKind::Xandikos).await;
}

// 2. Edits and deletions on the server --------------------------------------------------------

async fn edits_keep_the_event_and_show_in_delta_reads(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    server
        .put_event(&work, "edit.ics", &simple("edit-1", "Draft"))
        .await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;
    let work_id = calendar_named(&app, &ana, "Work").await;

    let (before, t0) = full_read(&app, &ana).await;
    let draft = before
        .iter()
        .find(|e| e["title"] == "Draft")
        .expect("imported")
        .clone();
    let id = draft["id"].as_str().expect("id").to_owned();
    let revision = draft["revision"].as_i64().expect("revision on the wire");
    assert_eq!(draft["start"], "2026-12-15T12:00:00.000Z");

    let mut stream = app.stream(&ana).await;
    server
        .put_event(
            &work,
            "edit.ics",
            &event("edit-1", "Final", "20261216T090000Z", "20261216T100000Z"),
        )
        .await;
    sync_now(&app, &ana).await;
    assert_eq!(next_external_sync(&mut stream).await, [json!(work_id)]);

    let after = events(&app, &ana).await;
    let mirrored: Vec<&Value> = after
        .iter()
        .filter(|e| e["calendars"].as_array().unwrap().contains(&json!(work_id)))
        .collect();
    assert_eq!(mirrored.len(), 1, "still one event: {mirrored:?}");
    let edited = mirrored[0];
    assert_eq!(edited["id"], json!(id), "the same local event");
    assert_eq!(edited["title"], "Final");
    assert_eq!(edited["start"], "2026-12-16T09:00:00.000Z");
    assert_eq!(edited["end"], "2026-12-16T10:00:00.000Z");
    assert!(
        edited["revision"].as_i64().expect("revision") > revision,
        "the revision went up: {revision} → {}",
        edited["revision"]
    );

    let changed = delta(&app, &ana, &t0).await;
    assert!(
        changed["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["id"] == json!(id) && e["title"] == "Final"),
        "the delta has the edit: {changed}"
    );
    assert!(
        !changed["deletedIds"]
            .as_array()
            .expect("deletedIds")
            .contains(&json!(id))
    );
    let t1 = changed["serverTime"]
        .as_str()
        .expect("serverTime")
        .to_owned();

    server.delete(&format!("{work}edit.ics")).await;
    sync_now(&app, &ana).await;
    assert_eq!(next_external_sync(&mut stream).await, [json!(work_id)]);
    let gone = delta(&app, &ana, &t1).await;
    assert!(
        gone["deletedIds"]
            .as_array()
            .expect("deletedIds")
            .contains(&json!(id)),
        "the deletion is in the delta: {gone}"
    );
    assert!(
        !gone["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["id"] == json!(id))
    );
    assert!(titles_in(&app, &ana, &work_id).await.is_empty());
    stop(app).await;
}

#[tokio::test]
async fn radicale_edits_keep_the_event_and_show_in_delta_reads() {
    edits_keep_the_event_and_show_in_delta_reads(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_edits_keep_the_event_and_show_in_delta_reads() {
    edits_keep_the_event_and_show_in_delta_reads(CaldavKind::Xandikos).await;
}

// 3. Remote calendars added and removed ------------------------------------------------------

async fn remote_calendars_come_and_go(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    server
        .put_event(&work, "a.ics", &simple("a-1", "Planning"))
        .await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;
    let work_id = calendar_named(&app, &ana, "Work").await;
    let mut stream = app.stream(&ana).await;

    let team = server.make_calendar("team", "Team").await;
    server
        .put_event(&team, "t.ics", &simple("t-1", "Team sync"))
        .await;
    sync_now(&app, &ana).await;
    let team_id = calendar_named(&app, &ana, "Team").await;
    assert_eq!(
        next_external_sync(&mut stream).await,
        [json!(team_id)],
        "the new mirror is announced"
    );
    let all = calendars(&app, &ana).await;
    let mirror = all.iter().find(|c| c["id"] == json!(team_id)).unwrap();
    assert_eq!(mirror["role"], "owner");
    assert_eq!(titles_in(&app, &ana, &team_id).await, ["Team sync"]);
    let (_, t0) = full_read(&app, &ana).await;
    let team_event = events(&app, &ana)
        .await
        .into_iter()
        .find(|e| e["title"] == "Team sync")
        .expect("team event")["id"]
        .clone();

    // The collection is deleted at the provider: the mirror goes, with its events.
    server.delete(&team).await;
    sync_now(&app, &ana).await;
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "calendar_removed", "{frame}");
    assert_eq!(frame["payload"]["id"], json!(team_id));
    let all = calendars(&app, &ana).await;
    assert!(
        all.iter()
            .all(|c| c["id"] != json!(team_id) && c["name"] != "Team"),
        "{all:?}"
    );
    assert!(all.iter().any(|c| c["id"] == json!(work_id)));
    assert_eq!(titles_in(&app, &ana, &work_id).await, ["Planning"]);
    assert!(
        !events(&app, &ana)
            .await
            .iter()
            .any(|e| e["id"] == team_event)
    );
    let gone = delta(&app, &ana, &t0).await;
    assert!(
        gone["deletedIds"]
            .as_array()
            .expect("deletedIds")
            .contains(&team_event),
        "the removed mirror's event is in the delta's deletedIds: {gone}"
    );
    // And it does not come back.
    sync_now(&app, &ana).await;
    assert!(
        calendars(&app, &ana)
            .await
            .iter()
            .all(|c| c["name"] != "Team")
    );
    stop(app).await;
}

#[tokio::test]
async fn radicale_remote_calendars_come_and_go() {
    remote_calendars_come_and_go(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_remote_calendars_come_and_go() {
    remote_calendars_come_and_go(CaldavKind::Xandikos).await;
}

// 4. The timer ------------------------------------------------------------------------------

#[tokio::test]
async fn the_timer_pulls_without_being_asked() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    let app = app_with_interval(300).await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;
    let work_id = calendar_named(&app, &ana, "Work").await;
    let mut stream = app.stream(&ana).await;

    server
        .put_event(&work, "later.ics", &simple("later-1", "By the timer"))
        .await;
    assert_eq!(next_external_sync(&mut stream).await, [json!(work_id)]);
    assert_eq!(titles_in(&app, &ana, &work_id).await, ["By the timer"]);
    stop(app).await;
}

/// A tick that fires while the previous run still waits for a server that does not answer
/// is skipped and counted; the run itself fails (counted) at the request timeout.
#[tokio::test]
async fn ticks_during_a_hanging_pull_are_skipped_and_counted() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = spawn_app_with(|s| {
        s.caldav.enc_key = Some(bowline::config::Secret::new(CALDAV_KEY));
        s.caldav.sync_interval_ms = 200;
        // Time for Radicale to answer the connection on a loaded machine.
        s.caldav.request_timeout_ms = 3_000;
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;

    // The server's port now accepts connections and never answers.
    server.kill();
    let silent = std::net::TcpListener::bind(("127.0.0.1", server.port())).expect("the port");
    eventually("a tick skipped while the pull hangs", || async {
        metric(&app, SKIPS).await >= 1.0
    })
    .await;
    eventually("the hanging pull failed and was counted", || async {
        metric(&app, ACCOUNT_FAILURES).await >= 1.0
    })
    .await;
    drop(silent);
    stop(app).await;
}

// 5. A password changed at the provider -------------------------------------------------------

#[tokio::test]
async fn a_changed_password_asks_for_reconnection() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;
    let account = account_ids(&app, &ana).await.remove(0);
    let failures = metric(&app, ACCOUNT_FAILURES).await;

    let new_password = format!("pw-{}", uuid::Uuid::new_v4());
    server.set_password(&new_password);
    let (status, body) = sync_now_answer(&app, &ana).await;
    // (Which message comes with the 400 is checked by
    // `a_failed_sync_now_says_why`.)
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(metric(&app, ACCOUNT_FAILURES).await, failures + 1.0);
    let row = account_row(&app, &account).await;
    assert_eq!(row.sync_status.as_deref(), Some("reconnect_required"));
    assert_eq!(row.sync_error_code.as_deref(), Some("unauthorized"));

    // Reconnecting with the new password: the same account, the status cleared.
    let (status, body) = connect_caldav(&app, &ana, &server, &new_password).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        account_ids(&app, &ana).await,
        std::slice::from_ref(&account)
    );
    let row = account_row(&app, &account).await;
    assert_eq!(row.sync_status, None);
    assert_eq!(row.sync_error_code, None);
    let work_id = calendar_named(&app, &ana, "Work").await;
    let mut stream = app.stream(&ana).await;
    server
        .put_event(&work, "after.ics", &simple("after-1", "After reconnecting"))
        .await;
    sync_now(&app, &ana).await;
    assert_eq!(next_external_sync(&mut stream).await, [json!(work_id)]);
    assert_eq!(
        titles_in(&app, &ana, &work_id).await,
        ["After reconnecting"]
    );
    stop(app).await;
}

// 6. A panicking sync actor ---------------------------------------------------------------------

#[tokio::test]
async fn a_panicking_sync_actor_is_restarted_and_others_go_on() {
    let server_a = CaldavServer::start(CaldavKind::Radicale).await;
    let server_b = CaldavServer::start(CaldavKind::Radicale).await;
    let work_a = server_a.make_calendar("work", "Work A").await;
    let work_b = server_b.make_calendar("work", "Work B").await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    let ben = app.sign_up("ben@example.com").await;
    connect(&app, &ana, &server_a).await;
    connect(&app, &ben, &server_b).await;
    let a_id = calendar_named(&app, &ana, "Work A").await;
    let b_id = calendar_named(&app, &ben, "Work B").await;
    let account = account_ids(&app, &ana).await.remove(0);

    app.ctx().actors.providers.tell(ProvidersMsg::Panic {
        account: AccountKey::new(Provider::Caldav, account),
    });
    eventually("the sync actor restarted", || async {
        metric(&app, RESTARTS).await >= 1.0
    })
    .await;
    let text = app.metrics_text().await;
    assert_eq!(sample(&text, RESTARTS), Some(1.0), "{text}");
    assert_eq!(sample(&text, FAILURES), Some(1.0), "{text}");

    let mut ana_stream = app.stream(&ana).await;
    let mut ben_stream = app.stream(&ben).await;
    server_b
        .put_event(&work_b, "b.ics", &simple("b-1", "For Ben"))
        .await;
    sync_now(&app, &ben).await;
    assert_eq!(next_external_sync(&mut ben_stream).await, [json!(b_id)]);
    assert_eq!(titles_in(&app, &ben, &b_id).await, ["For Ben"]);
    server_a
        .put_event(&work_a, "a.ics", &simple("a-1", "For Ana"))
        .await;
    sync_now(&app, &ana).await;
    assert_eq!(next_external_sync(&mut ana_stream).await, [json!(a_id)]);
    assert_eq!(titles_in(&app, &ana, &a_id).await, ["For Ana"]);
    let text = app.metrics_text().await;
    assert_eq!(sample(&text, RESTARTS), Some(1.0), "{text}");
    assert_eq!(sample(&text, FAILURES), Some(1.0), "{text}");
    stop(app).await;
}

// 7. A server that is down --------------------------------------------------------------------

async fn a_server_that_is_down_is_a_400_and_later_works(kind: CaldavKind) {
    let mut server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;
    let work_id = calendar_named(&app, &ana, "Work").await;
    let account = account_ids(&app, &ana).await.remove(0);
    let failures = metric(&app, ACCOUNT_FAILURES).await;

    server.kill();
    let started = Instant::now();
    let (status, body) = sync_now_answer(&app, &ana).await;
    // (The message: see `a_failed_sync_now_says_why`.)
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a refused connection fails fast: {:?}",
        started.elapsed()
    );
    assert_eq!(metric(&app, ACCOUNT_FAILURES).await, failures + 1.0);
    let row = account_row(&app, &account).await;
    assert_eq!(
        row.sync_status, None,
        "a server that is down is not a reconnect"
    );

    server.restart().await;
    let mut stream = app.stream(&ana).await;
    server
        .put_event(&work, "back.ics", &simple("back-1", "Back up"))
        .await;
    sync_now(&app, &ana).await;
    assert_eq!(next_external_sync(&mut stream).await, [json!(work_id)]);
    assert_eq!(titles_in(&app, &ana, &work_id).await, ["Back up"]);
    stop(app).await;
}

#[tokio::test]
async fn radicale_down_is_a_400_and_later_works() {
    a_server_that_is_down_is_a_400_and_later_works(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_down_is_a_400_and_later_works() {
    a_server_that_is_down_is_a_400_and_later_works(CaldavKind::Xandikos).await;
}

// 8. Two Bowline servers on one database -------------------------------------------------------

/// How many of the user's events are called `title`.
async fn count_titled(app: &TestApp, user: &TestUser, title: &str) -> usize {
    events(app, user)
        .await
        .iter()
        .filter(|e| e["title"] == title)
        .count()
}

#[tokio::test]
async fn two_servers_on_one_database_keep_one_copy() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    server
        .put_event(&work, "first.ics", &simple("first-1", "First"))
        .await;
    let one = app().await;
    let ana = one.sign_up("ana@example.com").await;
    connect(&one, &ana, &server).await;
    let two = spawn_app_sharing_database_with(&one, |_| {}).await;
    // Both run the account's actor (the second started it from the stored accounts).
    for app in [&one, &two] {
        eventually("the account's sync actor runs", || async {
            metric(app, r#"svc_actors{actor="provider_sync"}"#).await == 1.0
        })
        .await;
    }

    // Synced through the second server, read through the first.
    server
        .put_event(&work, "second.ics", &simple("second-1", "Second"))
        .await;
    sync_now(&two, &ana).await;
    assert_eq!(count_titled(&one, &ana, "Second").await, 1);
    sync_now(&one, &ana).await;
    assert_eq!(count_titled(&one, &ana, "Second").await, 1);

    // Both at once, a few times: one copy of each new event, edits applied once.
    for round in 0..3 {
        let title = format!("Concurrent {round}");
        server
            .put_event(
                &work,
                &format!("c{round}.ics"),
                &simple(&format!("c-{round}"), &title),
            )
            .await;
        server
            .put_event(
                &work,
                "second.ics",
                &simple("second-1", &format!("Second edit {round}")),
            )
            .await;
        let (a, b) = tokio::join!(sync_now_answer(&one, &ana), sync_now_answer(&two, &ana));
        assert_eq!(a.0, StatusCode::OK, "first server: {}", a.1);
        assert_eq!(b.0, StatusCode::OK, "second server: {}", b.1);
        assert_eq!(count_titled(&one, &ana, &title).await, 1, "round {round}");
        assert_eq!(count_titled(&two, &ana, &title).await, 1, "round {round}");
        assert_eq!(
            count_titled(&one, &ana, &format!("Second edit {round}")).await,
            1
        );
    }
    let work_id = calendar_named(&one, &ana, "Work").await;
    assert_eq!(
        titles_in(&one, &ana, &work_id).await,
        [
            "Concurrent 0",
            "Concurrent 1",
            "Concurrent 2",
            "First",
            "Second edit 2"
        ]
    );
    stop(two).await;
    stop(one).await;
}

/// Two servers pulling at the same moment both see that a remote calendar was deleted: the
/// mirror goes once, and neither sync-now fails.
#[tokio::test]
async fn two_servers_pulling_a_removed_remote_calendar_at_once_both_succeed() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    let mut teams = Vec::new();
    for round in 0..4 {
        let team = server
            .make_calendar(&format!("team{round}"), &format!("Team {round}"))
            .await;
        server
            .put_event(&team, "t.ics", &simple(&format!("t-{round}"), "Team event"))
            .await;
        teams.push(team);
    }
    let one = app().await;
    let ana = one.sign_up("ana@example.com").await;
    connect(&one, &ana, &server).await;
    let two = spawn_app_sharing_database_with(&one, |_| {}).await;
    assert_eq!(count_titled(&one, &ana, "Team event").await, 4);

    for (round, team) in teams.iter().enumerate() {
        server.delete(team).await;
        let (a, b) = tokio::join!(sync_now_answer(&one, &ana), sync_now_answer(&two, &ana));
        assert!(
            calendars(&one, &ana)
                .await
                .iter()
                .all(|c| c["name"] != json!(format!("Team {round}"))),
            "round {round}: the mirror is gone"
        );
        assert_eq!(count_titled(&one, &ana, "Team event").await, 3 - round);
        assert_eq!(a.0, StatusCode::OK, "round {round}, first server: {}", a.1);
        assert_eq!(b.0, StatusCode::OK, "round {round}, second server: {}", b.1);
    }
    stop(two).await;
    stop(one).await;
}

/// Two servers pulling at the same moment both see a new remote calendar: one mirror is
/// made (the second process's insert finds it there and drops its transaction) and neither
/// sync-now fails.
#[tokio::test]
async fn two_servers_pulling_a_new_remote_calendar_at_once_make_one_mirror() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let one = app().await;
    let ana = one.sign_up("ana@example.com").await;
    connect(&one, &ana, &server).await;
    let two = spawn_app_sharing_database_with(&one, |_| {}).await;

    for round in 0..4 {
        let name = format!("Team {round}");
        let team = server.make_calendar(&format!("team{round}"), &name).await;
        server
            .put_event(&team, "t.ics", &simple(&format!("t-{round}"), "Team event"))
            .await;
        let (a, b) = tokio::join!(sync_now_answer(&one, &ana), sync_now_answer(&two, &ana));
        let named = calendars(&one, &ana)
            .await
            .iter()
            .filter(|c| c["name"] == json!(name))
            .count();
        assert_eq!(named, 1, "round {round}: one mirror of the new calendar");
        assert_eq!(a.0, StatusCode::OK, "round {round}, first server: {}", a.1);
        assert_eq!(b.0, StatusCode::OK, "round {round}, second server: {}", b.1);
        assert_eq!(count_titled(&one, &ana, "Team event").await, round + 1);
    }
    stop(two).await;
    stop(one).await;
}

/// A failed sync-now says why: 400 `{error: "The calendar server could not be synced: …"}`
/// (a password changed at the provider, a server that is down), not another route's error.
#[tokio::test]
async fn a_failed_sync_now_says_why() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = app().await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server).await;

    server.set_password(&format!("pw-{}", uuid::Uuid::new_v4()));
    let (status, body) = sync_now_answer(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"],
        "The calendar server could not be synced: the calendar server refused the credentials",
        "a password changed at the provider"
    );

    server.kill();
    let (status, body) = sync_now_answer(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("The calendar server could not be synced: ")),
        "a server that is down: {body}"
    );
    stop(app).await;
}
