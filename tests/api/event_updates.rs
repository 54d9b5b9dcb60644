//! `PUT /api/v1/events` and the calendars an event is in: links into calendars the caller
//! cannot see survive a client putting back what it read, removing a visible link needs
//! editEvents there; the validation of times (start after end, years outside 1..=9999
//! in ISO and millisecond form) before anything is written; and the rows of many events
//! changed in one batch (on PostgreSQL one statement per run of changes of one kind).

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestApp, TestUser, event_body, spawn_app};

/// `user`'s document of event `id` from a full read (`None` when they cannot see it).
async fn read_one(app: &TestApp, user: &TestUser, id: &str) -> Option<Value> {
    let read = app.read_events(user, "").await;
    read["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|event| event["id"] == id)
        .cloned()
}

/// An event document's calendar ids, sorted.
fn sorted_calendars(event: &Value) -> Vec<&str> {
    let mut calendars: Vec<&str> = event["calendars"]
        .as_array()
        .expect("calendars")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    calendars.sort_unstable();
    calendars
}

async fn join_as(app: &TestApp, owner: &TestUser, calendar: &str, user: &TestUser, role: &str) {
    app.join_with_invite(owner, calendar, user).await;
    if role != "viewer" {
        assert_eq!(
            app.set_role(owner, calendar, &user.id, role).await.status(),
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn links_the_caller_cannot_see_survive_an_update_and_removing_one_needs_edit_rights() {
    let app = spawn_app().await;
    let s = shared(&app, "hidden-links").await;
    // The outsider's calendar, where the owner of the shared calendar is an editor.
    let theirs = app.create_calendar(&s.outsider, "Outsider's").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    join_as(&app, &s.outsider, &theirs, &s.owner, "editor").await;
    let body = event_body(&[&s.calendar], "Linked twice", 9);
    let id = body["id"].as_str().expect("id").to_owned();
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let linked = app
        .as_user(Method::POST, &format!("/api/v1/events/{id}/link"), &s.owner)
        .json(&json!({ "calendarID": theirs }))
        .send()
        .await
        .expect("request");
    assert_eq!(linked.status(), StatusCode::OK);

    // The editor sees the event in the shared calendar only and puts back what they read.
    let mut read = read_one(&app, &s.editor, &id).await.expect("visible");
    assert_eq!(read["calendars"], json!([s.calendar]));
    let mut outsider_stream = app.stream(&s.outsider).await;
    read["title"] = json!("Renamed by the editor");
    let response = app.event_request(Method::PUT, &s.editor, &read).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(
        updated["calendars"],
        json!([s.calendar]),
        "the editor's view"
    );
    let frame = outsider_stream.next_frame().await;
    assert_eq!(frame["type"], "event_updated");
    assert_eq!(frame["payload"]["calendars"], json!([theirs]), "their view");
    let kept = read_one(&app, &s.outsider, &id)
        .await
        .expect("still in the outsider's calendar");
    assert_eq!(kept["title"], "Renamed by the editor");
    assert_eq!(kept["calendars"], json!([theirs]));
    let owners = read_one(&app, &s.owner, &id).await.expect("visible");
    assert_eq!(owners["calendars"], json!([s.calendar, theirs]));

    // As a viewer of the outsider's calendar the editor sees the link but may not remove it.
    join_as(&app, &s.outsider, &theirs, &s.editor, "viewer").await;
    let mut read = read_one(&app, &s.editor, &id).await.expect("visible");
    assert_eq!(read["calendars"], json!([s.calendar, theirs]));
    let revision = read["revision"].clone();
    read["calendars"] = json!([s.calendar]);
    read["title"] = json!("Unlinked by a viewer?");
    let refused = app.event_request(Method::PUT, &s.editor, &read).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let unchanged = read_one(&app, &s.outsider, &id).await.expect("still there");
    assert_eq!(unchanged["revision"], revision, "nothing was written");
    assert_eq!(unchanged["title"], "Renamed by the editor");

    // As an editor there, they may.
    assert_eq!(
        app.set_role(&s.outsider, &theirs, &s.editor.id, "editor")
            .await
            .status(),
        StatusCode::OK
    );
    read["title"] = json!("Unlinked by an editor");
    let response = app.event_request(Method::PUT, &s.editor, &read).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(updated["calendars"], json!([s.calendar]));
    loop {
        let frame = outsider_stream.next_frame().await;
        if frame["type"] == "event_removed" {
            assert_eq!(frame["payload"]["id"], id.as_str());
            break;
        }
    }
    assert!(read_one(&app, &s.outsider, &id).await.is_none());
    let owners = read_one(&app, &s.owner, &id).await.expect("visible");
    assert_eq!(owners["calendars"], json!([s.calendar]));
}

#[tokio::test]
async fn times_are_validated_before_anything_is_written() {
    let app = spawn_app().await;
    let s = shared(&app, "times").await;
    let body = event_body(&[&s.calendar], "Timely", 9);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &body)
            .await
            .status(),
        StatusCode::CREATED
    );
    let mut backwards = body.clone();
    backwards["start"] = json!("2026-07-23T11:00:00.000Z");
    backwards["end"] = json!("2026-07-23T10:00:00.000Z");
    let response = app.event_request(Method::PUT, &s.owner, &backwards).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        response.json::<Value>().await.expect("JSON")["error"],
        "start must not be after end."
    );

    // Later than 9999 as `end`, earlier than year 1 as `start`: in order, but out of range.
    let out_of_range = [
        ("end", json!("+010000-01-01T00:00:00.000Z")),
        ("end", json!("10000-01-01")),
        ("end", json!(253_402_300_800_000_i64)),
        ("end", json!(8_640_000_000_000_000_i64)),
        ("start", json!("0000-06-01T00:00:00.000Z")),
        ("start", json!("0001-01-01T00:30:00+01:00")),
        ("start", json!("-000001-01-01T00:00:00.000Z")),
        ("start", json!(-62_198_755_200_000_i64)),
    ];
    for (field, value) in out_of_range {
        let mut create = event_body(&[&s.calendar], "Far away", 9);
        create[field] = value.clone();
        let mut update = body.clone();
        update[field] = value.clone();
        for (method, candidate) in [(Method::POST, &create), (Method::PUT, &update)] {
            let response = app.event_request(method.clone(), &s.owner, candidate).await;
            assert_eq!(
                response.status(),
                StatusCode::BAD_REQUEST,
                "{method} {field} = {value}"
            );
            let error: Value = response.json().await.expect("JSON");
            assert_eq!(
                error["error"],
                format!("{field} must be a valid timestamp.")
            );
        }
    }
    let read = app.read_events(&s.owner, "").await;
    assert_eq!(read["events"].as_array().expect("events").len(), 1);
    assert_eq!(read["events"][0]["revision"], 1, "nothing was written");
    for query in ["?since=10000-01-01", "?since=-000001-01-01T00:00:00Z"] {
        let response = app
            .as_user(Method::GET, &format!("/api/v1/events{query}"), &s.owner)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
    }

    // The bounds themselves are fine, stored and read back on either database.
    let mut edges = event_body(&[&s.calendar], "Edges", 9);
    edges["start"] = json!("0001-01-01T00:00:00.000Z");
    edges["end"] = json!(253_402_300_799_999_i64);
    assert_eq!(
        app.event_request(Method::POST, &s.owner, &edges)
            .await
            .status(),
        StatusCode::CREATED
    );
    let read = read_one(&app, &s.viewer, edges["id"].as_str().expect("id"))
        .await
        .expect("readable");
    assert_eq!(read["start"], "0001-01-01T00:00:00.000Z");
    assert_eq!(read["end"], "9999-12-31T23:59:59.999Z");
    let delta = app
        .read_events(&s.viewer, "?since=2000-01-01T00:00:00.000Z")
        .await;
    assert_eq!(delta["events"].as_array().expect("events").len(), 2);
}

/// Text a client sends is stored, streamed and read back exactly, whatever it holds:
/// quotes, backslashes, dollar signs (PostgreSQL's dollar quotes, in which the writes of a
/// transaction travel with its commit), control characters, SQL and emoji; created,
/// updated, and linked into a second calendar in the same batch as an update.
#[tokio::test]
async fn text_with_quotes_dollars_and_control_characters_is_kept_exactly() {
    let app = spawn_app().await;
    let owner = app.sign_up("quotes@example.com").await;
    let calendar = app.create_calendar(&owner, "Quotes").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let other = app.create_calendar(&owner, "Other").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let texts = [
        "it's a \"quote\" \\' \\\\ ''",
        "$$ $v$ $v0123456789abcdef$ $1 $tag$x$tag$",
        "\u{1a}\u{1}\t\r\n end",
        "'); COMMIT; DROP TABLE events; -- /* x */",
        "E'\\x00' \\x41 𝄞 日本語 🎉",
    ];
    let mut body = event_body(&[&calendar], texts[0], 9);
    body["description"] = json!(texts[1]);
    body["location"] = json!(texts[2]);
    let id = body["id"].as_str().expect("id").to_owned();
    let created = app.event_request(Method::POST, &owner, &body).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let read = read_one(&app, &owner, &id).await.expect("created");
    assert_eq!(
        (&read["title"], &read["description"], &read["location"]),
        (&json!(texts[0]), &json!(texts[1]), &json!(texts[2]))
    );

    let mut stream = app.stream(&owner).await;
    let mut update = read.clone();
    update["title"] = json!(texts[3]);
    update["description"] = json!(texts[4]);
    update["location"] = json!(texts[1]);
    update["calendars"] = json!([calendar, other]);
    let response = app.event_request(Method::PUT, &owner, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let frame = stream.next_frame().await;
    assert_eq!(frame["type"], "event_updated");
    let read = read_one(&app, &owner, &id).await.expect("updated");
    for event in [&frame["payload"], &read] {
        assert_eq!(
            (&event["title"], &event["description"], &event["location"]),
            (&json!(texts[3]), &json!(texts[4]), &json!(texts[1]))
        );
        let calendars = sorted_calendars(event);
        let mut expected = [calendar.as_str(), other.as_str()];
        expected.sort_unstable();
        assert_eq!(calendars, expected);
    }
}

/// Updates of many events queued behind a held calendar commit in one batch, whose event
/// rows PostgreSQL writes as one statement per run of changes of one kind: each update
/// lands with its own title and revision, and an event changed twice in the batch (linked
/// into two calendars) keeps both changes.
#[tokio::test]
async fn many_events_changed_in_one_batch_each_keep_their_change() {
    use crate::concurrency::{hold_writes, send_while_held};

    let app = spawn_app().await;
    let s = shared(&app, "row-runs").await;
    let sides: Vec<String> = futures::future::join_all(
        ["Side A", "Side B"].map(|name| app.create_calendar(&s.editor, name)),
    )
    .await
    .iter()
    .map(|calendar| calendar["id"].as_str().expect("id").to_owned())
    .collect();
    let mut events = Vec::new();
    for i in 0..6 {
        let body = event_body(&[&s.calendar], &format!("event {i}"), 8 + i);
        app.create_event(&s.owner, &body).await;
        events.push(body);
    }
    let id = |i: usize| events[i]["id"].as_str().expect("id").to_owned();

    let hold = hold_writes(&app, &s.calendar).await;
    let mut requests: Vec<_> = (0..5)
        .map(|i| {
            let mut edited = events[i].clone();
            edited["title"] = json!(format!("edited {i}"));
            app.as_user(Method::PUT, "/api/v1/events", &s.editor)
                .json(&edited)
        })
        .collect();
    for side in &sides {
        requests.push(
            app.as_user(
                Method::POST,
                &format!("/api/v1/events/{}/link", id(5)),
                &s.editor,
            )
            .json(&json!({ "calendarID": side })),
        );
    }
    let count = requests.len();
    let responses = send_while_held(&app, hold, requests).await;
    for response in responses {
        assert_eq!(response.status(), StatusCode::OK);
    }

    let read = app.read_events(&s.editor, "").await;
    let stored: std::collections::HashMap<&str, &Value> = read["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|event| (event["id"].as_str().expect("id"), event))
        .collect();
    for i in 0..5 {
        let event = stored[id(i).as_str()];
        assert_eq!(event["title"], format!("edited {i}"));
        assert_eq!(event["revision"], 2);
    }
    let twice = stored[id(5).as_str()];
    assert_eq!(twice["title"], "event 5");
    assert_eq!(twice["revision"], 3);
    let calendars = sorted_calendars(twice);
    let mut expected = vec![s.calendar.as_str(), sides[0].as_str(), sides[1].as_str()];
    expected.sort_unstable();
    assert_eq!(calendars, expected);

    let metrics = app.metrics_text().await;
    let batches =
        crate::helpers::sample(&metrics, "svc_event_commit_batch_size_count{kind=\"edit\"}")
            .expect("count");
    assert!(
        batches < count as f64,
        "{batches} batches for {count} edits"
    );
}
