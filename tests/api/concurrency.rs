//! Concurrent edits of one calendar: nothing is lost, revisions are gapless, and every
//! member receives every change's frame exactly once, in order.

use std::collections::BTreeMap;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use bowline::actors::calendar::{CalendarMsg, EventCommand};
use bowline::domain::events::EventInput;
use bowline::domain::ids::{EventId, UserId};
use bowline::http::event_bodies::EventBody;

use crate::calendars::shared;
use crate::helpers::{TestApp, event_body, sample, spawn_app};

#[tokio::test]
async fn fifty_concurrent_updates_lose_nothing_and_every_member_gets_every_frame_once() {
    let app = spawn_app().await;
    let s = shared(&app, "concurrent").await;
    let mut bodies = Vec::new();
    for i in 0..5 {
        let body = event_body(&[&s.calendar], &format!("event {i}"), 8 + i);
        assert_eq!(
            app.event_request(Method::POST, &s.owner, &body)
                .await
                .status(),
            StatusCode::CREATED
        );
        bodies.push(body);
    }
    let mut streams = vec![
        app.stream(&s.owner).await,
        app.stream(&s.editor).await,
        app.stream(&s.viewer).await,
    ];
    let writers = [&s.owner, &s.editor];
    let updates = (0..50).map(|i| {
        let mut body: Value = bodies[i % bodies.len()].clone();
        body["title"] = json!(format!("update {i}"));
        let writer = writers[i % writers.len()];
        let app = &app;
        async move { app.event_request(Method::PUT, writer, &body).await }
    });
    let responses = futures::future::join_all(updates).await;
    let mut acknowledged: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for response in responses {
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("JSON");
        acknowledged
            .entry(body["id"].as_str().expect("id").to_owned())
            .or_default()
            .push(body["revision"].as_i64().expect("revision"));
    }
    for revisions in acknowledged.values_mut() {
        revisions.sort_unstable();
        let expected: Vec<i64> = (2..2 + revisions.len() as i64).collect();
        assert_eq!(
            *revisions, expected,
            "gapless, no revision twice: no update lost"
        );
    }
    let finals = app.read_events(&s.viewer, "").await;
    for event in finals["events"].as_array().expect("events") {
        let id = event["id"].as_str().expect("id");
        assert_eq!(event["revision"].as_i64(), acknowledged[id].last().copied());
    }

    for stream in &mut streams {
        let mut seen: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for _ in 0..50 {
            let frame = stream.next_frame().await;
            assert_eq!(frame["type"], "event_updated");
            seen.entry(frame["payload"]["id"].as_str().expect("id").to_owned())
                .or_default()
                .push(frame["payload"]["revision"].as_i64().expect("revision"));
        }
        assert_eq!(
            seen, acknowledged,
            "every change once, in commit order per event"
        );
    }
}

