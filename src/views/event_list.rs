//! The events read's answer (`{events, deletedIds, serverTime}`) rendered straight from the
//! rows the database packed ([`crate::store::events::reads`]). Each event is the same document
//! as [`super::events::EventView`], written without building models: text fields are copied
//! as the database escaped them (valid JSON string tokens), ids and timestamps are
//! reformatted in place, and only a timestamp in an unexpected form goes through chrono.

use std::fmt::Write;

use chrono::{DateTime, Datelike, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::event_fields::event_fields;
use crate::domain::ids::EventId;
use crate::domain::time::{YEARS, format_timestamp};
use crate::error::AppError;
use crate::store::events::reads::PackedEvent;

/// Typical size of one rendered event beyond its text fields (keys, ids, timestamps).
const EVENT_OVERHEAD: usize = 420;

/// The events of a read as a JSON array. A row that cannot be rendered (a value no write
/// path produces today, such as a year past 9999 stored before that was checked) is left
/// out and logged: one such row must not fail every reader's read.
pub fn events_array(events: &[PackedEvent<'_>]) -> Result<String, AppError> {
    let mut out = String::with_capacity(2 + rendered_size(events));
    out.push('[');
    push_members(&mut out, events, &mut 0);
    out.push(']');
    Ok(out)
}

/// About how long `events` are rendered.
fn rendered_size(events: &[PackedEvent<'_>]) -> usize {
    let text: usize = events
        .iter()
        .map(|e| e.creator_id.get().len() + e.organizer.get().len() + e.title.get().len())
        .sum();
    text + events.len() * EVENT_OVERHEAD
}

/// `events` as members of a JSON array of which `written` members are already written
/// (counting those written here); unrenderable rows are left out and logged.
fn push_members(out: &mut String, events: &[PackedEvent<'_>], written: &mut usize) {
    for event in events {
        let mark = out.len();
        if *written > 0 {
            out.push(',');
        }
        match push_event(out, event) {
            Ok(()) => *written += 1,
            Err(unreadable) => {
                out.truncate(mark);
                tracing::error!(column = unreadable.0, "events.row_unreadable");
            }
        }
    }
}

/// A stored value that is not what its column must hold (the column's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unreadable(&'static str);

/// The answer of `GET /api/v1/events`, `{events, deletedIds, serverTime}`: the type the
/// document describes, which `events_response` and `StreamedResponse` write (their tests
/// hold them to it).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsResponse {
    /// The events: every live event the reader can see (a full read), those in the range
    /// (a range read), or those changed or newly visible in `(since, serverTime]` (a delta).
    pub events: Vec<super::events::EventView>,
    /// A delta's events deleted, or no longer visible to the reader, in
    /// `(since, serverTime]` (empty in full and range reads).
    pub deleted_ids: Vec<Uuid>,
    /// The read's horizon: the `since` of the next delta.
    #[serde(serialize_with = "super::timestamp")]
    pub server_time: DateTime<Utc>,
}

/// The answer of `GET /api/v1/events`: `events` (a JSON array from [`events_array`]),
/// `deletedIds` and `serverTime`.
pub fn events_response(
    events: &str,
    deleted_ids: &[EventId],
    server_time: DateTime<Utc>,
) -> String {
    let mut out = String::with_capacity(events.len() + 64 + deleted_ids.len() * 40);
    out.push_str(RESPONSE_HEAD);
    out.push_str(events);
    push_response_tail(&mut out, deleted_ids, server_time);
    out
}

/// What opens the answer, before the events array.
const RESPONSE_HEAD: &str = "{\"events\":";

/// What closes the answer, after the events array.
fn push_response_tail(out: &mut String, deleted_ids: &[EventId], server_time: DateTime<Utc>) {
    out.push_str(",\"deletedIds\":[");
    for (n, id) in deleted_ids.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(
            id.uuid()
                .hyphenated()
                .encode_lower(&mut Uuid::encode_buffer()),
        );
        out.push('"');
    }
    out.push_str("],\"serverTime\":\"");
    out.push_str(&format_timestamp(server_time));
    out.push_str("\"}");
}

/// The answer of a full read (no deletions) written piece by piece as its events arrive in
/// chunks: [`Self::chunk`] for each, then [`Self::end`]. The pieces put together are the
/// bytes [`events_response`] writes for all the events at once.
#[derive(Debug)]
pub struct StreamedResponse {
    server_time: DateTime<Utc>,
    written: usize,
    opened: bool,
}

impl StreamedResponse {
    /// A full read answered at `server_time`.
    pub fn new(server_time: DateTime<Utc>) -> Self {
        Self {
            server_time,
            written: 0,
            opened: false,
        }
    }

    /// The next piece: `events` (the first piece also opens the answer).
    pub fn chunk(&mut self, events: &[PackedEvent<'_>]) -> String {
        let mut out = String::with_capacity(RESPONSE_HEAD.len() + 1 + rendered_size(events));
        self.open(&mut out);
        push_members(&mut out, events, &mut self.written);
        out
    }

    /// The last piece, after every event.
    pub fn end(mut self) -> String {
        let mut out = String::with_capacity(RESPONSE_HEAD.len() + 80);
        self.open(&mut out);
        out.push(']');
        push_response_tail(&mut out, &[], self.server_time);
        out
    }

    fn open(&mut self, out: &mut String) {
        if !self.opened {
            self.opened = true;
            out.push_str(RESPONSE_HEAD);
            out.push('[');
        }
    }
}

/// Writes the content fields of [`event_fields!`] of the packed event `$e` into `$out`, each
/// by its kind, in the order of [`super::events::EventView`].
macro_rules! push_content {
    ($out:ident, $e:ident; $($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
        $(
            $out.push_str(concat!(",\"", $wire, "\":"));
            push_content!(@ $kind $out, $e, $name);
        )*
    };
    (@ text $out:ident, $e:ident, $name:ident) => {
        $out.push_str($e.$name.get())
    };
    (@ optional $out:ident, $e:ident, $name:ident) => {
        push_optional($out, $e.$name)
    };
    (@ time $out:ident, $e:ident, $name:ident) => {
        push_timestamp($out, $e.$name).map_err(|()| Unreadable(stringify!($name)))?
    };
    (@ flag $out:ident, $e:ident, $name:ident) => {
        push_bool($out, $e.$name.0)
    };
}

/// One event document, keys in [`super::events::EventView`]'s order.
fn push_event(out: &mut String, e: &PackedEvent<'_>) -> Result<(), Unreadable> {
    out.push_str("{\"id\":");
    push_uuid(out, e.id).map_err(|()| Unreadable("id"))?;
    out.push_str(",\"createdAt\":");
    push_timestamp(out, e.created_at).map_err(|()| Unreadable("created_at"))?;
    out.push_str(",\"updatedAt\":");
    push_timestamp(out, e.updated_at).map_err(|()| Unreadable("updated_at"))?;
    out.push_str(",\"creatorID\":");
    out.push_str(e.creator_id.get());
    event_fields!(push_content { out, e; });
    out.push_str(",\"originCalendarID\":");
    match e.origin_calendar_id {
        Some(origin) => push_uuid(out, origin).map_err(|()| Unreadable("origin_calendar_id"))?,
        None => out.push_str("null"),
    }
    // The read lists live events only.
    out.push_str(",\"deletedAt\":null,\"revision\":");
    let _ = write!(out, "{}", e.revision);
    out.push_str(",\"calendars\":[");
    for (n, calendar) in e.calendars.split(',').filter(|c| !c.is_empty()).enumerate() {
        if n > 0 {
            out.push(',');
        }
        push_uuid(out, calendar).map_err(|()| Unreadable("calendar_id"))?;
    }
    out.push_str("]}");
    Ok(())
}

fn push_bool(out: &mut String, value: bool) {
    out.push_str(if value { "true" } else { "false" });
}

fn push_optional(out: &mut String, value: Option<&RawValue>) {
    out.push_str(value.map_or("null", RawValue::get));
}

/// A stored id (hex or hyphenated, any case) as a quoted hyphenated lower-case UUID.
fn push_uuid(out: &mut String, stored: &str) -> Result<(), ()> {
    let id = Uuid::try_parse(stored).map_err(|_| ())?;
    out.push('"');
    out.push_str(id.hyphenated().encode_lower(&mut Uuid::encode_buffer()));
    out.push('"');
    Ok(())
}

/// A stored timestamp as a quoted wire timestamp (`2026-07-23T12:00:00.000Z`, milliseconds
/// truncated like [`format_timestamp`]); only the years 1 to 9999, which every client reads.
fn push_timestamp(out: &mut String, stored: &str) -> Result<(), ()> {
    out.push('"');
    if let Some((seconds, fraction)) = utc_parts(stored) {
        out.push_str(seconds);
        out.push('.');
        let digits = fraction.as_bytes();
        for n in 0..3 {
            out.push(digits.get(n).map_or('0', |d| char::from(*d)));
        }
        out.push('Z');
    } else {
        let at = DateTime::parse_from_rfc3339(stored)
            .map_err(|_| ())?
            .with_timezone(&Utc);
        if !YEARS.contains(&at.year()) {
            return Err(());
        }
        out.push_str(&format_timestamp(at));
    }
    out.push('"');
    Ok(())
}

/// `stored` as `YYYY-MM-DDTHH:MM:SS` and its fraction digits, when it is a UTC timestamp in
/// the form both drivers write (`2026-07-23T12:00:00.123456+00:00`).
fn utc_parts(stored: &str) -> Option<(&str, &str)> {
    let rest = stored
        .strip_suffix("+00:00")
        .or_else(|| stored.strip_suffix('Z'))?;
    let (seconds, fraction) = rest.split_once('.').unwrap_or((rest, ""));
    let shaped = seconds.len() == 19
        && !seconds.starts_with("0000")
        && seconds.bytes().enumerate().all(|(n, b)| match n {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            _ => b.is_ascii_digit(),
        });
    (shaped && fraction.bytes().all(|b| b.is_ascii_digit())).then_some((seconds, fraction))
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;
    use entities::events;
    use serde_json::Value;

    use super::*;
    use crate::domain::ids::CalendarId;
    use crate::views::events::EventView;

    /// A model with awkward values, and the same event as SQLite packs it.
    fn sample() -> (events::Model, Vec<CalendarId>, String) {
        let id = Uuid::new_v4();
        let origin = Uuid::new_v4();
        let other = Uuid::new_v4();
        let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let model = events::Model {
            id: EventId::from_uuid(id),
            creator_id: "creator".into(),
            organizer: "Ada \"the\" organizer".into(),
            title: "Quote \" backslash \\ tab \t ünïcødé 🎉 \u{1} \u{7f}".into(),
            color: "#123456".into(),
            start: at("2026-07-23T09:15:30.123456+00:00"),
            end: at("2026-07-23T10:00:00+00:00"),
            is_all_day: false,
            is_canceled: true,
            has_attendees: false,
            description: Some("line one\nline two".into()),
            location: None,
            recurrence: Some("RRULE:FREQ=WEEKLY".into()),
            url: None,
            origin_calendar_id: Some(CalendarId::from_uuid(origin)),
            revision: 7,
            created_at: at("2026-07-01T00:00:00.999999999+00:00"),
            updated_at: at("2026-07-02T00:00:00.5+00:00"),
            ..events::Model::default()
        };
        let hex = |u: Uuid| u.simple().to_string().to_uppercase();
        let text = |s: &str| serde_json::to_string(s).unwrap();
        // The content columns in the order the read packs them, each as SQLite writes it.
        macro_rules! packed_content {
            ($($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
                vec![$(packed_content!(@ $kind model.$name),)*]
            };
            (@ text $value:expr) => { text(&$value) };
            (@ optional $value:expr) => { $value.as_deref().map_or("null".into(), text) };
            (@ time $value:expr) => {
                format!("\"{}\"", $value.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false))
            };
            (@ flag $value:expr) => { u8::from($value).to_string() };
        }
        let content: Vec<String> = event_fields!(packed_content {});
        let packed = format!(
            "[[\"{}\",{},{},\"{}\",7,\
             \"2026-07-01T00:00:00.999999999+00:00\",\"2026-07-02T00:00:00.5Z\",\"{},{}\"]]",
            hex(id),
            text(model.creator_id.as_str()),
            content.join(","),
            hex(origin),
            hex(origin),
            hex(other),
        );
        (
            model,
            vec![CalendarId::from_uuid(origin), CalendarId::from_uuid(other)],
            packed,
        )
    }

    #[test]
    fn renders_the_documents_event_views_serialize() {
        let (model, calendars, packed) = sample();
        let rows: Vec<PackedEvent<'_>> = serde_json::from_str(&packed).expect("packed");
        let now = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
        let deleted = [EventId::generate()];
        let events = events_array(&rows).unwrap();
        let rendered: Value =
            serde_json::from_str(&events_response(&events, &deleted, now)).unwrap();
        let expected = serde_json::to_value(EventsResponse {
            events: vec![EventView::from_model(model, calendars)],
            deleted_ids: deleted.iter().map(|id| id.uuid()).collect(),
            server_time: now,
        })
        .unwrap();
        assert_eq!(rendered, expected);
        assert_eq!(expected["serverTime"], "2026-11-22T12:00:00.000Z");
    }

    #[test]
    fn a_streamed_answer_is_the_whole_answer_in_pieces() {
        let (_, _, packed) = sample();
        let one = &packed[1..packed.len() - 1];
        let broken = one.replace("2026-07-23T09:15:30.123456+00:00", "yesterday");
        // Three events, the middle one unrenderable, in chunks of one and two.
        let three = format!("[{one},{broken},{one}]");
        let all: Vec<PackedEvent<'_>> = serde_json::from_str(&three).expect("packed");
        let now = Utc.with_ymd_and_hms(2026, 11, 22, 12, 0, 0).unwrap();
        let whole = events_response(&events_array(&all).unwrap(), &[], now);
        let mut streamed = StreamedResponse::new(now);
        let mut pieces = streamed.chunk(&all[..1]);
        pieces.push_str(&streamed.chunk(&all[1..]));
        pieces.push_str(&streamed.end());
        assert_eq!(pieces, whole);
        let rendered: Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(rendered["events"].as_array().map(Vec::len), Some(2));
        // No events at all.
        assert_eq!(
            StreamedResponse::new(now).end(),
            events_response(&events_array(&[]).unwrap(), &[], now)
        );
    }

    #[test]
    fn timestamps_are_truncated_to_milliseconds_whatever_their_form() {
        let render = |stored: &str| {
            let mut out = String::new();
            push_timestamp(&mut out, stored).map(|()| out)
        };
        assert_eq!(
            render("2026-07-23T09:15:30+00:00").unwrap(),
            "\"2026-07-23T09:15:30.000Z\""
        );
        assert_eq!(
            render("2026-07-23T09:15:30.98765+00:00").unwrap(),
            "\"2026-07-23T09:15:30.987Z\""
        );
        // Another offset goes the slow way and comes out in UTC.
        assert_eq!(
            render("2026-07-23T11:15:30.5+02:00").unwrap(),
            "\"2026-07-23T09:15:30.500Z\""
        );
        assert!(render("yesterday").is_err());
    }
}
