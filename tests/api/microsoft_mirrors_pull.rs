//! Pulling Outlook calendars through Graph's `calendarView/delta`, against the loopback
//! Microsoft: rounds paged by `@odata.nextLink` with the page size asked for and ending with
//! an `@odata.deltaLink`, the mirrored window, `@removed` items (deleted ones go, ones that
//! left the window stay with their new times), replayed items, a sync state lost between or
//! in the middle of rounds (a new round, which keeps what lies outside its window), times in
//! Windows and IANA zones with seven fractional digits, cancelled events, calendar list
//! paging, and series expanded into occurrences that take their master's title.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde_json::{Value, json};

use crate::microsoft_mirrors::{
    Linked, api_time, at, events_in, graph_time, linked_app, local_event, outbox_empties,
    outlook_event, outlook_mirrors, remote_of, synced, titles_in,
};
use crate::support::graph_api::{GraphApi, Recorded, Reset};

/// The delta requests on `calendar_id`, in order.
fn delta_requests(graph: &GraphApi, calendar_id: &str) -> Vec<Recorded> {
    let path = format!("/v1.0/me/calendars/{calendar_id}/calendarView/delta");
    graph
        .requests()
        .into_iter()
        .filter(|r| r.path == path)
        .collect()
}

fn query_instant(query: &str, name: &str) -> DateTime<Utc> {
    let value = url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("{name} in {query}"))
        .1
        .into_owned();
    DateTime::parse_from_rfc3339(&value)
        .unwrap_or_else(|_| panic!("{name}={value} is an instant"))
        .with_timezone(&Utc)
}

#[tokio::test]
async fn delta_rounds_follow_next_links_to_a_delta_link_within_the_window() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    for i in 0..230_i64 {
        let start = at(1 + i / 10, 8) + Duration::minutes(30 * (i % 10));
        graph.insert_event(&calendar, outlook_event(&format!("Item {i:03}"), start, 20));
    }
    graph.insert_event(&calendar, outlook_event("Too early", at(-20, 9), 60));
    graph.insert_event(&calendar, outlook_event("Too late", at(40, 9), 60));
    // Every round starts with an empty page that only links on.
    graph.empty_first_pages(true);
    let Linked { app, ana } = linked_app(&graph, &account, |s| {
        s.microsoft.sync_past_days = 10;
        s.microsoft.sync_future_days = 30;
    })
    .await;

    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let titles = titles_in(&app, &ana, &mirror).await;
    let expected: Vec<String> = (0..230).map(|i| format!("Item {i:03}")).collect();
    assert_eq!(titles, expected, "every page, nothing outside the window");
    let item = events_in(&app, &ana, &mirror).await[0].clone();
    assert_eq!(item["title"], "Item 000");
    assert_eq!(item["start"], json!(api_time(at(1, 8))));
    assert_eq!(
        item["end"],
        json!(api_time(at(1, 8) + Duration::minutes(20)))
    );
    assert_eq!(item["location"], "Room 7");
    assert_eq!(item["description"], "About Item 000");

    // The first round: the window's first request, then the links exactly as given; the
    // pull after it starts from the round's delta link (and pages on from its empty page).
    let round = delta_requests(&graph, &calendar);
    assert_eq!(
        shape(&round),
        [
            ("start", 200),
            ("next", 200),
            ("next", 200),
            ("next", 200),
            ("delta", 200),
            ("next", 200)
        ],
        "an empty page, then 100 + 100 + 30; then the next pull"
    );
    let first = &round[0];
    let now = Utc::now();
    let from = query_instant(&first.query, "startDateTime");
    let to = query_instant(&first.query, "endDateTime");
    assert!(
        (from - (now - Duration::days(10))).num_minutes().abs() < 5,
        "{from}"
    );
    assert!(
        (to - (now + Duration::days(30))).num_minutes().abs() < 5,
        "{to}"
    );
    for request in &round {
        for preference in [
            "odata.maxpagesize=100",
            "outlook.timezone=\"UTC\"",
            "IdType=\"ImmutableId\"",
            "outlook.body-content-type=\"text\"",
        ] {
            assert!(
                request.prefer.iter().any(|p| p == preference),
                "{preference} in {:?}",
                request.prefer
            );
        }
    }

    // A change arrives through the delta link of the last round.
    graph.insert_event(&calendar, outlook_event("Item 230", at(2, 20), 20));
    synced(&app, &ana).await;
    let next = delta_requests(&graph, &calendar);
    let next = &next[round.len()..];
    assert!(
        next[0].query.starts_with("$deltatoken="),
        "{}",
        next[0].query
    );
    assert_eq!(next[0].status, 200);
    assert_eq!(titles_in(&app, &ana, &mirror).await.len(), 231);
}

