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

/// Open transactions on the server's database other than the checking one's own.
async fn open_transactions(conn: &sea_orm::DatabaseConnection) -> i64 {
    use sea_orm::{ConnectionTrait, DbBackend, Statement};
    let row = conn
        .query_one_raw(Statement::from_string(
            DbBackend::Postgres,
            "SELECT count(*)::bigint AS open FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() \
             AND state LIKE 'idle in transaction%'",
        ))
        .await
        .expect("pg_stat_activity")
        .expect("a row");
    row.try_get("", "open").expect("count")
}

#[tokio::test]
async fn a_write_begun_ahead_for_a_next_batch_that_never_comes_is_released() {
    let app = spawn_app().await;
    let s = shared(&app, "ahead").await;
    let conn = app.db_connection().await;
    let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;

    // A lone creation: on PostgreSQL its batch begins the calendar's next write ahead, and
    // with no event command waiting the actor rolls it back.
    let body = crate::helpers::event_body(&[&s.calendar], "Alone", 9);
    let created = app.create_event(&s.owner, &body).await;
    if postgres {
        let released = r#"svc_db_writes_ahead_total{outcome="released"}"#;
        crate::helpers::eventually("the write begun ahead released", || async {
            sample(&app.metrics_text().await, released) == Some(1.0)
        })
        .await;
        assert_eq!(open_transactions(&conn).await, 0);
    } else {
        // SQLite's writes share one connection: nothing is begun ahead.
        let text = app.metrics_text().await;
        for outcome in ["taken", "released"] {
            let series = format!(r#"svc_db_writes_ahead_total{{outcome="{outcome}"}}"#);
            assert_eq!(sample(&text, &series), Some(0.0), "{text}");
        }
    }

    // Delta reads move past the next write (nothing holds their horizon back).
    let mut edit = created.clone();
    edit["title"] = json!("Edited");
    let response = app
        .event_request(Method::PUT, &s.owner, &edit)
        .await
        .error_for_status()
        .expect("update");
    let edited: serde_json::Value = response.json().await.expect("JSON");
    let edited_at =
        chrono::DateTime::parse_from_rfc3339(edited["updatedAt"].as_str().expect("updatedAt"))
            .expect("a time");
    crate::helpers::eventually("a delta read's serverTime past the edit", || async {
        let read = app.read_events(&s.owner, "").await;
        let at =
            chrono::DateTime::parse_from_rfc3339(read["serverTime"].as_str().expect("serverTime"))
                .expect("a time");
        at >= edited_at
    })
    .await;

    // Creations that queue up while a batch is written all commit, whether their batch
    // takes the write begun ahead or begins its own.
    let bodies: Vec<_> = (0..24)
        .map(|i| crate::helpers::event_body(&[&s.calendar], &format!("Burst {i}"), i % 20))
        .collect();
    let answers = futures::future::join_all(
        bodies
            .iter()
            .map(|body| app.event_request(Method::POST, &s.editor, body)),
    )
    .await;
    assert!(
        answers
            .iter()
            .all(|answer| answer.status() == StatusCode::CREATED)
    );
    let titles = app.read_titles(&s.viewer).await;
    for i in 0..24 {
        assert!(titles.contains(&format!("Burst {i}")), "{titles:?}");
    }
    if postgres {
        crate::helpers::eventually("every write begun ahead ended", || async {
            open_transactions(&conn).await == 0
        })
        .await;
    }
}
