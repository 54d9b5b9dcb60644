//! Who receives which event frame, exactly once: fork (`event_created` to the target's
//! members only), link (`event_updated` to the members of every linked calendar, the
//! target's included, each with their own calendars), attendance (`attendance_changed` once
//! per reader however many linked calendars they share), and `event_removed` to whoever
//! loses sight of an event by leaving a calendar or being removed from it.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, event_body, spawn_app};
use crate::support::sse::SseClient;

/// The frames `stream` (of `user`) received before a marker sent now: frames to one user
/// arrive in the order they were sent, so this is everything the last request sent them.
pub async fn drain(app: &TestApp, user: &TestUser, stream: &mut SseClient) -> Vec<Value> {
    app.ctx().shared.services.broadcast(
        [&bowline::domain::ids::UserId::from(user.id.as_str())],
        &bowline::domain::frames::Frame::new("marker", json!({})),
    );
    let mut frames = Vec::new();
    loop {
        let frame = stream.next_frame().await;
        if frame["type"] == "marker" {
            return frames;
        }
        frames.push(frame);
    }
}

/// The types of `frames`.
fn types(frames: &[Value]) -> Vec<&str> {
    frames
        .iter()
        .map(|f| f["type"].as_str().expect("type"))
        .collect()
}

#[tokio::test]
async fn fork_link_attendance_and_membership_frames_reach_exactly_their_readers() {
    let app = spawn_app().await;
    let s = shared(&app, "frames").await;
    // The editor's own calendar, read by the outsider.
    let team = app.create_calendar(&s.editor, "Editor's team").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.join_with_invite(&s.editor, &team, &s.outsider).await;
    let body = event_body(&[&s.calendar], "Shared", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let people = [&s.owner, &s.editor, &s.viewer, &s.outsider];
    let mut streams = Vec::new();
    for user in people {
        streams.push(app.stream(user).await);
    }

    // Fork into the team calendar: event_created to its members only.
    let (status, copy) = app
        .call(
            Method::POST,
            &format!("/api/v1/events/{id}/fork"),
            &s.editor,
            Some(&json!({ "calendarID": team })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let copy_id = copy["id"].as_str().expect("id").to_owned();
    for (user, stream) in people.iter().zip(streams.iter_mut()) {
        let frames = drain(&app, user, stream).await;
        if user.id == s.editor.id || user.id == s.outsider.id {
            assert_eq!(types(&frames), ["event_created"], "{}", user.email);
            assert_eq!(frames[0]["payload"]["id"], copy_id.as_str());
            assert_eq!(frames[0]["payload"]["calendars"], json!([team]));
        } else {
            assert!(frames.is_empty(), "{}: {frames:?}", user.email);
        }
    }

    // Link into the team calendar: event_updated to everyone, with their own calendars.
    let (status, _) = app
        .call(
            Method::POST,
            &format!("/api/v1/events/{id}/link"),
            &s.editor,
            Some(&json!({ "calendarID": team })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let expected = [
        json!([s.calendar]),
        json!([s.calendar, team]),
        json!([s.calendar]),
        json!([team]),
    ];
    for ((user, stream), calendars) in people.iter().zip(streams.iter_mut()).zip(expected) {
        let frames = drain(&app, user, stream).await;
        assert_eq!(types(&frames), ["event_updated"], "{}", user.email);
        assert_eq!(frames[0]["payload"]["id"], id.as_str());
        assert_eq!(
            frames[0]["payload"]["calendars"], calendars,
            "{}",
            user.email
        );
    }

    // Attendance: once per reader, the editor in both calendars included.
    let (status, _) = app
        .call(
            Method::PUT,
            &format!("/api/v1/events/{id}/attendance"),
            &s.viewer,
            Some(&json!({ "status": "maybe" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    for (user, stream) in people.iter().zip(streams.iter_mut()) {
        let frames = drain(&app, user, stream).await;
        assert_eq!(types(&frames), ["attendance_changed"], "{}", user.email);
        assert_eq!(frames[0]["payload"]["eventID"], id.as_str());
    }

    // The outsider leaves the team calendar: both events leave their view, each told once.
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/calendars/members/{team}"),
            &s.outsider,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let frames = drain(&app, &s.outsider, &mut streams[3]).await;
    let mut removed: Vec<&str> = frames
        .iter()
        .filter(|f| f["type"] == "event_removed")
        .map(|f| f["payload"]["id"].as_str().expect("id"))
        .collect();
    removed.sort_unstable();
    let mut expected = vec![id.as_str(), copy_id.as_str()];
    expected.sort_unstable();
    assert_eq!(removed, expected, "{frames:?}");
    assert_eq!(types(&frames)[0], "calendar_removed");
    let editor_frames = drain(&app, &s.editor, &mut streams[1]).await;
    assert_eq!(
        types(&editor_frames),
        ["calendar_updated"],
        "the editor still sees both"
    );

    // The viewer is removed from the shared calendar: the event leaves their view.
    let (status, _) = app
        .call(
            Method::DELETE,
            &format!("/api/v1/calendars/{}/members/{}", s.calendar, s.viewer.id),
            &s.owner,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let frames = drain(&app, &s.viewer, &mut streams[2]).await;
    assert_eq!(types(&frames), ["calendar_removed", "event_removed"]);
    assert_eq!(
        frames[1]["payload"],
        json!({ "id": id, "calendars": [], "removed": true })
    );
    let (_, read) = app
        .call(Method::GET, "/api/v1/events", &s.viewer, None)
        .await;
    assert_eq!(read["events"], json!([]));
}

#[tokio::test]
async fn deleting_a_calendar_updates_the_events_linked_into_it_from_elsewhere() {
    let app = spawn_app().await;
    let s = shared(&app, "frames-delete").await;
    let other = app.create_calendar(&s.owner, "Other").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let body = event_body(&[&s.calendar, &other], "Homed in the shared one", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let before = app.read_events(&s.owner, "").await["events"][0]["revision"].clone();
    let mut owner_stream = app.stream(&s.owner).await;
    let mut viewer_stream = app.stream(&s.viewer).await;
    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/calendars",
            &s.owner,
            Some(&json!({ "id": other, "name": "Other", "color": "#000000" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let frames = drain(&app, &s.owner, &mut owner_stream).await;
    assert_eq!(types(&frames), ["calendar_removed", "event_updated"]);
    assert_eq!(frames[1]["payload"]["id"], id.as_str());
    assert_eq!(frames[1]["payload"]["calendars"], json!([s.calendar]));
    assert_eq!(
        frames[1]["payload"]["revision"],
        before.as_i64().expect("revision") + 1,
        "an unlink is a change"
    );
    let frames = drain(&app, &s.viewer, &mut viewer_stream).await;
    assert_eq!(
        types(&frames),
        ["event_updated"],
        "same calendars, new revision"
    );
}