#[tokio::test]
async fn removed_items_go_when_deleted_and_keep_their_new_times_when_they_left_the_window() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    graph.insert_event(&calendar, outlook_event("Stays", at(2, 9), 60));
    let deleted = graph.insert_event(&calendar, outlook_event("Deleted in Outlook", at(3, 9), 60));
    let moved = graph.insert_event(&calendar, outlook_event("Moved far away", at(4, 9), 60));
    let edited = graph.insert_event(&calendar, outlook_event("Edited", at(5, 9), 60));
    let arriving = graph.insert_event(&calendar, outlook_event("Moved closer", at(500, 9), 60));
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        ["Deleted in Outlook", "Edited", "Moved far away", "Stays"]
    );

    let mut stream = app.stream(&ana).await;
    let id = |event: &Value| event["id"].as_str().expect("id").to_owned();
    graph.delete_event(&id(&deleted));
    graph.update_event(
        &id(&moved),
        json!({ "start": graph_time(at(400, 9)), "end": graph_time(at(400, 10)) }),
    );
    graph.update_event(&id(&edited), json!({ "subject": "Edited in Outlook" }));
    graph.update_event(
        &id(&arriving),
        json!({ "start": graph_time(at(6, 9)), "end": graph_time(at(6, 10)) }),
    );
    let before = graph.requests().len();
    synced(&app, &ana).await;
    assert_eq!(
        stream.next_frame().await,
        json!({ "type": "external_sync", "payload": { "calendars": [mirror] } })
    );
    // Both come back `@removed`; Graph is asked which one still exists.
    let lookups: Vec<(String, u16)> = graph.requests()[before..]
        .iter()
        .filter(|r| r.path.starts_with("/v1.0/me/events/"))
        .map(|r| {
            (
                r.path.trim_start_matches("/v1.0/me/events/").to_owned(),
                r.status,
            )
        })
        .collect();
    let mut expected = vec![(id(&deleted), 404), (id(&moved), 200)];
    let mut lookups = lookups;
    lookups.sort();
    expected.sort();
    assert_eq!(lookups, expected);
    let summary: Vec<Value> = events_in(&app, &ana, &mirror)
        .await
        .iter()
        .map(|e| json!([e["title"], e["start"]]))
        .collect();
    assert_eq!(
        summary,
        [
            json!(["Stays", api_time(at(2, 9))]),
            json!(["Edited in Outlook", api_time(at(5, 9))]),
            json!(["Moved closer", api_time(at(6, 9))]),
            json!(["Moved far away", api_time(at(400, 9))]),
        ],
        "deleted: gone; out of the window: kept with its new times; into it: arrived"
    );

    // Cancelled by its organizer: still there, marked cancelled.
    graph.update_event(&id(&edited), json!({ "isCancelled": true }));
    synced(&app, &ana).await;
    let cancelled = events_in(&app, &ana, &mirror)
        .await
        .into_iter()
        .find(|e| e["title"] == "Edited in Outlook")
        .expect("kept");
    assert_eq!(cancelled["isCanceled"], true);
}

#[tokio::test]
async fn replayed_items_change_nothing() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    let other = graph.add_calendar(&account, "Other", true);
    graph.insert_event(&calendar, outlook_event("First", at(2, 9), 60));
    graph.insert_event(&calendar, outlook_event("Second", at(3, 9), 60));
    // The first round delivers every item twice.
    graph.replay_next_round();
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirrors = outlook_mirrors(&app, &ana).await;
    let mirror = mirrors[0]["id"].as_str().expect("id").to_owned();
    let other_mirror = mirrors[1]["id"].as_str().expect("id").to_owned();
    assert_eq!(titles_in(&app, &ana, &mirror).await, ["First", "Second"]);
    let before = events_in(&app, &ana, &mirror).await;

    // An incremental round that delivers unchanged items again: nothing changes, no frame
    // (the next frame is the one a change in the other calendar causes).
    let mut stream = app.stream(&ana).await;
    graph.replay_next_round();
    synced(&app, &ana).await;
    assert_eq!(events_in(&app, &ana, &mirror).await, before);
    graph.insert_event(&other, outlook_event("Elsewhere", at(4, 9), 60));
    synced(&app, &ana).await;
    assert_eq!(
        stream.next_frame().await,
        json!({ "type": "external_sync", "payload": { "calendars": [other_mirror] } })
    );
}

