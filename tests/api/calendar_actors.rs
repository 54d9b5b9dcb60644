//! Calendar actors: a panic in one leaves the others alone (restarted, counted, 503 for its
//! caller); idle actors stop; correctness holds with two servers on one database.

use bowline::AppError;
use bowline::actors::ActorKind;
use bowline::actors::calendar::CalendarMsg;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::calendars::shared;
use crate::helpers::{WAIT, sample, spawn_app, spawn_app_sharing_database, spawn_app_with};

#[tokio::test]
async fn a_panic_in_one_calendar_actor_leaves_the_others_alone() {
    let app = spawn_app().await;
    let s = shared(&app, "panic").await;
    let other = app.create_calendar(&s.outsider, "Unaffected").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let ctx = app.ctx().clone();
    let mut stats = ctx.actors.stats.subscribe();
    let calendar = uuid::Uuid::parse_str(&s.calendar).expect("uuid");

    let crashed = ctx
        .actors
        .calendars
        .ask(ctx.settings.call_timeout(), calendar.into(), |reply| {
            CalendarMsg::InjectPanic { reply }
        })
        .await;
    assert!(
        matches!(crashed, Err(AppError::Unavailable(_))),
        "{crashed:?}"
    );

    let rename = |user, id: String| {
        app.as_user(Method::PUT, "/api/v1/calendars", user)
            .json(&json!({ "id": id, "name": "Still here", "color": "#111111" }))
            .send()
    };
    assert_eq!(
        rename(&s.outsider, other).await.expect("request").status(),
        StatusCode::OK
    );
    tokio::time::timeout(
        WAIT,
        stats.wait_for(|s| s.restarts_of(ActorKind::Calendar) >= 1),
    )
    .await
    .expect("restarted within the wait")
    .expect("stats");
    assert_eq!(
        rename(&s.owner, s.calendar.clone())
            .await
            .expect("request")
            .status(),
        StatusCode::OK
    );

    let text = app.metrics_text().await;
    assert_eq!(
        sample(&text, r#"svc_actor_failures_total{actor="calendar"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"svc_actor_restarts_total{actor="calendar"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        ctx.actors
            .stats
            .snapshot()
            .failures_of(ActorKind::CalendarSupervisor),
        0
    );
}

#[tokio::test]
async fn idle_calendar_actors_stop_and_come_back_on_demand() {
    let app = spawn_app_with(|s| s.actors.calendar_idle_ms = 30).await;
    let s = shared(&app, "idle").await;
    let mut live = app.ctx().actors.calendars.live();
    tokio::time::timeout(WAIT, live.wait_for(|count| *count == 0))
        .await
        .expect("idle actors stop within the wait")
        .expect("supervisor running");
    let renamed = app
        .as_user(Method::PUT, "/api/v1/calendars", &s.owner)
        .json(&json!({ "id": s.calendar, "name": "Awake", "color": "#111111" }))
        .send()
        .await
        .expect("request");
    assert_eq!(renamed.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_single_use_invite_admits_one_person_across_two_servers() {
    let first = spawn_app().await;
    let second = spawn_app_sharing_database(&first).await;
    let s = shared(&first, "race").await;
    let invite = first.create_invite(&s.owner, &s.calendar, Some(1)).await;
    let token = invite["id"].as_str().expect("token").to_owned();
    let mut joiners = Vec::new();
    for i in 0..8 {
        joiners.push(first.sign_up(&format!("racer-{i}@example.com")).await);
    }
    let attempts = joiners.iter().enumerate().map(|(i, user)| {
        let server = if i % 2 == 0 { &first } else { &second };
        server.join(user, &s.calendar, &token)
    });
    let statuses: Vec<StatusCode> = futures::future::join_all(attempts)
        .await
        .into_iter()
        .map(|response| response.status())
        .collect();
    let admitted = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    assert_eq!(admitted, 1, "{statuses:?}");
    assert!(
        statuses
            .iter()
            .all(|s| *s == StatusCode::OK || *s == StatusCode::NOT_FOUND),
        "{statuses:?}"
    );
    let members = first
        .as_user(
            Method::GET,
            &format!("/api/v1/calendars/{}/members", s.calendar),
            &s.owner,
        )
        .send()
        .await
        .expect("request")
        .json::<Vec<serde_json::Value>>()
        .await
        .expect("JSON");
    assert_eq!(
        members.len(),
        4,
        "owner, editor, viewer and exactly one racer"
    );
    drop(second);
}
