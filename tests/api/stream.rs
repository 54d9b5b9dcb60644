//! `/api/stream`: authentication, the stream's framing (byte for byte), broadcasts to every
//! connection of a user and nobody else, a slow connection dropped without holding up the
//! others, connection bookkeeping, and the end of streams at shutdown.

use bowline::domain::frames::Frame;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, WAIT, event_body, sample, spawn_app, spawn_app_with};
use crate::support::sse::{SseClient, SseEvent};

async fn open(app: &TestApp, token: &str) -> SseClient {
    SseClient::open(app.client.get(app.url("/api/stream")).bearer_auth(token)).await
}

/// Waits until the registry counts `expected` open connections.
async fn wait_for_connections(app: &TestApp, expected: usize) {
    let mut counts = app.ctx().actors.sessions.counts();
    tokio::time::timeout(WAIT, counts.wait_for(|c| c.connections == expected))
        .await
        .expect("connection count reached within the wait")
        .expect("registry running");
}

#[tokio::test]
async fn the_stream_needs_credentials() {
    let app = spawn_app().await;
    let response = app.get("/api/stream").await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["error"], "Unauthorized");
    let forged = app
        .client
        .get(app.url("/api/stream"))
        .bearer_auth("not-a-session")
        .send()
        .await
        .expect("request");
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_stream_opens_with_retry_and_the_right_headers_and_keeps_alive() {
    let app = spawn_app().await;
    let user = app.sign_up("sse@example.com").await;
    let mut stream = open(&app, &user.token).await;
    let headers = stream.headers();
    assert_eq!(headers["cache-control"], "no-cache, no-transform");
    assert_eq!(headers["x-accel-buffering"], "no");
    assert_eq!(stream.next_event().await, Some(SseEvent::Retry(3000)));
    // test.toml sets a one-second keep-alive.
    assert_eq!(
        stream.next_event().await,
        Some(SseEvent::Comment("ping".into()))
    );
}

#[tokio::test]
async fn a_frame_reaches_every_connection_of_its_user_and_nobody_else() {
    let app = spawn_app().await;
    let ada = app.sign_up("ada@example.com").await;
    let bob = app.sign_up("bob@example.com").await;
    let mut phone = open(&app, &ada.token).await;
    let mut laptop = open(&app, &ada.token).await;
    let mut bobs = open(&app, &bob.token).await;
    wait_for_connections(&app, 3).await;
    let text = app.metrics_text().await;
    assert_eq!(sample(&text, "svc_sse_users"), Some(2.0), "{text}");

    let sessions = &app.ctx().actors.sessions;
    let frame = Frame::new("settings_updated", json!({ "revision": 2 }));
    sessions.broadcast(
        [
            &bowline::domain::ids::UserId::from(ada.id.as_str()),
            &bowline::domain::ids::UserId::from(ada.id.as_str()),
        ],
        &frame,
    );
    for stream in [&mut phone, &mut laptop] {
        assert_eq!(
            stream.next_frame().await,
            json!({ "type": "settings_updated", "payload": { "revision": 2 } })
        );
    }
    // Bob's next frame is the one meant for him: nothing of Ada's came first.
    sessions.broadcast(
        [&bowline::domain::ids::UserId::from(bob.id.as_str())],
        &Frame::new("reminders_updated", json!({})),
    );
    assert_eq!(bobs.next_frame().await["type"], "reminders_updated");
    // Deduplicated per user: Ada got exactly one copy per connection.
    sessions.broadcast(
        [&bowline::domain::ids::UserId::from(ada.id.as_str())],
        &Frame::new("reminders_updated", json!({})),
    );
    assert_eq!(phone.next_frame().await["type"], "reminders_updated");
    assert_eq!(laptop.next_frame().await["type"], "reminders_updated");
}

