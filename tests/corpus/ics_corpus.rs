//! The real-world corpus in the directory `ICS_CORPUS_DIR` names: every file is imported over HTTP and its
//! outcome compared with what Bowline promises for it (imported N events, or rejected
//! naming a line), every file the manifest marks valid must import, and the table of
//! outcomes is printed (the README carries a copy). A few files are then checked in detail
//! (zones, all-day dates, overrides; more in `ics_corpus_details`). They fail, saying
//! what is missing, when `ICS_CORPUS_DIR` is unset or names no directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::spawn_app;
use crate::support::ics::{events_in, import, imported};

/// What Bowline does with a corpus file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// 201 with this many events.
    Imported(u64),
    /// 400 naming this line.
    Rejected(usize),
}

use Outcome::{Imported, Rejected};

/// Every corpus file and its expected outcome. VEVENTs without DTSTART (iTIP replies and
/// cancellations, empty fuzz events) are skipped, which is why some counts are below the
/// manifest's VEVENT counts.
const EXPECTED: &[(&str, Outcome)] = &[
    ("ical.js/blank_line_mid.ics", Imported(0)),
    ("ical.js/google_birthday.ics", Imported(4)),
    ("ical.js/property_params.ics", Imported(0)),
    ("ical.js/recur_instances.ics", Imported(3)),
    ("ical4j/1106817412.ics", Imported(1)),
    ("ical4j/2207678.ics", Imported(1)),
    ("ical4j/Standup.ics", Imported(1)),
    (
        "ical4j/apple-iphone-os-26-structured-location.ics",
        Imported(1),
    ),
    ("ical4j/blankTzid.ics", Imported(1)),
    ("ical4j/calconnect6.ics", Imported(1)),
    ("ical4j/groupwise.ics", Imported(1)),
    ("ical4j/korganizer-lowercase.ics", Imported(1)),
    ("ical4j/tmeher.ics", Imported(1)),
    ("icalendar/alarm_google_future.ics", Imported(1)),
    ("icalendar/big_bad_calendar.ics", Rejected(41)),
    ("icalendar/bom_calendar.ics", Imported(0)),
    ("icalendar/broken_ical.ics", Imported(1)),
    (
        "icalendar/created_calendar_with_unicode_fields.ics",
        Imported(2),
    ),
    ("icalendar/issue_104_broken_calendar.ics", Imported(1)),
    (
        "icalendar/issue_112_missing_tzinfo_on_exdate.ics",
        Imported(1),
    ),
    (
        "icalendar/issue_237_fail_to_parse_timezone_with_non_ascii_tzid.ics",
        Imported(1),
    ),
    ("icalendar/issue_722_missing_timezones.ics", Imported(2)),
    ("icalendar/issue_836_do_not_quote_tzid.ics", Imported(1)),
    ("icalendar/multiple_calendar_components.ics", Imported(3)),
    ("icalendar/parsing_error.ics", Imported(2)),
    ("icalendar/small_bad_calendar.ics", Rejected(3)),
    ("icalendar/x_location.ics", Imported(1)),
    ("khal/event_d_no_value.ics", Imported(1)),
    ("khal/event_dt_local_missing_tz.ics", Imported(1)),
    ("khal/event_dt_recuid_no_master.ics", Imported(1)),
    ("khal/event_dt_rrule_invalid_until.ics", Imported(1)),
    ("khal/event_rrule_recuid_cancelled.ics", Imported(3)),
    ("khal/invalid_tzoffset.ics", Imported(1)),
    ("khal/tz_windows_format.ics", Imported(1)),
    ("khal/without_uid.ics", Imported(1)),
    ("libical/2445.ics", Imported(6)),
    ("libical/2446.ics", Imported(30)),
    ("libical/recur-errors.ics", Imported(4)),
    ("libical/zday.ics", Rejected(11)),
    ("nextcloud-calendar/request.ics", Imported(1)),
    ("nextcloud-calendar/vcalendar-event-allday.ics", Imported(1)),
    (
        "nextcloud-calendar/vcalendar-event-custom-color.ics",
        Imported(1),
    ),
    (
        "nextcloud-calendar/vcalendar-event-recurring.ics",
        Imported(7),
    ),
    ("radicale/broken-vevent.ics", Rejected(15)),
    ("radicale/event_exdate_without_rrule.ics", Imported(2)),
    ("radicale/event_full_day_rrule_overridden.ics", Imported(2)),
    ("radicale/event_issue2151.ics", Imported(2)),
    (
        "radicale/event_mixed_recurrence_id_dt_type.ics",
        Imported(2),
    ),
    (
        "radicale/event_multiple_case_sensitive_uids.ics",
        Imported(2),
    ),
    ("radicale/event_timezone_seconds.ics", Imported(1)),
    (
        "recurring-ical-events/bad_rrule_missing_until_event.ics",
        Rejected(9),
    ),
    (
        "recurring-ical-events/daylight_saving_time.ics",
        Imported(64),
    ),
    ("recurring-ical-events/duplicated_rrule.ics", Imported(1)),
    (
        "recurring-ical-events/each_week_but_one_deleted.ics",
        Imported(1),
    ),
    (
        "recurring-ical-events/end_before_start_event.ics",
        Imported(1),
    ),
    (
        "recurring-ical-events/issue_18_cancel_status.ics",
        Imported(2),
    ),
    ("recurring-ical-events/issue_27_t1.ics", Imported(1)),
    (
        "recurring-ical-events/issue_62_moved_event.ics",
        Imported(2),
    ),
    (
        "recurring-ical-events/issue_75_range_parameter.ics",
        Imported(4),
    ),
    (
        "recurring-ical-events/issue_86_x_wr_timezone_without_time_zone_in_dt.ics",
        Imported(1),
    ),
    ("vobject/UntilRespectsTimezoneTest.ics", Imported(1)),
];

