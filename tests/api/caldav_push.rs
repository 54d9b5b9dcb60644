//! Local changes to mirrored events reach the CalDAV server through the outbox, against
//! real Radicale (strict preconditions: a PUT over an existing resource without `If-Match`
//! is refused) and Xandikos: creations with `If-None-Match: *`, updates and deletions with
//! `If-Match`; a remote edit racing a local one is a 412 resolved by taking the server's
//! version (reported with a `provider_delivery` frame); a server that is down keeps the
//! row in the outbox, and a new Bowline on the same database delivers it once the server is
//! back.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use sea_orm::{ConnectionTrait, Statement};
use serde_json::{Value, json};

use crate::helpers::caldav::{calendars, connect_caldav, with_caldav};
use crate::helpers::{
    TestApp, TestUser, event_body, eventually, spawn_app_sharing_database_with, spawn_app_with,
};
use crate::support::caldav_servers::{CaldavKind, CaldavServer};

const REMOTE: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:remote-1\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261203T090000Z\r\nDTEND:20261203T100000Z\r\nSUMMARY:From the server\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

fn configure(s: &mut bowline::Settings) {
    with_caldav(s);
    s.caldav.outbox_retry_base_ms = 50;
    s.caldav.outbox_retry_max_ms = 200;
}

async fn server(kind: CaldavKind) -> CaldavServer {
    match kind {
        CaldavKind::Radicale => CaldavServer::start_radicale_strict().await,
        CaldavKind::Xandikos => CaldavServer::start(kind).await,
    }
}

