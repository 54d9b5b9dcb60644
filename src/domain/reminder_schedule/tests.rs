//! The resolver's tests: the original's cases as tables, then daylight-saving changes,
//! window bounds, recurrences and hostile rules.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::Instant;

use serde_json::json;
use uuid::Uuid;

use super::*;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

fn iso(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn prague() -> Tz {
    chrono_tz::Europe::Prague
}

fn cal(name: &str) -> CalendarId {
    let n = match name {
        "work" => 0x10,
        "holidays" => 0x20,
        "alpha" => 0xa0,
        "zulu" => 0xf0,
        other => panic!("no calendar {other}"),
    };
    CalendarId::from_uuid(Uuid::from_u128(n))
}

fn event_id(n: u128) -> EventId {
    EventId::from_uuid(Uuid::from_u128(n))
}

/// `event-1` of the original.
fn event_1() -> EventId {
    event_id(1)
}

fn ten_minutes() -> Value {
    json!({ "minutesBefore": 10, "allDay": { "daysBefore": 1, "atMinute": 1080 } })
}

fn two_hours() -> Value {
    json!({ "minutesBefore": 120, "allDay": { "daysBefore": 1, "atMinute": 1080 } })
}

fn minutes(n: u32) -> Value {
    json!({ "minutesBefore": n, "allDay": { "daysBefore": 1, "atMinute": 1080 } })
}

fn never() -> Value {
    reminders::silent_rule()
}

fn context() -> ReminderContext {
    ReminderContext {
        timezone: prague(),
        default_rule: ten_minutes(),
        calendar_rules: HashMap::new(),
        event_rules: HashMap::new(),
        declined: HashSet::new(),
        calendar_order: Vec::new(),
    }
}

fn event() -> ReminderEvent {
    ReminderEvent {
        id: event_1(),
        title: "Standup".into(),
        start: at("2026-08-20T09:00:00Z"),
        end: at("2026-08-20T09:30:00Z"),
        is_all_day: false,
        is_canceled: false,
        recurrence: None,
        calendars: vec![cal("work")],
    }
}

/// All-day events are stored as UTC midnight of their date (a second event).
fn all_day(date: &str) -> ReminderEvent {
    let midnight = at(&format!("{date}T00:00:00Z"));
    ReminderEvent {
        id: event_id(2),
        is_all_day: true,
        start: midnight,
        end: midnight,
        title: "Birthday".into(),
        ..event()
    }
}

fn due(events: &[ReminderEvent], context: &ReminderContext, from: &str, to: &str) -> Vec<String> {
    let found = due_reminders(events, context, at(from), at(to));
    assert!(found.is_complete());
    found.reminders.iter().map(|r| iso(r.due_at)).collect()
}

fn minutes_before(rule: &Value) -> Option<i64> {
    rule["minutesBefore"].as_i64()
}

/// The original's `resolveReminderRule` cases (and the override beating a calendar).
#[test]
fn rules_resolve_override_then_calendars_in_order_then_default() {
    let cases: Vec<(&str, ReminderContext, Vec<CalendarId>, Value)> = vec![
        (
            "override wins",
            ReminderContext {
                calendar_rules: HashMap::from([(cal("work"), two_hours())]),
                event_rules: HashMap::from([(event_1(), minutes(5))]),
                ..context()
            },
            vec![cal("work")],
            minutes(5),
        ),
        (
            "calendar wins over the global default",
            ReminderContext {
                calendar_rules: HashMap::from([(cal("work"), two_hours())]),
                ..context()
            },
            vec![cal("work")],
            two_hours(),
        ),
        (
            "global default when nothing else answers",
            context(),
            vec![cal("work")],
            ten_minutes(),
        ),
        (
            "the first ordered calendar with a rule wins, even when it says never",
            ReminderContext {
                calendar_order: vec![cal("holidays"), cal("work")],
                calendar_rules: HashMap::from([
                    (cal("holidays"), never()),
                    (cal("work"), two_hours()),
                ]),
                ..context()
            },
            vec![cal("work"), cal("holidays")],
            never(),
        ),
        (
            "the order, not the event's list, decides",
            ReminderContext {
                calendar_order: vec![cal("work"), cal("holidays")],
                calendar_rules: HashMap::from([
                    (cal("holidays"), never()),
                    (cal("work"), two_hours()),
                ]),
                ..context()
            },
            vec![cal("holidays"), cal("work")],
            two_hours(),
        ),
        (
            "unordered calendars count, sorted, not insertion order",
            ReminderContext {
                calendar_rules: HashMap::from([
                    (cal("alpha"), two_hours()),
                    (cal("zulu"), minutes(1)),
                ]),
                ..context()
            },
            vec![cal("zulu"), cal("alpha")],
            two_hours(),
        ),
        (
            "ordered calendars before unordered ones",
            ReminderContext {
                calendar_order: vec![cal("zulu")],
                calendar_rules: HashMap::from([
                    (cal("alpha"), two_hours()),
                    (cal("zulu"), minutes(1)),
                ]),
                ..context()
            },
            vec![cal("alpha"), cal("zulu")],
            minutes(1),
        ),
        (
            "a null calendar rule is absent: inherit",
            ReminderContext {
                calendar_rules: HashMap::from([(cal("work"), Value::Null)]),
                ..context()
            },
            vec![cal("work")],
            ten_minutes(),
        ),
        (
            "an invalid stored rule inherits too",
            ReminderContext {
                calendar_rules: HashMap::from([(cal("work"), json!({ "minutesBefore": -3 }))]),
                event_rules: HashMap::from([(event_1(), json!("soon"))]),
                default_rule: json!(null),
                ..context()
            },
            vec![cal("work")],
            reminders::default_rule(),
        ),
    ];
    for (name, context, calendars, want) in cases {
        let rule = resolve_rule(event_1(), &calendars, &context);
        assert_eq!(rule, want, "{name}");
        assert_eq!(minutes_before(&rule), minutes_before(&want), "{name}");
    }
}

/// One resolver case: events, context, due window, the due times expected.
struct Case {
    name: &'static str,
    context: ReminderContext,
    events: Vec<ReminderEvent>,
    from: &'static str,
    to: &'static str,
    want: Vec<&'static str>,
}

/// The original's `resolveReminders` cases, then Bowline's.
#[test]
fn due_reminders_table() {
    let aug = ("2026-08-01T00:00:00Z", "2026-08-31T00:00:00Z");
    let march = ("2026-03-01T00:00:00Z", "2026-03-31T00:00:00Z");
    let in_both = ReminderEvent {
        calendars: vec![cal("work"), cal("holidays")],
        ..event()
    };
    let both_rules = HashMap::from([(cal("holidays"), never()), (cal("work"), two_hours())]);
    let cases = vec![
        Case {
            name: "declined: silent",
            context: ReminderContext {
                declined: HashSet::from([event_1()]),
                ..context()
            },
            events: vec![event()],
            from: aug.0,
            to: aug.1,
            want: vec![],
        },
        Case {
            name: "any answer other than no still reminds",
            context: ReminderContext {
                declined: HashSet::from([event_id(7)]),
                ..context()
            },
            events: vec![event()],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-20T08:50:00.000Z"],
        },
        Case {
            name: "cancelled: silent",
            context: context(),
            events: vec![ReminderEvent {
                is_canceled: true,
                ..event()
            }],
            from: aug.0,
            to: aug.1,
            want: vec![],
        },
        Case {
            name: "a default of never: silent",
            context: ReminderContext {
                default_rule: never(),
                ..context()
            },
            events: vec![event()],
            from: aug.0,
            to: aug.1,
            want: vec![],
        },
        Case {
            name: "already due before the window",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T10:00:00Z",
            to: aug.1,
            want: vec![],
        },
        Case {
            name: "ten minutes before the start",
            context: context(),
            events: vec![event()],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-20T08:50:00.000Z"],
        },
        Case {
            name: "occurrence sits past `to`, its reminder does not",
            context: ReminderContext {
                default_rule: two_hours(),
                ..context()
            },
            events: vec![event()],
            from: "2026-08-20T06:00:00Z",
            to: "2026-08-20T08:00:00Z",
            want: vec!["2026-08-20T07:00:00.000Z"],
        },
        Case {
            name: "18:00 in Prague, summer",
            context: context(),
            events: vec![all_day("2026-08-20")],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-19T16:00:00.000Z"],
        },
        Case {
            name: "18:00 in New York, summer",
            context: ReminderContext {
                timezone: chrono_tz::America::New_York,
                ..context()
            },
            events: vec![all_day("2026-08-20")],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-19T22:00:00.000Z"],
        },
        Case {
            name: "Prague before spring forward: UTC+1",
            context: context(),
            events: vec![all_day("2026-03-29")],
            from: march.0,
            to: march.1,
            want: vec!["2026-03-28T17:00:00.000Z"],
        },
        Case {
            name: "Prague after spring forward: UTC+2",
            context: context(),
            events: vec![all_day("2026-03-30")],
            from: march.0,
            to: march.1,
            want: vec!["2026-03-29T16:00:00.000Z"],
        },
        // Bowline's cases.
        Case {
            name: "a calendar's never wins over the default",
            context: ReminderContext {
                calendar_rules: HashMap::from([(cal("work"), never())]),
                ..context()
            },
            events: vec![event(), all_day("2026-08-22")],
            from: aug.0,
            to: aug.1,
            want: vec![],
        },
        Case {
            name: "the event's override beats its calendar's never",
            context: ReminderContext {
                calendar_rules: HashMap::from([(cal("work"), never())]),
                event_rules: HashMap::from([(event_1(), minutes(30))]),
                ..context()
            },
            events: vec![event()],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-20T08:30:00.000Z"],
        },
        Case {
            name: "two calendars: holidays first says never",
            context: ReminderContext {
                calendar_order: vec![cal("holidays"), cal("work")],
                calendar_rules: both_rules.clone(),
                ..context()
            },
            events: vec![in_both.clone()],
            from: aug.0,
            to: aug.1,
            want: vec![],
        },
        Case {
            name: "two calendars: work first says two hours",
            context: ReminderContext {
                calendar_order: vec![cal("work"), cal("holidays")],
                calendar_rules: both_rules,
                ..context()
            },
            events: vec![in_both],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-20T07:00:00.000Z"],
        },
        Case {
            name: "an all-day only rule is silent for timed events",
            context: ReminderContext {
                default_rule: json!({ "minutesBefore": null, "allDay": { "daysBefore": 0, "atMinute": 540 } }),
                ..context()
            },
            events: vec![event(), all_day("2026-08-22")],
            from: aug.0,
            to: aug.1,
            want: vec!["2026-08-22T07:00:00.000Z"],
        },
        Case {
            name: "Prague before falling back: 18:00 CEST",
            context: context(),
            events: vec![all_day("2026-10-25")],
            from: "2026-10-01T00:00:00Z",
            to: "2026-10-31T00:00:00Z",
            want: vec!["2026-10-24T16:00:00.000Z"],
        },
        Case {
            name: "Prague after falling back: 18:00 CET",
            context: context(),
            events: vec![all_day("2026-10-26")],
            from: "2026-10-01T00:00:00Z",
            to: "2026-10-31T00:00:00Z",
            want: vec!["2026-10-25T17:00:00.000Z"],
        },
        Case {
            name: "an all-day series keeps 18:00 across spring forward",
            context: context(),
            events: vec![ReminderEvent {
                recurrence: Some("FREQ=DAILY;COUNT=5".into()),
                ..all_day("2026-03-27")
            }],
            from: march.0,
            to: march.1,
            want: vec![
                "2026-03-26T17:00:00.000Z",
                "2026-03-27T17:00:00.000Z",
                "2026-03-28T17:00:00.000Z",
                "2026-03-29T16:00:00.000Z",
                "2026-03-30T16:00:00.000Z",
            ],
        },
        Case {
            name: "an all-day reminder at 02:30 on spring forward lands at 03:30",
            context: ReminderContext {
                default_rule: json!({ "minutesBefore": null, "allDay": { "daysBefore": 0, "atMinute": 150 } }),
                ..context()
            },
            events: vec![all_day("2026-03-29")],
            from: march.0,
            to: march.1,
            want: vec!["2026-03-29T01:30:00.000Z"],
        },
        Case {
            name: "an all-day reminder at 02:30 on falling back is the first 02:30",
            context: ReminderContext {
                default_rule: json!({ "minutesBefore": null, "allDay": { "daysBefore": 0, "atMinute": 150 } }),
                ..context()
            },
            events: vec![all_day("2026-10-25")],
            from: "2026-10-01T00:00:00Z",
            to: "2026-10-31T00:00:00Z",
            want: vec!["2026-10-25T00:30:00.000Z"],
        },
        Case {
            // The original dropped this one: its search window ended the event at its
            // (UTC midnight) end, before the evening in New York.
            name: "a same-day evening reminder west of UTC, after the stored day ended",
            context: ReminderContext {
                timezone: chrono_tz::America::New_York,
                default_rule: json!({ "minutesBefore": null, "allDay": { "daysBefore": 0, "atMinute": 1200 } }),
                ..context()
            },
            events: vec![all_day("2026-08-20")],
            from: "2026-08-20T23:55:00Z",
            to: "2026-08-21T00:05:00Z",
            want: vec!["2026-08-21T00:00:00.000Z"],
        },
        Case {
            name: "due exactly at `from`: included",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T08:50:00Z",
            to: "2026-08-20T09:00:00Z",
            want: vec!["2026-08-20T08:50:00.000Z"],
        },
        Case {
            name: "due exactly at `to`: included",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T08:40:00Z",
            to: "2026-08-20T08:50:00Z",
            want: vec!["2026-08-20T08:50:00.000Z"],
        },
        Case {
            name: "due a millisecond before `from`: left out",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T08:50:00.001Z",
            to: "2026-08-20T09:00:00Z",
            want: vec![],
        },
        Case {
            name: "due a millisecond after `to`: left out",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T08:40:00Z",
            to: "2026-08-20T08:49:59.999Z",
            want: vec![],
        },
        Case {
            name: "a series' reminder due exactly at `to`: included",
            context: context(),
            events: vec![ReminderEvent {
                recurrence: Some("FREQ=DAILY".into()),
                ..event()
            }],
            from: "2026-08-22T08:45:00Z",
            to: "2026-08-22T08:50:00Z",
            want: vec!["2026-08-22T08:50:00.000Z"],
        },
        Case {
            name: "a series' reminder due exactly at `from`: included",
            context: context(),
            events: vec![ReminderEvent {
                recurrence: Some("FREQ=DAILY".into()),
                ..event()
            }],
            from: "2026-08-22T08:50:00Z",
            to: "2026-08-22T08:55:00Z",
            want: vec!["2026-08-22T08:50:00.000Z"],
        },
        Case {
            name: "an empty window is a point",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T08:50:00Z",
            to: "2026-08-20T08:50:00Z",
            want: vec!["2026-08-20T08:50:00.000Z"],
        },
        Case {
            name: "`to` before `from`: nothing",
            context: context(),
            events: vec![event()],
            from: "2026-08-20T09:00:00Z",
            to: "2026-08-20T08:00:00Z",
            want: vec![],
        },
    ];
    for case in cases {
        assert_eq!(
            due(&case.events, &case.context, case.from, case.to),
            case.want,
            "{}",
            case.name
        );
    }
}

/// The original's direct `reminderDueAt` cases.
#[test]
fn due_at_of_one_occurrence() {
    let offset_only = json!({ "minutesBefore": 10, "allDay": null });
    assert_eq!(
        reminder_due_at(at("2026-08-20T00:00:00Z"), true, &offset_only, Tz::UTC),
        None,
        "an offset rule cannot answer for an all-day event"
    );
    let all_day_only =
        json!({ "minutesBefore": null, "allDay": { "daysBefore": 1, "atMinute": 1080 } });
    assert_eq!(
        reminder_due_at(at("2026-08-20T09:00:00Z"), false, &all_day_only, Tz::UTC),
        None
    );
    let same_day = json!({ "minutesBefore": null, "allDay": { "daysBefore": 0, "atMinute": 540 } });
    assert_eq!(
        reminder_due_at(at("2026-08-20T00:00:00Z"), true, &same_day, prague()),
        Some(at("2026-08-20T07:00:00Z")),
        "same morning, not the evening before"
    );
    assert_eq!(
        reminder_due_at(at("2026-08-20T00:00:00Z"), true, &json!({}), prague()),
        None,
        "an invalid rule is silent"
    );
}

/// The original's series case: rules keyed by the master, one reminder per occurrence.
#[test]
fn a_series_uses_its_masters_override() {
    let series = ReminderEvent {
        recurrence: Some("FREQ=DAILY;COUNT=3".into()),
        ..event()
    };
    let context = ReminderContext {
        event_rules: HashMap::from([(event_1(), two_hours())]),
        ..context()
    };
    let found = due_reminders(
        &[series],
        &context,
        at("2026-08-19T00:00:00Z"),
        at("2026-08-31T00:00:00Z"),
    );
    assert!(found.is_complete());
    assert_eq!(found.reminders.len(), 3, "one reminder per occurrence");
    for reminder in &found.reminders {
        assert_eq!(reminder.event_id, event_1());
        assert_eq!(
            reminder.occurrence_id,
            format!(
                "{}_{}",
                event_1(),
                reminder.occurrence_start.timestamp_millis()
            )
        );
        assert_eq!(
            reminder.due_at,
            reminder.occurrence_start - Duration::hours(2)
        );
    }
    assert!(
        found
            .reminders
            .windows(2)
            .all(|w| w[0].due_at <= w[1].due_at)
    );
    assert_eq!(
        found.reminders[0].occurrence_id,
        "00000000-0000-0000-0000-000000000001_1787216400000"
    );
}

/// A weekly series at 09:00 in Prague stays at 09:00 across spring forward; the EXDATE
/// and UNTIL written in UTC still name the occurrences they meant.
#[test]
fn a_weekly_series_on_the_wall_clock() {
    let weekly = |recurrence: &str| ReminderEvent {
        start: at("2026-03-16T08:00:00Z"),
        end: at("2026-03-16T09:00:00Z"),
        recurrence: Some(recurrence.into()),
        ..event()
    };
    let window = (at("2026-03-10T00:00:00Z"), at("2026-04-10T00:00:00Z"));
    let run = |event: ReminderEvent| {
        let found = due_reminders(&[event], &context(), window.0, window.1);
        assert!(found.is_complete());
        found
            .reminders
            .iter()
            .map(|r| (r.occurrence_id.clone(), iso(r.due_at)))
            .collect::<Vec<_>>()
    };
    let id = |millis: i64| format!("{}_{millis}", event_1());
    assert_eq!(
        run(weekly("FREQ=WEEKLY")),
        vec![
            (id(1_773_648_000_000), "2026-03-16T07:50:00.000Z".into()),
            (id(1_774_252_800_000), "2026-03-23T07:50:00.000Z".into()),
            (id(1_774_854_000_000), "2026-03-30T06:50:00.000Z".into()),
            (id(1_775_458_800_000), "2026-04-06T06:50:00.000Z".into()),
        ]
    );
    assert_eq!(
        run(weekly(
            "RRULE:FREQ=WEEKLY;UNTIL=20260330T070000Z\nEXDATE:20260323T080000Z"
        )),
        vec![
            (id(1_773_648_000_000), "2026-03-16T07:50:00.000Z".into()),
            (id(1_774_854_000_000), "2026-03-30T06:50:00.000Z".into()),
        ]
    );
    assert_eq!(
        run(weekly(
            "RRULE:FREQ=WEEKLY;COUNT=4\nEXDATE;TZID=Europe/Prague:20260330T090000"
        )),
        vec![
            (id(1_773_648_000_000), "2026-03-16T07:50:00.000Z".into()),
            (id(1_774_252_800_000), "2026-03-23T07:50:00.000Z".into()),
            (id(1_775_458_800_000), "2026-04-06T06:50:00.000Z".into()),
        ]
    );
}

#[test]
fn unreadable_rules_fall_back_to_the_single_event() {
    let broken = ReminderEvent {
        recurrence: Some("FREQ=SOMETIMES".into()),
        ..event()
    };
    let found = due_reminders(
        &[broken],
        &context(),
        at("2026-08-01T00:00:00Z"),
        at("2026-08-31T00:00:00Z"),
    );
    assert_eq!(found.unreadable, vec![event_1()]);
    assert!(found.is_complete());
    assert_eq!(found.reminders.len(), 1);
    assert_eq!(iso(found.reminders[0].due_at), "2026-08-20T08:50:00.000Z");
}

#[test]
fn sorted_by_due_time_then_start_then_event_and_listed_once() {
    let early = ReminderEvent {
        id: event_id(9),
        start: at("2026-08-20T08:00:00Z"),
        ..event()
    };
    let same_due = ReminderEvent {
        id: event_id(3),
        ..event()
    };
    let events = [event(), early, same_due, event()];
    let found = due_reminders(
        &events,
        &context(),
        at("2026-08-01T00:00:00Z"),
        at("2026-08-31T00:00:00Z"),
    );
    let ids: Vec<EventId> = found.reminders.iter().map(|r| r.event_id).collect();
    assert_eq!(ids, vec![event_id(9), event_1(), event_id(3)]);
}

/// Rules the server refuses today may be stored from before: they stay cheap.
#[test]
fn hostile_rules_stay_bounded() {
    let year_one = at("0001-01-01T00:00:00Z");
    let window = (at("2026-08-01T00:00:00Z"), at("2026-08-02T00:00:00Z"));

    // A reminder every second for a day: capped per event.
    let started = Instant::now();
    let every_second = ReminderEvent {
        start: year_one,
        end: year_one,
        recurrence: Some("FREQ=SECONDLY".into()),
        ..event()
    };
    let found = due_reminders(&[every_second], &context(), window.0, window.1);
    assert_eq!(found.cut_short, vec![event_1()]);
    assert_eq!(
        found.reminders.len(),
        ScheduleLimits::default().occurrences_per_event
    );
    assert_eq!(
        found.reminders[0].due_at, window.0,
        "from the window's start on"
    );
    assert!(started.elapsed() < StdDuration::from_secs(5));

    // A COUNT cannot be moved to the window: walked from year 1 until the budget ends,
    // which all the events of a call share.
    let started = Instant::now();
    let counted: Vec<ReminderEvent> = (0..50)
        .map(|n| ReminderEvent {
            id: event_id(100 + n),
            start: year_one,
            end: year_one,
            recurrence: Some("FREQ=SECONDLY;COUNT=4000000000".into()),
            ..event()
        })
        .chain(std::iter::once(event()))
        .collect();
    let window = (at("2026-08-01T00:00:00Z"), at("2026-08-31T00:00:00Z"));
    let limits = ScheduleLimits {
        steps: 20_000,
        ..ScheduleLimits::default()
    };
    let found = due_reminders_within(&counted, &context(), window.0, window.1, &limits);
    assert_eq!(found.cut_short.len(), 50);
    assert!(!found.is_complete());
    let ids: Vec<EventId> = found.reminders.iter().map(|r| r.event_id).collect();
    assert_eq!(ids, vec![event_1()], "single events still resolve");
    assert!(started.elapsed() < StdDuration::from_secs(5));

    // The same with the default budget: its deadline ends it.
    let started = Instant::now();
    let found = due_reminders(&counted, &context(), window.0, window.1);
    assert_eq!(found.cut_short.len(), 50);
    assert!(started.elapsed() < StdDuration::from_secs(10));
}

#[test]
fn notification_body_like_format_when() {
    let cases = [
        ("2026-08-20T09:00:00Z", false, "20 Aug 2026, 11:00"),
        ("2026-01-05T09:00:00Z", false, "5 Jan 2026, 10:00"),
        ("2026-09-05T23:30:00Z", false, "6 Sept 2026, 01:30"),
        ("2026-09-05T00:00:00Z", true, "5 Sept 2026"),
        ("2026-08-20T00:00:00Z", true, "20 Aug 2026"),
    ];
    for (start, is_all_day, want) in cases {
        assert_eq!(
            reminder_body(at(start), is_all_day, prague()),
            want,
            "{start}"
        );
    }
}
