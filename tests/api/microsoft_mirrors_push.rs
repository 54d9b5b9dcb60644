//! Local changes reaching Outlook through the outbox, against the loopback Microsoft: every
//! write delivered exactly once through a period of `429`s and a lost answer (a create is
//! retried with the same `transactionId`), `Retry-After` holding back the account's next
//! requests, conflicts answered `409` or `412` keeping Outlook's version, all-day events
//! written with Graph's exclusive end, recurring events refused with a reported failure and
//! read-only calendars mirrored for viewing only, calendar-level changes made in Outlook first, and the tokens: refreshed
//! before they expire and after a `401`, each rotated refresh token stored and used next.

use std::time::Duration as StdDuration;

use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, TestUser, eventually, sample};
use crate::microsoft_mirrors::{
    Linked, SCOPES, answered, api_time, at, calendars, creates, event_titled, events_in,
    frames_until, graph_time, linked_app, local_event, microsoft_account_rows, outbox_empties,
    outbox_rows, outlook_event, outlook_mirrors, remote_of, synced, titles_in, unseal,
};
use crate::support::graph_api::{GraphApi, GraphUser, Recorded};

const PUSH_FAILURES: &str =
    r#"svc_external_sync_failures_total{provider="microsoft",stage="push"}"#;
const PENDING: &str = r#"svc_outbox_pending{provider="microsoft"}"#;

/// A linked account with one event in its default calendar; the mirror's id.
async fn with_one_event(graph: &GraphApi) -> (GraphUser, Linked, String, Value) {
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let remote = graph.insert_event(
        &account.default_calendar,
        outlook_event("Shared", at(3, 9), 60),
    );
    let linked = linked_app(graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&linked.app, &linked.ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    (account, linked, mirror, remote)
}

/// Sends `method` on `/api/v1/events` as `user`; panics unless it is answered 200.
async fn event_write(app: &TestApp, user: &TestUser, method: Method, body: &Value) -> Value {
    let response = app.event_request(method, user, body).await;
    assert_eq!(response.status(), StatusCode::OK, "event write");
    response.json().await.expect("JSON")
}

/// The requests on `/me/events/{remote_id}` with `method`, by status.
fn on_event(graph: &GraphApi, method: &str, remote_id: &str) -> Vec<u16> {
    let path = format!("/v1.0/me/events/{remote_id}");
    graph
        .requests()
        .iter()
        .filter(|r| r.method == method && r.path == path)
        .map(|r| r.status)
        .collect()
}

async fn metric(app: &TestApp, series: &str) -> f64 {
    sample(&app.metrics_text().await, series).unwrap_or(0.0)
}

#[tokio::test]
async fn through_429s_and_a_lost_answer_every_write_arrives_exactly_once() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Creations, while Graph throttles and then loses the answer to one that got through.
    graph.rate_limit(3, 1);
    let mut created = Vec::new();
    for i in 0..4 {
        let body = local_event(&mirror, &format!("Write {i}"), at(2 + i, 9), 30);
        created.push(app.create_event(&ana, &body).await);
    }
    let ids: Vec<String> = created
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect();
    outbox_empties(&app).await;
    graph.lose_next_answers(1);
    let late = app
        .create_event(&ana, &local_event(&mirror, "Write 4", at(7, 9), 30))
        .await;
    let late_id = late["id"].as_str().expect("id").to_owned();
    outbox_empties(&app).await;
    assert_eq!(answered(&graph, 429, |_| true), 3, "the throttled requests");
    for (i, id) in ids.iter().chain([&late_id]).enumerate() {
        assert_eq!(
            answered(&graph, 201, |r| creates(r, id)),
            1,
            "Write {i} is created once"
        );
        assert_eq!(
            remote_of(&graph, &calendar, id).expect("in Outlook")["subject"],
            format!("Write {i}")
        );
    }
    assert_eq!(
        answered(&graph, 504, |r| creates(r, &late_id)),
        1,
        "the lost answer"
    );
    assert_eq!(graph.events(&calendar).len(), 5, "no event twice");

    // Updates, throttled again: each reaches its event once.
    let remote_ids: Vec<String> = ids
        .iter()
        .map(|id| {
            remote_of(&graph, &calendar, id).expect("there")["id"]
                .as_str()
                .expect("id")
                .to_owned()
        })
        .collect();
    graph.rate_limit(2, 1);
    for (i, event) in created.iter().enumerate() {
        let mut update = event.clone();
        update["title"] = json!(format!("Write {i} v2"));
        event_write(&app, &ana, Method::PUT, &update).await;
    }
    outbox_empties(&app).await;
    for (i, remote_id) in remote_ids.iter().enumerate() {
        let patches = on_event(&graph, "PATCH", remote_id);
        assert_eq!(
            patches.iter().filter(|s| **s == 200).count(),
            1,
            "Write {i}: {patches:?}"
        );
        assert_eq!(
            graph.event(remote_id).expect("there")["subject"],
            format!("Write {i} v2")
        );
    }

    // Deletions, throttled too: each deleted once.
    graph.rate_limit(2, 1);
    for event in &created[..2] {
        event_write(&app, &ana, Method::DELETE, event).await;
    }
    outbox_empties(&app).await;
    for remote_id in &remote_ids[..2] {
        let deletes = on_event(&graph, "DELETE", remote_id);
        assert_eq!(deletes.iter().filter(|s| **s == 204).count(), 1);
        assert!(graph.event(remote_id).is_none());
    }
    assert_eq!(graph.events(&calendar).len(), 3);
    // A pull finds Bowline's own writes there: nothing doubles.
    synced(&app, &ana).await;
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Write 2 v2", "Write 3 v2", "Write 4"]
    );

    // Every failed attempt is counted, and nothing is left pending.
    let failed = answered(&graph, 429, |_| true) + answered(&graph, 504, |_| true);
    assert_eq!(metric(&app, PUSH_FAILURES).await, failed as f64);
    eventually("the outbox gauge drops to 0", || async {
        sample(&app.metrics_text().await, PENDING) == Some(0.0)
    })
    .await;
}

