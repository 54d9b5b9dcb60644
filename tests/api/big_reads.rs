//! Full events reads of more events than `EVENTS_STREAM_ABOVE` are streamed from one
//! snapshot instead of being rendered whole and cached: the answer is the very text a
//! small read renders, across many chunks; its tag names the snapshot (304 still works);
//! events changed while it is being written appear once, as they were; a client that stops
//! reading gets a cut-off answer once the snapshot's time is up, which frees its place for
//! the next big read; and small reads still come from the cache.

use futures::future::join_all;
use reqwest::header::{CONTENT_LENGTH, ETAG, IF_NONE_MATCH};
use reqwest::{Method, StatusCode};
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

use crate::helpers::{
    TestApp, TestUser, WAIT, event_body, sample, spawn_app_sharing_database_with, spawn_app_with,
};

const HITS: &str = "svc_event_read_cache_total{outcome=\"hit\"}";
const STREAMED: &str = "svc_event_read_cache_total{outcome=\"streamed\"}";

/// A streamed read's threshold and chunk in these tests: a few events cross it.
const ABOVE: u32 = 10;

/// `GET /api/v1/events` as `user`, with `If-None-Match` when given: status, tag, whether
/// the answer announced its length (a rendered answer does, a streamed one does not), and
/// the body.
async fn full_read(
    app: &TestApp,
    user: &TestUser,
    if_none_match: Option<&str>,
) -> (StatusCode, String, bool, String) {
    let mut request = app.as_user(Method::GET, "/api/v1/events", user);
    if let Some(tag) = if_none_match {
        request = request.header(IF_NONE_MATCH, tag);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    let tag = response
        .headers()
        .get(ETAG)
        .map(|v| v.to_str().expect("ascii").to_owned())
        .unwrap_or_default();
    let sized = response.headers().contains_key(CONTENT_LENGTH);
    (status, tag, sized, response.text().await.expect("body"))
}

/// `body` with its `serverTime` value blanked (the one part of two answers that differs).
fn timeless(body: &str) -> String {
    let at = body.rfind("\"serverTime\":\"").expect("serverTime") + 14;
    format!("{}{}", &body[..at], &body[at + 24..])
}

/// Creates `count` events in `calendar` (eight at a time), each with a description of
/// `description` four-byte characters, the `n`th starting `n` minutes after 10:00 on 23 July 2026.
async fn seed(app: &TestApp, user: &TestUser, calendar: &str, count: usize, description: usize) {
    let text = "\u{1F389}".repeat(description);
    for batch in (0..count).collect::<Vec<_>>().chunks(8) {
        join_all(batch.iter().map(|n| {
            let mut body = event_body(&[calendar], &format!("Seeded \"{n}\" é"), 9);
            body["start"] = json!(at_minute(*n as i64));
            body["end"] = json!(at_minute(*n as i64 + 30));
            if description > 0 {
                body["description"] = json!(text);
            }
            let app = &app;
            async move { app.create_event(user, &body).await }
        }))
        .await;
    }
}

/// A wire timestamp `minutes` after 2026-07-23T10:00Z.
fn at_minute(minutes: i64) -> String {
    let start = chrono::DateTime::parse_from_rfc3339("2026-07-23T10:00:00Z").expect("time");
    bowline::domain::time::format_timestamp((start + chrono::Duration::minutes(minutes)).into())
}

/// A server that streams reads of more than [`ABOVE`] events, three at a time, and one on
/// the same database that renders every read whole.
async fn streaming_and_whole() -> (TestApp, TestApp) {
    let app = spawn_app_with(|s| {
        s.storage.events_stream_above = ABOVE;
        s.storage.events_stream_chunk = 3;
    })
    .await;
    let whole = spawn_app_sharing_database_with(&app, |s| {
        s.storage.events_stream_above = 1_000_000;
    })
    .await;
    (app, whole)
}

fn ids(body: &Value) -> Vec<String> {
    body["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["id"].as_str().expect("id").to_owned())
        .collect()
}

#[tokio::test]
async fn a_big_read_is_streamed_as_the_text_a_small_read_renders() {
    let (app, whole) = streaming_and_whole().await;
    let owner = app.sign_up("big-owner@example.com").await;
    let member = app.sign_up("big-member@example.com").await;
    let calendar = |name: &'static str| {
        let app = &app;
        let owner = &owner;
        async move {
            app.create_calendar(owner, name).await["id"]
                .as_str()
                .expect("id")
                .to_owned()
        }
    };
    let (a, b) = (calendar("A").await, calendar("B").await);
    app.join_with_invite(&owner, &b, &member).await;
    seed(&app, &owner, &a, 22, 0).await;
    seed(&app, &owner, &b, 3, 200).await;
    // One event in both calendars, one deleted: 26 live events, 4 of them in B.
    let both = app
        .create_event(&owner, &event_body(&[&a, &b], "Both", 7))
        .await;
    let gone = app
        .create_event(&owner, &event_body(&[&a], "Gone", 8))
        .await;
    let deleted = app
        .event_request(Method::DELETE, &owner, &json!({ "id": gone["id"] }))
        .await;
    assert_eq!(deleted.status(), StatusCode::OK);

    let (status, tag, sized, streamed) = full_read(&app, &owner, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!sized, "a read of more than {ABOVE} events is streamed");
    let (status, whole_tag, sized, rendered) = full_read(&whole, &owner, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(sized, "the other server renders it whole");
    assert_eq!(timeless(&streamed), timeless(&rendered), "the same text");
    assert_eq!(tag, whole_tag, "tagged with the same versions");
    let parsed: Value = serde_json::from_str(&streamed).expect("valid JSON");
    let listed = ids(&parsed);
    assert_eq!(listed.len(), 26, "every live event, across nine chunks");
    let mut unique = listed.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 26, "each once");
    assert!(!listed.contains(&gone["id"].as_str().expect("id").to_owned()));
    let listed_both = &parsed["events"][0];
    assert_eq!(listed_both["id"], both["id"], "ordered by start");
    // Linked at one time: listed in the order of the calendars' ids, as every read lists them.
    let mut linked = [a.clone(), b.clone()];
    linked.sort();
    assert_eq!(listed_both["calendars"], json!(linked));
    assert_eq!(parsed["deletedIds"], json!([]));
    // The same events as a delta read, which never streams nor caches.
    let delta = app
        .read_events(&owner, "?since=2000-01-01T00:00:00.000Z")
        .await;
    assert_eq!(parsed["events"], delta["events"]);

    // The tag holds until something changes.
    let (status, again, _, body) = full_read(&app, &owner, Some(&tag)).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_eq!(again, tag);
    assert!(body.is_empty());
    let mut renamed = both.clone();
    renamed["title"] = json!("Both, renamed");
    let updated = app.event_request(Method::PUT, &owner, &renamed).await;
    assert_eq!(updated.status(), StatusCode::OK);
    let (status, changed, sized, body) = full_read(&app, &owner, Some(&tag)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!sized);
    assert_ne!(changed, tag);
    let body: Value = serde_json::from_str(&body).expect("valid JSON");
    assert_eq!(body["events"][0]["title"], "Both, renamed");
    assert_eq!(
        full_read(&app, &owner, Some(&changed)).await.0,
        StatusCode::NOT_MODIFIED
    );

    // Big reads are not cached; a small one (B's four events) is.
    let hits = || async { sample(&app.metrics_text().await, HITS).unwrap_or(0.0) };
    let streamed = || async { sample(&app.metrics_text().await, STREAMED).unwrap_or(0.0) };
    let before = hits().await;
    let streamed_before = streamed().await;
    full_read(&app, &owner, None).await;
    full_read(&app, &owner, None).await;
    assert_eq!(
        hits().await,
        before,
        "a streamed read never comes from the cache"
    );
    assert_eq!(streamed().await, streamed_before + 2.0, "and is counted so");
    let (status, _, sized, first) = full_read(&app, &member, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(sized, "a small read is rendered whole");
    let first: Value = serde_json::from_str(&first).expect("valid JSON");
    assert_eq!(ids(&first).len(), 4);
    let (_, _, _, second) = full_read(&app, &member, None).await;
    assert_eq!(
        hits().await,
        before + 1.0,
        "and served from the cache again"
    );
    let second: Value = serde_json::from_str(&second).expect("valid JSON");
    assert_eq!(second["events"], first["events"]);
}

/// Reads the rest of `response` into `body`; `Err` when the answer was cut off.
async fn rest(response: &mut reqwest::Response, body: &mut Vec<u8>) -> Result<(), reqwest::Error> {
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
    }
    Ok(())
}

/// Events with 192 KB descriptions (48,000 four-byte characters, within the 50,000 a
/// description may hold): 128 of them make a 24 MB answer, more than the socket buffers,
/// the server and sqlx (50 rows on SQLite) hold between the statement and a client that
/// stops reading, so the statement is still running when the events change.
const BIG_EVENTS: usize = 128;
const BIG_DESCRIPTION: usize = 48_000;

#[tokio::test]
async fn a_big_read_is_one_snapshot_and_a_stalled_one_is_cut_off() {
    let app = spawn_app_with(|s| {
        s.storage.events_stream_above = ABOVE;
        s.storage.events_stream_chunk = 1;
    })
    .await;
    let owner = app.sign_up("big-snapshot@example.com").await;
    let calendar = app.create_calendar(&owner, "Big").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    seed(&app, &owner, &calendar, BIG_EVENTS, BIG_DESCRIPTION).await;
    let (status, tag, _, before) = full_read(&app, &owner, None).await;
    assert_eq!(status, StatusCode::OK);
    let before: Value = serde_json::from_str(&before).expect("valid JSON");
    let order = ids(&before);
    assert_eq!(order.len(), BIG_EVENTS);

    // A read that has written its first event when the first and the last events trade
    // places, one more is created and one deleted.
    let mut response = app
        .as_user(Method::GET, "/api/v1/events", &owner)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[ETAG].to_str().expect("ascii"), tag);
    let mut body = response
        .chunk()
        .await
        .expect("first chunk")
        .expect("bytes")
        .to_vec();
    let mut first = before["events"][0].clone();
    let mut last = before["events"][BIG_EVENTS - 1].clone();
    first["start"] = json!(at_minute(BIG_EVENTS as i64 + 10));
    first["end"] = json!(at_minute(BIG_EVENTS as i64 + 20));
    last["start"] = json!(at_minute(-20));
    last["end"] = json!(at_minute(-10));
    for moved in [&first, &last] {
        let answer = app.event_request(Method::PUT, &owner, moved).await;
        assert_eq!(answer.status(), StatusCode::OK);
    }
    app.create_event(&owner, &event_body(&[&calendar], "Later", 20))
        .await;
    let deleted = app
        .event_request(Method::DELETE, &owner, &json!({ "id": order[1] }))
        .await;
    assert_eq!(deleted.status(), StatusCode::OK);
    rest(&mut response, &mut body)
        .await
        .expect("the whole answer");
    let during: Value = serde_json::from_slice(&body).expect("valid JSON");
    assert_eq!(
        ids(&during),
        order,
        "every event once, in the snapshot's order"
    );
    assert_eq!(
        during["events"], before["events"],
        "as they were when the read began"
    );
    let after = app.read_events(&owner, "").await;
    assert_eq!(ids(&after).len(), BIG_EVENTS);
    assert_eq!(ids(&after)[0], last["id"].as_str().expect("id"));

    // With one stream at a time (a pool of two), a client that stops reading holds the
    // stream until its time is up: then its answer is cut off, and the next big read,
    // which waited, is answered in full.
    let slow = spawn_app_sharing_database_with(&app, |s| {
        s.storage.max_connections = 2;
        // Long enough for the next read to be written whole on a busy machine.
        s.storage.events_stream_timeout_ms = 2_000;
    })
    .await;
    let mut stalled = slow
        .as_user(Method::GET, "/api/v1/events", &owner)
        .send()
        .await
        .expect("request");
    assert_eq!(stalled.status(), StatusCode::OK);
    let mut cut = stalled
        .chunk()
        .await
        .expect("first chunk")
        .expect("bytes")
        .to_vec();
    let next = tokio::time::timeout(WAIT, full_read(&slow, &owner, None))
        .await
        .expect("the next read is answered once the stalled one gave up");
    assert_eq!(next.0, StatusCode::OK);
    let next: Value = serde_json::from_str(&next.3).expect("valid JSON");
    assert_eq!(ids(&next), ids(&after));
    let outcome = tokio::time::timeout(WAIT, rest(&mut stalled, &mut cut))
        .await
        .expect("the cut-off answer ends");
    assert!(
        outcome.is_err(),
        "a stalled read is cut off, not ended as a list"
    );
    assert!(serde_json::from_slice::<Value>(&cut).is_err());
}

