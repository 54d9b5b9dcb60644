//! Live frames across instances on one PostgreSQL database: a change made through one
//! instance reaches the streams held by every other, once each and in commit order, with
//! the same content as on one instance — large changes too (past `NOTIFY`'s 8,000 bytes).
//! An SQLite file serves one process, which sends nothing through the database: these
//! tests need several processes' worth of instances, so they run on PostgreSQL.

use std::collections::HashMap;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, TestUser, event_body, spawn_app, spawn_app_sharing_database, until_pg_count,
};
use crate::support::sse::SseClient;

/// Two more instances beside `a` on its database, or `None` on SQLite.
async fn two_more(a: &TestApp) -> Option<(TestApp, TestApp)> {
    if a.db_connection().await.get_database_backend() != sea_orm::DbBackend::Postgres {
        // One process serves an SQLite file: no frame goes through the database.
        return None;
    }
    let b = spawn_app_sharing_database(a).await;
    let c = spawn_app_sharing_database(a).await;
    Some((b, c))
}

/// The next `n` frames of `stream`.
async fn frames(stream: &mut SseClient, n: usize) -> Vec<Value> {
    let mut frames = Vec::with_capacity(n);
    while frames.len() < n {
        frames.push(stream.next_frame().await);
    }
    frames
}

/// A marker frame sent to `user` through `app` after everything sent before it, then the
/// frames of `stream` up to it: nothing more arrived than what was read.
async fn nothing_more(app: &TestApp, user: &str, stream: &mut SseClient) {
    app.ctx().shared.services.broadcast(
        [&bowline::domain::ids::UserId::from(user)],
        &bowline::domain::frames::Frame::new("marker", json!({})),
    );
    let next = stream.next_frame().await;
    assert_eq!(
        next["type"], "marker",
        "no frame beyond those expected: {next}"
    );
}

/// An owner and an editor of a new calendar on `app`, and the calendar's id.
async fn owner_and_editor(app: &TestApp, tag: &str) -> (TestUser, TestUser, String) {
    let owner = app.sign_up(&format!("{tag}-owner@example.com")).await;
    let editor = app.sign_up(&format!("{tag}-editor@example.com")).await;
    let calendar = app.create_calendar(&owner, tag).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.join_with_invite(&owner, &calendar, &editor).await;
    let response = app.set_role(&owner, &calendar, &editor.id, "editor").await;
    assert_eq!(response.status(), StatusCode::OK);
    (owner, editor, calendar)
}