#[tokio::test]
async fn concurrent_creates_are_committed_together_but_answered_one_by_one() {
    let app = spawn_app().await;
    let s = shared(&app, "group").await;
    let mut streams = vec![
        app.stream(&s.owner).await,
        app.stream(&s.editor).await,
        app.stream(&s.viewer).await,
    ];
    let taken = event_body(&[&s.calendar], "already there", 7);
    let created = app.event_request(Method::POST, &s.owner, &taken).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    for stream in &mut streams {
        assert_eq!(stream.next_frame().await["payload"]["id"], taken["id"]);
    }

    // 60 creates at once: most fine, some reusing an id (409), some by a viewer (403).
    let twin = event_body(&[&s.calendar], "twin", 9);
    let requests: Vec<(&crate::helpers::TestUser, Value, StatusCode)> = (0..60)
        .map(|i| match i % 10 {
            3 => (&s.editor, taken.clone(), StatusCode::CONFLICT),
            7 => (
                &s.viewer,
                event_body(&[&s.calendar], "viewer", 9),
                StatusCode::FORBIDDEN,
            ),
            _ => (
                if i % 2 == 0 { &s.owner } else { &s.editor },
                event_body(&[&s.calendar], &format!("new {i}"), 10),
                StatusCode::CREATED,
            ),
        })
        .chain(std::iter::repeat_n(
            (&s.owner, twin.clone(), StatusCode::CREATED),
            2,
        ))
        .collect();
    let responses = futures::future::join_all(
        requests
            .iter()
            .map(|(user, body, _)| app.event_request(Method::POST, user, body)),
    )
    .await;
    let mut created_ids = std::collections::BTreeSet::new();
    let mut twins = Vec::new();
    for ((_, body, expected), response) in requests.iter().zip(responses) {
        let status = response.status();
        if body["id"] == twin["id"] {
            twins.push(status);
            if status == StatusCode::CREATED {
                created_ids.insert(body["id"].as_str().expect("id").to_owned());
            }
            continue;
        }
        assert_eq!(status, *expected, "{}", body["title"]);
        if status == StatusCode::CREATED {
            let event: Value = response.json().await.expect("JSON");
            assert_eq!(event["revision"], 1);
            assert_eq!(event["calendars"], json!([s.calendar]));
            created_ids.insert(event["id"].as_str().expect("id").to_owned());
        }
    }
    twins.sort();
    assert_eq!(
        twins,
        [StatusCode::CREATED, StatusCode::CONFLICT],
        "one id, one event"
    );
    assert_eq!(created_ids.len(), 49);

    for stream in &mut streams {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..created_ids.len() {
            let frame = stream.next_frame().await;
            assert_eq!(frame["type"], "event_created");
            assert!(seen.insert(frame["payload"]["id"].as_str().expect("id").to_owned()));
        }
        assert_eq!(
            seen, created_ids,
            "every created event once, nothing refused"
        );
    }
    let all = app.read_events(&s.viewer, "").await;
    assert_eq!(all["events"].as_array().expect("events").len(), 50);

    // Every command went through the group commit: the batch sizes add up to 1 + 62.
    let metrics = app.metrics_text().await;
    assert_eq!(
        sample(&metrics, "svc_event_commit_batch_size_sum{kind=\"create\"}"),
        Some(63.0)
    );
    let batches = sample(
        &metrics,
        "svc_event_commit_batch_size_count{kind=\"create\"}",
    )
    .expect("count");
    assert!((2.0..=63.0).contains(&batches), "{batches}");
}

#[tokio::test]
async fn an_update_based_on_a_stale_revision_is_a_conflict_with_the_current_event() {
    let app = spawn_app().await;
    let s = shared(&app, "stale").await;
    let body = event_body(&[&s.calendar], "Original", 9);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );

    let mut first = body.clone();
    first["title"] = json!("First");
    first["revision"] = json!(1);
    let response = app.event_request(Method::PUT, &s.editor, &first).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(updated["revision"], 2);

    // The owner still holds revision 1: refused, nothing changes, `current` to merge with.
    let mut second = body.clone();
    second["title"] = json!("Second");
    second["revision"] = json!(1);
    let response = app.event_request(Method::PUT, &s.owner, &second).await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let conflict: Value = response.json().await.expect("JSON");
    assert_eq!(conflict["error"], "EVENT_CONFLICT");
    assert_eq!(conflict["current"]["revision"], 2);
    assert_eq!(conflict["current"]["title"], "First");
    assert_eq!(conflict["current"]["calendars"], json!([s.calendar]));

    // Retried on the current revision, it applies; without a revision it always does.
    second["revision"] = json!(2);
    let response = app.event_request(Method::PUT, &s.owner, &second).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut blind = body.clone();
    blind["title"] = json!("Blind");
    let response = app.event_request(Method::PUT, &s.owner, &blind).await;
    assert_eq!(response.status(), StatusCode::OK);
    let stored = app.read_events(&s.viewer, "").await;
    assert_eq!(stored["events"][0]["title"], "Blind");
    assert_eq!(stored["events"][0]["revision"], 4);

    let mut malformed = body.clone();
    malformed["revision"] = json!("two");
    let response = app.event_request(Method::PUT, &s.owner, &malformed).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