#[tokio::test]
async fn one_readers_big_reads_wait_in_their_own_line_not_in_everyones() {
    // A pool of four: two streams at once, of which one reader may hold one.
    let app = spawn_app_with(|s| {
        s.storage.events_stream_above = ABOVE;
        s.storage.events_stream_chunk = 1;
        s.storage.max_connections = 4;
    })
    .await;
    let big = app.sign_up("big-reader@example.com").await;
    let calendar = app.create_calendar(&big, "Big").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    seed(&app, &big, &calendar, BIG_EVENTS, BIG_DESCRIPTION).await;
    let other = app.sign_up("other-reader@example.com").await;
    let theirs = app.create_calendar(&other, "Theirs").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    seed(&app, &other, &theirs, ABOVE as usize + 5, 0).await;
    let small = app.sign_up("small-reader@example.com").await;

    // The big reader's first read stalls (its client stops reading) and holds a stream.
    let mut stalled = app
        .as_user(Method::GET, "/api/v1/events", &big)
        .send()
        .await
        .expect("request");
    assert_eq!(stalled.status(), StatusCode::OK);
    stalled.chunk().await.expect("first chunk").expect("bytes");
    // Another of theirs waits in their own line.
    let queued: Vec<_> = (0..1)
        .map(|_| {
            let client = app.client.clone();
            let url = app.url("/api/v1/events");
            let token = big.token.clone();
            tokio::spawn(async move {
                let response = client
                    .get(url)
                    .bearer_auth(token)
                    .send()
                    .await
                    .expect("request");
                let status = response.status();
                (status, response.text().await.unwrap_or_default())
            })
        })
        .collect();
    crate::helpers::eventually("the queued read is in flight", || async {
        sample(
            &app.metrics_text().await,
            r#"svc_http_requests_in_flight{method="GET"}"#,
        )
        .unwrap_or(0.0)
            >= 1.0
    })
    .await;

    // Another reader's big read and a small read are answered in full meanwhile.
    let (status, _, sized, body) = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        full_read(&app, &other, None),
    )
    .await
    .expect("answered");
    assert_eq!(status, StatusCode::OK, "{body:.200}");
    assert!(!sized, "streamed");
    let body: Value = serde_json::from_str(&body).expect("valid JSON");
    assert_eq!(ids(&body).len(), ABOVE as usize + 5);
    let (status, _, _, body) = full_read(&app, &small, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(ids(&serde_json::from_str(&body).expect("JSON")).len(), 0);

    // Once the stalled read goes away, the queued one is answered in full.
    drop(stalled);
    for read in queued {
        let (status, body) = tokio::time::timeout(std::time::Duration::from_secs(60), read)
            .await
            .expect("answered")
            .expect("task");
        assert_eq!(status, StatusCode::OK);
        let body: Value = serde_json::from_str(&body).expect("valid JSON");
        assert_eq!(ids(&body).len(), BIG_EVENTS);
    }
}

