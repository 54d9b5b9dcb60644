//! Linking an event into another calendar (the home stays) and forking it (an independent
//! copy): their rules, status codes and frames.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::{Shared, shared};
use crate::helpers::{TestUser, event_body, spawn_app};

#[tokio::test]
async fn link_keeps_the_home_and_fork_makes_an_independent_copy() {
    let app = spawn_app().await;
    let Shared {
        owner,
        editor,
        viewer,
        calendar,
        ..
    } = shared(&app, "link").await;
    let personal: Value = app.get_json_as(&editor, "/api/v1/calendars").await;
    let editors_personal = personal
        .as_array()
        .expect("array")
        .iter()
        .find(|c| c["isDefault"] == true)
        .expect("personal")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let body = event_body(&[&calendar], "Shared thing", 9);
    app.create_event(&owner, &body).await;
    let id = body["id"].as_str().expect("id");
    let link = |user: &TestUser, target: &str| {
        app.as_user(Method::POST, &format!("/api/v1/events/{id}/link"), user)
            .json(&json!({ "calendarID": target }))
            .send()
    };
    let mut viewer_stream = app.stream(&viewer).await;
    let linked = link(&editor, &editors_personal).await.expect("request");
    assert_eq!(linked.status(), StatusCode::OK);
    let linked: Value = linked.json().await.expect("JSON");
    assert_eq!(linked["originCalendarID"], calendar.as_str());
    assert_eq!(linked["calendars"], json!([calendar, editors_personal]));
    assert_eq!(viewer_stream.next_frame().await["type"], "event_updated");
    // Idempotent.
    assert_eq!(
        link(&editor, &editors_personal)
            .await
            .expect("request")
            .status(),
        StatusCode::OK
    );
    // A viewer cannot link into a calendar they cannot edit; nobody can into a foreign one.
    assert_eq!(
        link(&viewer, &calendar).await.expect("request").status(),
        StatusCode::FORBIDDEN
    );
    let bad = app
        .as_user(
            Method::POST,
            "/api/v1/events/not-an-id_1700000000000/link",
            &editor,
        )
        .json(&json!({ "calendarID": calendar }))
        .send()
        .await
        .expect("request");
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        bad.json::<Value>().await.expect("JSON")["error"],
        "eventId must be an event id, not an occurrence."
    );

    let viewers_personal = {
        let listed: Value = app.get_json_as(&viewer, "/api/v1/calendars").await;
        listed
            .as_array()
            .expect("array")
            .iter()
            .find(|c| c["isDefault"] == true)
            .expect("personal")["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let fork = app
        .as_user(Method::POST, &format!("/api/v1/events/{id}/fork"), &viewer)
        .json(&json!({ "calendarID": viewers_personal }))
        .send()
        .await
        .expect("request");
    assert_eq!(fork.status(), StatusCode::CREATED);
    let copy: Value = fork.json().await.expect("JSON");
    assert_ne!(copy["id"], body["id"]);
    assert_eq!(copy["creatorID"], viewer.id.as_str());
    assert_eq!(copy["organizer"], viewer.id.as_str());
    assert_eq!(copy["originCalendarID"], viewers_personal.as_str());
    assert_eq!(copy["title"], "Shared thing");
    assert_eq!(copy["calendars"], json!([viewers_personal]));
    let again = app
        .as_user(Method::POST, &format!("/api/v1/events/{id}/fork"), &owner)
        .json(&json!({ "calendarID": calendar }))
        .send()
        .await
        .expect("request");
    assert_eq!(
        again.status(),
        StatusCode::BAD_REQUEST,
        "already in that calendar"
    );
}
