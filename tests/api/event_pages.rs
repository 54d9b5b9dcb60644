//! Published event pages: publishing needs the right to edit the event and keeps its token
//! through changes, a revoked token stays dead, the public page shows exactly its fields,
//! answers given there (by guests signed in with an emailed code) land in the event's
//! attendee list and reach its members, on this instance or another, and the public routes
//! are rate-limited per address.

use reqwest::{Method, StatusCode};
use sea_orm::EntityTrait;
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{
    TestApp, TestUser, event_body, spawn_app, spawn_app_sharing_database, spawn_app_with_mail,
};
use crate::support::smtp::SmtpSink;

fn share_path(event: &str) -> String {
    format!("/api/v1/events/{event}/share")
}

fn public_path(token: &str) -> String {
    format!("/api/v1/public/events/{token}")
}

fn rsvp_path(token: &str) -> String {
    format!("/api/v1/public/events/{token}/rsvp")
}

/// An event of `owner` in `calendar` without an attendee list; its id.
async fn event_in(app: &TestApp, owner: &TestUser, calendar: &str, title: &str) -> String {
    let mut body = event_body(&[calendar], title, 9);
    body["hasAttendees"] = json!(false);
    body["description"] = json!("Bring a dish");
    body["recurrence"] = json!("RRULE:FREQ=WEEKLY");
    app.create_event(owner, &body).await;
    body["id"].as_str().expect("id").to_owned()
}

/// Publishes `event` as `user` with `body`; the status and answer.
async fn publish(app: &TestApp, user: &TestUser, event: &str, body: Value) -> (StatusCode, Value) {
    app.call(Method::PUT, &share_path(event), user, Some(&body))
        .await
}

