//! The permission matrix of every calendar, member and invite route: owner, editor, viewer,
//! non-member and unauthenticated callers, each against a freshly shared calendar, with
//! every refusal checked to have written nothing (the event routes are in
//! `event_permissions`).

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::calendars::share_new_calendar;
use crate::helpers::{TestApp, TestUser, spawn_app_with_mail};
use crate::matrix::{People, check, send};
use crate::support::smtp::SmtpSink;

#[derive(Debug, Clone, Copy)]
enum Route {
    ListCalendars,
    CreateCalendar,
    LegacySync,
    ReadCalendar,
    RenameCalendar,
    DeleteCalendar,
    ListMembers,
    Join,
    Leave,
    ChangeRole,
    RemoveMember,
    CreateInvite,
    ListInvites,
    RevokeInvite,
    SendInvite,
    Preview,
}

/// Expected statuses for owner, editor, viewer, non-member, anonymous.
const MATRIX: [(Route, [u16; 5]); 16] = [
    (Route::ListCalendars, [200, 200, 200, 200, 401]),
    (Route::CreateCalendar, [201, 201, 201, 201, 401]),
    (Route::LegacySync, [200, 200, 200, 200, 401]),
    (Route::ReadCalendar, [200, 200, 200, 403, 401]),
    (Route::RenameCalendar, [200, 403, 403, 403, 401]),
    (Route::DeleteCalendar, [200, 403, 403, 403, 401]),
    (Route::ListMembers, [200, 200, 200, 403, 401]),
    (Route::Join, [200, 200, 200, 200, 401]),
    (Route::Leave, [400, 200, 200, 403, 401]),
    (Route::ChangeRole, [200, 403, 403, 403, 401]),
    (Route::RemoveMember, [200, 403, 403, 403, 401]),
    (Route::CreateInvite, [201, 201, 403, 403, 401]),
    (Route::ListInvites, [200, 200, 403, 403, 401]),
    (Route::RevokeInvite, [200, 200, 403, 403, 401]),
    (Route::SendInvite, [204, 204, 403, 403, 401]),
    (Route::Preview, [200, 200, 200, 200, 200]),
];

async fn call(
    app: &TestApp,
    people: &People,
    route: Route,
    caller: Option<&TestUser>,
) -> StatusCode {
    let calendar = share_new_calendar(app, &people.owner, &people.editor, &people.viewer).await;
    let invite = app.create_invite(&people.owner, &calendar, None).await["id"]
        .as_str()
        .expect("token")
        .to_owned();
    let document = json!({ "id": calendar, "name": "Renamed", "color": "#000000" });
    let (method, path, body) = match route {
        Route::ListCalendars => (Method::GET, "/api/v1/calendars".into(), None),
        Route::CreateCalendar => (
            Method::POST,
            "/api/v1/calendars".into(),
            Some(
                json!({ "id": "new", "creatorID": "", "name": "Mine", "color": "#7A8BA3", "members": [] }),
            ),
        ),
        Route::LegacySync => (Method::GET, "/api/v1/calendars/google".into(), None),
        Route::ReadCalendar => (Method::GET, format!("/api/v1/calendars/{calendar}"), None),
        Route::RenameCalendar => (Method::PUT, "/api/v1/calendars".into(), Some(document)),
        Route::DeleteCalendar => (Method::DELETE, "/api/v1/calendars".into(), Some(document)),
        Route::ListMembers => (
            Method::GET,
            format!("/api/v1/calendars/{calendar}/members"),
            None,
        ),
        Route::Join => (
            Method::POST,
            format!("/api/v1/calendars/members/{calendar}"),
            Some(json!({ "token": invite })),
        ),
        Route::Leave => (
            Method::DELETE,
            format!("/api/v1/calendars/members/{calendar}"),
            None,
        ),
        Route::ChangeRole => (
            Method::PUT,
            format!("/api/v1/calendars/{calendar}/members/{}", people.viewer.id),
            Some(json!({ "role": "editor" })),
        ),
        Route::RemoveMember => (
            Method::DELETE,
            format!("/api/v1/calendars/{calendar}/members/{}", people.viewer.id),
            None,
        ),
        Route::CreateInvite => (
            Method::POST,
            "/api/v1/calendars/invites".into(),
            Some(
                json!({ "id": "new", "calendarID": calendar, "expiresAt": null, "maxUses": null }),
            ),
        ),
        Route::ListInvites => (
            Method::GET,
            format!("/api/v1/calendars/{calendar}/invites"),
            None,
        ),
        Route::RevokeInvite => (
            Method::DELETE,
            format!("/api/v1/calendars/invites/{invite}"),
            None,
        ),
        Route::SendInvite => (
            Method::POST,
            format!("/api/v1/calendars/invites/{invite}/send"),
            Some(json!({ "email": "friend@example.com" })),
        ),
        Route::Preview => (
            Method::GET,
            format!("/api/v1/calendars/tokens/{invite}"),
            None,
        ),
    };
    send(app, caller, method, &path, body.as_ref()).await.0
}

#[tokio::test]
async fn every_calendar_member_and_invite_route_against_every_role() {
    // Mail is configured so that sending an invite gets past "this server cannot mail".
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let people = People::sign_up(&app, "matrix").await;
    check(&people, &MATRIX, async |route, caller| {
        call(&app, &people, route, caller).await
    })
    .await;
}
