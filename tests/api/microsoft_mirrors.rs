//! Outlook (Microsoft Graph) mirrors end to end against the loopback Microsoft
//! (`support::graph_api`): the whole life of a linked account in one test (link-social,
//! the authorization URL, consent, callback, sealed tokens, initial sync, a remote change
//! with one `external_sync` frame, local writes reaching Outlook, a racing edit resolved as a
//! conflict, a `410` resync, an expired refresh token turning the account
//! `reconnect_required` and relinking delivering the writes it held, revoke and disconnect),
//! and the ways a link fails. What the pull and the delivery do with Graph's particulars is in
//! `microsoft_mirrors_pull` and `microsoft_mirrors_push`, which share the helpers here.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bowline::secret_box::SecretBox;
use chrono::{DateTime, Duration, NaiveTime, Utc};
use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::helpers::caldav::{CALDAV_KEY, with_caldav};
use crate::helpers::oauth;
pub use crate::helpers::oauth::{LinkStart, start_link_with, sync_now};
use crate::helpers::{TestApp, TestUser, event_body, eventually, no_redirects, spawn_app_with};
use crate::support::graph_api::{
    GraphApi, GraphUser, MICROSOFT_CLIENT_ID, MICROSOFT_CLIENT_SECRET, Recorded, Reset,
};
use crate::support::idp::IdentityProvider;
use crate::support::sse::SseClient;

/// The scopes every Microsoft link asks for, in order.
pub const SCOPES: [&str; 6] = [
    "openid",
    "profile",
    "email",
    "offline_access",
    "User.Read",
    "Calendars.ReadWrite",
];

/// A Bowline configured for `graph` (and CalDAV's key, which seals tokens), with quick
/// outbox retries and no pull timer.
pub fn configure(graph: &GraphApi, settings: &mut bowline::Settings) {
    with_caldav(settings);
    graph.configure(settings);
    settings.caldav.outbox_retry_base_ms = 50;
    settings.caldav.outbox_retry_max_ms = 200;
}

/// A server for `graph` with one signed-up user whose Microsoft account `account` is
/// linked and pulled once.
pub struct Linked {
    /// The server.
    pub app: TestApp,
    /// The user.
    pub ana: TestUser,
}

