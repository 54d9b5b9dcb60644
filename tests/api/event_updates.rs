//! `PUT /api/v1/events` and the calendars an event is in: links into calendars the caller
//! cannot see survive a client putting back what it read, removing a visible link needs
//! editEvents there.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, event_body, spawn_app};

/// `user`'s document of event `id` from a full read (`None` when they cannot see it).
async fn read_one(app: &TestApp, user: &TestUser, id: &str) -> Option<Value> {
    let read = app.read_events(user, "").await;
    read["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|event| event["id"] == id)
        .cloned()
}

async fn join_as(app: &TestApp, owner: &TestUser, calendar: &str, user: &TestUser, role: &str) {
    let invite = app.create_invite(owner, calendar, None).await;
    let token = invite["id"].as_str().expect("token");
    assert_eq!(
        app.join(user, calendar, token).await.status(),
        StatusCode::OK
    );
    if role != "viewer" {
        assert_eq!(
            app.set_role(owner, calendar, &user.id, role).await.status(),
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn links_the_caller_cannot_see_survive_an_update_and_removing_one_needs_edit_rights() {
    let app = spawn_app().await;
    let s = shared(&app, "hidden-links").await;
    // The outsider's calendar, where the owner of the shared calendar is an editor.
    let theirs = app.create_calendar(&s.outsider, "Outsider's").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    join_as(&app, &s.outsider, &theirs, &s.owner, "editor").await;
    let body = event_body(&[&s.calendar], "Linked twice", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let linked = app
        .as_user(Method::POST, &format!("/api/v1/events/{id}/link"), &s.owner)
        .json(&json!({ "calendarID": theirs }))
        .send()
        .await
        .expect("request");
    assert_eq!(linked.status(), StatusCode::OK);

    // The editor sees the event in the shared calendar only and puts back what they read.
    let mut read = read_one(&app, &s.editor, &id).await.expect("visible");
    assert_eq!(read["calendars"], json!([s.calendar]));
    let mut outsider_stream = app.stream(&s.outsider).await;
    read["title"] = json!("Renamed by the editor");
    let response = app.event_request(Method::PUT, &s.editor, &read).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(
        updated["calendars"],
        json!([s.calendar]),
        "the editor's view"
    );
    let frame = outsider_stream.next_frame().await;
    assert_eq!(frame["type"], "event_updated");
    assert_eq!(frame["payload"]["calendars"], json!([theirs]), "their view");
    let kept = read_one(&app, &s.outsider, &id)
        .await
        .expect("still in the outsider's calendar");
    assert_eq!(kept["title"], "Renamed by the editor");
    assert_eq!(kept["calendars"], json!([theirs]));
    let owners = read_one(&app, &s.owner, &id).await.expect("visible");
    assert_eq!(owners["calendars"], json!([s.calendar, theirs]));

    // As a viewer of the outsider's calendar the editor sees the link but may not remove it.
    join_as(&app, &s.outsider, &theirs, &s.editor, "viewer").await;
    let mut read = read_one(&app, &s.editor, &id).await.expect("visible");
    assert_eq!(read["calendars"], json!([s.calendar, theirs]));
    let revision = read["revision"].clone();
    read["calendars"] = json!([s.calendar]);
    read["title"] = json!("Unlinked by a viewer?");
    let refused = app.event_request(Method::PUT, &s.editor, &read).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let unchanged = read_one(&app, &s.outsider, &id).await.expect("still there");
    assert_eq!(unchanged["revision"], revision, "nothing was written");
    assert_eq!(unchanged["title"], "Renamed by the editor");

    // As an editor there, they may.
    assert_eq!(
        app.set_role(&s.outsider, &theirs, &s.editor.id, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    read["title"] = json!("Unlinked by an editor");
    let response = app.event_request(Method::PUT, &s.editor, &read).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(updated["calendars"], json!([s.calendar]));
    loop {
        let frame = outsider_stream.next_frame().await;
        if frame["type"] == "event_removed" {
            assert_eq!(frame["payload"]["id"], id.as_str());
            break;
        }
    }
    assert!(read_one(&app, &s.outsider, &id).await.is_none());
    let owners = read_one(&app, &s.owner, &id).await.expect("visible");
    assert_eq!(owners["calendars"], json!([s.calendar]));
}
