//! Titles, times and recurrences of more valid corpus files, each expected value worked out
//! by hand from the file (the comment above each case says how), not copied from the
//! importer: Outlook's quoted and escaped TZIDs, Lotus Notes' `TZID=Eastern` with a PERIOD
//! RDATE and a UTC RECURRENCE-ID, a Windows zone name with a bogus VTIMEZONE, times on both
//! sides of a DST change, a duplicated RRULE and a UTC EXDATE on a zoned series.

use serde_json::Value;

use crate::helpers::spawn_app;
use crate::ics_corpus::{corpus, corpus_events};

/// One expected event: (file, title, start, end, recurrence).
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
);

const CASES: &[Case] = &[
    // TZID "Canberra, Melbourne, Sydney" (quoted for its commas) is neither IANA nor a
    // Windows id, so the file's VTIMEZONE rules apply: standard time (+10:00) from the first
    // Sunday of April, daylight (+11:00) from the first Sunday of October. 10 March 2009 is
    // daylight time: 09:30+11:00 = 22:30Z the day before.
    (
        "ical4j/Standup.ics",
        "Standup",
        "2009-03-09T22:30:00.000Z",
        "2009-03-09T22:45:00.000Z",
        Some("FREQ=DAILY;INTERVAL=1;BYDAY=MO,TU,WE,TH,FR;WKST=SU"),
    ),
    // "Kuala Lumpur\, Singapore" in the VTIMEZONE (escaped comma), quoted in DTSTART: the
    // same zone, +08:00 all year. 09:30+08:00 = 01:30Z.
    (
        "ical4j/2207678.ics",
        "Scheduled Reboot",
        "2008-10-31T01:30:00.000Z",
        "2008-10-31T01:40:00.000Z",
        Some("FREQ=WEEKLY;BYDAY=FR"),
    ),
    // TZID=Eastern: the VTIMEZONE's 1950 rules, daylight (-04:00) from the first Sunday of
    // April. 26 April 2005 10:00-04:00 = 14:00Z. The RECURRENCE-ID (13:00Z) names an
    // instance of a series the file does not hold, so this is an event of its own; its
    // PERIOD RDATE 10:00/11:00 Eastern is kept as its start, 14:00Z.
    (
        "ical4j/calconnect6.ics",
        "More complicated stream (5 day recurring)",
        "2005-04-26T14:00:00.000Z",
        "2005-04-26T15:00:00.000Z",
        Some("RDATE:20050426T140000Z"),
    ),
    // "New Zealand Standard Time" is a Windows id (Pacific/Auckland), which wins over the
    // file's inconsistent VTIMEZONE: 20 November 2019 is NZDT (+13:00), 13:00 = 00:00Z.
    (
        "khal/tz_windows_format.ics",
        "Event with Windows TZ name",
        "2019-11-20T00:00:00.000Z",
        "2019-11-20T01:30:00.000Z",
        None,
    ),
    // The same RRULE line twice is one rule. Europe/London in January is GMT.
    (
        "recurring-ical-events/duplicated_rrule.ics",
        "My repeating event",
        "2023-01-12T10:00:00.000Z",
        "2023-01-12T12:00:00.000Z",
        Some("FREQ=WEEKLY;BYDAY=TH;COUNT=20"),
    ),
    // Europe/Berlin in March before the change is CET (+01:00): 4 March 00:30 = 3 March
    // 23:30Z. The EXDATE is already UTC: the second instance (11 March 00:30 CET).
    (
        "recurring-ical-events/each_week_but_one_deleted.ics",
        "test6",
        "2019-03-03T23:30:00.000Z",
        "2019-03-04T00:00:00.000Z",
        Some("RRULE:FREQ=WEEKLY;COUNT=8\nEXDATE:20190310T233000Z"),
    ),
    // daylight_saving_time.ics (Google, Europe/Berlin; clocks changed on 25 March 2018,
    // 28 October 2018 and 31 March 2019). The same 11:00 local time is 10:00Z in winter
    // and 09:00Z in summer:
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "mB-onTour: repairCafé",
        "2019-03-23T10:00:00.000Z",
        "2019-03-23T14:00:00.000Z",
        Some("FREQ=DAILY;COUNT=1"),
    ),
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "mB-onTour: repairCafé",
        "2019-04-27T09:00:00.000Z",
        "2019-04-27T13:00:00.000Z",
        Some("FREQ=DAILY;COUNT=1"),
    ),
    // A summer series (last Saturdays from 30 June 2018, 11:00 CEST = 09:00Z) whose
    // overrides moved four instances, all still in summer time (27 October is the day
    // before the change): each becomes an EXDATE at 09:00Z.
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "mB-onTour: repairCafé",
        "2018-06-30T09:00:00.000Z",
        "2018-06-30T13:00:00.000Z",
        Some(
            "RRULE:FREQ=MONTHLY;UNTIL=20181123T225959Z;BYDAY=-1SA\nEXDATE:20180728T090000Z,20180825T090000Z,20180929T090000Z,20181027T090000Z",
        ),
    ),
    // The winter series that follows it (third Saturdays from 17 November 2018, 11:00 CET
    // = 10:00Z) with three overrides: the instances they replace (15 December, 19 January,
    // 16 February, RECURRENCE-ID 11:00 Berlin) are excluded at 10:00Z.
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "mB-onTour: repairCafé",
        "2018-11-17T10:00:00.000Z",
        "2018-11-17T14:00:00.000Z",
        Some(
            "RRULE:FREQ=MONTHLY;UNTIL=20190315T225959Z;BYDAY=3SA\nEXDATE:20181215T100000Z,20190119T100000Z,20190216T100000Z",
        ),
    ),
    // One of those overrides: 8 December 2018 11:00 CET.
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "mB-onTour: repairCafé",
        "2018-12-08T10:00:00.000Z",
        "2018-12-08T14:00:00.000Z",
        None,
    ),
    // A series starting in summer (25 April 2018 19:00 CEST = 17:00Z) and running into
    // winter; its UNTIL is UTC already.
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "Chaostreff",
        "2018-04-25T17:00:00.000Z",
        "2018-04-25T19:00:00.000Z",
        Some("FREQ=WEEKLY;UNTIL=20190115T225959Z;INTERVAL=2;BYDAY=WE"),
    ),
    // A zoned EXDATE (7 March 2019 08:30 Berlin, CET) in UTC: 07:30Z, like the start.
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "Montessori Schulklasse",
        "2019-02-28T07:30:00.000Z",
        "2019-02-28T13:30:00.000Z",
        Some("RRULE:FREQ=WEEKLY;BYDAY=TH\nEXDATE:20190307T073000Z"),
    ),
    // 30 July 2018 15:00 CEST = 13:00Z.
    (
        "recurring-ical-events/daylight_saving_time.ics",
        "#TEC - Fällt aus bis September",
        "2018-07-30T13:00:00.000Z",
        "2018-07-30T15:00:00.000Z",
        Some("FREQ=WEEKLY;UNTIL=20180909T215959Z;BYDAY=MO"),
    ),
];

#[tokio::test]
async fn more_valid_corpus_files_keep_their_titles_times_and_recurrences() {
    corpus();
    let app = spawn_app().await;
    let user = app.sign_up("corpus-more@example.com").await;
    let mut imported: Vec<(&str, Vec<Value>)> = Vec::new();
    for (file, title, start, end, recurrence) in CASES {
        if !imported.iter().any(|(name, _)| name == file) {
            imported.push((file, corpus_events(&app, &user, file).await));
        }
        let events = &imported
            .iter()
            .find(|(name, _)| name == file)
            .expect("imported")
            .1;
        let event = events
            .iter()
            .find(|e| e["title"] == *title && e["start"] == *start)
            .unwrap_or_else(|| panic!("{file}: no {title} at {start} in {events:#?}"));
        assert_eq!(event["end"], *end, "{file}: {title}");
        assert_eq!(event["recurrence"].as_str(), *recurrence, "{file}: {title}");
        assert_eq!(event["isAllDay"], false, "{file}: {title}");
    }
}