/// The Graph requests that arrived after `request` (by time).
fn after(graph: &GraphApi, request: &Recorded) -> Vec<Recorded> {
    graph
        .requests()
        .into_iter()
        .filter(|r| r.at > request.at)
        .collect()
}

#[tokio::test]
async fn a_429_on_a_delivery_holds_back_pulls_until_retry_after() {
    let graph = GraphApi::start().await;
    let (account, Linked { app, ana }, mirror, _) = with_one_event(&graph).await;
    graph.rate_limit(1, 2);
    let first = app
        .create_event(&ana, &local_event(&mirror, "Throttled", at(4, 9), 30))
        .await;
    let first_id = first["id"].as_str().expect("id").to_owned();
    let throttled = graph
        .wait_for_request("the throttled write", |r| r.status == 429)
        .await;
    // A pull asked for meanwhile waits for the provider's Retry-After.
    graph.insert_event(
        &account.default_calendar,
        outlook_event("Made in Outlook", at(5, 9), 30),
    );
    let _ = crate::microsoft_mirrors::sync_now(&app, &ana).await;
    graph
        .wait_for_request("the retried write", |r| {
            creates(r, &first_id) && r.status == 201
        })
        .await;
    let early: Vec<String> = after(&graph, &throttled)
        .iter()
        .filter(|r| r.at < throttled.at + StdDuration::from_millis(1_900))
        .map(|r| format!("{} {} {}", r.method, r.path, r.query))
        .collect();
    assert!(
        early.is_empty(),
        "requests within the 2 s Outlook asked for: {early:?}"
    );
    // Once the time is up, pulls go on.
    eventually("the pull brings the change", || async {
        synced(&app, &ana).await;
        titles_in(&app, &ana, &mirror)
            .await
            .contains(&"Made in Outlook".to_owned())
    })
    .await;
}