/// The corpus directory `ICS_CORPUS_DIR` names; a test that needs it fails when it is
/// unset or names no directory (a test that could not run must not pass).
pub fn corpus() -> PathBuf {
    let Some(dir) = std::env::var_os("ICS_CORPUS_DIR") else {
        panic!(
            "ICS_CORPUS_DIR is not set: the corpus suite needs the directory of the iCalendar \
             corpus (ICS_CORPUS_DIR=../shared/ics-corpus cargo test --test ics_corpus)"
        );
    };
    let path = PathBuf::from(dir);
    assert!(
        path.is_dir(),
        "the iCalendar corpus {} (ICS_CORPUS_DIR) is not a directory",
        path.display()
    );
    path
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read corpus directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            found.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "ics") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// `dir/file.ics` → whether MANIFEST.md marks it malformed.
fn manifest_malformed(corpus: &Path) -> BTreeMap<String, bool> {
    let text = std::fs::read_to_string(corpus.join("MANIFEST.md")).expect("MANIFEST.md");
    let mut dir = String::new();
    let mut marked = BTreeMap::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            dir = heading
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
        } else if line.starts_with("| `") && !dir.is_empty() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let file = cells[1].trim_matches('`');
            marked.insert(format!("{dir}{file}"), cells[4].contains("yes"));
        }
    }
    marked
}

