//! The permission matrix of every events route: owner, editor, viewer, non-member and
//! unauthenticated callers against an event homed in a freshly shared calendar (a second
//! calendar with the same members is the target of link, fork and unlink), with every
//! refusal checked to have written nothing.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::calendars::share_new_calendar;
use crate::helpers::{TestApp, TestUser, event_body, spawn_app};
use crate::matrix::{People, check, send};

#[derive(Debug, Clone, Copy)]
enum Route {
    ListEvents,
    CreateEvent,
    UpdateEvent,
    DeleteEvent,
    UnlinkEvent,
    LinkEvent,
    ForkEvent,
    ListAttendees,
    SetAttendance,
}

/// Expected statuses for owner, editor, viewer, non-member, anonymous.
const MATRIX: [(Route, [u16; 5]); 9] = [
    (Route::ListEvents, [200, 200, 200, 200, 401]),
    (Route::CreateEvent, [201, 201, 403, 403, 401]),
    (Route::UpdateEvent, [200, 200, 403, 403, 401]),
    (Route::DeleteEvent, [200, 200, 403, 403, 401]),
    (Route::UnlinkEvent, [200, 200, 403, 403, 401]),
    (Route::LinkEvent, [200, 200, 403, 403, 401]),
    (Route::ForkEvent, [201, 201, 403, 403, 401]),
    (Route::ListAttendees, [200, 200, 200, 403, 401]),
    (Route::SetAttendance, [200, 200, 200, 403, 401]),
];

async fn call(
    app: &TestApp,
    people: &People,
    route: Route,
    caller: Option<&TestUser>,
) -> StatusCode {
    let (owner, editor, viewer) = (&people.owner, &people.editor, &people.viewer);
    let home = share_new_calendar(app, owner, editor, viewer).await;
    let other = share_new_calendar(app, owner, editor, viewer).await;
    // Unlinking needs an event in both calendars; the others start in the home one.
    let calendars: Vec<&str> = match route {
        Route::UnlinkEvent => vec![&home, &other],
        _ => vec![&home],
    };
    let mut event = event_body(&calendars, "Matrix", 9);
    let (status, _) = app
        .call(Method::POST, "/api/v1/events", owner, Some(&event))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = event["id"].as_str().expect("id").to_owned();
    let (method, path, body) = match route {
        Route::ListEvents => (Method::GET, "/api/v1/events".to_owned(), None),
        Route::CreateEvent => (
            Method::POST,
            "/api/v1/events".to_owned(),
            Some(event_body(&[&home], "New", 10)),
        ),
        Route::UpdateEvent => {
            event["title"] = json!("Renamed");
            (Method::PUT, "/api/v1/events".to_owned(), Some(event))
        }
        Route::DeleteEvent => (
            Method::DELETE,
            "/api/v1/events".to_owned(),
            Some(json!({ "id": id })),
        ),
        Route::UnlinkEvent => (
            Method::DELETE,
            "/api/v1/events".to_owned(),
            Some(json!({ "id": id, "unlinkCalendarID": other })),
        ),
        Route::LinkEvent => (
            Method::POST,
            format!("/api/v1/events/{id}/link"),
            Some(json!({ "calendarID": other })),
        ),
        Route::ForkEvent => (
            Method::POST,
            format!("/api/v1/events/{id}/fork"),
            Some(json!({ "calendarID": other })),
        ),
        Route::ListAttendees => (Method::GET, format!("/api/v1/events/{id}/attendees"), None),
        Route::SetAttendance => (
            Method::PUT,
            format!("/api/v1/events/{id}/attendance"),
            Some(json!({ "status": "maybe" })),
        ),
    };
    let (status, answer) = send(app, caller, method, &path, body.as_ref()).await;
    if let (Route::ListEvents, Some(user)) = (route, caller) {
        // Reads are not refused, they show only what the caller can see.
        let sees = answer["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["id"] == id.as_str());
        let member = user.id != people.outsider.id;
        assert_eq!(sees, member, "{} sees the event: {answer}", user.email);
    }
    status
}

#[tokio::test]
async fn every_event_route_against_every_role() {
    let app = spawn_app().await;
    let people = People::sign_up(&app, "event-matrix").await;
    check(&people, &MATRIX, async |route, caller| {
        call(&app, &people, route, caller).await
    })
    .await;
}