/// Connects `user`'s account; the local id of the mirror of `name`.
async fn connect(app: &TestApp, user: &TestUser, server: &CaldavServer, name: &str) -> String {
    let (status, body) = connect_caldav(app, user, server, &server.password).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    calendars(app, user)
        .await
        .iter()
        .find(|calendar| calendar["name"] == name)
        .expect("mirror")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

/// Waits until `check` holds for the resource at `url` (its etag and body, or `None`);
/// what the server then holds.
async fn until_remote(
    server: &CaldavServer,
    url: &str,
    what: &str,
    check: impl Fn(Option<&(String, String)>) -> bool,
) -> Option<(String, String)> {
    eventually(what, || async { check(server.get(url).await.as_ref()) }).await;
    server.get(url).await
}

async fn outbox_rows(app: &TestApp) -> i64 {
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

async fn local_changes_reach_the_server(kind: CaldavKind) {
    let server = server(kind).await;
    let work = server.make_calendar("work", "Work").await;
    server.put_event(&work, "remote.ics", REMOTE).await;
    let app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;

    // Created locally: a new resource named after the event, with the event's UID.
    let created = app
        .create_event(&ana, &event_body(&[&mirror], "Made in Bowline", 9))
        .await;
    let id = created["id"].as_str().expect("id").to_owned();
    // The answer says the write is on its way to the server.
    assert_eq!(
        created["providerDelivery"],
        json!([{ "calendarID": mirror, "provider": "caldav", "action": "put", "state": "pending" }])
    );
    let personal = app.get_json_as(&ana, "/api/v1/calendars").await;
    let personal = personal
        .as_array()
        .expect("calendars")
        .iter()
        .find(|c| c["isDefault"] == true)
        .expect("personal")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let native = app
        .create_event(&ana, &event_body(&[&personal], "Only here", 11))
        .await;
    assert!(native.get("providerDelivery").is_none(), "{native}");
    let url = format!("{work}{id}.ics");
    let (_, body) = until_remote(&server, &url, "the new event", |r| r.is_some())
        .await
        .expect("resource");
    assert!(body.contains("SUMMARY:Made in Bowline"), "{body}");
    assert!(body.contains(&format!("UID:{id}")), "{body}");

    // Updated locally: written over it with If-Match (strict Radicale refuses it without).
    let mut update = created.clone();
    update["title"] = json!("Renamed in Bowline");
    let response = app.event_request(Method::PUT, &ana, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(answer["providerDelivery"][0]["state"], "pending");
    until_remote(&server, &url, "the rename", |r| {
        r.is_some_and(|(_, body)| body.contains("SUMMARY:Renamed in Bowline"))
    })
    .await;

    // An event read from the server, edited locally: its resource keeps its UID.
    let events = app.read_events(&ana, "").await;
    let remote = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["title"] == "From the server")
        .expect("imported")
        .clone();
    let mut edit = remote.clone();
    edit["title"] = json!("Edited in Bowline");
    let response = app.event_request(Method::PUT, &ana, &edit).await;
    assert_eq!(response.status(), StatusCode::OK);
    let (_, body) = until_remote(&server, &format!("{work}remote.ics"), "the edit", |r| {
        r.is_some_and(|(_, body)| body.contains("SUMMARY:Edited in Bowline"))
    })
    .await
    .expect("resource");
    assert!(body.contains("UID:remote-1"), "{body}");

    // Deleted locally: deleted there (with If-Match).
    let response = app.event_request(Method::DELETE, &ana, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(answer["removed"], true);
    assert_eq!(
        answer["providerDelivery"][0]["action"], "delete",
        "{answer}"
    );
    until_remote(&server, &url, "the deletion", |r| r.is_none()).await;
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
}

#[tokio::test]
async fn radicale_gets_local_creations_updates_and_deletions() {
    local_changes_reach_the_server(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_gets_local_creations_updates_and_deletions() {
    local_changes_reach_the_server(CaldavKind::Xandikos).await;
}

async fn a_remote_edit_racing_a_local_one_keeps_the_servers(kind: CaldavKind) {
    // Not strict: the racing edit is another client's unconditional PUT.
    let server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    server.put_event(&work, "remote.ics", REMOTE).await;
    let app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;
    let events = app.read_events(&ana, "").await;
    let remote = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["title"] == "From the server")
        .expect("imported")
        .clone();

    // Someone edits it on the server; Bowline has not pulled since.
    let racing = REMOTE.replace("SUMMARY:From the server", "SUMMARY:Edited on the server");
    server.put_event(&work, "remote.ics", &racing).await;
    let mut stream = app.stream(&ana).await;
    let mut edit = remote.clone();
    edit["title"] = json!("Edited in Bowline");
    let response = app.event_request(Method::PUT, &ana, &edit).await;
    assert_eq!(response.status(), StatusCode::OK);

    // The delivery meets a 412: nothing is overwritten, the server's version comes back.
    let mut saw = Vec::new();
    while !saw.iter().any(|f: &Value| f["type"] == "provider_delivery") {
        assert!(saw.len() < 10, "frames so far: {saw:?}");
        saw.push(stream.next_frame().await);
    }
    let report = saw
        .iter()
        .find(|f| f["type"] == "provider_delivery")
        .expect("report");
    assert_eq!(report["payload"]["state"], "conflict");
    assert_eq!(report["payload"]["calendarID"], json!(mirror));
    let (_, body) = server
        .get(&format!("{work}remote.ics"))
        .await
        .expect("resource");
    assert!(body.contains("SUMMARY:Edited on the server"), "{body}");
    let events = app.read_events(&ana, "").await;
    let titles: Vec<&str> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["title"].as_str())
        .collect();
    assert!(titles.contains(&"Edited on the server"), "{titles:?}");
    assert!(!titles.contains(&"Edited in Bowline"), "{titles:?}");
}

#[tokio::test]
async fn radicale_conflicts_keep_the_servers_version() {
    a_remote_edit_racing_a_local_one_keeps_the_servers(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_conflicts_keep_the_servers_version() {
    a_remote_edit_racing_a_local_one_keeps_the_servers(CaldavKind::Xandikos).await;
}

#[tokio::test]
async fn a_write_made_while_the_server_is_down_is_delivered_after_both_restart() {
    let mut server = server(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    let mut app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;

    server.kill();
    let created = app
        .create_event(&ana, &event_body(&[&mirror], "Made while down", 9))
        .await;
    let id = created["id"].as_str().expect("id").to_owned();
    // The row stays while deliveries fail, and the failures are counted and visible.
    eventually("the pending row is exported", || async {
        let text = app.metrics_text().await;
        crate::helpers::sample(&text, "svc_outbox_pending{provider=\"caldav\"}")
            .is_some_and(|pending| pending >= 1.0)
    })
    .await;
    eventually("a failed push is counted", || async {
        let text = app.metrics_text().await;
        crate::helpers::sample(
            &text,
            "svc_external_sync_failures_total{provider=\"caldav\",stage=\"push\"}",
        )
        .is_some_and(|failures| failures >= 1.0)
    })
    .await;
    assert_eq!(outbox_rows(&app).await, 1);

    // Bowline stops; the server comes back; a new Bowline on the same database delivers.
    app.stop_in_place().await.expect("stop");
    server.restart().await;
    let again = spawn_app_sharing_database_with(&app, configure).await;
    let url = format!("{work}{id}.ics");
    let (_, body) = until_remote(&server, &url, "the event made while down", |r| r.is_some())
        .await
        .expect("resource");
    assert!(body.contains("SUMMARY:Made while down"), "{body}");
    eventually("the outbox empties", || async {
        outbox_rows(&again).await == 0
    })
    .await;
}

/// A CalDAV client of the test's own, to read what the server holds.
fn reader(server: &CaldavServer) -> bowline::providers::caldav::CaldavClient {
    use bowline::providers::outbound::{GuardSettings, OutboundGuard};
    let guard = OutboundGuard::new(GuardSettings {
        allow_private_hosts: true,
        connect_timeout: Duration::from_secs(5),
        total_timeout: Duration::from_secs(10),
        max_redirects: 5,
        max_body_bytes: 1 << 20,
        extra_roots: Vec::new(),
    })
    .expect("guard");
    bowline::providers::caldav::CaldavClient::new(guard, &server.username, &server.password)
}

/// The server's calendars: (collection URL, display name).
async fn remote_calendars(server: &CaldavServer) -> Vec<(String, Option<String>)> {
    let home = url::Url::parse(&server.calendar_home()).expect("home");
    reader(server)
        .calendars(&home)
        .await
        .expect("calendars")
        .into_iter()
        .map(|calendar| (calendar.url.to_string(), calendar.name))
        .collect()
}

async fn calendar_writes_go_to_the_server_first(kind: CaldavKind) {
    let server = CaldavServer::start(kind).await;
    let work = server.make_calendar("work", "Work").await;
    let app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;
    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    let account = accounts["accounts"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // The listing says where a mirror comes from.
    let listed = app.get_json_as(&ana, "/api/v1/calendars").await;
    let listed = listed
        .as_array()
        .expect("calendars")
        .iter()
        .find(|c| c["id"] == json!(mirror))
        .expect("mirror")
        .clone();
    assert_eq!(listed["provider"], "caldav");
    assert_eq!(listed["accountId"], json!(account));
    assert_eq!(listed["accountLabel"], json!(server.username));
    assert_eq!(listed["serverUrl"], json!(server.base_url));
    assert_eq!(listed["syncStatus"], Value::Null);

    // Created in the account: made on the server, then mirrored.
    let response = app
        .as_user(Method::POST, "/api/v1/calendars", &ana)
        .json(&json!({
            "id": "new", "creatorID": "x", "name": "Trips", "color": "#A8B5A0", "members": [],
            "provider": "caldav", "accountId": account,
        }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::CREATED);
    let trips: Value = response.json().await.expect("JSON");
    assert_eq!(trips["provider"], "caldav");
    assert_eq!(trips["role"], "owner");
    assert!(
        remote_calendars(&server)
            .await
            .iter()
            .any(|(_, name)| name.as_deref() == Some("Trips")),
        "the server has the new calendar"
    );

    // Renamed: on the server first.
    let mut renamed = listed.clone();
    renamed["name"] = json!("Work (renamed)");
    let response = app
        .as_user(Method::PUT, "/api/v1/calendars", &ana)
        .json(&renamed)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let remote = remote_calendars(&server).await;
    assert!(
        remote
            .iter()
            .any(|(url, name)| *url == work && name.as_deref() == Some("Work (renamed)")),
        "{remote:?}"
    );

    // Deleted: on the server first, then here; a pull does not bring it back.
    let response = app
        .as_user(Method::DELETE, "/api/v1/calendars", &ana)
        .json(&renamed)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        remote_calendars(&server)
            .await
            .iter()
            .all(|(url, _)| *url != work)
    );
    let response = app
        .as_user(Method::GET, "/api/v1/calendars/google", &ana)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let after = app.get_json_as(&ana, "/api/v1/calendars").await;
    assert!(
        after
            .as_array()
            .expect("calendars")
            .iter()
            .all(|c| c["id"] != json!(mirror))
    );
    assert!(
        after
            .as_array()
            .expect("calendars")
            .iter()
            .any(|c| c["name"] == "Trips")
    );
}

#[tokio::test]
async fn radicale_calendar_writes_go_to_the_server_first() {
    calendar_writes_go_to_the_server_first(CaldavKind::Radicale).await;
}

#[tokio::test]
async fn xandikos_calendar_writes_go_to_the_server_first() {
    calendar_writes_go_to_the_server_first(CaldavKind::Xandikos).await;
}

#[tokio::test]
async fn two_servers_on_one_database_deliver_every_write_once() {
    let server = CaldavServer::start_radicale_strict().await;
    let work = server.make_calendar("work", "Work").await;
    let first = spawn_app_with(configure).await;
    let ana = first.sign_up("ana@example.com").await;
    let mirror = connect(&first, &ana, &server, "Work").await;
    // A second process on the same database: it runs a sync actor for the account too.
    let second = spawn_app_sharing_database_with(&first, configure).await;
    let mut made = Vec::new();
    for n in 0..12 {
        let app = if n % 2 == 0 { &first } else { &second };
        let created = app
            .create_event(&ana, &event_body(&[&mirror], &format!("Event {n}"), 8))
            .await;
        made.push(created);
    }
    // Each one is updated through the other process.
    for (n, created) in made.iter().enumerate() {
        let app = if n % 2 == 0 { &second } else { &first };
        let mut update = created.clone();
        update["title"] = json!(format!("Event {n} (updated)"));
        let response = app.event_request(Method::PUT, &ana, &update).await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    eventually("both outboxes are delivered", || async {
        outbox_rows(&first).await == 0
    })
    .await;
    let listed = server.list(&work).await;
    assert_eq!(
        listed.len(),
        made.len(),
        "one resource per event: {listed:?}"
    );
    for (n, created) in made.iter().enumerate() {
        let url = format!("{work}{}.ics", created["id"].as_str().expect("id"));
        let (_, body) = server.get(&url).await.expect("resource");
        assert!(
            body.contains(&format!("SUMMARY:Event {n} (updated)")),
            "{body}"
        );
    }
    for app in [&first, &second] {
        let text = app.metrics_text().await;
        assert_eq!(
            crate::helpers::sample(
                &text,
                "svc_external_sync_failures_total{provider=\"caldav\",stage=\"push\"}"
            )
            .unwrap_or(0.0),
            0.0,
            "no delivery met a write of the other process"
        );
    }
}

#[tokio::test]
async fn refused_credentials_hold_the_writes_until_the_account_reconnects() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    let work = server.make_calendar("work", "Work").await;
    let app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;

    server.set_password("a-new-and-longer-app-password");
    let created = app
        .create_event(&ana, &event_body(&[&mirror], "Made after the change", 9))
        .await;
    // The server refuses the credentials: the owner is asked to reconnect, the write waits.
    eventually("the owner sees reconnect_required", || async {
        let listed = app.get_json_as(&ana, "/api/v1/calendars").await;
        listed.as_array().expect("calendars").iter().any(|c| {
            c["id"] == json!(mirror)
                && c["syncStatus"] == "reconnect_required"
                && c["syncErrorCode"] == "unauthorized"
        })
    })
    .await;
    assert_eq!(outbox_rows(&app).await, 1);

    // Reconnecting with the new password delivers it.
    let (status, body) = {
        let response = app
            .as_user(Method::POST, "/api/v1/users/connections/caldav", &ana)
            .json(&json!({
                "serverUrl": server.base_url,
                "username": server.username,
                "password": server.password,
            }))
            .send()
            .await
            .expect("request");
        (response.status(), response.text().await.expect("body"))
    };
    assert_eq!(status, StatusCode::OK, "{body}");
    let url = format!("{work}{}.ics", created["id"].as_str().expect("id"));
    until_remote(&server, &url, "the held write", |r| r.is_some()).await;
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
    let listed = app.get_json_as(&ana, "/api/v1/calendars").await;
    let mirror_now = listed
        .as_array()
        .expect("calendars")
        .iter()
        .find(|c| c["id"] == json!(mirror))
        .expect("mirror")
        .clone();
    assert_eq!(mirror_now["syncStatus"], Value::Null);
}

#[tokio::test]
async fn a_mirror_stays_with_its_accounts_owner_and_members_see_no_sync_status() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    let bob = app.sign_up("bob@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;
    app.join_with_invite(&ana, &mirror, &bob).await;

    let response = app.set_role(&ana, &mirror, &bob.id, "owner").await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let error: Value = response.json().await.expect("JSON");
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|e| e.contains("stays with the owner"))
    );

    // The account's credentials stop working: only its owner is asked to reconnect.
    server.set_password("another-password-of-another-length");
    let response = app
        .as_user(Method::GET, "/api/v1/calendars/google", &ana)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let seen_by = |user: &TestUser| {
        let app = &app;
        let user = user.clone();
        let mirror = mirror.clone();
        async move {
            let listed = app.get_json_as(&user, "/api/v1/calendars").await;
            listed
                .as_array()
                .expect("calendars")
                .iter()
                .find(|c| c["id"] == json!(mirror))
                .expect("mirror")
                .clone()
        }
    };
    let for_ana = seen_by(&ana).await;
    assert_eq!(for_ana["syncStatus"], "reconnect_required");
    let for_bob = seen_by(&bob).await;
    assert_eq!(for_bob["provider"], "caldav");
    assert_eq!(for_bob["role"], "viewer");
    assert_eq!(for_bob["syncStatus"], Value::Null);
    assert_eq!(for_bob["syncErrorCode"], Value::Null);
}

#[tokio::test]
async fn a_write_that_keeps_failing_is_given_up_and_reported() {
    let mut server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = spawn_app_with(|s| {
        configure(s);
        s.caldav.outbox_give_up_ms = 300;
    })
    .await;
    let ana = app.sign_up("ana@example.com").await;
    let mirror = connect(&app, &ana, &server, "Work").await;
    let mut stream = app.stream(&ana).await;
    server.kill();
    let created = app
        .create_event(&ana, &event_body(&[&mirror], "Never delivered", 9))
        .await;
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "event_created");
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "provider_delivery");
    assert_eq!(frame["payload"]["state"], "failed");
    assert_eq!(frame["payload"]["eventID"], created["id"]);
    assert!(
        frame["payload"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("gave up after"))
    );
    assert_eq!(outbox_rows(&app).await, 0);
    // The event itself stays, here.
    let events = app.read_events(&ana, "").await;
    assert!(
        events["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["id"] == created["id"])
    );
}

#[tokio::test]
async fn an_import_into_a_connected_account_is_written_to_the_server() {
    let server = CaldavServer::start(CaldavKind::Radicale).await;
    server.make_calendar("work", "Work").await;
    let app = spawn_app_with(configure).await;
    let ana = app.sign_up("ana@example.com").await;
    connect(&app, &ana, &server, "Work").await;
    let (_, accounts) = app
        .call(Method::GET, "/api/v1/users/connections/caldav", &ana, None)
        .await;
    let account = accounts["accounts"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let file = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n\
        BEGIN:VEVENT\r\nUID:a\r\nDTSTART:20261201T090000Z\r\nDTEND:20261201T100000Z\r\nSUMMARY:One\r\nEND:VEVENT\r\n\
        BEGIN:VEVENT\r\nUID:b\r\nDTSTART:20261202T090000Z\r\nDTEND:20261202T100000Z\r\nSUMMARY:Two\r\nEND:VEVENT\r\n\
        END:VCALENDAR\r\n";
    let response = app
        .as_user(
            Method::POST,
            &format!("/api/v1/calendars/import?name=Imported&provider=caldav&accountId={account}"),
            &ana,
        )
        .header("Content-Type", "text/calendar")
        .body(file)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::CREATED);
    let imported: Value = response.json().await.expect("JSON");
    assert_eq!(imported["imported"], 2);
    assert_eq!(imported["provider"], "caldav");
    let remote = remote_calendars(&server).await;
    let (url, _) = remote
        .iter()
        .find(|(_, name)| name.as_deref() == Some("Imported"))
        .expect("the server has the imported calendar")
        .clone();
    eventually("both events reach the server", || async {
        server.list(&url).await.len() == 2
    })
    .await;
    eventually("the outbox empties", || async {
        outbox_rows(&app).await == 0
    })
    .await;
}