/// Starts a server for `graph` (settings changed further by `more`), signs up Ana, links
/// `account` and waits for the first pull to be over.
pub async fn linked_app(
    graph: &GraphApi,
    account: &GraphUser,
    more: impl FnOnce(&mut bowline::Settings),
) -> Linked {
    let app = spawn_app_with(|s| {
        configure(graph, s);
        more(s);
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    link(&app, graph, &ana, account).await;
    // Answers after the pull the link started (the account's actor does one thing at a time).
    synced(&app, &ana).await;
    Linked { app, ana }
}

/// `POST /api/auth/link-social` as `user` with `body`: the status and the JSON answer.
pub async fn link_social(app: &TestApp, user: &TestUser, body: &Value) -> (StatusCode, Value) {
    app.call(Method::POST, "/api/auth/link-social", user, Some(body))
        .await
}

/// Starts linking Microsoft for `user`, coming back to `/linked` (or `/failed`).
pub async fn start_link(app: &TestApp, user: &TestUser) -> LinkStart {
    start_link_with(
        app,
        user,
        &json!({ "provider": "microsoft", "callbackURL": "/linked", "errorCallbackURL": "/failed" }),
    )
    .await
}

/// The browser coming back from Microsoft to `back` with the state `cookie` value (if any):
/// the `Location` Bowline redirects to.
pub async fn come_back(back: &str, cookie: Option<&str>) -> String {
    let header = cookie.map(|value| format!("better-auth.state={value}"));
    oauth::come_back(back, header.as_deref()).await
}

/// Links `account` to `user` (link-social, consent, callback); panics unless the browser
/// lands on `/linked`.
pub async fn link(app: &TestApp, graph: &GraphApi, user: &TestUser, account: &GraphUser) {
    let start = start_link(app, user).await;
    let back = graph.consent(&start.url, account);
    assert_eq!(come_back(&back, Some(&start.cookie)).await, "/linked");
}

/// Syncs now; panics unless it answers "OK".
pub async fn synced(app: &TestApp, user: &TestUser) {
    let (status, text) = sync_now(app, user).await;
    assert_eq!((status, text.as_str()), (StatusCode::OK, "OK"), "sync now");
}

/// `user`'s calendars.
pub async fn calendars(app: &TestApp, user: &TestUser) -> Vec<Value> {
    let (status, body) = app.call(Method::GET, "/api/v1/calendars", user, None).await;
    assert_eq!(status, StatusCode::OK);
    body.as_array().expect("calendars").clone()
}

/// `user`'s Outlook mirrors, by name.
pub async fn outlook_mirrors(app: &TestApp, user: &TestUser) -> Vec<Value> {
    let mut mirrors: Vec<Value> = calendars(app, user)
        .await
        .into_iter()
        .filter(|c| c["provider"] == "microsoft")
        .collect();
    mirrors.sort_by_key(|c| c["name"].as_str().unwrap_or_default().to_owned());
    mirrors
}

/// The events of `calendar` that `user` reads, by start then title.
pub async fn events_in(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<Value> {
    let body = app.read_events(user, "").await;
    let mut events: Vec<Value> = body["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["calendars"]
                .as_array()
                .is_some_and(|c| c.contains(&json!(calendar)))
        })
        .cloned()
        .collect();
    events.sort_by_key(|e| {
        (
            e["start"].as_str().unwrap_or_default().to_owned(),
            e["title"].as_str().unwrap_or_default().to_owned(),
        )
    });
    events
}

/// The titles of the events of `calendar`, sorted.
pub async fn titles_in(app: &TestApp, user: &TestUser, calendar: &str) -> Vec<String> {
    let mut titles: Vec<String> = events_in(app, user, calendar)
        .await
        .iter()
        .map(|e| e["title"].as_str().unwrap_or_default().to_owned())
        .collect();
    titles.sort();
    titles
}

/// The event titled `title` in `calendar`.
pub async fn event_titled(app: &TestApp, user: &TestUser, calendar: &str, title: &str) -> Value {
    events_in(app, user, calendar)
        .await
        .into_iter()
        .find(|e| e["title"] == title)
        .unwrap_or_else(|| panic!("no event {title} in {calendar}"))
}

/// Midnight UTC `days` from today, plus `hour` hours.
pub fn at(days: i64, hour: u32) -> DateTime<Utc> {
    (Utc::now().date_naive() + Duration::days(days))
        .and_time(NaiveTime::MIN)
        .and_utc()
        + Duration::hours(i64::from(hour))
}

/// An instant as Bowline's API writes it: `2026-12-03T08:00:00.000Z`.
pub fn api_time(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A Graph `dateTimeTimeZone` in UTC with Graph's 7 fractional digits.
pub fn graph_time(at: DateTime<Utc>) -> Value {
    let date_time = format!(
        "{}.{:07}",
        at.format("%Y-%m-%dT%H:%M:%S"),
        at.timestamp_subsec_nanos() / 100
    );
    json!({ "dateTime": date_time, "timeZone": "UTC" })
}

/// An event as a user makes it in Outlook: `subject` from `start`, `minutes` long, in UTC.
pub fn outlook_event(subject: &str, start: DateTime<Utc>, minutes: i64) -> Value {
    json!({
        "subject": subject,
        "body": { "contentType": "text", "content": format!("About {subject}") },
        "start": graph_time(start),
        "end": graph_time(start + Duration::minutes(minutes)),
        "location": { "displayName": "Room 7" },
    })
}

/// A Bowline event body in `calendar` from `start`, `minutes` long.
pub fn local_event(calendar: &str, title: &str, start: DateTime<Utc>, minutes: i64) -> Value {
    let mut body = event_body(&[calendar], title, 9);
    body["start"] = json!(api_time(start));
    body["end"] = json!(api_time(start + Duration::minutes(minutes)));
    body
}

/// The remote event of `calendar_id` made for the Bowline event `event_id`
/// (`transactionId`).
pub fn remote_of(graph: &GraphApi, calendar_id: &str, event_id: &str) -> Option<Value> {
    graph
        .events(calendar_id)
        .into_iter()
        .find(|e| e["transactionId"] == event_id)
}

/// The Graph requests that `matches`, answered with `status`.
pub fn answered(graph: &GraphApi, status: u16, matches: impl Fn(&Recorded) -> bool) -> usize {
    graph
        .requests()
        .iter()
        .filter(|r| r.status == status && matches(r))
        .count()
}

/// Whether `request` creates the Bowline event `event_id` (`POST …/events` with its
/// `transactionId`).
pub fn creates(request: &Recorded, event_id: &str) -> bool {
    request.method == "POST"
        && request.path.ends_with("/events")
        && request
            .body
            .as_ref()
            .is_some_and(|b| b["transactionId"] == event_id)
}

/// Frames up to and including the first of type `kind` (at most 12).
pub async fn frames_until(stream: &mut SseClient, kind: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    while !seen.last().is_some_and(|f: &Value| f["type"] == kind) {
        assert!(seen.len() < 12, "no {kind} frame among {seen:?}");
        seen.push(stream.next_frame().await);
    }
    seen
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

/// Waits until the outbox is empty.
pub async fn outbox_empties(app: &TestApp) {
    eventually("the outbox empties", || async {
        outbox_rows(app).await == 0
    })
    .await;
}

/// The Microsoft `accounts` rows as stored: column → value (text or null).
pub async fn microsoft_account_rows(app: &TestApp) -> Vec<HashMap<&'static str, Option<String>>> {
    let db = app.db_connection().await;
    let rows = db
        .query_all_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT user_id, account_id, access_token, refresh_token, scope, label, sync_status, \
             sync_error_code FROM accounts WHERE provider_id = 'microsoft' ORDER BY id",
        ))
        .await
        .expect("accounts");
    const COLUMNS: [&str; 8] = [
        "user_id",
        "account_id",
        "access_token",
        "refresh_token",
        "scope",
        "label",
        "sync_status",
        "sync_error_code",
    ];
    rows.iter()
        .map(|row| {
            COLUMNS
                .iter()
                .map(|c| (*c, row.try_get::<Option<String>>("", c).expect("column")))
                .collect()
        })
        .collect()
}

/// Opens a token sealed with the test key.
pub fn unseal(sealed: &str) -> String {
    SecretBox::from_hex(CALDAV_KEY)
        .expect("key")
        .open(sealed)
        .expect("sealed with the test key")
}

fn query_map(url: &str) -> HashMap<String, String> {
    url::Url::parse(url)
        .expect("URL")
        .query_pairs()
        .into_owned()
        .collect()
}

fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

#[tokio::test]
async fn an_outlook_account_links_syncs_both_ways_resets_reconnects_and_disconnects() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let work = graph.add_calendar(&account, "Work", true);
    let dentist = graph.insert_event(
        &account.default_calendar,
        outlook_event("Dentist", at(2, 9), 60),
    );
    graph.insert_event(&work, outlook_event("Planning", at(3, 10), 30));
    let app = spawn_app_with(|s| configure(&graph, s)).await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["syncProviders"], json!(["microsoft", "caldav"]));
    let ana = app.sign_up("ana@example.com").await;
    let bob = app.sign_up("bob@example.com").await;

    // link-social: the authorization URL, with PKCE and a signed state in a cookie.
    let start = start_link(&app, &ana).await;
    assert_eq!(start.body, json!({ "url": start.url, "redirect": true }));
    assert_eq!(start.location.as_deref(), Some(start.url.as_str()));
    assert!(
        start.set_cookie.contains("Max-Age=300"),
        "{}",
        start.set_cookie
    );
    assert!(
        start
            .url
            .starts_with(&format!("{}?", graph.authorization_url())),
        "{}",
        start.url
    );
    let query = query_map(&start.url);
    let redirect_uri = app.url("/api/auth/callback/microsoft");
    assert_eq!(query["client_id"], MICROSOFT_CLIENT_ID);
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["redirect_uri"], redirect_uri);
    assert_eq!(query["response_mode"], "query");
    assert_eq!(query["prompt"], "consent");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["code_challenge"].len(), 43);
    assert_eq!(query["scope"], SCOPES.join(" "));
    assert_eq!(query["state"], percent_decoded(&start.cookie));
    assert!(
        !query.contains_key("access_type"),
        "Google's, not Microsoft's"
    );

    // Consent, and the callback: tokens for the code and its PKCE verifier.
    let back = graph.consent(&start.url, &account);
    assert!(back.starts_with(&format!("{redirect_uri}?code=")), "{back}");
    assert_eq!(come_back(&back, Some(&start.cookie)).await, "/linked");
    let exchange = &graph.token_requests()[0];
    assert_eq!(exchange["grant_type"], "authorization_code");
    assert_eq!(exchange["redirect_uri"], redirect_uri.as_str());
    assert_eq!(exchange["client_secret"], MICROSOFT_CLIENT_SECRET);
    let verifier = exchange["code_verifier"].as_str().expect("a PKCE verifier");
    assert_eq!(
        URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())),
        query["code_challenge"]
    );

    // The account is stored with its tokens sealed.
    let issued = graph.token_answers()[0].body.clone();
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["user_id"].as_deref(), Some(ana.id.as_str()));
    assert_eq!(row["account_id"].as_deref(), Some(account.oid.as_str()));
    assert_eq!(row["label"].as_deref(), Some("ana.outlook@example.com"));
    assert_eq!(row["sync_status"], None);
    assert_eq!(row["sync_error_code"], None);
    let granted = issued["scope"].as_str().expect("scope").replace(' ', ",");
    assert_eq!(row["scope"].as_deref(), Some(granted.as_str()));
    for (column, plain) in [
        ("access_token", &issued["access_token"]),
        ("refresh_token", &issued["refresh_token"]),
    ] {
        let plain = plain.as_str().expect("token");
        let sealed = row[column].as_deref().expect("stored");
        assert!(!sealed.contains(plain), "{column} is stored in the clear");
        assert_eq!(unseal(sealed), plain, "{column} is the token issued");
    }

    // The first pull: both calendars mirrored, with the account's fields.
    eventually("the calendars are mirrored", || async {
        outlook_mirrors(&app, &ana).await.len() == 2
    })
    .await;
    synced(&app, &ana).await;
    let mirrors = outlook_mirrors(&app, &ana).await;
    let names: Vec<&Value> = mirrors.iter().map(|m| &m["name"]).collect();
    assert_eq!(names, [&json!("Calendar"), &json!("Work")]);
    for mirror in &mirrors {
        assert_eq!(mirror["provider"], "microsoft");
        assert_eq!(mirror["accountId"], json!(account.oid));
        assert_eq!(mirror["accountLabel"], "ana.outlook@example.com");
        assert_eq!(mirror["serverUrl"], Value::Null);
        assert_eq!(mirror["syncStatus"], "active");
        assert_eq!(mirror["syncErrorCode"], Value::Null);
        assert_eq!(mirror["role"], "owner");
    }
    let calendar_mirror = mirrors[0]["id"].as_str().expect("id").to_owned();
    let work_mirror = mirrors[1]["id"].as_str().expect("id").to_owned();
    let planning = event_titled(&app, &ana, &work_mirror, "Planning").await;
    assert_eq!(planning["start"], json!(api_time(at(3, 10))));
    assert_eq!(
        planning["end"],
        json!(api_time(at(3, 10) + Duration::minutes(30)))
    );
    assert_eq!(planning["location"], "Room 7");
    assert_eq!(planning["description"], "About Planning");
    assert_eq!(
        titles_in(&app, &ana, &calendar_mirror).await,
        ["Dentist"],
        "the default calendar"
    );
    let (_, google) = app
        .call(Method::GET, "/api/v1/users/connections/google", &ana, None)
        .await;
    assert_eq!(
        google,
        json!({ "isLinked": false, "calendarConnected": false })
    );
    // Bob joins the Work mirror.
    app.join_with_invite(&ana, &work_mirror, &bob).await;

    // A change in Outlook arrives with the next pull and exactly one frame; a pull that
    // changes nothing sends none (the next frame names only the calendar changed next).
    let mut stream = app.stream(&ana).await;
    graph.insert_event(&work, outlook_event("Added in Outlook", at(5, 8), 45));
    synced(&app, &ana).await;
    let frame = stream.next_frame().await;
    assert_eq!(
        frame,
        json!({ "type": "external_sync", "payload": { "calendars": [work_mirror] } })
    );
    assert_eq!(
        titles_in(&app, &ana, &work_mirror).await,
        ["Added in Outlook", "Planning"]
    );
    synced(&app, &ana).await;
    graph.insert_event(
        &account.default_calendar,
        outlook_event("Lunch", at(6, 12), 60),
    );
    synced(&app, &ana).await;
    let frame = stream.next_frame().await;
    assert_eq!(
        frame,
        json!({ "type": "external_sync", "payload": { "calendars": [calendar_mirror] } })
    );

    // A local creation reaches Outlook (with its id as transactionId), then an update (with
    // the weak etag of what Bowline wrote).
    let created = app
        .create_event(
            &ana,
            &local_event(&work_mirror, "Made in Bowline", at(4, 14), 60),
        )
        .await;
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(
        created["providerDelivery"],
        json!([{ "calendarID": work_mirror, "provider": "microsoft", "action": "put", "state": "pending" }])
    );
    let post = graph
        .wait_for_request("creating the local event", |r| {
            creates(r, &id) && r.status == 201
        })
        .await;
    assert_eq!(post.path, format!("/v1.0/me/calendars/{work}/events"));
    let body = post.body.expect("body");
    assert_eq!(body["subject"], "Made in Bowline");
    assert_eq!(body["start"], graph_time(at(4, 14)));
    assert_eq!(body["end"], graph_time(at(4, 15)));
    assert_eq!(body["isAllDay"], false);
    assert_eq!(body["location"]["displayName"], "Room 1");
    let remote = remote_of(&graph, &work, &id).expect("made in Outlook");
    let remote_id = remote["id"].as_str().expect("id").to_owned();
    outbox_empties(&app).await;

    let mut update = created.clone();
    update["title"] = json!("Renamed in Bowline");
    let response = app.event_request(Method::PUT, &ana, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let patch = graph
        .wait_for_request("the rename", |r| {
            r.method == "PATCH" && r.path == format!("/v1.0/me/events/{remote_id}")
        })
        .await;
    assert_eq!(patch.status, 200);
    assert_eq!(
        patch.if_match,
        remote["@odata.etag"].as_str().map(str::to_owned)
    );
    assert_eq!(
        graph.event(&remote_id).expect("there")["subject"],
        "Renamed in Bowline"
    );
    outbox_empties(&app).await;

    // Someone edits it in Outlook before Bowline pulls; a local edit then meets a 412:
    // Outlook's version is kept and comes back, and the members are told.
    let racing = graph.update_event(&remote_id, json!({ "subject": "Edited in Outlook" }));
    let mut edit = event_titled(&app, &ana, &work_mirror, "Renamed in Bowline").await;
    edit["title"] = json!("Edited in Bowline");
    let response = app.event_request(Method::PUT, &ana, &edit).await;
    assert_eq!(response.status(), StatusCode::OK);
    let frames = frames_until(&mut stream, "provider_delivery").await;
    assert_eq!(
        frames.last().expect("report")["payload"],
        json!({ "calendarID": work_mirror, "eventID": id, "state": "conflict", "error": null })
    );
    let refused = graph
        .requests()
        .into_iter()
        .rfind(|r| r.method == "PATCH" && r.path.ends_with(&remote_id))
        .expect("the conditional write");
    assert_eq!(refused.status, 412);
    assert_ne!(
        refused.if_match,
        racing["@odata.etag"].as_str().map(str::to_owned)
    );
    assert_eq!(
        graph.event(&remote_id).expect("there")["subject"],
        "Edited in Outlook"
    );
    let mine = events_in(&app, &ana, &work_mirror).await;
    let mine: Vec<&Value> = mine.iter().filter(|e| e["id"] == json!(id)).collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["title"], "Edited in Outlook");
    outbox_empties(&app).await;
    // The conflict's own frame (the mirror changed), then the stream is quiet again.
    let frame = stream.next_frame().await;
    assert_eq!(
        frame,
        json!({ "type": "external_sync", "payload": { "calendars": [work_mirror] } })
    );

    // The delta links stop working (410 + Location): a new round over the window, which
    // sweeps what vanished meanwhile.
    graph.delete_event(dentist["id"].as_str().expect("id"));
    graph.insert_event(
        &account.default_calendar,
        outlook_event("After the reset", at(7, 9), 30),
    );
    graph.expire_delta_tokens(Reset::Gone);
    let before = graph.requests().len();
    synced(&app, &ana).await;
    let since: Vec<Recorded> = graph.requests().split_off(before);
    let default_delta = format!(
        "/v1.0/me/calendars/{}/calendarView/delta",
        account.default_calendar
    );
    let on_default: Vec<(u16, bool)> = since
        .iter()
        .filter(|r| r.path == default_delta)
        .map(|r| (r.status, r.query.contains("startDateTime")))
        .collect();
    assert_eq!(
        on_default,
        [(410, false), (200, true)],
        "the refused link, then a new round"
    );
    assert_eq!(
        titles_in(&app, &ana, &calendar_mirror).await,
        ["After the reset", "Lunch"]
    );
    let frame = stream.next_frame().await;
    assert_eq!(
        frame,
        json!({ "type": "external_sync", "payload": { "calendars": [calendar_mirror] } })
    );

    // The refresh token expires: the next delivery needs a new access token and cannot
    // get one. The account needs reconnecting (its owner sees why, a member sees nothing)
    // and the write waits.
    graph.expire_refresh_tokens(&account);
    graph.expire_access_tokens();
    let waiting = app
        .create_event(
            &ana,
            &local_event(&work_mirror, "Made while expired", at(8, 11), 30),
        )
        .await;
    let waiting_id = waiting["id"].as_str().expect("id").to_owned();
    eventually("the account needs reconnecting", || async {
        outlook_mirrors(&app, &ana)
            .await
            .iter()
            .all(|m| m["syncStatus"] == "reconnect_required")
    })
    .await;
    for mirror in outlook_mirrors(&app, &ana).await {
        assert_eq!(mirror["syncErrorCode"], "invalid_grant");
    }
    let seen_by_bob = calendars(&app, &bob)
        .await
        .into_iter()
        .find(|c| c["id"] == json!(work_mirror))
        .expect("Bob is a member");
    assert_eq!(seen_by_bob["syncStatus"], Value::Null);
    assert_eq!(seen_by_bob["syncErrorCode"], Value::Null);
    assert_eq!(seen_by_bob["provider"], "microsoft");
    let refresh = graph.token_answers().pop().expect("a refresh");
    assert_eq!(refresh.status, 400);
    assert_eq!(refresh.body["error"], "invalid_grant");
    assert_eq!(outbox_rows(&app).await, 1, "the write is kept");
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(
        rows[0]["sync_status"].as_deref(),
        Some("reconnect_required")
    );
    assert_eq!(rows[0]["sync_error_code"].as_deref(), Some("invalid_grant"));
    assert_eq!(rows[0]["refresh_token"], None, "dead tokens are forgotten");
    assert_eq!(rows[0]["access_token"], None);
    assert_eq!(
        answered(&graph, 201, |r| creates(r, &waiting_id)),
        0,
        "nothing written meanwhile"
    );

    // Linking again clears it and delivers the kept write, once.
    link(&app, &graph, &ana, &account).await;
    graph
        .wait_for_request("the kept write", |r| {
            creates(r, &waiting_id) && r.status == 201
        })
        .await;
    outbox_empties(&app).await;
    assert_eq!(answered(&graph, 201, |r| creates(r, &waiting_id)), 1);
    assert_eq!(
        remote_of(&graph, &work, &waiting_id).expect("delivered")["subject"],
        "Made while expired"
    );
    for mirror in outlook_mirrors(&app, &ana).await {
        assert_eq!(mirror["syncStatus"], "active");
        assert_eq!(mirror["syncErrorCode"], Value::Null);
    }
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1, "the same account, linked again");
    assert_eq!(rows[0]["sync_status"], None);

    // Revoking Google leaves the Outlook account alone.
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/google/revoke",
            &ana,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(microsoft_account_rows(&app).await[0]["refresh_token"].is_some());
    assert_eq!(outlook_mirrors(&app, &ana).await.len(), 2);

    // Disconnecting removes both mirrors (for every member) and unlinks the account (Ana
    // still signs in with her password).
    let mut bobs = app.stream(&bob).await;
    let response = app
        .as_user(Method::POST, "/api/v1/users/connections/disconnect", &ana)
        .json(&json!({ "provider": "microsoft", "accountId": account.oid }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.expect("body"), "OK");
    let mut removed = Vec::new();
    for _ in 0..12 {
        let frame = stream.next_frame().await;
        if frame["type"] == "calendar_removed" {
            removed.push(frame["payload"]["id"].as_str().expect("id").to_owned());
            if removed.len() == 2 {
                break;
            }
        }
    }
    removed.sort();
    let mut expected = vec![calendar_mirror.clone(), work_mirror.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    let frames = frames_until(&mut bobs, "calendar_removed").await;
    assert_eq!(
        frames.last().expect("frame")["payload"]["id"],
        json!(work_mirror)
    );
    assert!(outlook_mirrors(&app, &ana).await.is_empty());
    assert!(outlook_mirrors(&app, &bob).await.is_empty());
    assert!(microsoft_account_rows(&app).await.is_empty());
    assert_eq!(outbox_rows(&app).await, 0);
    let requests = graph.requests().len();
    synced(&app, &ana).await;
    assert!(outlook_mirrors(&app, &ana).await.is_empty());
    assert_eq!(graph.requests().len(), requests, "Outlook is left alone");
    let (status, body) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/disconnect",
            &ana,
            Some(&json!({ "provider": "microsoft", "accountId": account.oid })),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "again: the account is gone");
    assert_eq!(body["error"], "Account not found...");
}

