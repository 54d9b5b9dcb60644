//! The bodies of the event routes as clients send them, with their OpenAPI schemas: an
//! Event body (`POST` and `PUT /api/v1/events`) and an attendance answer. Each converts into
//! the validated [`EventInput`], [`EventUpdate`] or [`Attendance`] the commands take.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};

use super::input::{Field, Lenient};
use crate::domain::events::{Attendance, EventInput, EventUpdate};
use crate::domain::ids::{CalendarId, EventId, canonical_uuid};
use crate::domain::time::{from_epoch_millis, parse_timestamp};
use crate::error::AppError;
use crate::views::schemas::AttendanceSchema;

/// A timestamp as clients send it: an ISO string or JavaScript milliseconds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TimestampInput {
    Text(String),
    Millis(i64),
}

impl utoipa::PartialSchema for TimestampInput {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                    .description(Some(
                        "An RFC 3339 date-time (any offset, any fraction); a date \
                         (`2026-07-23`, UTC midnight) or a date-time without offset (read as \
                         UTC) is taken too.",
                    )),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .description(Some(
                        "Milliseconds since the epoch (a JavaScript time value).",
                    )),
            )
            .description(Some(
                "A timestamp in the years 1 to 9999 (UTC); answers always write \
                 `2026-07-23T12:00:00.000Z`.",
            ))
            .into()
    }
}

impl ToSchema for TimestampInput {
    fn name() -> std::borrow::Cow<'static, str> {
        "TimestampInput".into()
    }
}

impl TimestampInput {
    fn parse(&self) -> Option<DateTime<Utc>> {
        match self {
            Self::Text(text) => parse_timestamp(text),
            Self::Millis(millis) => from_epoch_millis(*millis),
        }
    }
}

/// An Event body as clients send it (`POST` and `PUT /api/v1/events`); [`EventInput`] is
/// what it must convert into. Fields it does not know (`creatorID`, `createdAt`, ...) are
/// accepted and ignored.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventBody {
    /// The event's id, chosen by the client on create (a canonical hyphenated UUID).
    #[schema(value_type = Uuid)]
    id: String,
    /// Organizer, at most 1,000 characters.
    #[schema(max_length = 1000)]
    organizer: String,
    /// Title, at most 1,000 characters.
    #[schema(max_length = 1000)]
    title: String,
    /// Colour, at most 32 characters.
    #[schema(max_length = 32)]
    color: String,
    /// Start: not after `end`.
    start: TimestampInput,
    /// End.
    end: TimestampInput,
    /// The calendars the event is in (duplicates collapse), at least one; the caller must
    /// be allowed to edit events in each one added.
    #[schema(value_type = Vec<Uuid>, min_items = 1)]
    calendars: Vec<String>,
    /// The home calendar, one of `calendars` (on create: by default the first; it cannot
    /// change on update).
    #[serde(rename = "originCalendarID", default)]
    #[schema(value_type = Option<Uuid>)]
    origin_calendar_id: Option<String>,
    /// Cancelled.
    is_canceled: bool,
    /// All-day.
    is_all_day: bool,
    /// Shows attendance (clients' UI only; absent or null is false).
    #[serde(default)]
    has_attendees: Option<bool>,
    /// Description, at most 50,000 characters.
    #[serde(default)]
    #[schema(max_length = 50000)]
    description: Option<String>,
    /// Location, at most 2,000 characters.
    #[serde(default)]
    #[schema(max_length = 2000)]
    location: Option<String>,
    /// Recurrence: RRULE/RDATE/EXDATE lines the server can expand, at most 20,000
    /// characters (blank is none).
    #[serde(default)]
    #[schema(max_length = 20000)]
    recurrence: Option<String>,
    /// URL, at most 2,048 characters.
    #[serde(default)]
    #[schema(max_length = 2048)]
    url: Option<String>,
    /// The revision the client last saw (read by updates only): older than the current one,
    /// the update is a 409 with `current`; absent, the update overwrites.
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    revision: Option<Lenient<i64>>,
}

impl TryFrom<EventBody> for EventUpdate {
    type Error = AppError;

    fn try_from(mut body: EventBody) -> Result<Self, AppError> {
        let base_revision = match body.revision.take() {
            None => None,
            Some(revision) => Some(
                revision
                    .valid()
                    .ok_or_else(|| AppError::bad_request("revision must be a whole number."))?,
            ),
        };
        Ok(Self {
            input: EventInput::try_from(body)?,
            base_revision,
        })
    }
}

impl TryFrom<EventBody> for EventInput {
    type Error = AppError;