#[tokio::test]
async fn a_429_on_a_pull_defers_the_next_pulls_until_retry_after() {
    let graph = GraphApi::start().await;
    let (account, Linked { app, ana }, mirror, _) = with_one_event(&graph).await;
    graph.insert_event(
        &account.default_calendar,
        outlook_event("Made in Outlook", at(5, 9), 30),
    );
    graph.rate_limit(1, 2);
    let (status, text) = crate::microsoft_mirrors::sync_now(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        body["error"],
        "The calendar server could not be synced: the provider is unavailable or limiting requests (429)"
    );
    let throttled = graph
        .wait_for_request("the throttled pull", |r| r.status == 429)
        .await;
    // Asked again at once: Outlook is left alone until its time is up.
    let _ = crate::microsoft_mirrors::sync_now(&app, &ana).await;
    eventually("the pull brings the change", || async {
        synced(&app, &ana).await;
        titles_in(&app, &ana, &mirror)
            .await
            .contains(&"Made in Outlook".to_owned())
    })
    .await;
    let early: Vec<String> = after(&graph, &throttled)
        .iter()
        .filter(|r| r.at < throttled.at + StdDuration::from_millis(1_900))
        .map(|r| format!("{} {} {}", r.method, r.path, r.query))
        .collect();
    assert!(
        early.is_empty(),
        "requests within the 2 s Outlook asked for: {early:?}"
    );
}

#[tokio::test]
async fn a_429_holds_back_the_accounts_next_deliveries_until_retry_after() {
    let graph = GraphApi::start().await;
    let (_, Linked { app, ana }, mirror, _) = with_one_event(&graph).await;
    graph.rate_limit(1, 2);
    let first = app
        .create_event(&ana, &local_event(&mirror, "Throttled", at(4, 9), 30))
        .await;
    let throttled = graph
        .wait_for_request("the throttled write", |r| r.status == 429)
        .await;
    // A write committed while Outlook asked to be left alone waits too.
    let second = app
        .create_event(&ana, &local_event(&mirror, "Next in line", at(5, 9), 30))
        .await;
    for event in [&first, &second] {
        let id = event["id"].as_str().expect("id").to_owned();
        graph
            .wait_for_request("the write", |r| creates(r, &id) && r.status == 201)
            .await;
    }
    let early: Vec<String> = after(&graph, &throttled)
        .iter()
        .filter(|r| r.at < throttled.at + StdDuration::from_millis(1_900))
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    assert!(
        early.is_empty(),
        "requests within the 2 s Outlook asked for: {early:?}"
    );
}

#[tokio::test]
async fn conflicts_answered_409_or_412_keep_outlooks_version() {
    let graph = GraphApi::start().await;
    let (account, Linked { app, ana }, mirror, remote) = with_one_event(&graph).await;
    let remote_id = remote["id"].as_str().expect("id").to_owned();
    let local = event_titled(&app, &ana, &mirror, "Shared").await;
    let local_id = local["id"].as_str().expect("id").to_owned();
    let mut stream = app.stream(&ana).await;

    // 409 ErrorIrresolvableConflict on an update.
    graph.conflict_status(409);
    graph.update_event(&remote_id, json!({ "subject": "Edited in Outlook" }));
    let mut edit = local.clone();
    edit["title"] = json!("Edited in Bowline");
    event_write(&app, &ana, Method::PUT, &edit).await;
    let frames = frames_until(&mut stream, "provider_delivery").await;
    assert_eq!(
        frames.last().expect("report")["payload"],
        json!({ "calendarID": mirror, "eventID": local_id, "state": "conflict", "error": null })
    );
    assert_eq!(on_event(&graph, "PATCH", &remote_id), [409]);
    assert_eq!(
        graph.event(&remote_id).expect("there")["subject"],
        "Edited in Outlook"
    );
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["Edited in Outlook"]);
    outbox_empties(&app).await;
    // What came back carries Outlook's change key: the next edit goes through.
    let mut again = event_titled(&app, &ana, &mirror, "Edited in Outlook").await;
    again["title"] = json!("Agreed title");
    event_write(&app, &ana, Method::PUT, &again).await;
    outbox_empties(&app).await;
    assert_eq!(on_event(&graph, "PATCH", &remote_id), [409, 200]);
    assert_eq!(
        graph.event(&remote_id).expect("there")["subject"],
        "Agreed title"
    );

    // 412 on a deletion: the event is not deleted in Outlook and comes back here.
    graph.conflict_status(412);
    graph.update_event(&remote_id, json!({ "subject": "Edited twice in Outlook" }));
    let current = event_titled(&app, &ana, &mirror, "Agreed title").await;
    let answer = event_write(&app, &ana, Method::DELETE, &current).await;
    assert_eq!(answer["removed"], true);
    let frames = frames_until(&mut stream, "provider_delivery").await;
    assert_eq!(
        frames.last().expect("report")["payload"]["state"],
        "conflict"
    );
    let deletes = on_event(&graph, "DELETE", &remote_id);
    assert_eq!(deletes, [412]);
    assert_eq!(
        graph.event(&remote_id).expect("kept")["subject"],
        "Edited twice in Outlook"
    );
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Edited twice in Outlook"]
    );
    let sent = graph
        .requests()
        .into_iter()
        .find(|r| r.method == "DELETE")
        .expect("the delete");
    assert!(
        sent.if_match
            .as_deref()
            .is_some_and(|tag| tag.starts_with("W/\"")),
        "a weak etag: {:?}",
        sent.if_match
    );
    outbox_empties(&app).await;

    // Deleted in Outlook meanwhile: a local edit finds it gone, and it goes here too.
    graph.delete_event(&remote_id);
    let mut edit = event_titled(&app, &ana, &mirror, "Edited twice in Outlook").await;
    edit["title"] = json!("Edited after all");
    event_write(&app, &ana, Method::PUT, &edit).await;
    let frames = frames_until(&mut stream, "provider_delivery").await;
    assert_eq!(
        frames.last().expect("report")["payload"]["state"],
        "conflict"
    );
    assert!(titles_in(&app, &ana, &mirror).await.is_empty());
    assert!(graph.events(&account.default_calendar).is_empty());
    outbox_empties(&app).await;
}