/// The token of a successful publication.
fn token_of(share: &Value) -> String {
    let token = share["token"].as_str().expect("token");
    assert_eq!(token.len(), 32, "128 bits, hex: {token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
    token.to_owned()
}

/// A guest signed in by a mailed code (a new, verified, nameless account).
async fn guest(app: &TestApp, sink: &SmtpSink, email: &str) -> TestUser {
    let asked = app
        .post_json(
            "/api/auth/email-otp/send-verification-otp",
            &json!({ "email": email, "type": "sign-in" }),
        )
        .await;
    assert_eq!(asked.status(), StatusCode::OK);
    let mail = sink.next_mail().await;
    let code = mail
        .subject()
        .split_once(' ')
        .expect("a subject with a code")
        .0
        .to_owned();
    let signed_in = app
        .post_json(
            "/api/auth/sign-in/email-otp",
            &json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(signed_in.status(), StatusCode::OK);
    let signed = signed_in.headers()["set-auth-token"]
        .to_str()
        .expect("set-auth-token")
        .to_owned();
    let body: Value = signed_in.json().await.expect("JSON");
    assert_eq!(body["user"]["emailVerified"], true);
    TestUser {
        id: body["user"]["id"].as_str().expect("id").to_owned(),
        email: email.to_owned(),
        password: String::new(),
        token: body["token"].as_str().expect("token").to_owned(),
        signed,
    }
}

#[tokio::test]
async fn publishing_needs_edit_rights_keeps_its_token_and_turns_the_attendee_list_on() {
    let app = spawn_app().await;
    let s = shared(&app, "publish").await;
    let event = event_in(&app, &s.owner, &s.calendar, "Potluck").await;
    let link = json!({ "mode": "link" });

    for (user, status) in [
        (&s.viewer, StatusCode::FORBIDDEN),
        (&s.outsider, StatusCode::FORBIDDEN),
    ] {
        assert_eq!(publish(&app, user, &event, link.clone()).await.0, status);
        let (read, _) = app.call(Method::GET, &share_path(&event), user, None).await;
        assert_eq!(read, status);
        let (revoke, _) = app
            .call(Method::DELETE, &share_path(&event), user, None)
            .await;
        assert_eq!(revoke, status);
    }
    let (status, none) = app
        .call(Method::GET, &share_path(&event), &s.editor, None)
        .await;
    assert_eq!((status, none), (StatusCode::OK, Value::Null));

    let mut viewer_stream = app.stream(&s.viewer).await;
    let (status, share) = publish(&app, &s.editor, &event, link.clone()).await;
    assert_eq!(status, StatusCode::OK, "{share}");
    let token = token_of(&share);
    assert_eq!(
        share,
        json!({
            "attendeeVisibility": "counts",
            "indexable": false,
            "mode": "link",
            "theme": { "cover": "none", "font": "serif", "layout": "classic", "palette": "sand" },
            "token": token,
            "url": format!("{}/e/{token}", app.ctx().base_url.trim_end_matches('/')),
        })
    );
    let frame = viewer_stream.next_frame().await;
    assert_eq!(frame["type"], "event_updated");
    assert_eq!(frame["payload"]["id"], event.as_str());
    assert_eq!(
        frame["payload"]["hasAttendees"], true,
        "a page collects answers into the attendee list"
    );

    let public = json!({
        "mode": "public",
        "indexable": true,
        "attendeeVisibility": "names",
        "theme": { "palette": "moss", "layout": "poster" },
    });
    let (status, changed) = publish(&app, &s.owner, &event, public).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(changed["token"], token.as_str(), "a change keeps the token");
    assert_eq!(changed["mode"], "public");
    assert_eq!(changed["indexable"], true);
    assert_eq!(changed["attendeeVisibility"], "names");
    assert_eq!(
        changed["theme"],
        json!({ "cover": "none", "font": "serif", "layout": "poster", "palette": "moss" })
    );
    let (_, read) = app
        .call(Method::GET, &share_path(&event), &s.owner, None)
        .await;
    assert_eq!(read, changed);

    for refused in [
        json!({ "mode": "link", "indexable": true }),
        json!({ "mode": "secret" }),
        json!({}),
        json!({ "mode": "link", "attendeeVisibility": "emails" }),
        json!({ "mode": "link", "theme": { "css": "body { display: none }" } }),
        json!({ "mode": "link", "theme": { "palette": "red; background: url(x)" } }),
        json!({ "mode": "link", "theme": "sand" }),
        json!({ "mode": "link", "token": "0123456789abcdef0123456789abcdef" }),
    ] {
        let (status, body) = publish(&app, &s.owner, &event, refused.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}: {body}");
        assert!(body["error"].is_string() && body["requestId"].is_string());
    }
    let (_, still) = app
        .call(Method::GET, &share_path(&event), &s.owner, None)
        .await;
    assert_eq!(still, changed, "a refused change changed nothing");

    let (status, _) = app
        .call(Method::DELETE, &share_path(&event), &s.editor, None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app
        .call(Method::DELETE, &share_path(&event), &s.editor, None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "revoking twice is fine");
    let (_, none) = app
        .call(Method::GET, &share_path(&event), &s.owner, None)
        .await;
    assert_eq!(none, Value::Null);
    assert_eq!(
        app.get(&public_path(&token)).await.status(),
        StatusCode::NOT_FOUND
    );
    let (_, again) = publish(&app, &s.owner, &event, link).await;
    let new_token = token_of(&again);
    assert_ne!(new_token, token, "publishing again issues a new token");
    assert_eq!(
        app.get(&public_path(&token)).await.status(),
        StatusCode::NOT_FOUND,
        "a revoked token stays dead"
    );
    assert_eq!(
        app.get(&public_path(&new_token)).await.status(),
        StatusCode::OK
    );

    let missing = uuid::Uuid::new_v4();
    let (status, _) = publish(
        &app,
        &s.owner,
        &missing.to_string(),
        json!({ "mode": "link" }),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = publish(&app, &s.owner, "not-an-id", json!({ "mode": "link" })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_public_page_shows_exactly_its_fields_and_dies_with_its_event() {
    let app = spawn_app().await;
    let s = shared(&app, "public-page").await;
    let event = event_in(&app, &s.owner, &s.calendar, "Garden party").await;
    let (_, share) = publish(
        &app,
        &s.owner,
        &event,
        json!({ "mode": "public", "indexable": true, "theme": { "font": "sans" } }),
    )
    .await;
    let token = token_of(&share);

    let response = app.get(&public_path(&token)).await;
    assert_eq!(response.status(), StatusCode::OK);
    let page: Value = response.json().await.expect("JSON");
    let mut keys: Vec<&str> = page
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "description",
            "end",
            "indexable",
            "isAllDay",
            "isCanceled",
            "location",
            "organizer",
            "recurrence",
            "start",
            "theme",
            "title",
            "url"
        ]
    );
    assert_eq!(page["title"], "Garden party");
    assert_eq!(page["organizer"], "Test User");
    assert_eq!(page["description"], "Bring a dish");
    assert_eq!(page["location"], "Room 1");
    assert_eq!(page["recurrence"], "RRULE:FREQ=WEEKLY");
    assert_eq!(page["start"], "2026-07-23T09:00:00.000Z");
    assert_eq!(page["indexable"], true);
    assert_eq!(page["theme"]["font"], "sans");
    let text = page.to_string();
    assert!(!text.contains(&event) && !text.contains(&s.calendar) && !text.contains('@'));

    for unknown in [
        "0123456789abcdef0123456789abcdef".to_owned(),
        token.to_uppercase(),
        "x".repeat(4000),
        format!("{token}%27%20OR%201=1"),
    ] {
        let response = app.get(&public_path(&unknown)).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{unknown}");
        let body: Value = response.json().await.expect("JSON");
        assert!(body["error"].is_string() && body["requestId"].is_string());
    }

    let (status, _) = app
        .call(
            Method::DELETE,
            "/api/v1/events",
            &s.owner,
            Some(&json!({ "id": event })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        app.get(&public_path(&token)).await.status(),
        StatusCode::NOT_FOUND,
        "a deleted event has no page"
    );
    let conn = app.db_connection().await;
    let rows = entities::event_shares::Entity::find()
        .all(&conn)
        .await
        .expect("read");
    assert!(
        rows.iter().all(|row| row.event_id.to_string() != event),
        "the event's publications went with it"
    );
}

#[tokio::test]
async fn answers_on_the_page_land_in_the_attendee_list_and_reach_the_members() {
    let sink = SmtpSink::start().await;
    let app = spawn_app_with_mail(&sink).await;
    let s = shared(&app, "rsvp").await;
    let event = event_in(&app, &s.owner, &s.calendar, "Launch").await;
    let (_, share) = publish(
        &app,
        &s.owner,
        &event,
        json!({ "mode": "link", "attendeeVisibility": "names" }),
    )
    .await;
    let token = token_of(&share);
    let ada = guest(&app, &sink, "ada@example.net").await;

    let (status, summary) = app.call(Method::GET, &rsvp_path(&token), &ada, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        summary,
        json!({
            "counts": { "declined": 0, "going": 1, "maybe": 0 },
            "mine": null,
            "names": ["Test User"],
            "visibility": "names",
        })
    );
    let (status, body) = app
        .call(
            Method::PUT,
            &rsvp_path(&token),
            &ada,
            Some(&json!({ "status": "going" })),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a nameless guest gives a name: {body}"
    );

    let mut editor_stream = app.stream(&s.editor).await;
    let (status, summary) = app
        .call(
            Method::PUT,
            &rsvp_path(&token),
            &ada,
            Some(&json!({ "status": "going", "name": "  Ada Lovelace \r\n" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{summary}");
    assert_eq!(summary["mine"], "going");
    assert_eq!(summary["counts"]["going"], 2);
    assert_eq!(summary["names"], json!(["Ada Lovelace", "Test User"]));
    let frame = editor_stream.next_frame().await;
    assert_eq!(frame["type"], "attendance_changed");
    assert_eq!(frame["payload"]["eventID"], event.as_str());
    let attendees = frame["payload"]["attendees"].as_array().expect("attendees");
    assert!(
        attendees.iter().any(|a| a["id"] == ada.id.as_str()
            && a["name"] == "Ada Lovelace"
            && a["status"] == "going"),
        "{attendees:?}"
    );
    assert!(!frame.to_string().contains("ada@example.net"));
    let (_, listed) = app
        .call(
            Method::GET,
            &format!("/api/v1/events/{event}/attendees"),
            &s.owner,
            None,
        )
        .await;
    assert!(listed.to_string().contains(&ada.id));

    // A second answer changes the answer, never an existing name.
    let (_, summary) = app
        .call(
            Method::PUT,
            &rsvp_path(&token),
            &ada,
            Some(&json!({ "status": "maybe", "name": "Mallory" })),
        )
        .await;
    assert_eq!(summary["mine"], "maybe");
    assert_eq!(
        summary["names"],
        json!(["Test User"]),
        "only those going are named"
    );
    assert_eq!(
        summary["counts"],
        json!({ "declined": 0, "going": 1, "maybe": 1 })
    );
    assert_eq!(
        app.session(&ada.token).await["user"]["name"],
        "Ada Lovelace"
    );

    // Answering grants nothing else.
    let (status, _) = app
        .call(
            Method::GET,
            &format!("/api/v1/events/{event}/attendees"),
            &ada,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    for refused in [
        json!({ "status": "perhaps" }),
        json!({ "status": "none" }),
        json!({ "status": "going", "eventID": event }),
        json!([]),
    ] {
        let (status, _) = app
            .call(Method::PUT, &rsvp_path(&token), &ada, Some(&refused))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    }

    // The organizer decides what readers see; hidden shows nothing but one's own answer.
    publish(
        &app,
        &s.owner,
        &event,
        json!({ "mode": "link", "attendeeVisibility": "hidden" }),
    )
    .await;
    let (_, hidden) = app.call(Method::GET, &rsvp_path(&token), &ada, None).await;
    assert_eq!(
        hidden,
        json!({
            "counts": { "declined": 0, "going": 0, "maybe": 0 },
            "mine": "maybe",
            "names": [],
            "visibility": "hidden",
        })
    );

    // Only a proved address answers; a session is needed; a dead page takes no answers.
    let unverified = app.sign_up("unproved-rsvp@example.com").await;
    for method in [Method::GET, Method::PUT] {
        let (status, _) = app
            .call(
                method.clone(),
                &rsvp_path(&token),
                &unverified,
                Some(&json!({ "status": "going" })),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method}");
    }
    let anonymous = app
        .client
        .put(app.url(&rsvp_path(&token)))
        .json(&json!({ "status": "going", "name": "Nobody" }))
        .send()
        .await
        .expect("request");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    app.call(Method::DELETE, &share_path(&event), &s.owner, None)
        .await;
    let (status, _) = app
        .call(
            Method::PUT,
            &rsvp_path(&token),
            &ada,
            Some(&json!({ "status": "going" })),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// An answer given through another instance than the one its members stream from (on
/// PostgreSQL; an SQLite file serves one process, so there both are the same instance).
#[tokio::test]
async fn an_answer_reaches_members_streaming_from_any_instance() {
    let sink = SmtpSink::start().await;
    let a = spawn_app_with_mail(&sink).await;
    let other = if a.db_connection().await.get_database_backend() == sea_orm::DbBackend::Postgres {
        Some(spawn_app_sharing_database(&a).await)
    } else {
        None
    };
    let b = other.as_ref().unwrap_or(&a);
    let s = shared(&a, "rsvp-instances").await;
    let event = event_in(&a, &s.owner, &s.calendar, "Across").await;
    let (_, share) = publish(&a, &s.owner, &event, json!({ "mode": "link" })).await;
    let token = token_of(&share);
    let guest_user = guest(&a, &sink, "across@example.net").await;

    let mut owner_stream = a.stream(&s.owner).await;
    let (status, summary) = b
        .call(
            Method::PUT,
            &rsvp_path(&token),
            &guest_user,
            Some(&json!({ "status": "declined", "name": "Grace" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{summary}");
    assert_eq!(summary["counts"]["declined"], 1);
    let frame = owner_stream.next_frame().await;
    assert_eq!(frame["type"], "attendance_changed");
    assert_eq!(frame["payload"]["eventID"], event.as_str());
}

#[tokio::test]
async fn public_page_routes_are_rate_limited_per_address() {
    let app = spawn_app().await;
    let user = app.sign_up("limited-rsvp@example.com").await;
    let token = "0123456789abcdef0123456789abcdef";
    for _ in 0..60 {
        assert_eq!(
            app.get(&public_path(token)).await.status(),
            StatusCode::NOT_FOUND
        );
    }
    let limited = app.get(&public_path(token)).await;
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.headers().contains_key("retry-after"));

    for _ in 0..30 {
        let (status, _) = app
            .call(
                Method::PUT,
                &rsvp_path(token),
                &user,
                Some(&json!({ "status": "going" })),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "not verified");
    }
    let (status, _) = app
        .call(
            Method::PUT,
            &rsvp_path(token),
            &user,
            Some(&json!({ "status": "going" })),
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    for _ in 0..60 {
        let (status, _) = app.call(Method::GET, &rsvp_path(token), &user, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
    }
    let (status, _) = app.call(Method::GET, &rsvp_path(token), &user, None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn deleting_the_publisher_takes_the_pages_they_published() {
    let app = spawn_app().await;
    let s = shared(&app, "publisher-gone").await;
    let event = event_in(&app, &s.owner, &s.calendar, "Kept event").await;
    let (_, share) = publish(&app, &s.editor, &event, json!({ "mode": "link" })).await;
    let token = token_of(&share);
    assert_eq!(app.get(&public_path(&token)).await.status(), StatusCode::OK);

    let editor = bowline::domain::ids::UserId::from(s.editor.id.as_str());
    assert!(
        bowline::store::users::delete_now(&app.ctx().db, &editor)
            .await
            .expect("delete")
    );
    assert_eq!(
        app.get(&public_path(&token)).await.status(),
        StatusCode::NOT_FOUND
    );
    let conn = app.db_connection().await;
    assert!(
        entities::event_shares::Entity::find()
            .all(&conn)
            .await
            .expect("read")
            .iter()
            .all(|row| row.token != token)
    );
    let (_, none) = app
        .call(Method::GET, &share_path(&event), &s.owner, None)
        .await;
    assert_eq!(none, Value::Null, "the event stays, unpublished");
}
