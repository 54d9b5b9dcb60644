//! Events: create, update, delete and unlink, and reads; their rules, status codes and
//! frames. Link and fork are in `event_links`, attendance in `attendance`.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::calendars::shared;
use crate::helpers::{TestUser, event_body, spawn_app};

#[tokio::test]
async fn an_editor_creates_an_event_that_members_see_with_their_calendars() {
    let app = spawn_app().await;
    let s = shared(&app, "create").await;
    let mut viewer_stream = app.stream(&s.viewer).await;
    let mut outsider_stream = app.stream(&s.outsider).await;
    let body = event_body(&[&s.calendar], "Planning", 9);
    let created = app.create_event(&s.editor, &body).await;
    assert_eq!(created["id"], body["id"], "client-chosen id kept");
    assert_eq!(
        created["creatorID"],
        s.editor.id.as_str(),
        "creator set by the server"
    );
    assert_eq!(created["originCalendarID"], s.calendar.as_str());
    assert_eq!(created["calendars"], json!([s.calendar]));
    assert_eq!(created["revision"], 1);
    assert_eq!(created["deletedAt"], Value::Null);
    assert_eq!(created["start"], "2026-07-23T09:00:00.000Z");

    let frame = viewer_stream.next_frame().await;
    assert_eq!(frame["type"], "event_created");
    assert_eq!(frame["payload"]["id"], body["id"]);
    assert_eq!(frame["payload"]["calendars"], json!([s.calendar]));
    app.ctx().shared.services.broadcast(
        [&bowline::domain::ids::UserId::from(s.outsider.id.as_str())],
        &bowline::domain::frames::Frame::new("reminders_updated", json!({})),
    );
    assert_eq!(
        outsider_stream.next_frame().await["type"],
        "reminders_updated"
    );

    // The creator answered "going"; a viewer may answer too.
    let attendees: Value = app
        .as_user(
            Method::GET,
            &format!(
                "/api/v1/events/{}/attendees",
                body["id"].as_str().expect("id")
            ),
            &s.viewer,
        )
        .send()
        .await
        .expect("request")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        attendees,
        json!([{ "id": s.editor.id, "name": "Test User", "image": null, "status": "going" }])
    );
}

#[tokio::test]
async fn create_rules_and_their_statuses() {
    let app = spawn_app().await;
    let s = shared(&app, "rules").await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let mut later_start = event_body(&[&s.calendar], "Backwards", 9);
    later_start["end"] = json!("2026-07-23T08:00:00.000Z");
    let mut no_calendars = event_body(&[&s.calendar], "Nowhere", 9);
    no_calendars["calendars"] = json!([]);
    let mut foreign_origin = event_body(&[&s.calendar], "Elsewhere", 9);
    foreign_origin["originCalendarID"] = json!(unknown);
    let mut bad_id = event_body(&[&s.calendar], "Bad id", 9);
    bad_id["id"] = json!("not-a-uuid");
    let mut bad_calendar = event_body(&[&s.calendar], "Bad calendar", 9);
    bad_calendar["calendars"] = json!(["nope"]);
    let mut bad_time = event_body(&[&s.calendar], "Bad time", 9);
    bad_time["start"] = json!("tomorrow-ish");
    let cases: [(&TestUser, Value, u16); 8] = [
        (&s.editor, later_start, 400),
        (&s.editor, no_calendars, 400),
        (&s.editor, foreign_origin, 400),
        (&s.editor, bad_id, 400),
        (&s.editor, bad_calendar, 400),
        (&s.editor, bad_time, 400),
        (&s.viewer, event_body(&[&s.calendar], "Viewer", 9), 403),
        (
            &s.editor,
            event_body(&[&s.calendar, &unknown], "Partly unknown", 9),
            403,
        ),
    ];
    for (user, body, status) in cases {
        let response = app.event_request(Method::POST, user, &body).await;
        assert_eq!(response.status().as_u16(), status, "{body}");
        let error: Value = response.json().await.expect("JSON");
        assert!(error["error"].is_string() && error["requestId"].is_string());
    }
    let listed = app.read_events(&s.owner, "").await;
    assert_eq!(listed["events"], json!([]), "nothing was written");

    let body = event_body(&[&s.calendar], "Once", 9);
    app.create_event(&s.owner, &body).await;
    let again = app.event_request(Method::POST, &s.owner, &body).await;
    assert_eq!(
        again.status(),
        StatusCode::CONFLICT,
        "a duplicate id is a conflict, not a 500"
    );
}