#[tokio::test]
async fn occurrences_edited_or_deleted_here_become_exceptions_or_gaps_in_outlook() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let first = at(3, 8);
    let mut master = outlook_event("Standup", first, 30);
    master["recurrence"] = json!({
        "pattern": { "type": "daily", "interval": 1 },
        "range": {
            "type": "numbered",
            "startDate": first.date_naive().to_string(),
            "numberOfOccurrences": 3,
        },
    });
    let master = graph.insert_series(&account.default_calendar, master);
    let master_id = master["id"].as_str().expect("id").to_owned();
    let window = (at(0, 0), at(30, 0));
    let occurrences = graph.occurrences(&master_id, window);
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let local = events_in(&app, &ana, &mirror).await;
    assert_eq!(local.len(), 3);

    // The second, moved an hour later here: an exception there.
    let second_id = occurrences[1]["id"].as_str().expect("id").to_owned();
    let mut moved = local[1].clone();
    moved["title"] = json!("Standup (later)");
    moved["start"] = json!(api_time(first + Duration::days(1) + Duration::hours(1)));
    moved["end"] = json!(api_time(first + Duration::days(1) + Duration::minutes(90)));
    event_write(&app, &ana, Method::PUT, &moved).await;
    outbox_empties(&app).await;
    let patches = on_event(&graph, "PATCH", &second_id);
    assert_eq!(patches, [200]);
    let exception = graph.event(&second_id).expect("there");
    assert_eq!(exception["type"], "exception");
    assert_eq!(exception["subject"], "Standup (later)");
    assert_eq!(
        exception["start"],
        graph_time(first + Duration::days(1) + Duration::hours(1))
    );

    // The third, deleted here: gone from the series there.
    let third_id = occurrences[2]["id"].as_str().expect("id").to_owned();
    event_write(&app, &ana, Method::DELETE, &local[2]).await;
    outbox_empties(&app).await;
    assert_eq!(on_event(&graph, "DELETE", &third_id), [204]);
    let left: Vec<Value> = graph
        .occurrences(&master_id, window)
        .iter()
        .map(|o| json!([o["subject"], o["start"]]))
        .collect();
    assert_eq!(
        left,
        [
            json!(["Standup", graph_time(first)]),
            json!([
                "Standup (later)",
                graph_time(first + Duration::days(1) + Duration::hours(1))
            ]),
        ]
    );
    // And a pull agrees with what is here.
    synced(&app, &ana).await;
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Standup", "Standup (later)"]
    );
}