#[tokio::test]
async fn closed_connections_are_detached_and_the_session_actor_stops() {
    let app = spawn_app().await;
    let user = app.sign_up("bye@example.com").await;
    let first = open(&app, &user.token).await;
    let second = open(&app, &user.token).await;
    wait_for_connections(&app, 2).await;
    drop(first);
    wait_for_connections(&app, 1).await;
    assert!(
        app.ctx()
            .actors
            .sessions
            .is_connected(&bowline::domain::ids::UserId::from(user.id.as_str()))
    );
    drop(second);
    wait_for_connections(&app, 0).await;
    assert!(
        !app.ctx()
            .actors
            .sessions
            .is_connected(&bowline::domain::ids::UserId::from(user.id.as_str()))
    );
    let text = app.metrics_text().await;
    assert_eq!(
        sample(&text, r#"svc_actors{actor="session"}"#),
        Some(0.0),
        "{text}"
    );
}

#[tokio::test]
async fn a_failed_session_actor_ends_only_its_users_streams_and_a_reconnect_works() {
    let app = spawn_app().await;
    let ada = app.sign_up("crash@example.com").await;
    let bob = app.sign_up("steady@example.com").await;
    let ada_id = bowline::domain::ids::UserId::from(ada.id.as_str());
    let bob_id = bowline::domain::ids::UserId::from(bob.id.as_str());
    let mut adas = open(&app, &ada.token).await;
    let mut bobs = open(&app, &bob.token).await;
    wait_for_connections(&app, 2).await;
    let ctx = app.ctx().clone();
    let mut stats = ctx.actors.stats.subscribe();

    ctx.actors.sessions.inject_panic(&ada_id);
    adas.expect_end().await;
    wait_for_connections(&app, 1).await;
    tokio::time::timeout(
        WAIT,
        stats.wait_for(|s| s.failures_of(bowline::actors::ActorKind::Session) >= 1),
    )
    .await
    .expect("the failure is counted within the wait")
    .expect("stats");
    assert!(!ctx.actors.sessions.is_connected(&ada_id));

    // Bob's stream never noticed.
    let frame = Frame::new("reminders_updated", json!({}));
    ctx.actors.sessions.broadcast([&bob_id], &frame);
    assert_eq!(bobs.next_frame().await["type"], "reminders_updated");

    // Ada's client reconnects, to a fresh session actor.
    let mut again = open(&app, &ada.token).await;
    wait_for_connections(&app, 2).await;
    ctx.actors.sessions.broadcast([&ada_id], &frame);
    assert_eq!(again.next_frame().await["type"], "reminders_updated");

    let text = app.metrics_text().await;
    assert_eq!(
        sample(&text, r#"svc_actor_failures_total{actor="session"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        ctx.actors
            .stats
            .snapshot()
            .failures_of(bowline::actors::ActorKind::SessionRegistry),
        0,
        "the registry itself carried on"
    );
}

#[tokio::test]
async fn the_stream_accepts_the_session_cookie() {
    let app = spawn_app().await;
    let signed = app.sign_up("web@example.com").await.signed;
    let mut stream = SseClient::open(
        app.client
            .get(app.url("/api/stream"))
            .header("cookie", format!("better-auth.session_token={signed}")),
    )
    .await;
    assert_eq!(stream.next_event().await, Some(SseEvent::Retry(3000)));
}

#[tokio::test]
async fn open_streams_end_when_the_server_shuts_down() {
    let app = spawn_app().await;
    let user = app.sign_up("shutdown@example.com").await;
    let mut stream = open(&app, &user.token).await;
    assert_eq!(stream.next_event().await, Some(SseEvent::Retry(3000)));
    let stopping = tokio::spawn(app.stop());
    stream.expect_end().await;
    tokio::time::timeout(WAIT, stopping)
        .await
        .expect("graceful stop completes with a stream open")
        .expect("join")
        .expect("clean stop");
}

#[tokio::test]
async fn the_stream_writes_exactly_the_promised_bytes() {
    let app = spawn_app().await;
    let user = app.sign_up("bytes@example.com").await;
    let mut response = app
        .client
        .get(app.url("/api/stream"))
        .bearer_auth(&user.token)
        .send()
        .await
        .expect("stream request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    wait_for_connections(&app, 1).await;
    app.ctx().actors.sessions.broadcast(
        [&bowline::domain::ids::UserId::from(user.id.as_str())],
        &Frame::new("settings_updated", json!({ "revision": 2 })),
    );
    // The retry advice, the frame, then (test.toml: after one idle second) the keep-alive.
    let expected = concat!(
        "retry: 3000\n\n",
        "data: {\"type\":\"settings_updated\",\"payload\":{\"revision\":2}}\n\n",
        ": ping\n\n"
    );
    let mut raw = Vec::new();
    while raw.len() < expected.len() {
        let chunk = tokio::time::timeout(WAIT, response.chunk())
            .await
            .expect("bytes within the wait")
            .expect("stream readable")
            .expect("stream still open");
        raw.extend_from_slice(&chunk);
    }
    assert_eq!(String::from_utf8_lossy(&raw), expected);
}

#[tokio::test]
async fn a_slow_connection_is_dropped_when_its_queue_fills_and_the_others_go_on() {
    let app = spawn_app_with(|s| s.stream.buffer = 4).await;
    let user = app.sign_up("slow@example.com").await;
    // Opened, then never read: the socket buffers fill, then its queue of four frames.
    let mut slow = open(&app, &user.token).await;
    let mut fast = open(&app, &user.token).await;
    wait_for_connections(&app, 2).await;
    let counts = app.ctx().actors.sessions.counts();
    let sessions = &app.ctx().actors.sessions;
    let padding = "x".repeat(256 * 1024);
    let mut sent = 0u64;
    while counts.borrow().connections == 2 {
        assert!(sent < 1_000, "the slow connection was never dropped");
        sessions.broadcast(
            [&bowline::domain::ids::UserId::from(user.id.as_str())],
            &Frame::new("padding", json!({ "n": sent, "padding": padding })),
        );
        // The connection that reads gets every frame, in order, while the other falls behind.
        assert_eq!(fast.next_frame().await["payload"]["n"], sent);
        sent += 1;
    }
    wait_for_connections(&app, 1).await;
    assert!(
        app.ctx()
            .actors
            .sessions
            .is_connected(&bowline::domain::ids::UserId::from(user.id.as_str()))
    );
    let text = app.metrics_text().await;
    assert_eq!(sample(&text, "svc_sse_connections"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "svc_sse_users"), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, r#"svc_sse_dropped_total{reason="slow"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"svc_sse_dropped_total{reason="credentials"}"#),
        Some(0.0),
        "{text}"
    );

    sessions.broadcast(
        [&bowline::domain::ids::UserId::from(user.id.as_str())],
        &Frame::new("reminders_updated", json!({})),
    );
    assert_eq!(fast.next_frame().await["type"], "reminders_updated");
    // The dropped stream ends once its client reads what was already written.
    slow.expect_end().await;
}

#[tokio::test]
async fn a_change_owing_more_frames_than_a_queue_holds_reaches_a_reading_connection_whole() {
    // Queues of four frames; a calendar of twelve events, so leaving it and deleting it
    // each owe a connection more frames than its queue holds.
    let app = spawn_app_with(|s| s.stream.buffer = 4).await;
    let owner = app.sign_up("big-owner@example.com").await;
    let member = app.sign_up("big-member@example.com").await;
    let calendar = app.create_calendar(&owner, "Big").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let invite = app.create_invite(&owner, &calendar, None).await;
    let token = invite["id"].as_str().expect("token");
    assert_eq!(
        app.join(&member, &calendar, token).await.status(),
        StatusCode::OK
    );
    let mut events = Vec::new();
    for hour in 0..12 {
        let body = event_body(&[&calendar], &format!("Event {hour}"), hour);
        events.push(body["id"].as_str().expect("id").to_owned());
        app.create_event(&owner, &body).await;
    }
    events.sort();
    let mut owners = open(&app, &owner.token).await;
    let mut members = open(&app, &member.token).await;
    wait_for_connections(&app, 2).await;

    // The member leaves: told the calendar went, then every event they lost.
    let left = app
        .as_user(
            reqwest::Method::DELETE,
            &format!("/api/v1/calendars/members/{calendar}"),
            &member,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(left.status(), StatusCode::OK);
    assert_eq!(members.next_frame().await["type"], "calendar_removed");
    assert_eq!(removed_ids(&mut members, events.len()).await, events);

    // The owner deletes it: told the calendar went, then every event in it.
    let deleted = app
        .as_user(reqwest::Method::DELETE, "/api/v1/calendars", &owner)
        .json(&json!({ "id": calendar, "name": "Big", "color": "#000000" }))
        .send()
        .await
        .expect("request");
    assert_eq!(deleted.status(), StatusCode::OK);
    loop {
        // The member's departure came first (`calendar_updated`).
        if owners.next_frame().await["type"] == "calendar_removed" {
            break;
        }
    }
    assert_eq!(removed_ids(&mut owners, events.len()).await, events);

    // Both connections are still open, and still get what comes next.
    assert_eq!(app.ctx().actors.sessions.counts().borrow().connections, 2);
    for (user, stream) in [(&owner, &mut owners), (&member, &mut members)] {
        app.ctx().actors.sessions.broadcast(
            [&bowline::domain::ids::UserId::from(user.id.as_str())],
            &Frame::new("reminders_updated", json!({})),
        );
        assert_eq!(stream.next_frame().await["type"], "reminders_updated");
    }
}

/// The ids of the next `count` frames, which must all be `event_removed`, sorted.
async fn removed_ids(stream: &mut SseClient, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..count {
        let frame = stream.next_frame().await;
        assert_eq!(frame["type"], "event_removed", "{frame}");
        ids.push(frame["payload"]["id"].as_str().expect("id").to_owned());
    }
    ids.sort();
    ids
}