#[tokio::test]
async fn updates_keep_identity_fields_and_reach_old_and_new_calendars() {
    let app = spawn_app().await;
    let s = shared(&app, "update").await;
    let other = app.create_calendar(&s.editor, "Editor's own").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let body = event_body(&[&s.calendar], "Original", 9);
    app.create_event(&s.editor, &body).await;
    let mut owner_stream = app.stream(&s.owner).await;

    let mut update = body.clone();
    update["title"] = json!("Renamed");
    update["creatorID"] = json!("someone-else");
    update["originCalendarID"] = json!(other);
    update["calendars"] = json!([s.calendar, other]);
    let response = app.event_request(Method::PUT, &s.editor, &update).await;
    assert_eq!(response.status(), StatusCode::OK);
    let updated: Value = response.json().await.expect("JSON");
    assert_eq!(updated["title"], "Renamed");
    assert_eq!(
        updated["creatorID"],
        s.editor.id.as_str(),
        "creatorID cannot change"
    );
    assert_eq!(
        updated["originCalendarID"],
        s.calendar.as_str(),
        "originCalendarID cannot change"
    );
    assert_eq!(updated["revision"], 2);
    assert_eq!(updated["calendars"], json!([s.calendar, other]));
    let frame = owner_stream.next_frame().await;
    assert_eq!(frame["type"], "event_updated");
    assert_eq!(
        frame["payload"]["calendars"],
        json!([s.calendar]),
        "only the reader's calendars"
    );

    // A viewer cannot edit; an editor cannot add a calendar they cannot edit.
    let by_viewer = app.event_request(Method::PUT, &s.viewer, &update).await;
    assert_eq!(by_viewer.status(), StatusCode::FORBIDDEN);
    let outsiders = app.create_calendar(&s.outsider, "Outsider's").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let mut into_foreign = update.clone();
    into_foreign["calendars"] = json!([s.calendar, outsiders]);
    assert_eq!(
        app.event_request(Method::PUT, &s.editor, &into_foreign)
            .await
            .status(),
        StatusCode::FORBIDDEN
    );
    let mut unknown = update.clone();
    unknown["id"] = json!(uuid::Uuid::new_v4().to_string());
    assert_eq!(
        app.event_request(Method::PUT, &s.editor, &unknown)
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn delete_unlinks_or_removes_and_tells_the_right_people() {
    let app = spawn_app().await;
    let s = shared(&app, "delete").await;
    let editors_own = app.create_calendar(&s.editor, "Editor's own").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let body = event_body(&[&s.calendar, &editors_own], "Twice", 9);
    app.create_event(&s.editor, &body).await;
    let id = body["id"].as_str().expect("id");
    let mut viewer_stream = app.stream(&s.viewer).await;
    let mut editor_stream = app.stream(&s.editor).await;

    // Unlinking from the shared calendar: the viewer loses it, the editor keeps it.
    let unlinked = app
        .event_request(
            Method::DELETE,
            &s.editor,
            &json!({ "id": id, "unlinkCalendarID": s.calendar }),
        )
        .await;
    assert_eq!(unlinked.status(), StatusCode::OK);
    assert_eq!(
        unlinked.json::<Value>().await.expect("JSON"),
        json!({ "id": id, "calendars": [editors_own], "removed": false })
    );
    assert_eq!(
        viewer_stream.next_frame().await,
        json!({ "type": "event_removed", "payload": { "id": id, "calendars": [], "removed": true } })
    );
    let frame = editor_stream.next_frame().await;
    assert_eq!(frame["type"], "event_updated");
    assert_eq!(frame["payload"]["calendars"], json!([editors_own]));

    let not_there = app
        .event_request(
            Method::DELETE,
            &s.editor,
            &json!({ "id": id, "unlinkCalendarID": s.calendar }),
        )
        .await;
    assert_eq!(not_there.status(), StatusCode::BAD_REQUEST);
    let bad = app
        .event_request(
            Method::DELETE,
            &s.editor,
            &json!({ "id": id, "unlinkCalendarID": "x" }),
        )
        .await;
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let by_outsider = app
        .event_request(Method::DELETE, &s.outsider, &json!({ "id": id }))
        .await;
    assert_eq!(by_outsider.status(), StatusCode::FORBIDDEN);

    let removed = app
        .event_request(Method::DELETE, &s.editor, &json!({ "id": id }))
        .await;
    assert_eq!(
        removed.json::<Value>().await.expect("JSON"),
        json!({ "id": id, "calendars": [], "removed": true })
    );
    let frame = editor_stream.next_frame().await;
    assert_eq!(frame["type"], "event_removed");
    let gone = app
        .event_request(Method::DELETE, &s.editor, &json!({ "id": id }))
        .await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn reads_validate_their_query_and_range_reads_overlap() {
    let app = spawn_app().await;
    let s = shared(&app, "reads").await;
    for (hour, title) in [(8, "Early"), (12, "Noon"), (18, "Evening")] {
        app.create_event(&s.owner, &event_body(&[&s.calendar], title, hour))
            .await;
    }
    for query in [
        "?since=not-a-date",
        "?since=",
        "?since=2026-01-01T00:00:00Z&since=2026-01-02T00:00:00Z",
        "?start=2026-07-23T00:00:00Z",
        "?start=2026-07-24T00:00:00Z&end=2026-07-23T00:00:00Z",
        "?start=2020-01-01T00:00:00Z&end=2026-01-01T00:00:00Z",
        "?since=2026-01-01T00:00:00Z&start=2026-07-23T00:00:00Z&end=2026-07-24T00:00:00Z",
    ] {
        let response = app
            .as_user(Method::GET, &format!("/api/v1/events{query}"), &s.viewer)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
    }
    let range = app
        .read_events(
            &s.viewer,
            "?start=2026-07-23T11:30:00.000Z&end=2026-07-23T13:00:00.000Z",
        )
        .await;
    let titles: Vec<&str> = range["events"]
        .as_array()
        .expect("array")
        .iter()
        .map(|e| e["title"].as_str().expect("title"))
        .collect();
    assert_eq!(titles, ["Noon"]);
    let all = app.read_events(&s.viewer, "").await;
    assert_eq!(all["events"].as_array().expect("array").len(), 3);
    assert_eq!(all["deletedIds"], json!([]));
    assert!(all["serverTime"].as_str().expect("time").ends_with('Z'));
}

#[tokio::test]
async fn reads_are_the_documents_writes_return() {
    // Reads go through their own lean query (store::event_reads); writes answer with the
    // models they wrote. Both must give the same document, whatever the fields hold.
    let app = spawn_app().await;
    let s = shared(&app, "documents").await;
    let mut tricky = event_body(&[&s.calendar], "Quote \" backslash \\ tab \t ünïcødé 🎉", 9);
    tricky["start"] = json!("2026-07-23T09:15:30.123456Z");
    tricky["end"] = json!("2026-07-23T10:00:00.999Z");
    tricky["description"] = json!("line one\nline two\u{1}");
    tricky["location"] = Value::Null;
    tricky["url"] = json!("https://example.com/?a=1&b=<2>");
    tricky["recurrence"] = json!("RRULE:FREQ=WEEKLY;BYDAY=MO,TU\nEXDATE:20260803T091530Z");
    tricky["isAllDay"] = json!(false);
    tricky["isCanceled"] = json!(true);
    tricky["hasAttendees"] = json!(false);
    let mut all_day = event_body(&[&s.calendar], "Holiday", 0);
    all_day["start"] = json!("2026-08-01T00:00:00.000Z");
    all_day["end"] = json!("2026-08-03T00:00:00.000Z");
    all_day["isAllDay"] = json!(true);
    let mut written = Vec::new();
    for body in [&tricky, &all_day] {
        written.push(app.create_event(&s.owner, body).await);
    }
    // A link changes `calendars`; an update changes the revision and `updatedAt`.
    let other = app.create_calendar(&s.owner, "Other").await["id"].clone();
    let link = app
        .as_user(
            Method::POST,
            &format!(
                "/api/v1/events/{}/link",
                all_day["id"].as_str().expect("id")
            ),
            &s.owner,
        )
        .json(&json!({ "calendarID": other }))
        .send()
        .await
        .expect("request");
    assert_eq!(link.status(), StatusCode::OK);
    let mut linked: Value = link.json().await.expect("JSON");
    let mut update = tricky.clone();
    update["title"] = json!("Renamed \u{7f}");
    let updated = app.event_request(Method::PUT, &s.owner, &update).await;
    assert_eq!(updated.status(), StatusCode::OK);
    written[0] = updated.json().await.expect("JSON");

    let read = app.read_events(&s.owner, "").await;
    let events = read["events"].as_array().expect("events");
    assert_eq!(events.len(), 2);
    assert_eq!(
        events[0], written[0],
        "the update's answer is what reads show"
    );
    // Calendars are listed in link order on reads; the link answer lists them too.
    let mut read_linked = events[1].clone();
    let sort = |v: &mut Value| {
        let list = v["calendars"].as_array_mut().expect("calendars");
        list.sort_by_key(|c| c.as_str().unwrap_or_default().to_owned());
    };
    sort(&mut read_linked);
    sort(&mut linked);
    assert_eq!(read_linked, linked);
    assert_eq!(
        events[0]["start"], "2026-07-23T09:15:30.123Z",
        "milliseconds, truncated"
    );
    assert_eq!(events[0]["deletedAt"], Value::Null);

    // A viewer of only the shared calendar sees the linked event with that calendar only,
    // and delta and range reads give the same documents.
    let viewer = app.read_events(&s.viewer, "").await;
    let viewer_linked = &viewer["events"][1];
    assert_eq!(viewer_linked["calendars"], json!([s.calendar]));
    let since = app
        .read_events(&s.viewer, "?since=2000-01-01T00:00:00.000Z")
        .await;
    assert_eq!(since["events"], viewer["events"]);
    let range = app
        .read_events(
            &s.viewer,
            "?start=2026-07-01T00:00:00.000Z&end=2026-09-01T00:00:00.000Z",
        )
        .await;
    assert_eq!(range["events"], viewer["events"]);
}