#[tokio::test]
async fn all_day_events_shift_their_end_both_ways() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    let first_day = at(5, 0);
    let remote = graph.insert_event(
        &calendar,
        json!({
            "subject": "Offsite",
            "isAllDay": true,
            "start": graph_time(first_day),
            "end": graph_time(first_day + Duration::days(2)),
        }),
    );
    let remote_id = remote["id"].as_str().expect("id").to_owned();
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();

    // Outlook's exclusive end (midnight after the last day) is the last day here.
    let offsite = event_titled(&app, &ana, &mirror, "Offsite").await;
    assert_eq!(
        json!([offsite["isAllDay"], offsite["start"], offsite["end"]]),
        json!([
            true,
            api_time(first_day),
            api_time(first_day + Duration::days(1))
        ])
    );

    // A one-day event made here ends at the next midnight there.
    let day = at(9, 0);
    let mut body = local_event(&mirror, "Holiday", day, 0);
    body["isAllDay"] = json!(true);
    let created = app.create_event(&ana, &body).await;
    let id = created["id"].as_str().expect("id").to_owned();
    let post = graph
        .wait_for_request("the all-day event", |r| creates(r, &id))
        .await;
    assert_eq!(post.status, 201);
    let sent = post.body.expect("body");
    assert_eq!(
        json!([sent["isAllDay"], sent["start"], sent["end"]]),
        json!([true, graph_time(day), graph_time(day + Duration::days(1))])
    );

    // Renaming the pulled one writes its days back unchanged.
    let mut rename = offsite.clone();
    rename["title"] = json!("Offsite (renamed)");
    event_write(&app, &ana, Method::PUT, &rename).await;
    let patch = graph
        .wait_for_request("the rename", |r| {
            r.method == "PATCH" && r.path.ends_with(&remote_id)
        })
        .await;
    assert_eq!(patch.status, 200);
    let sent = patch.body.expect("body");
    assert_eq!(
        json!([sent["isAllDay"], sent["start"], sent["end"]]),
        json!([
            true,
            graph_time(first_day),
            graph_time(first_day + Duration::days(2))
        ])
    );
    let there = graph.event(&remote_id).expect("there");
    assert_eq!(there["end"], graph_time(first_day + Duration::days(2)));
}

#[tokio::test]
async fn recurring_events_are_refused_with_a_reported_failure_and_read_only_calendars_take_none() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let holidays = graph.add_calendar(&account, "Holidays", false);
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirrors = outlook_mirrors(&app, &ana).await;
    let mirror = mirrors[0]["id"].as_str().expect("id").to_owned();
    let read_only = mirrors[1]["id"].as_str().expect("id").to_owned();
    assert_eq!(mirrors[1]["name"], "Holidays");
    let mut stream = app.stream(&ana).await;

    let mut body = local_event(&mirror, "Every day", at(3, 9), 30);
    body["recurrence"] = json!("RRULE:FREQ=DAILY;COUNT=3");
    let created = app.create_event(&ana, &body).await;
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(
        created["providerDelivery"],
        json!([{ "calendarID": mirror, "provider": "microsoft", "action": "put", "state": "pending" }])
    );
    let frames = frames_until(&mut stream, "provider_delivery").await;
    assert_eq!(
        frames.last().expect("report")["payload"],
        json!({
            "calendarID": mirror,
            "eventID": id,
            "state": "failed",
            "error": "Recurring events can't be written to Outlook calendars yet; the change stays in Bowline.",
        })
    );
    outbox_empties(&app).await;
    let kept = event_titled(&app, &ana, &mirror, "Every day").await;
    assert!(
        kept["recurrence"]
            .as_str()
            .is_some_and(|r| r.contains("FREQ=DAILY")),
        "{kept}"
    );

    // A calendar Outlook lets the account only read is mirrored for viewing: nothing can be
    // written into it here that could not be delivered.
    assert_eq!(mirrors[1]["role"], "viewer");
    let (status, refused) = app
        .call(
            Method::POST,
            "/api/v1/events",
            &ana,
            Some(&local_event(&read_only, "Not mine to add", at(4, 9), 30)),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    outbox_empties(&app).await;
    assert!(
        graph.requests().iter().all(|r| r.method == "GET"),
        "nothing is written to Outlook"
    );
    assert!(graph.events(&holidays).is_empty());
    assert_eq!(metric(&app, PUSH_FAILURES).await, 1.0);
}