/// A server for `graph` with Ana signed up, and Ana's account at Microsoft.
async fn unlinked(graph: &GraphApi) -> (TestApp, TestUser, GraphUser) {
    let app = spawn_app_with(|s| configure(graph, s)).await;
    let ana = app.sign_up("ana@example.com").await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    (app, ana, account)
}

#[tokio::test]
async fn a_declined_consent_links_nothing() {
    let graph = GraphApi::start().await;
    let (app, ana, _) = unlinked(&graph).await;
    let start = start_link(&app, &ana).await;
    let back = graph.deny(&start.url);
    assert_eq!(
        come_back(&back, Some(&start.cookie)).await,
        "/failed?error=access_denied"
    );
    assert!(graph.token_requests().is_empty(), "no code to exchange");
    assert!(microsoft_account_rows(&app).await.is_empty());
    assert!(outlook_mirrors(&app, &ana).await.is_empty());
}

#[tokio::test]
async fn a_callback_without_the_browsers_state_cookie_is_a_state_mismatch() {
    let graph = GraphApi::start().await;
    let (app, ana, account) = unlinked(&graph).await;
    let start = start_link(&app, &ana).await;
    let other = start_link(&app, &ana).await;
    let back = graph.consent(&start.url, &account);
    let refused = format!("{}/api/auth/error?error=state_mismatch", app.base);
    assert_eq!(come_back(&back, None).await, refused, "no cookie");
    assert_eq!(
        come_back(&back, Some(&other.cookie)).await,
        refused,
        "another link's cookie"
    );
    assert!(graph.token_requests().is_empty(), "the code is not used");
    assert!(microsoft_account_rows(&app).await.is_empty());
    // The browser that started it still finishes it.
    assert_eq!(come_back(&back, Some(&start.cookie)).await, "/linked");
    assert_eq!(microsoft_account_rows(&app).await.len(), 1);
}