#[tokio::test]
async fn a_lost_sync_state_starts_a_new_round_that_sweeps_only_what_graph_no_longer_has() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    graph.insert_event(&calendar, outlook_event("Stays", at(2, 9), 60));
    let gone = graph.insert_event(&calendar, outlook_event("Gone meanwhile", at(3, 9), 60));
    let away = graph.insert_event(
        &calendar,
        outlook_event("Moved away meanwhile", at(5, 9), 60),
    );
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // An event written here for long ago: Outlook has it, outside the mirrored window.
    let old = app
        .create_event(
            &ana,
            &local_event(&mirror, "Written for last year", at(-200, 9), 60),
        )
        .await;
    let old_id = old["id"].as_str().expect("id").to_owned();
    outbox_empties(&app).await;
    assert!(remote_of(&graph, &calendar, &old_id).is_some(), "delivered");
    let mut stream = app.stream(&ana).await;

    graph.delete_event(gone["id"].as_str().expect("id"));
    graph.update_event(
        away["id"].as_str().expect("id"),
        json!({ "start": graph_time(at(450, 9)), "end": graph_time(at(450, 10)) }),
    );
    graph.insert_event(&calendar, outlook_event("New meanwhile", at(4, 9), 60));
    graph.expire_delta_tokens(Reset::SyncStateNotFound);
    let before = delta_requests(&graph, &calendar).len();
    synced(&app, &ana).await;
    let after = delta_requests(&graph, &calendar);
    let shape: Vec<(u16, bool)> = after[before..]
        .iter()
        .map(|r| (r.status, r.query.contains("startDateTime")))
        .collect();
    assert_eq!(
        shape,
        [(400, false), (200, true)],
        "refused, then a new round"
    );
    // Gone: removed. Moved out of the window: kept with its new times. Outside the window
    // all along: kept.
    let summary: Vec<Value> = events_in(&app, &ana, &mirror)
        .await
        .iter()
        .map(|e| json!([e["title"], e["start"]]))
        .collect();
    assert_eq!(
        summary,
        [
            json!(["Written for last year", api_time(at(-200, 9))]),
            json!(["Stays", api_time(at(2, 9))]),
            json!(["New meanwhile", api_time(at(4, 9))]),
            json!(["Moved away meanwhile", api_time(at(450, 9))]),
        ]
    );
    assert_eq!(
        stream.next_frame().await,
        json!({ "type": "external_sync", "payload": { "calendars": [mirror] } })
    );
    // The new round's delta link works as before.
    graph.insert_event(&calendar, outlook_event("Later", at(5, 9), 60));
    synced(&app, &ana).await;
    let last = delta_requests(&graph, &calendar).pop().expect("a request");
    assert!(last.query.starts_with("$deltatoken="), "{}", last.query);
    assert_eq!(
        titles_in(&app, &ana, &mirror).await,
        [
            "Later",
            "Moved away meanwhile",
            "New meanwhile",
            "Stays",
            "Written for last year"
        ]
    );
}

/// `days` from today at `hour:minute` local time in `zone`, as an instant.
fn local_in(zone: Tz, days: i64, hour: u32, minute: u32) -> (String, DateTime<Utc>) {
    let date = Utc::now().date_naive() + Duration::days(days);
    let local = date.and_time(NaiveTime::from_hms_opt(hour, minute, 0).expect("time"));
    let instant = zone
        .from_local_datetime(&local)
        .single()
        .expect("an unambiguous time")
        .with_timezone(&Utc);
    (local.format("%Y-%m-%dT%H:%M:%S").to_string(), instant)
}