#[tokio::test]
async fn calendars_are_made_renamed_and_deleted_in_outlook_first() {
    let graph = GraphApi::start().await;
    let (account, Linked { app, ana }, default_mirror, _) = with_one_event(&graph).await;
    let (status, made) = app
        .call(
            Method::POST,
            "/api/v1/calendars",
            &ana,
            Some(&json!({
                "id": "new", "creatorID": "", "name": "Projects", "color": "#C8553D",
                "members": [], "provider": "microsoft", "accountId": account.oid,
            })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["name"], "Projects");
    assert_eq!(made["provider"], "microsoft");
    assert_eq!(made["accountId"], json!(account.oid));
    let local_id = made["id"].as_str().expect("id").to_owned();
    let post = graph
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path == "/v1.0/me/calendars")
        .expect("made in Outlook");
    assert_eq!(post.status, 201);
    assert_eq!(post.body.expect("body")["name"], "Projects");
    let calendars_there = || {
        graph
            .requests()
            .iter()
            .filter(|r| r.method == "POST" && r.path == "/v1.0/me/calendars")
            .count()
    };
    // The next pull finds it mirrored already.
    synced(&app, &ana).await;
    assert_eq!(
        outlook_mirrors(&app, &ana)
            .await
            .iter()
            .filter(|m| m["name"] == "Projects")
            .count(),
        1
    );
    assert_eq!(calendars_there(), 1);
    let remote_id = outlook_calendar_id(&graph, "Projects");

    // Renamed there first.
    let mut rename = made.clone();
    rename["name"] = json!("Projects 2027");
    let (status, renamed) = app
        .call(Method::PUT, "/api/v1/calendars", &ana, Some(&rename))
        .await;
    assert_eq!(status, StatusCode::OK, "{renamed}");
    assert_eq!(renamed["name"], "Projects 2027");
    assert_eq!(
        graph.calendar(&remote_id).expect("there")["name"],
        "Projects 2027"
    );

    // Outlook refuses to delete the default calendar: nothing changes here.
    let default = calendars(&app, &ana)
        .await
        .into_iter()
        .find(|c| c["id"] == json!(default_mirror))
        .expect("mirror");
    let (status, refused) = app
        .call(Method::DELETE, "/api/v1/calendars", &ana, Some(&default))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("ErrorCannotDeleteDefaultCalendar"),
        "{refused}"
    );
    assert!(
        calendars(&app, &ana)
            .await
            .iter()
            .any(|c| c["id"] == json!(default_mirror))
    );
    assert_eq!(titles_in(&app, &ana, &default_mirror).await, ["Shared"]);

    // Deleted there first, then here; the next pull does not bring it back.
    let (status, deleted) = app
        .call(Method::DELETE, "/api/v1/calendars", &ana, Some(&renamed))
        .await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    assert!(graph.calendar(&remote_id).is_none());
    synced(&app, &ana).await;
    assert!(
        calendars(&app, &ana)
            .await
            .iter()
            .all(|c| c["id"] != json!(local_id) && c["name"] != "Projects 2027")
    );
    assert_eq!(outbox_rows(&app).await, 0);
}