/// Holds every write to `calendar` until dropped: on SQLite the server's one writer
/// connection, on PostgreSQL the calendar's row (every event edit locks its calendars
/// first). Commands sent meanwhile queue up in the calendar's actor.
#[expect(dead_code, reason = "held until dropped, never read")]
pub(crate) enum WriteHold {
    Sqlite(Box<bowline::store::WriteTxn>),
    Postgres(sea_orm::DatabaseTransaction),
}

pub(crate) async fn hold_writes(app: &TestApp, calendar: &str) -> WriteHold {
    use sea_orm::{ConnectionTrait, TransactionTrait};
    if app.ctx().db.backend() != bowline::store::Backend::Postgres {
        return WriteHold::Sqlite(Box::new(app.ctx().db.begin_write().await.expect("writer")));
    }
    let holder = app.db_connection().await.begin().await.expect("begin");
    holder
        .execute_unprepared(&format!(
            "SELECT 1 FROM calendars WHERE id = '{calendar}' FOR UPDATE"
        ))
        .await
        .expect("lock the calendar");
    WriteHold::Postgres(holder)
}

/// Sends `requests` at once and lets `hold` go once each of them is answered or waiting
/// for it (in progress at the server): the responses, in order.
pub(crate) async fn send_while_held(
    app: &TestApp,
    hold: WriteHold,
    requests: impl IntoIterator<Item = reqwest::RequestBuilder>,
) -> Vec<reqwest::Response> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let requests: Vec<_> = requests.into_iter().collect();
    let count = requests.len() as f64;
    let answered = AtomicUsize::new(0);
    let sent = futures::future::join_all(requests.into_iter().map(|request| async {
        let response = request.send().await.expect("request");
        answered.fetch_add(1, Ordering::SeqCst);
        response
    }));
    let release = async {
        tokio::time::timeout(crate::helpers::WAIT, async {
            loop {
                let waiting = writes_in_flight(&app.metrics_text().await);
                if waiting + answered.load(Ordering::SeqCst) as f64 >= count {
                    break;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("every request is waiting");
        drop(hold);
    };
    tokio::join!(sent, release).0
}

/// Requests in progress that are not reads (the metrics reads are `GET`s).
fn writes_in_flight(metrics: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| {
            line.starts_with("svc_http_requests_in_flight{") && !line.contains("method=\"GET\"")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn concurrent_edits_are_committed_together_but_answered_and_refused_one_by_one() {
    let app = spawn_app().await;
    let s = shared(&app, "edit-batch").await;
    let side = app.create_calendar(&s.editor, "Side").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut events = Vec::new();
    for i in 0..5 {
        let body = event_body(&[&s.calendar], &format!("event {i}"), 8 + i);
        app.create_event(&s.owner, &body).await;
        events.push(body);
    }
    let id = |i: usize| events[i]["id"].as_str().expect("id").to_owned();
    let mut streams = [
        app.stream(&s.owner).await,
        app.stream(&s.editor).await,
        app.stream(&s.viewer).await,
    ];

    let hold = hold_writes(&app, &s.calendar).await;
    let mut edited = events[0].clone();
    edited["title"] = json!("edited");
    let mut by_viewer = events[1].clone();
    by_viewer["title"] = json!("not allowed");
    let mut stale = events[2].clone();
    stale["title"] = json!("stale");
    stale["revision"] = json!(0);
    let edits = vec![
        (
            app.as_user(Method::PUT, "/api/v1/events", &s.editor)
                .json(&edited),
            StatusCode::OK,
        ),
        (
            app.as_user(Method::PUT, "/api/v1/events", &s.viewer)
                .json(&by_viewer),
            StatusCode::FORBIDDEN,
        ),
        (
            app.as_user(Method::PUT, "/api/v1/events", &s.owner)
                .json(&stale),
            StatusCode::CONFLICT,
        ),
        (
            app.as_user(
                Method::POST,
                &format!("/api/v1/events/{}/link", id(2)),
                &s.editor,
            )
            .json(&json!({ "calendarID": side })),
            StatusCode::OK,
        ),
        (
            app.as_user(
                Method::PUT,
                &format!("/api/v1/events/{}/attendance", id(3)),
                &s.viewer,
            )
            .json(&json!({ "status": "going" })),
            StatusCode::OK,
        ),
        (
            app.as_user(Method::DELETE, "/api/v1/events", &s.owner)
                .json(&json!({ "id": id(4) })),
            StatusCode::OK,
        ),
    ];
    let expected: Vec<StatusCode> = edits.iter().map(|(_, status)| *status).collect();
    // Some edits are refused before they reach the actor; the others wait for the hold.
    let responses =
        send_while_held(&app, hold, edits.into_iter().map(|(request, _)| request)).await;
    let mut answers = Vec::new();
    for response in responses {
        let status = response.status();
        answers.push((status, response.json::<Value>().await.expect("JSON")));
    }
    let statuses: Vec<StatusCode> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(statuses, expected, "{answers:?}");
    assert_eq!(answers[0].1["title"], "edited");
    assert_eq!(answers[0].1["revision"], 2);
    assert_eq!(answers[2].1["error"], "EVENT_CONFLICT");
    assert_eq!(answers[3].1["calendars"], json!([s.calendar, side]));
    assert_eq!(answers[4].1[0]["status"], "going");
    assert_eq!(answers[5].1["removed"], true);

    // Each reader gets each change once, with their own calendars.
    for (stream, linked) in streams.iter_mut().zip([
        json!([s.calendar]),
        json!([s.calendar, side]),
        json!([s.calendar]),
    ]) {
        let mut seen = BTreeMap::new();
        for _ in 0..4 {
            let frame = stream.next_frame().await;
            let payload = &frame["payload"];
            let event = payload["id"].as_str().or(payload["eventID"].as_str());
            let kind = frame["type"].as_str().expect("type").to_owned();
            assert!(
                seen.insert(event.expect("id").to_owned(), (kind, payload.clone()))
                    .is_none()
            );
        }
        assert_eq!(seen[&id(0)].0, "event_updated");
        assert_eq!(seen[&id(0)].1["title"], "edited");
        assert_eq!(seen[&id(2)].0, "event_updated");
        assert_eq!(seen[&id(2)].1["calendars"], linked);
        assert_eq!(seen[&id(3)].0, "attendance_changed");
        assert_eq!(seen[&id(4)].0, "event_removed");
    }
    let titles: Vec<String> = app.read_events(&s.viewer, "").await["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["title"].as_str().expect("title").to_owned())
        .collect();
    assert_eq!(titles.len(), 4);
    assert!(titles.contains(&"edited".to_owned()));
    assert!(titles.contains(&"event 1".to_owned()));
    assert!(titles.contains(&"event 2".to_owned()));

    // Every edit went through a batch, and some shared one.
    let metrics = app.metrics_text().await;
    assert_eq!(
        sample(&metrics, "svc_event_commit_batch_size_sum{kind=\"edit\"}"),
        Some(6.0)
    );
    let batches =
        sample(&metrics, "svc_event_commit_batch_size_count{kind=\"edit\"}").expect("count");
    assert!(batches < 6.0, "{batches} batches for 6 edits");
}

/// `command` for `calendar`'s actor, sent in the order the returned futures are first polled.
async fn ask_event<T: Send + 'static>(
    app: &TestApp,
    calendar: &str,
    command: impl FnOnce(bowline::actors::calendar::Reply<T>) -> EventCommand,
) -> Result<T, bowline::AppError> {
    let ctx = app.ctx();
    let calendar = uuid::Uuid::parse_str(calendar).expect("uuid");
    ctx.actors
        .calendars
        .ask(ctx.settings.call_timeout(), calendar.into(), |reply| {
            CalendarMsg::Event(command(reply))
        })
        .await
}

/// An event body as the actor receives it.
fn input(body: &Value) -> EventInput {
    let body: EventBody = serde_json::from_value(body.clone()).expect("event body");
    EventInput::try_from(body).expect("valid event")
}

/// The commands committed by calendar actors, over every kind of batch.
fn committed_commands(metrics: &str) -> f64 {
    batch_sample(metrics, "sum")
}

/// The batches calendar actors committed, of every kind.
fn committed_batches(metrics: &str) -> f64 {
    batch_sample(metrics, "count")
}

fn batch_sample(metrics: &str, which: &str) -> f64 {
    ["create", "edit", "mixed"]
        .iter()
        .filter_map(|kind| {
            sample(
                metrics,
                &format!("svc_event_commit_batch_size_{which}{{kind=\"{kind}\"}}"),
            )
        })
        .sum()
}

#[tokio::test]
async fn creations_queued_among_edits_commit_with_them_in_arrival_order() {
    let app = spawn_app().await;
    let s = shared(&app, "mixed-batch").await;
    let first = event_body(&[&s.calendar], "first", 8);
    let second = event_body(&[&s.calendar], "second", 9);
    app.create_event(&s.owner, &first).await;
    app.create_event(&s.owner, &second).await;
    let mut streams = [app.stream(&s.owner).await, app.stream(&s.viewer).await];
    let metrics = app.metrics_text().await;
    let (committed_before, batches_before) =
        (committed_commands(&metrics), committed_batches(&metrics));
    let user = |u: &crate::helpers::TestUser| UserId::new(u.id.as_str());

    let mut updated = first.clone();
    updated["title"] = json!("first, edited");
    let mut taken = event_body(&[&s.calendar], "taken id", 10);
    taken["id"] = second["id"].clone();
    let by_viewer = event_body(&[&s.calendar], "not allowed", 11);
    let doomed = event_body(&[&s.calendar], "doomed", 12);
    let created = event_body(&[&s.calendar], "created", 13);
    let mut created_then_edited = created.clone();
    created_then_edited["title"] = json!("created, edited");
    let id_of = |body: &Value| {
        EventId::from_uuid(uuid::Uuid::parse_str(body["id"].as_str().expect("id")).expect("uuid"))
    };

    let hold = hold_writes(&app, &s.calendar).await;
    let mut live = app.ctx().actors.calendars.live();
    let actors_before = *live.borrow_and_update();
    let calendar = s.calendar.as_str();
    // Sent in this order: the supervisor forwards them in it, and the actor queues them
    // behind whatever batch the hold keeps waiting.
    let update_first = ask_event(&app, calendar, |reply| EventCommand::Update {
        by: user(&s.editor),
        input: input(&updated),
        base_revision: Some(1),
        reply,
    });
    let refused = ask_event(&app, calendar, |reply| EventCommand::Create {
        by: user(&s.viewer),
        input: input(&by_viewer),
        reply,
    });
    let existing = ask_event(&app, calendar, |reply| EventCommand::Create {
        by: user(&s.owner),
        input: input(&taken),
        reply,
    });
    let create_doomed = ask_event(&app, calendar, |reply| EventCommand::Create {
        by: user(&s.editor),
        input: input(&doomed),
        reply,
    });
    let create = ask_event(&app, calendar, |reply| EventCommand::Create {
        by: user(&s.editor),
        input: input(&created),
        reply,
    });
    let edit_created = ask_event(&app, calendar, |reply| EventCommand::Update {
        by: user(&s.owner),
        input: input(&created_then_edited),
        base_revision: Some(1),
        reply,
    });
    let delete_doomed = ask_event(&app, calendar, |reply| EventCommand::Delete {
        by: user(&s.owner),
        event: id_of(&doomed),
        unlink: None,
        reply,
    });
    // A command for a calendar whose actor is not alive: once the supervisor has started
    // one for it, it has forwarded every command above. It waits for the hold as well (it
    // links into the held calendar), so that actor lives until the hold is released.
    let unstarted = uuid::Uuid::new_v4().to_string();
    let elsewhere_body = event_body(&[&unstarted, &s.calendar], "elsewhere", 14);
    let elsewhere = ask_event(&app, &unstarted, |reply| EventCommand::Create {
        by: user(&s.owner),
        input: input(&elsewhere_body),
        reply,
    });
    let asked = async {
        tokio::join!(
            update_first,
            refused,
            existing,
            create_doomed,
            create,
            edit_created,
            delete_doomed,
            elsewhere
        )
    };
    let release = async {
        tokio::time::timeout(
            crate::helpers::WAIT,
            live.wait_for(|live| *live > actors_before),
        )
        .await
        .expect("the supervisor forwarded every command")
        .expect("supervisor");
        drop(hold);
    };
    let (answers, ()) = tokio::join!(asked, release);
    let (
        update_first,
        refused,
        existing,
        create_doomed,
        create,
        edit_created,
        delete_doomed,
        elsewhere,
    ) = answers;
    assert!(
        elsewhere.is_err(),
        "no event is homed in a missing calendar"
    );

    let view = |answer: Result<bowline::views::events::EventView, bowline::AppError>| {
        serde_json::to_value(answer.expect("answered")).expect("JSON")
    };
    let update_first = view(update_first);
    assert_eq!(update_first["title"], "first, edited");
    assert_eq!(update_first["revision"], 2);
    assert!(
        matches!(refused, Err(bowline::AppError::Forbidden(_))),
        "{refused:?}"
    );
    assert!(
        matches!(&existing, Err(bowline::AppError::Conflict { error, .. }) if error == "EVENT_EXISTS"),
        "{existing:?}"
    );
    assert_eq!(view(create_doomed)["title"], "doomed");
    assert_eq!(view(create)["revision"], 1);
    // Its creation, queued before it, is what it edits.
    let edit_created = view(edit_created);
    assert_eq!(edit_created["title"], "created, edited");
    assert_eq!(edit_created["revision"], 2);
    assert!(delete_doomed.expect("deleted").removed);

    // Every member's stream gets the changes in the order they were queued.
    for stream in &mut streams {
        let mut seen = Vec::new();
        for _ in 0..5 {
            let frame = stream.next_frame().await;
            let payload = &frame["payload"];
            seen.push((
                frame["type"].as_str().expect("type").to_owned(),
                payload["title"].as_str().unwrap_or_default().to_owned(),
            ));
        }
        let expected = [
            ("event_updated", "first, edited"),
            ("event_created", "doomed"),
            ("event_created", "created"),
            ("event_updated", "created, edited"),
            ("event_removed", ""),
        ];
        assert_eq!(
            seen,
            expected
                .iter()
                .map(|(kind, title)| ((*kind).to_owned(), (*title).to_owned()))
                .collect::<Vec<_>>()
        );
    }
    let mut titles: Vec<String> = app.read_events(&s.viewer, "").await["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["title"].as_str().expect("title").to_owned())
        .collect();
    titles.sort();
    assert_eq!(titles, ["created, edited", "first, edited", "second"]);

    // The seven were committed in at most two transactions (the one the hold kept waiting
    // and the queue behind it), and creations went in one with edits; the creation in the
    // calendar that does not exist was a batch of its own.
    let metrics = app.metrics_text().await;
    assert_eq!(committed_commands(&metrics) - committed_before, 8.0);
    assert!(
        committed_batches(&metrics) - batches_before <= 3.0,
        "{metrics}"
    );
    let mixed = sample(
        &metrics,
        "svc_event_commit_batch_size_count{kind=\"mixed\"}",
    );
    assert!(mixed.is_some_and(|count| count >= 1.0), "{metrics}");
}