#[tokio::test]
async fn times_in_windows_and_iana_zones_are_read_in_their_zone() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    let cases = [
        (
            "Berlin",
            "W. Europe Standard Time",
            chrono_tz::Europe::Berlin,
            9,
            0,
            ".0000000",
        ),
        (
            "Seattle",
            "Pacific Standard Time",
            chrono_tz::America::Los_Angeles,
            7,
            30,
            ".5000000",
        ),
        (
            "Delhi",
            "India Standard Time",
            chrono_tz::Asia::Kolkata,
            18,
            0,
            "",
        ),
        (
            "Sydney",
            "Australia/Sydney",
            chrono_tz::Australia::Sydney,
            8,
            15,
            ".1234567",
        ),
    ];
    let mut expected = Vec::new();
    for (day, (title, zone_name, zone, hour, minute, fraction)) in cases.iter().enumerate() {
        let day = i64::try_from(day).expect("day") + 3;
        let (start_local, start) = local_in(*zone, day, *hour, *minute);
        let (end_local, end) = local_in(*zone, day, *hour + 1, *minute);
        graph.insert_event(
            &calendar,
            json!({
                "subject": title,
                "start": { "dateTime": format!("{start_local}{fraction}"), "timeZone": zone_name },
                "end": { "dateTime": format!("{end_local}{fraction}"), "timeZone": zone_name },
            }),
        );
        expected.push(json!([title, api_time(start), api_time(end)]));
    }
    // Graph writes each event in its own zone (as it does when the preference is not
    // applied): Bowline must read the zone, not assume UTC.
    graph.answer_in_original_zones(true);
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let delivered = graph
        .requests()
        .into_iter()
        .rfind(|r| r.path.ends_with("/calendarView/delta"))
        .expect("a delta request");
    assert_eq!(delivered.status, 200);
    let got: Vec<Value> = events_in(&app, &ana, &mirror)
        .await
        .iter()
        .map(|e| json!([e["title"], e["start"], e["end"]]))
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test]
async fn series_occurrences_take_their_masters_title_and_exceptions_keep_their_own() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let calendar = account.default_calendar.clone();
    let first = at(3, 8);
    let mut master = outlook_event("Standup", first, 30);
    master["recurrence"] = json!({
        "pattern": { "type": "daily", "interval": 1 },
        "range": {
            "type": "numbered",
            "startDate": first.date_naive().to_string(),
            "numberOfOccurrences": 4,
        },
    });
    let master = graph.insert_series(&calendar, master);
    let master_id = master["id"].as_str().expect("id").to_owned();
    let window = (at(0, 0), at(30, 0));
    let occurrences = graph.occurrences(&master_id, window);
    assert_eq!(occurrences.len(), 4);
    let id = |event: &Value| event["id"].as_str().expect("id").to_owned();
    let moved_start = first + Duration::days(1) + Duration::hours(2);
    graph.update_event(
        &id(&occurrences[1]),
        json!({
            "subject": "Standup (moved)",
            "start": graph_time(moved_start),
            "end": graph_time(moved_start + Duration::minutes(30)),
        }),
    );
    graph.delete_event(&id(&occurrences[2]));

    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let summary = |events: Vec<Value>| -> Vec<Value> {
        events
            .iter()
            .map(|e| json!([e["title"], e["start"], e["recurrence"]]))
            .collect()
    };
    assert_eq!(
        summary(events_in(&app, &ana, &mirror).await),
        [
            json!(["Standup", api_time(first), null]),
            json!(["Standup (moved)", api_time(moved_start), null]),
            json!(["Standup", api_time(first + Duration::days(3)), null]),
        ],
        "each occurrence in the window is an event; the deleted one is not there"
    );
    assert!(
        graph
            .requests()
            .iter()
            .any(|r| r.method == "GET" && r.path == format!("/v1.0/me/events/{master_id}")),
        "the master is read for the occurrences' title"
    );

    // Renaming the series renames its plain occurrences; the exception keeps its title.
    graph.update_event(&master_id, json!({ "subject": "Daily standup" }));
    synced(&app, &ana).await;
    let titles: Vec<Value> = events_in(&app, &ana, &mirror)
        .await
        .iter()
        .map(|e| e["title"].clone())
        .collect();
    assert_eq!(
        titles,
        [
            json!("Daily standup"),
            json!("Standup (moved)"),
            json!("Daily standup")
        ]
    );

    // Deleting the series takes every occurrence and the exception with it.
    graph.delete_event(&master_id);
    synced(&app, &ana).await;
    assert!(titles_in(&app, &ana, &mirror).await.is_empty());
}