/// The id of the Outlook calendar named `name` (from the creation Graph answered).
fn outlook_calendar_id(graph: &GraphApi, name: &str) -> String {
    graph
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1.0/me/calendars/") && r.path.ends_with("/delta"))
        .map(|r| {
            r.path
                .trim_start_matches("/v1.0/me/calendars/")
                .trim_end_matches("/calendarView/delta")
                .to_owned()
        })
        .find(|id| graph.calendar(id).is_some_and(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no Outlook calendar {name} was pulled"))
}

#[tokio::test]
async fn a_401_refreshes_once_and_each_rotated_refresh_token_is_stored_and_used() {
    let graph = GraphApi::start().await;
    let (account, Linked { app, ana }, mirror, _) = with_one_event(&graph).await;
    assert_eq!(graph.token_requests().len(), 1, "the code exchange only");

    for round in 1..=2 {
        graph.expire_access_tokens();
        let title = format!("After refresh {round}");
        graph.insert_event(
            &account.default_calendar,
            outlook_event(&title, at(5 + round, 9), 30),
        );
        let before = graph.requests().len();
        synced(&app, &ana).await;
        assert!(titles_in(&app, &ana, &mirror).await.contains(&title));
        let since: Vec<(String, u16)> = graph.requests()[before..]
            .iter()
            .take(2)
            .map(|r| (r.path.clone(), r.status))
            .collect();
        assert_eq!(
            since,
            [
                ("/v1.0/me/calendars".to_owned(), 401),
                ("/v1.0/me/calendars".to_owned(), 200)
            ],
            "refused, refreshed, retried"
        );
        let requests = graph.token_requests();
        let answers = graph.token_answers();
        assert_eq!(requests.len(), 1 + round as usize, "one refresh per expiry");
        let refresh = requests.last().expect("refresh");
        assert_eq!(refresh["grant_type"], "refresh_token");
        assert_eq!(
            refresh["refresh_token"],
            answers[answers.len() - 2].body["refresh_token"],
            "the refresh token issued last"
        );
        assert_eq!(refresh["scope"], SCOPES.join(" "));
        let newest = &answers.last().expect("answer").body;
        assert_ne!(newest["refresh_token"], refresh["refresh_token"], "rotated");
        let rows = microsoft_account_rows(&app).await;
        assert_eq!(
            unseal(rows[0]["refresh_token"].as_deref().expect("stored")),
            newest["refresh_token"].as_str().expect("token"),
            "the new refresh token is stored"
        );
        assert_eq!(
            unseal(rows[0]["access_token"].as_deref().expect("stored")),
            newest["access_token"].as_str().expect("token")
        );
    }
    assert_eq!(answered(&graph, 401, |_| true), 2);
}

#[tokio::test]
async fn access_tokens_are_refreshed_a_minute_before_they_expire() {
    let graph = GraphApi::start().await;
    // Tokens that live 50 s are within the minute from the start.
    graph.set_access_token_lifetime(50);
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    graph.insert_event(
        &account.default_calendar,
        outlook_event("Shared", at(3, 9), 60),
    );
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    synced(&app, &ana).await;
    let requests = graph.token_requests();
    assert!(requests.len() >= 2, "{requests:?}");
    assert!(
        requests[1..]
            .iter()
            .all(|r| r["grant_type"] == "refresh_token"),
        "{requests:?}"
    );
    assert_eq!(
        answered(&graph, 401, |_| true),
        0,
        "no request with a token about to expire"
    );
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(events_in(&app, &ana, &mirror).await[0]["title"], "Shared");
}

#[tokio::test]
async fn a_refresh_refused_during_a_pull_asks_the_owner_to_reconnect() {
    let graph = GraphApi::start().await;
    let (account, Linked { app, ana }, _, _) = with_one_event(&graph).await;
    graph.expire_refresh_tokens(&account);
    graph.expire_access_tokens();
    let (status, text) = crate::microsoft_mirrors::sync_now(&app, &ana).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        body["error"],
        "The calendar server could not be synced: the account must be connected again (invalid_grant)"
    );
    let mirror = &outlook_mirrors(&app, &ana).await[0];
    assert_eq!(mirror["syncStatus"], "reconnect_required");
    assert_eq!(mirror["syncErrorCode"], "invalid_grant");
    assert_eq!(
        metric(
            &app,
            r#"svc_external_sync_failures_total{provider="microsoft",stage="account"}"#
        )
        .await,
        1.0
    );
    // The dead refresh token is not tried again.
    let tokens = graph.token_requests().len();
    let requests = graph.requests().len();
    let _ = crate::microsoft_mirrors::sync_now(&app, &ana).await;
    assert_eq!(graph.token_requests().len(), tokens);
    assert_eq!(graph.requests().len(), requests);
}
