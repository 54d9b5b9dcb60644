//! The event's home calendar governs it: its editors unlink it from any calendar, even one
//! they are not a member of, and a member who loses the home calendar loses the links they
//! made from its events into other calendars, and with them the events, for themselves and
//! for whoever saw the events only there. Frames and delta reads follow; links someone else
//! made stay.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, event_body, spawn_app};
use crate::support::sse::SseClient;

/// `user`'s full read and delta read (since `since`): the ids of the events each lists,
/// and the delta's deleted ids.
async fn reads(
    app: &TestApp,
    user: &TestUser,
    since: &str,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let ids = |read: &Value, key: &str| -> Vec<String> {
        let mut ids: Vec<String> = read[key]
            .as_array()
            .expect("array")
            .iter()
            .map(|e| e.get("id").unwrap_or(e).as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        ids
    };
    let full = app.read_events(user, "").await;
    let delta = app.read_events(user, &format!("?since={since}")).await;
    (
        ids(&full, "events"),
        ids(&delta, "events"),
        ids(&delta, "deletedIds"),
    )
}

/// The next frame of type `kind` on `stream`, skipping others.
async fn frame_of(stream: &mut SseClient, kind: &str) -> Value {
    loop {
        let frame = stream.next_frame().await;
        if frame["type"] == kind {
            return frame;
        }
    }
}

async fn calendar(app: &TestApp, owner: &TestUser, name: &str) -> String {
    app.create_calendar(owner, name).await["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn link(app: &TestApp, user: &TestUser, event: &str, target: &str) {
    let (status, answer) = app
        .call(
            Method::POST,
            &format!("/api/v1/events/{event}/link"),
            user,
            Some(&json!({ "calendarID": target })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// `owner`'s calendar `home` with `member` as an editor, and `member`'s calendar
/// `elsewhere` shared with `friend`, who is not in `home`.
struct World {
    owner: TestUser,
    member: TestUser,
    friend: TestUser,
    home: String,
    elsewhere: String,
}

async fn world(app: &TestApp) -> World {
    let owner = app.sign_up("home-owner@example.com").await;
    let member = app.sign_up("home-member@example.com").await;
    let friend = app.sign_up("friend@example.com").await;
    let home = calendar(app, &owner, "Home").await;
    app.join_with_invite(&owner, &home, &member).await;
    assert_eq!(
        app.set_role(&owner, &home, &member.id, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    let elsewhere = calendar(app, &member, "Elsewhere").await;
    app.join_with_invite(&member, &elsewhere, &friend).await;
    World {
        owner,
        member,
        friend,
        home,
        elsewhere,
    }
}

#[tokio::test]
async fn an_editor_of_the_home_calendar_unlinks_the_event_from_any_calendar() {
    let app = spawn_app().await;
    let w = world(&app).await;
    let event = app
        .create_event(&w.owner, &event_body(&[&w.home], "Planning", 9))
        .await;
    let id = event["id"].as_str().expect("id").to_owned();
    link(&app, &w.member, &id, &w.elsewhere).await;
    let mut friend_stream = app.stream(&w.friend).await;

    // The owner is no member of `elsewhere`, and unlinks the event from it all the same.
    let (status, answer) = app
        .call(
            Method::DELETE,
            "/api/v1/events",
            &w.owner,
            Some(&json!({ "id": id, "unlinkCalendarID": w.elsewhere })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["calendars"], json!([w.home]));
    assert_eq!(answer["removed"], false);
    let removed = frame_of(&mut friend_stream, "event_removed").await;
    assert_eq!(removed["payload"]["id"], id.as_str());
    let friends = app.read_events(&w.friend, "").await;
    assert_eq!(friends["events"], json!([]));

    // Someone governing nothing here still cannot.
    link(&app, &w.member, &id, &w.elsewhere).await;
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/events",
            &w.friend,
            Some(&json!({ "id": id, "unlinkCalendarID": w.elsewhere })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn losing_the_home_calendar_ends_access_through_the_links_one_made() {
    let app = spawn_app().await;
    let w = world(&app).await;
    let linked_by_member = app
        .create_event(&w.owner, &event_body(&[&w.home], "Linked by the member", 9))
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let created_there = app
        .create_event(
            &w.member,
            &event_body(&[&w.home, &w.elsewhere], "Created in both", 10),
        )
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    link(&app, &w.member, &linked_by_member, &w.elsewhere).await;
    // The owner, an editor of `elsewhere` too, links a third event there: not the member's.
    app.join_with_invite(&w.member, &w.elsewhere, &w.owner)
        .await;
    assert_eq!(
        app.set_role(&w.member, &w.elsewhere, &w.owner.id, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    let linked_by_owner = app
        .create_event(&w.owner, &event_body(&[&w.home], "Linked by the owner", 11))
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    link(&app, &w.owner, &linked_by_owner, &w.elsewhere).await;

    let since = app.read_events(&w.member, "").await["serverTime"]
        .as_str()
        .expect("serverTime")
        .to_owned();
    let mut member_stream = app.stream(&w.member).await;
    let mut friend_stream = app.stream(&w.friend).await;
    let mut owner_stream = app.stream(&w.owner).await;

    let removed = app
        .as_user(
            Method::DELETE,
            &format!("/api/v1/calendars/{}/members/{}", w.home, w.member.id),
            &w.owner,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(removed.status(), StatusCode::OK);

    // The member and their friend lose both events the member put into `elsewhere`.
    let mut expected = vec![linked_by_member.clone(), created_there.clone()];
    expected.sort();
    for stream in [&mut member_stream, &mut friend_stream] {
        let mut gone = Vec::new();
        while gone.len() < 2 {
            let frame = frame_of(stream, "event_removed").await;
            gone.push(frame["payload"]["id"].as_str().expect("id").to_owned());
        }
        gone.sort();
        assert_eq!(gone, expected);
    }
    // The owner sees them still, back in their home alone, one revision up.
    let updated = frame_of(&mut owner_stream, "event_updated").await;
    assert_eq!(updated["payload"]["calendars"], json!([w.home]));

    for user in [&w.member, &w.friend] {
        let (full, delta, deleted) = reads(&app, user, &since).await;
        assert_eq!(full, vec![linked_by_owner.clone()], "{}", user.email);
        assert!(
            delta.is_empty() || delta == vec![linked_by_owner.clone()],
            "{delta:?}"
        );
        assert_eq!(deleted, expected, "{}", user.email);
    }
    let owners = app.read_events(&w.owner, "").await;
    for event in owners["events"].as_array().expect("events") {
        let id = event["id"].as_str().expect("id");
        if id == linked_by_member || id == created_there {
            assert_eq!(event["calendars"], json!([w.home]), "{id}");
            assert!(event["revision"].as_i64().expect("revision") >= 2);
        }
    }
}