#[tokio::test]
async fn a_stream_on_one_instance_gets_the_writes_made_through_the_others_once_and_in_order() {
    let a = spawn_app().await;
    let Some((b, c)) = two_more(&a).await else {
        return;
    };
    let (owner, editor, calendar) = owner_and_editor(&a, "frames").await;
    let mut on_a = a.stream(&owner).await;
    let mut on_b = b.stream(&editor).await;

    // Writes through B and C in turn, each answered before the next: the commit order.
    let mut expected = Vec::new();
    for n in 0..12 {
        let (through, user) = if n % 2 == 0 {
            (&b, &owner)
        } else {
            (&c, &editor)
        };
        let created = through
            .create_event(user, &event_body(&[&calendar], &format!("E{n}"), 9))
            .await;
        expected.push(("event_created", created["id"].clone(), format!("E{n}")));
        let mut renamed = created.clone();
        renamed["title"] = json!(format!("E{n} renamed"));
        let response = through.event_request(Method::PUT, user, &renamed).await;
        assert_eq!(response.status(), StatusCode::OK);
        expected.push((
            "event_updated",
            created["id"].clone(),
            format!("E{n} renamed"),
        ));
    }

    for (stream, user, app) in [(&mut on_a, &owner, &a), (&mut on_b, &editor, &b)] {
        let got = frames(stream, expected.len()).await;
        let seen: Vec<(&str, Value, String)> = got
            .iter()
            .map(|frame| {
                (
                    frame["type"].as_str().expect("type"),
                    frame["payload"]["id"].clone(),
                    frame["payload"]["title"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect();
        let wanted: Vec<(&str, Value, String)> = expected
            .iter()
            .map(|(kind, id, title)| (*kind, id.clone(), title.clone()))
            .collect();
        assert_eq!(
            seen, wanted,
            "{}: every write once, in commit order",
            user.email
        );
        for frame in &got {
            assert_eq!(frame["payload"]["calendars"], json!([calendar]));
        }
        nothing_more(app, &user.id, stream).await;
    }
}

/// Events written one after the other by one writer: each created, then renamed twice.
const EACH: usize = 10;

/// [`EACH`] events created through `app` by `user` in `calendar`, each renamed twice.
async fn write_series(app: &TestApp, user: &TestUser, calendar: &str, prefix: &str) {
    for n in 0..EACH {
        let created = app
            .create_event(user, &event_body(&[calendar], &format!("{prefix}{n}"), 10))
            .await;
        let mut renamed = created;
        for round in 0..2 {
            renamed["title"] = json!(format!("{prefix}{n} r{round}"));
            let response = app.event_request(Method::PUT, user, &renamed).await;
            assert_eq!(response.status(), StatusCode::OK);
            renamed = response.json().await.expect("JSON");
        }
    }
}

#[tokio::test]
async fn concurrent_writers_on_two_instances_reach_a_third_with_each_event_in_revision_order() {
    let a = spawn_app().await;
    let Some((b, c)) = two_more(&a).await else {
        return;
    };
    let (owner, editor, calendar) = owner_and_editor(&a, "race").await;
    let mut on_a = a.stream(&owner).await;

    tokio::join!(
        write_series(&b, &owner, &calendar, "b"),
        write_series(&c, &editor, &calendar, "c")
    );

    let got = frames(&mut on_a, 2 * EACH * 3).await;
    let mut by_event: HashMap<String, Vec<(String, i64)>> = HashMap::new();
    for frame in &got {
        by_event
            .entry(frame["payload"]["id"].as_str().expect("id").to_owned())
            .or_default()
            .push((
                frame["type"].as_str().expect("type").to_owned(),
                frame["payload"]["revision"].as_i64().expect("revision"),
            ));
    }
    assert_eq!(by_event.len(), 2 * EACH, "every event reached A");
    for (event, seen) in by_event {
        assert_eq!(
            seen,
            vec![
                ("event_created".to_owned(), 1),
                ("event_updated".to_owned(), 2),
                ("event_updated".to_owned(), 3)
            ],
            "{event}: each change once, in commit order"
        );
    }
    nothing_more(&a, &owner.id, &mut on_a).await;
}

#[tokio::test]
async fn a_change_too_large_for_one_notification_still_reaches_the_other_instances() {
    let a = spawn_app().await;
    let Some((b, _c)) = two_more(&a).await else {
        return;
    };
    let owner = a.sign_up("large-owner@example.com").await;
    let calendar = a.create_calendar(&owner, "Large").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut on_a = a.stream(&owner).await;
    let mut body = event_body(&[&calendar], "Large", 11);
    let description = "Ünïcode and a long agenda. ".repeat(600);
    body["description"] = json!(description);
    let created = b.create_event(&owner, &body).await;
    let frame = on_a.next_frame().await;
    assert_eq!(frame["type"], "event_created");
    assert_eq!(frame["payload"]["id"], created["id"]);
    assert_eq!(frame["payload"]["description"], json!(description));

    // Deleting the calendar owes more frames at once than one notification holds: they
    // go as several notices, none stored, and all arrive in order.
    let ids: Vec<Value> = {
        let mut ids = Vec::new();
        for n in 0..100 {
            let mut body = event_body(&[&calendar], &format!("Bulk {n}"), 12);
            body["description"] = json!("x".repeat(40));
            ids.push(b.create_event(&owner, &body).await["id"].clone());
        }
        ids
    };
    for id in &ids {
        let frame = on_a.next_frame().await;
        assert_eq!(frame["type"], "event_created");
        assert_eq!(&frame["payload"]["id"], id);
    }
    let response = b
        .as_user(Method::DELETE, "/api/v1/calendars", &owner)
        .json(&json!({ "id": calendar, "name": "Large", "color": "#7A8BA3" }))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    let got = frames(&mut on_a, ids.len() + 2).await;
    assert_eq!(
        got[0]["type"], "calendar_removed",
        "the calendar's removal first"
    );
    let mut removed: Vec<&Value> = got[1..]
        .iter()
        .map(|frame| {
            assert_eq!(frame["type"], "event_removed", "{frame}");
            &frame["payload"]["id"]
        })
        .collect();
    let mut expected: Vec<&Value> = ids.iter().chain([&created["id"]]).collect();
    removed.sort_by_key(|id| id.to_string());
    expected.sort_by_key(|id| id.to_string());
    assert_eq!(removed, expected, "every event's removal, once");
    nothing_more(&a, &owner.id, &mut on_a).await;
    // Only the one frame larger than a notification was stored for the listeners to read.
    until_pg_count(
        &a.db_connection().await,
        "SELECT count(*)::bigint AS n FROM instance_notices",
        |n| n == 1,
        "one stored notice",
    )
    .await;
}