#[tokio::test]
async fn a_replayed_callback_is_state_not_found() {
    let graph = GraphApi::start().await;
    let (app, ana, account) = unlinked(&graph).await;
    let start = start_link(&app, &ana).await;
    let back = graph.consent(&start.url, &account);
    assert_eq!(come_back(&back, Some(&start.cookie)).await, "/linked");
    assert_eq!(
        come_back(&back, Some(&start.cookie)).await,
        format!("{}/api/auth/error?error=state_not_found", app.base)
    );
    assert_eq!(graph.token_requests().len(), 1, "the code is redeemed once");
    // A state Bowline never signed is not found either.
    let forged = back.replace("state=", "state=x");
    assert_eq!(
        come_back(&forged, Some(&start.cookie)).await,
        format!("{}/api/auth/error?error=state_not_found", app.base)
    );
}

#[tokio::test]
async fn a_code_the_token_endpoint_refuses_is_invalid_code() {
    let graph = GraphApi::start().await;
    let (app, ana, account) = unlinked(&graph).await;
    let start = start_link(&app, &ana).await;
    let back = graph.consent(&start.url, &account);
    graph.expire_authorization_codes();
    assert_eq!(
        come_back(&back, Some(&start.cookie)).await,
        "/failed?error=invalid_code"
    );
    let answers = graph.token_answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].status, 400);
    assert_eq!(answers[0].body["error"], "invalid_grant");
    assert!(microsoft_account_rows(&app).await.is_empty());

    // A callback without a code (and without an error) is no_code.
    let start = start_link(&app, &ana).await;
    let state = query_map(&start.url)["state"].clone();
    let mut bare = url::Url::parse(&app.url("/api/auth/callback/microsoft")).expect("URL");
    bare.query_pairs_mut().append_pair("state", &state);
    assert_eq!(
        come_back(bare.as_str(), Some(&start.cookie)).await,
        "/failed?error=no_code"
    );
}