#[tokio::test]
async fn every_calendar_is_mirrored_across_list_pages_and_a_removed_one_goes() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    // Twelve calendars: more than one page of Graph's calendar list.
    let teams: Vec<String> = (1..=11)
        .map(|i| graph.add_calendar(&account, &format!("Team {i:02}"), true))
        .collect();
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let mirrors = outlook_mirrors(&app, &ana).await;
    let names: Vec<&str> = mirrors
        .iter()
        .map(|m| m["name"].as_str().expect("name"))
        .collect();
    let mut expected = vec!["Calendar".to_owned()];
    expected.extend((1..=11).map(|i| format!("Team {i:02}")));
    assert_eq!(names, expected);
    let lists: Vec<String> = graph
        .requests()
        .iter()
        .filter(|r| r.path == "/v1.0/me/calendars")
        .map(|r| r.query.clone())
        .take(2)
        .collect();
    assert_eq!(lists, ["", "$skip=10"], "the list's second page is read");

    let mut stream = app.stream(&ana).await;
    let gone = mirrors
        .iter()
        .find(|m| m["name"] == "Team 05")
        .expect("mirror")["id"]
        .clone();
    graph.remove_calendar(&teams[4]);
    synced(&app, &ana).await;
    let frames = crate::microsoft_mirrors::frames_until(&mut stream, "calendar_removed").await;
    assert_eq!(
        frames.last().expect("frame")["payload"],
        json!({ "id": gone })
    );
    let left = outlook_mirrors(&app, &ana).await;
    assert_eq!(left.len(), 11);
    assert!(left.iter().all(|m| m["name"] != "Team 05"));
}

/// Adds `count` events named `<prefix> NNN` (from `first`) to `calendar`, ten a day.
fn fill(graph: &GraphApi, calendar: &str, prefix: &str, first: i64, count: i64) {
    for i in first..first + count {
        let start = at(1 + i / 10, 8) + Duration::minutes(30 * (i % 10));
        graph.insert_event(
            calendar,
            outlook_event(&format!("{prefix} {i:03}"), start, 20),
        );
    }
}

/// The kinds of `requests` (`start`, `next`, `delta`) with their statuses.
fn shape(requests: &[Recorded]) -> Vec<(&'static str, u16)> {
    requests
        .iter()
        .map(|r| {
            let kind = if r.query.contains("startDateTime") {
                "start"
            } else if r.query.starts_with("$skiptoken=") {
                "next"
            } else if r.query.starts_with("$deltatoken=") {
                "delta"
            } else {
                "other"
            };
            (kind, r.status)
        })
        .collect()
}

#[tokio::test]
async fn a_sync_state_lost_in_the_middle_of_a_round_starts_the_round_again() {
    let graph = GraphApi::start().await;
    let account = graph.add_user("ana.outlook@example.com", "Ana Outlook");
    let big = graph.add_calendar(&account, "Big", true);
    fill(&graph, &big, "Big", 0, 150);
    let Linked { app, ana } = linked_app(&graph, &account, |_| {}).await;
    let big_mirror = outlook_mirrors(&app, &ana).await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(titles_in(&app, &ana, &big_mirror).await.len(), 150);

    // An incremental round of two pages loses its state after the first: the pages read
    // are dropped and a new round over the window brings everything.
    fill(&graph, &big, "Big", 150, 120);
    graph.reset_next_page(Reset::SyncStateNotFound);
    let before = delta_requests(&graph, &big).len();
    synced(&app, &ana).await;
    assert_eq!(
        shape(&delta_requests(&graph, &big)[before..]),
        [
            ("delta", 200),
            ("next", 400),
            ("start", 200),
            ("next", 200),
            ("next", 200)
        ]
    );
    let expected: Vec<String> = (0..270).map(|i| format!("Big {i:03}")).collect();
    assert_eq!(titles_in(&app, &ana, &big_mirror).await, expected);

    // A first round (a calendar added in Outlook) that meets a 410 on its second page
    // starts again too.
    let late = graph.add_calendar(&account, "Late", true);
    fill(&graph, &late, "Late", 0, 150);
    graph.reset_next_page(Reset::Gone);
    synced(&app, &ana).await;
    assert_eq!(
        shape(&delta_requests(&graph, &late)),
        [("start", 200), ("next", 410), ("start", 200), ("next", 200)]
    );
    let late_mirror = outlook_mirrors(&app, &ana)
        .await
        .into_iter()
        .find(|m| m["name"] == "Late")
        .expect("mirrored")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(titles_in(&app, &ana, &late_mirror).await.len(), 150);
}