    /// Validates an Event body: ids, times, and the stored content's rules.
    fn try_from(raw: EventBody) -> Result<Self, AppError> {
        let id = canonical_uuid(&raw.id)
            .map(EventId::from_uuid)
            .ok_or_else(|| AppError::bad_request("event.id must be a valid UUID."))?;
        let start = raw
            .start
            .parse()
            .ok_or_else(|| AppError::bad_request("start must be a valid timestamp."))?;
        let end = raw
            .end
            .parse()
            .ok_or_else(|| AppError::bad_request("end must be a valid timestamp."))?;
        let mut calendars = Vec::with_capacity(raw.calendars.len());
        for calendar in &raw.calendars {
            let calendar = canonical_uuid(calendar)
                .map(CalendarId::from_uuid)
                .ok_or_else(|| AppError::bad_request("event.calendars[] must be a valid UUID."))?;
            if !calendars.contains(&calendar) {
                calendars.push(calendar);
            }
        }
        let origin_calendar_id = match raw.origin_calendar_id.as_deref() {
            None => None,
            Some(origin) => Some(
                canonical_uuid(origin)
                    .map(CalendarId::from_uuid)
                    .ok_or_else(|| {
                        AppError::bad_request("originCalendarID must be a valid UUID.")
                    })?,
            ),
        };
        let input = Self {
            id,
            organizer: raw.organizer,
            title: raw.title,
            color: raw.color,
            start,
            end,
            calendars,
            origin_calendar_id,
            is_canceled: raw.is_canceled,
            is_all_day: raw.is_all_day,
            has_attendees: raw.has_attendees.unwrap_or(false),
            description: raw.description,
            location: raw.location,
            recurrence: raw.recurrence.filter(|r| !r.trim().is_empty()),
            url: raw.url,
        };
        input.content().check()?;
        Ok(input)
    }
}

/// The body of `PUT …/attendance`: `{status}`, or the older `{attending: bool}` (one of
/// the two is required; `status` wins when both are sent).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AttendanceBody {
    /// The answer.
    #[serde(default)]
    #[schema(value_type = AttendanceSchema)]
    status: Field<String>,
    /// The older form: `true` is `going`, `false` is `none`.
    #[serde(default)]
    #[schema(value_type = bool, deprecated)]
    attending: Option<Lenient<bool>>,
}

impl TryFrom<AttendanceBody> for Attendance {
    type Error = AppError;

    /// `status` wins when both are sent.
    fn try_from(body: AttendanceBody) -> Result<Self, AppError> {
        let invalid_status =
            || AppError::bad_request("status must be going, maybe, declined or none...");
        match (body.status, body.attending.and_then(Lenient::valid)) {
            (Field::Valid(status), _) => Self::parse(&status).ok_or_else(invalid_status),
            (Field::Invalid, _) => Err(invalid_status()),
            (Field::Absent, Some(true)) => Ok(Self::Going),
            (Field::Absent, Some(false)) => Ok(Self::None),
            (Field::Absent, None) => Err(AppError::bad_request(
                "status (going | maybe | declined | none) is required...",
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn parse(body: &Value) -> Result<EventInput, AppError> {
        let raw = serde_json::from_value::<EventBody>(body.clone())
            .map_err(|_| AppError::bad_request("not an event body"))?;
        EventInput::try_from(raw)
    }

    fn attendance(body: Value) -> Result<Attendance, AppError> {
        let raw: AttendanceBody = serde_json::from_value(body).expect("any object");
        Attendance::try_from(raw)
    }

    fn body() -> Value {
        json!({
            "id": "123e4567-e89b-12d3-a456-426614174000",
            "creatorID": "whoever",
            "organizer": "me",
            "title": "Standup",
            "color": "#C8553D",
            "start": "2026-07-23T09:00:00.000Z",
            "end": "2026-07-23T09:15:00.000Z",
            "calendars": ["223e4567-e89b-12d3-a456-426614174000", "223e4567-e89b-12d3-a456-426614174000"],
            "isCanceled": false,
            "isAllDay": false
        })
    }

    #[test]
    fn a_valid_body_parses_with_defaults() {
        let input = parse(&body()).expect("valid");
        assert_eq!(input.calendars.len(), 1, "duplicates collapse");
        assert!(!input.has_attendees);
        assert_eq!(input.home_for_create().expect("home"), input.calendars[0]);
    }

    #[test]
    fn invalid_bodies_are_400s() {
        let cases = [
            ("id", json!("not-a-uuid")),
            ("start", json!("soon")),
            ("end", json!("2026-07-23T08:00:00Z")),
            ("calendars", json!(["nope"])),
            ("originCalendarID", json!("nope")),
            ("title", json!(42)),
            ("isCanceled", json!("no")),
        ];
        for (field, value) in cases {
            let mut body = body();
            body[field] = value;
            let err = parse(&body).expect_err(field);
            assert_eq!(err.status(), http::StatusCode::BAD_REQUEST, "{field}");
        }
        let mut no_calendars = body();
        no_calendars["calendars"] = json!([]);
        let input = parse(&no_calendars).expect("shape is fine");
        assert!(input.home_for_create().is_err());
        let mut foreign_origin = body();
        foreign_origin["originCalendarID"] = json!("323e4567-e89b-12d3-a456-426614174000");
        let input = parse(&foreign_origin).expect("shape is fine");
        assert!(input.home_for_create().is_err());
    }

    #[test]
    fn attendance_bodies() {
        assert_eq!(
            attendance(json!({"status": "maybe"})).ok(),
            Some(Attendance::Maybe)
        );
        assert_eq!(
            attendance(json!({"attending": true})).ok(),
            Some(Attendance::Going)
        );
        assert_eq!(
            attendance(json!({"attending": false})).ok(),
            Some(Attendance::None)
        );
        assert_eq!(
            attendance(json!({"status": "declined", "attending": true})).ok(),
            Some(Attendance::Declined)
        );
        assert!(attendance(json!({"status": "perhaps"})).is_err());
        assert!(attendance(json!({})).is_err());
    }
}