/// `body`'s event titled `title`.
fn titled<'b>(body: &'b Value, title: &str) -> Option<&'b Value> {
    body["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["title"] == title)
}

#[tokio::test]
async fn an_event_stored_without_an_origin_calendar_is_read_with_a_null_origin() {
    let (app, whole) = streaming_and_whole().await;
    let owner = app.sign_up("originless@example.com").await;
    let calendar = app.create_calendar(&owner, "Imported").await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    seed(&app, &owner, &calendar, ABOVE as usize, 0).await;
    let homeless = app
        .create_event(&owner, &event_body(&[&calendar], "Homeless", 7))
        .await;
    // The column allows no origin (rows written before origins were kept, or by hand).
    let cleared = app
        .db_connection()
        .await
        .execute_unprepared("UPDATE events SET origin_calendar_id = NULL WHERE title = 'Homeless'")
        .await
        .expect("clear the origin");
    assert_eq!(cleared.rows_affected(), 1);

    let (status, _, sized, streamed) = full_read(&app, &owner, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!sized, "streamed");
    let (status, _, sized, rendered) = full_read(&whole, &owner, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(sized, "rendered whole");
    let range = app
        .as_user(
            Method::GET,
            "/api/v1/events?start=2026-07-23T00:00:00Z&end=2026-07-24T00:00:00Z",
            &owner,
        )
        .send()
        .await
        .expect("request");
    assert_eq!(range.status(), StatusCode::OK);
    let range: Value = range.json().await.expect("JSON");
    for (read, body) in [
        ("streamed", serde_json::from_str(&streamed).expect("JSON")),
        ("rendered", serde_json::from_str(&rendered).expect("JSON")),
        ("range", range),
    ] {
        assert_eq!(
            body["events"].as_array().expect("events").len(),
            ABOVE as usize + 1,
            "{read}: every event is listed"
        );
        let event = titled(&body, "Homeless").expect("the event without an origin is listed");
        assert_eq!(event["id"], homeless["id"], "{read}");
        assert_eq!(event["originCalendarID"], Value::Null, "{read}");
        assert_eq!(event["calendars"], json!([calendar]), "{read}");
    }
}
