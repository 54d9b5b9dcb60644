//! Reminder rules: only explicit choices are returned; calendar rules need a membership (any
//! role) and null inherits; event rules need the event to be visible and null or DELETE
//! clears; strict bodies; `reminders_updated` to the user's own connections only.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{event_body, spawn_app};

fn rule(minutes: u32) -> Value {
    json!({ "rule": { "minutesBefore": minutes, "allDay": null } })
}

#[tokio::test]
async fn rules_are_stored_per_user_and_only_explicit_choices_come_back() {
    let app = spawn_app().await;
    let s = shared(&app, "rules").await;
    let (status, empty) = app
        .call(Method::GET, "/api/v1/reminders", &s.viewer, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        empty,
        json!({
            "default": { "minutesBefore": 10, "allDay": { "daysBefore": 1, "atMinute": 1080 } },
            "calendars": {},
            "events": {},
        })
    );

    let event = event_body(&[&s.calendar], "Standup", 9);
    let created = app.event_request(Method::POST, &s.owner, &event).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let event_id = event["id"].as_str().expect("id");

    let calendar_path = format!("/api/v1/reminders/calendars/{}", s.calendar);
    let event_path = format!("/api/v1/reminders/events/{event_id}");
    // The spec's empty 200 of a side-effect-only route.
    let response = app
        .as_user(Method::PUT, &calendar_path, &s.viewer)
        .json(&rule(30))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.expect("body"), "");
    let all_day = json!({ "rule": { "minutesBefore": null, "allDay": { "daysBefore": 2, "atMinute": 540 } } });
    let (status, _) = app
        .call(Method::PUT, &event_path, &s.viewer, Some(&all_day))
        .await;
    assert_eq!(status, StatusCode::OK);

    let (_, mine) = app
        .call(Method::GET, "/api/v1/reminders", &s.viewer, None)
        .await;
    assert_eq!(
        mine["calendars"],
        json!({ s.calendar.clone(): rule(30)["rule"] })
    );
    assert_eq!(mine["events"], json!({ event_id: all_day["rule"] }));
    let (_, owners) = app
        .call(Method::GET, "/api/v1/reminders", &s.owner, None)
        .await;
    assert_eq!(owners["calendars"], json!({}), "rules are per user");
    assert_eq!(owners["events"], json!({}));

    // null inherits / clears; DELETE equals PUT with null.
    let (status, _) = app
        .call(
            Method::PUT,
            &calendar_path,
            &s.viewer,
            Some(&json!({ "rule": null })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.call(Method::DELETE, &event_path, &s.viewer, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, cleared) = app
        .call(Method::GET, "/api/v1/reminders", &s.viewer, None)
        .await;
    assert_eq!(cleared["calendars"], json!({}));
    assert_eq!(cleared["events"], json!({}));
}

#[tokio::test]
async fn rules_need_a_membership_or_a_visible_event() {
    let app = spawn_app().await;
    let s = shared(&app, "gate").await;
    let event = event_body(&[&s.calendar], "Private", 10);
    app.event_request(Method::POST, &s.owner, &event).await;
    let event_id = event["id"].as_str().expect("id");

    let calendar_path = format!("/api/v1/reminders/calendars/{}", s.calendar);
    let event_path = format!("/api/v1/reminders/events/{event_id}");
    let (status, error) = app
        .call(Method::PUT, &calendar_path, &s.outsider, Some(&rule(5)))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(error["requestId"].is_string());
    // Musubi's wording on this route; the calendar routes say "You're not…".
    assert_eq!(error["error"], "You are not a member of this calendar.");
    let unknown_calendar = format!("/api/v1/reminders/calendars/{}", uuid::Uuid::new_v4());
    let (status, error) = app
        .call(Method::PUT, &unknown_calendar, &s.outsider, Some(&rule(5)))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"], "You are not a member of this calendar.");
    let (status, error) = app
        .call(
            Method::GET,
            &format!("/api/v1/calendars/{}", s.calendar),
            &s.outsider,
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error["error"], "You're not a member of this calendar.");
    let (status, _) = app
        .call(Method::PUT, &event_path, &s.outsider, Some(&rule(5)))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app
        .call(Method::DELETE, &event_path, &s.outsider, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let unknown = format!("/api/v1/reminders/events/{}", uuid::Uuid::new_v4());
    let (status, _) = app
        .call(Method::PUT, &unknown, &s.viewer, Some(&rule(5)))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, error) = app
        .call(
            Method::PUT,
            "/api/v1/reminders/calendars/not-a-uuid",
            &s.viewer,
            Some(&rule(5)),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["error"], "calendarId must be a valid UUID.");

    // A rule on an event the user later stops seeing is no longer returned.
    let (status, _) = app
        .call(Method::PUT, &event_path, &s.viewer, Some(&rule(15)))
        .await;
    assert_eq!(status, StatusCode::OK);
    let leave = format!("/api/v1/calendars/members/{}", s.calendar);
    let (status, _) = app.call(Method::DELETE, &leave, &s.viewer, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, after) = app
        .call(Method::GET, "/api/v1/reminders", &s.viewer, None)
        .await;
    assert_eq!(after["events"], json!({}));
    assert_eq!(after["calendars"], json!({}));
}

#[tokio::test]
async fn rule_bodies_are_strict() {
    let app = spawn_app().await;
    let s = shared(&app, "strict").await;
    let path = format!("/api/v1/reminders/calendars/{}", s.calendar);
    for body in [
        json!({}),
        json!(10),
        json!({ "rule": { "minutesBefore": 10 } }),
        json!({ "rule": { "minutesBefore": 40321, "allDay": null } }),
        json!({ "rule": { "minutesBefore": null, "allDay": { "daysBefore": 31, "atMinute": 0 } } }),
        json!({ "rule": null, "extra": true }),
    ] {
        let (status, error) = app.call(Method::PUT, &path, &s.editor, Some(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"]
                .as_str()
                .expect("error")
                .starts_with("Body must be { rule }")
        );
    }
}

#[tokio::test]
async fn reminder_changes_reach_only_the_users_own_connections() {
    let app = spawn_app().await;
    let s = shared(&app, "frames").await;
    let mut phone = app.stream(&s.editor).await;
    let mut laptop = app.stream(&s.editor).await;
    let mut owner = app.stream(&s.owner).await;
    let path = format!("/api/v1/reminders/calendars/{}", s.calendar);
    let (status, _) = app
        .call(Method::PUT, &path, &s.editor, Some(&rule(20)))
        .await;
    assert_eq!(status, StatusCode::OK);
    for connection in [&mut phone, &mut laptop] {
        assert_eq!(
            connection.next_frame().await,
            json!({ "type": "reminders_updated", "payload": {} })
        );
    }
    let (status, _) = app
        .call(Method::PUT, &path, &s.owner, Some(&rule(25)))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        owner.next_frame().await,
        json!({ "type": "reminders_updated", "payload": {} }),
        "the owner's first frame is their own change"
    );
    // A refused change sends nothing: the next frame is the next real change.
    let unknown_event = format!("/api/v1/reminders/events/{}", uuid::Uuid::new_v4());
    let (status, _) = app
        .call(Method::DELETE, &unknown_event, &s.editor, None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .call(
            Method::PUT,
            &path,
            &s.editor,
            Some(&json!({ "rule": "soon" })),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let marker = json!({ "baseRevision": 1, "patch": { "theme": "dark" } });
    let (status, _) = app
        .call(
            Method::PATCH,
            "/api/v1/users/me/settings",
            &s.editor,
            Some(&marker),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(phone.next_frame().await["type"], "settings_updated");
}