#[tokio::test]
async fn an_outlook_account_linked_to_another_user_is_refused() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    graph.insert_event(
        &account.default_calendar,
        outlook_event("Dentist", at(2, 9), 60),
    );
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mallory = app.sign_up("mallory@example.com").await;
    let start = start_link(&app, &mallory).await;
    let back = graph.consent(&start.url, &account);
    assert_eq!(
        come_back(&back, Some(&start.cookie)).await,
        "/failed?error=account_already_linked_to_different_user"
    );
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["user_id"].as_deref(), Some(ana.id.as_str()));
    assert_eq!(outlook_mirrors(&app, &ana).await.len(), 1);
    assert!(outlook_mirrors(&app, &mallory).await.is_empty());
    synced(&app, &mallory).await;
    assert!(outlook_mirrors(&app, &mallory).await.is_empty());
}

#[tokio::test]
async fn link_social_is_provider_not_found_unless_microsoft_is_configured() {
    let graph = GraphApi::start().await;
    // Microsoft configured, but no key to seal tokens with.
    let app = spawn_app_with(|s| graph.configure(s)).await;
    let ana = app.sign_up("ana@example.com").await;
    let info: Value = app.get("/api/v1/server").await.json().await.expect("JSON");
    assert_eq!(info["syncProviders"], json!([]));
    for provider in ["microsoft", "yahoo"] {
        let (status, body) = link_social(
            &app,
            &ana,
            &json!({ "provider": provider, "callbackURL": "/linked" }),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{provider}: {body}");
        assert_eq!(body["code"], "PROVIDER_NOT_FOUND", "{provider}");
    }
    // Configured: an absolute callback URL must be one of the server's origins.
    let (app, ana, _) = unlinked(&graph).await;
    let (status, body) = link_social(
        &app,
        &ana,
        &json!({ "provider": "microsoft", "callbackURL": "https://evil.example/stolen" }),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let start = start_link_with(
        &app,
        &ana,
        &json!({ "provider": "microsoft", "callbackURL": app.url("/done"), "disableRedirect": true }),
    )
    .await;
    assert_eq!(start.body["redirect"], false);
    assert_eq!(start.location, None);
}

#[tokio::test]
async fn the_expo_proxy_sets_the_state_cookie_and_redirects_only_to_microsoft() {
    let graph = GraphApi::start().await;
    let (app, ana, account) = unlinked(&graph).await;
    let start = start_link(&app, &ana).await;
    let state = query_map(&start.url)["state"].clone();
    let mut proxy = url::Url::parse(&app.url("/api/auth/expo-authorization-proxy")).expect("URL");
    proxy
        .query_pairs_mut()
        .append_pair("authorizationURL", &start.url)
        .append_pair("oauthState", &state);
    let response = no_redirects()
        .get(proxy.as_str())
        .send()
        .await
        .expect("proxy");
    assert_eq!(response.status(), StatusCode::FOUND);
    assert_eq!(response.headers()["location"], start.url.as_str());
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("better-auth.state="))
        .expect("the state cookie")
        .to_owned();
    let cookie = cookie["better-auth.state=".len()..]
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    // That browser (the system browser of the app) finishes the link with it.
    let back = graph.consent(&start.url, &account);
    assert_eq!(come_back(&back, Some(&cookie)).await, "/linked");

    // Anything but a configured authorization endpoint is refused.
    let mut elsewhere =
        url::Url::parse(&app.url("/api/auth/expo-authorization-proxy")).expect("URL");
    elsewhere
        .query_pairs_mut()
        .append_pair(
            "authorizationURL",
            &format!("{}/common/oauth2/v2.0/logout?x=1", graph.base()),
        )
        .append_pair("oauthState", &state);
    let response = no_redirects()
        .get(elsewhere.as_str())
        .send()
        .await
        .expect("proxy");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(response.headers().get("location").is_none());
}

#[tokio::test]
async fn microsoft_sign_in_grants_no_calendars_and_disconnecting_the_only_sign_in_keeps_it() {
    let graph = GraphApi::start().await;
    let idp = IdentityProvider::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    graph.insert_event(
        &account.default_calendar,
        outlook_event("Dentist", at(2, 9), 60),
    );
    let jwks = idp.jwks_url();
    let app = spawn_app_with(|s| {
        configure(&graph, s);
        s.microsoft.jwks_url = jwks;
    })
    .await;
    let sign_in = || async {
        let now = Utc::now().timestamp();
        let token = idp.sign(
            "key-a",
            &json!({
                "iss": format!("https://login.microsoftonline.com/{}/v2.0", account.tid),
                "aud": MICROSOFT_CLIENT_ID,
                "sub": account.sub,
                "oid": account.oid,
                "tid": account.tid,
                "preferred_username": account.email,
                "email": account.email,
                "name": account.name,
                "iat": now,
                "exp": now + 3600,
            }),
        );
        let response = app
            .client
            .post(app.url("/api/auth/sign-in/social"))
            .json(&json!({ "provider": "microsoft", "idToken": { "token": token } }))
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::OK, "Microsoft sign-in");
        let body: Value = response.json().await.expect("JSON");
        TestUser {
            id: body["user"]["id"].as_str().expect("id").to_owned(),
            email: account.email.clone(),
            password: String::new(),
            token: body["token"].as_str().expect("token").to_owned(),
            signed: String::new(),
        }
    };
    let ana = sign_in().await;

    // Signing in with Microsoft stores the identity, not calendar access.
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["account_id"].as_deref(), Some(account.oid.as_str()));
    assert_eq!(rows[0]["refresh_token"], None);
    synced(&app, &ana).await;
    assert!(outlook_mirrors(&app, &ana).await.is_empty());
    assert!(graph.requests().is_empty(), "Outlook is not read");

    // Linking the same identity gives that account its tokens.
    link(&app, &graph, &ana, &account).await;
    synced(&app, &ana).await;
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1, "the same account row");
    assert!(rows[0]["refresh_token"].is_some());
    let mirrors = outlook_mirrors(&app, &ana).await;
    assert_eq!(mirrors.len(), 1);
    let mirror = mirrors[0]["id"].as_str().expect("id").to_owned();
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["Dentist"]);

    // Disconnecting it removes the mirrors but keeps Ana's only way to sign in.
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/disconnect",
            &ana,
            Some(&json!({ "provider": "microsoft", "accountId": account.oid })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(outlook_mirrors(&app, &ana).await.is_empty());
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1, "still linked for sign-in");
    for column in ["access_token", "refresh_token", "scope", "sync_status"] {
        assert_eq!(rows[0][column], None, "{column} is cleared");
    }
    let again = sign_in().await;
    assert_eq!(again.id, ana.id);
    let requests = graph.requests().len();
    synced(&app, &again).await;
    assert_eq!(graph.requests().len(), requests, "Outlook is left alone");
    assert!(outlook_mirrors(&app, &again).await.is_empty());
}