#[tokio::test]
async fn every_corpus_file_imports_or_is_rejected_as_expected() {
    let corpus = corpus();
    let corpus = corpus.as_path();
    let malformed = manifest_malformed(corpus);
    let app = spawn_app().await;
    let user = app.sign_up("corpus@example.com").await;
    let mut table = vec![
        "| File | Manifest | Outcome |".to_owned(),
        "|---|---|---|".to_owned(),
    ];
    let mut mismatches = Vec::new();
    let found = files(corpus);
    assert_eq!(
        found.len(),
        EXPECTED.len(),
        "every corpus file has an expectation"
    );
    for path in found {
        let name = path
            .strip_prefix(corpus)
            .expect("inside the corpus")
            .display()
            .to_string();
        let response = import(&app, &user, "", std::fs::read(&path).expect("read")).await;
        let status = response.status();
        let body: Value = response.json().await.expect("JSON");
        let (outcome, text) = match status {
            StatusCode::CREATED => {
                let n = body["imported"].as_u64().expect("imported");
                let noun = if n == 1 { "event" } else { "events" };
                (Some(Imported(n)), format!("imported {n} {noun}"))
            }
            StatusCode::BAD_REQUEST => {
                let error = body["error"].as_str().expect("error").to_owned();
                let line = error
                    .split("(line ")
                    .nth(1)
                    .and_then(|rest| rest.split(':').next())
                    .and_then(|n| n.parse().ok());
                (line.map(Rejected), format!("rejected: {error}"))
            }
            other => (None, format!("unexpected {other}: {body}")),
        };
        let marked = malformed.get(&name).copied();
        let manifest = match marked {
            Some(true) => "malformed",
            Some(false) => "valid",
            None => "not listed",
        };
        table.push(format!("| `{name}` | {manifest} | {text} |"));
        let expected = EXPECTED
            .iter()
            .find(|(file, _)| *file == name)
            .map(|(_, o)| *o);
        if outcome.is_none() || outcome != expected {
            mismatches.push(format!("{name}: expected {expected:?}, got {text}"));
        }
        if marked == Some(false) && !matches!(outcome, Some(Imported(_))) {
            mismatches.push(format!(
                "{name} is valid in the manifest but was not imported"
            ));
        }
    }
    println!("{}", table.join("\n"));
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// Imports corpus file `name`; its events by start then title.
pub async fn corpus_events(
    app: &crate::helpers::TestApp,
    user: &crate::helpers::TestUser,
    name: &str,
) -> Vec<Value> {
    let bytes = std::fs::read(corpus().join(name)).expect("corpus file");
    let answer = imported(app, user, "", bytes).await;
    events_in(app, user, answer["id"].as_str().expect("id")).await
}

#[tokio::test]
async fn corpus_times_zones_and_overrides_are_read_right() {
    corpus();
    let app = spawn_app().await;
    let user = app.sign_up("corpus-details@example.com").await;
    // (file, title of an event, its start, its end, its recurrence)
    let cases: [(&str, &str, &str, &str, Option<&str>); 9] = [
        // Windows zone name, defined by Exchange's VTIMEZONE: EDT.
        (
            "icalendar/issue_836_do_not_quote_tzid.ics",
            "Anonymous Test Event for TZID",
            "2024-10-28T21:00:00.000Z",
            "2024-10-28T22:00:00.000Z",
            None,
        ),
        // Outlook display name: only the file's VTIMEZONE rules know it (-03:00).
        (
            "icalendar/issue_237_fail_to_parse_timezone_with_non_ascii_tzid.ics",
            "Untitled event",
            "2017-05-11T16:30:00.000Z",
            "2017-05-11T17:00:00.000Z",
            None,
        ),
        // IANA beats Apple's bogus +02:30:17 VTIMEZONE for Europe/Moscow.
        (
            "radicale/event_timezone_seconds.ics",
            "ня — 2",
            "2018-04-20T09:00:00.000Z",
            "2018-04-20T10:00:00.000Z",
            None,
        ),
        // Floating times in X-WR-TIMEZONE (Europe/Brussels, CEST).
        (
            "recurring-ical-events/issue_86_x_wr_timezone_without_time_zone_in_dt.ics",
            "Summary",
            "2021-09-16T19:00:00.000Z",
            "2021-09-16T20:45:00.000Z",
            None,
        ),
        // Multi-day all-day event: DTEND is exclusive, `end` is the last day.
        (
            "nextcloud-calendar/vcalendar-event-allday.ics",
            "allday event",
            "2016-10-05T00:00:00.000Z",
            "2016-10-07T00:00:00.000Z",
            None,
        ),
        // All-day series with an override: the instance is excluded from the series.
        (
            "radicale/event_full_day_rrule_overridden.ics",
            "All day recurring",
            "2006-01-02T00:00:00.000Z",
            "2006-01-02T00:00:00.000Z",
            Some("RRULE:FREQ=DAILY;COUNT=3\nEXDATE:20060103T000000Z"),
        ),
        // Floating EXDATE on a Windows-zoned series, plus an override (both excluded).
        (
            "radicale/event_issue2151.ics",
            "Billings-task-setting follow-up series",
            "2026-01-23T10:00:00.000Z",
            "2026-01-23T11:00:00.000Z",
            Some(
                "RRULE:FREQ=WEEKLY;BYDAY=FR;UNTIL=20260731T090000Z\nEXDATE:20260130T100000Z,20260403T090000Z",
            ),
        ),
        // Floating UNTIL read in the series' zone (America/New_York).
        (
            "vobject/UntilRespectsTimezoneTest.ics",
            "Test",
            "2013-09-23T22:30:00.000Z",
            "2013-09-24T00:30:00.000Z",
            Some("FREQ=WEEKLY;UNTIL=20131118T233000Z"),
        ),
        // THISANDFUTURE: the series ends before the instance, the override carries on.
        (
            "recurring-ical-events/issue_75_range_parameter.ics",
            "ORIGINAL EVENT",
            "2024-09-01T12:00:00.000Z",
            "2024-09-01T14:00:00.000Z",
            Some("FREQ=DAILY;INTERVAL=2;UNTIL=20240913T115959Z"),
        ),
    ];
    for (file, title, start, end, recurrence) in cases {
        let events = corpus_events(&app, &user, file).await;
        let event = events
            .iter()
            .find(|e| e["title"] == title)
            .unwrap_or_else(|| panic!("{file}: no {title} in {events:?}"));
        assert_eq!(event["start"], start, "{file}");
        assert_eq!(event["end"], end, "{file}");
        assert_eq!(event["recurrence"].as_str(), recurrence, "{file}");
    }
    let cancelled = corpus_events(
        &app,
        &user,
        "recurring-ical-events/issue_18_cancel_status.ics",
    )
    .await;
    assert_eq!(
        cancelled[1]["isCanceled"], true,
        "a cancelled override stays, cancelled"
    );
    assert_eq!(
        cancelled[0]["recurrence"],
        "RRULE:FREQ=DAILY;COUNT=3\nEXDATE:20200129T210000Z"
    );
}