#[tokio::test]
async fn two_outlook_accounts_of_one_user_sync_side_by_side() {
    let graph = GraphApi::start().await;
    let home = graph.add_user("ana.home@example.com", "Ana at home");
    let office = graph.add_user("ana.office@example.com", "Ana at the office");
    graph.insert_event(
        &home.default_calendar,
        outlook_event("Piano", at(2, 18), 60),
    );
    graph.insert_event(
        &office.default_calendar,
        outlook_event("Review", at(2, 10), 60),
    );
    let Linked { app, ana } = linked_app(&graph, &home, |_| {}).await;
    link(&app, &graph, &ana, &office).await;
    synced(&app, &ana).await;
    let mirrors = outlook_mirrors(&app, &ana).await;
    let accounts: Vec<Value> = mirrors
        .iter()
        .map(|m| json!([m["accountId"], m["accountLabel"], m["syncStatus"]]))
        .collect();
    let mut expected = vec![
        json!([home.oid, "ana.home@example.com", "active"]),
        json!([office.oid, "ana.office@example.com", "active"]),
    ];
    let mut accounts = accounts;
    accounts.sort_by_key(|a| a[1].as_str().unwrap_or_default().to_owned());
    expected.sort_by_key(|a| a[1].as_str().unwrap_or_default().to_owned());
    assert_eq!(accounts, expected);
    let of = |oid: &str| {
        mirrors
            .iter()
            .find(|m| m["accountId"] == oid)
            .expect("mirror")["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    assert_eq!(titles_in(&app, &ana, &of(&home.oid)).await, ["Piano"]);
    assert_eq!(titles_in(&app, &ana, &of(&office.oid)).await, ["Review"]);

    // One pull request syncs both.
    graph.insert_event(
        &home.default_calendar,
        outlook_event("Choir", at(3, 18), 60),
    );
    graph.insert_event(
        &office.default_calendar,
        outlook_event("Retro", at(3, 10), 60),
    );
    synced(&app, &ana).await;
    assert_eq!(
        titles_in(&app, &ana, &of(&home.oid)).await,
        ["Choir", "Piano"]
    );
    assert_eq!(
        titles_in(&app, &ana, &of(&office.oid)).await,
        ["Retro", "Review"]
    );

    // Disconnecting one leaves the other.
    let (status, _) = app
        .call(
            Method::POST,
            "/api/v1/users/connections/disconnect",
            &ana,
            Some(&json!({ "provider": "microsoft", "accountId": home.oid })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let left = outlook_mirrors(&app, &ana).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["accountId"], json!(office.oid));
    let rows = microsoft_account_rows(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["account_id"].as_deref(), Some(office.oid.as_str()));
}
