//! The events read (`GET /api/v1/events`), the request clients repeat most (the delta poll).
//! One statement finds each visible event once, with the reader's calendars it is in
//! aggregated, and has the database pack all of them into a single JSON value (an array of
//! plain column arrays: no formatting in SQL). One value crosses from the database instead
//! of a row per event — on SQLite every row is a hand-off between the driver's worker thread
//! and the runtime — and decoding it is one small serde pass. This costs a fraction of
//! decoding joined rows through sea-orm's related models, which dominated the request.
//! Also the range read of one calendar that invite previews summarize.

use chrono::{DateTime, Utc};
use entities::{calendar_events, events};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, Statement,
    Value,
};
use serde::Deserialize;
use uuid::Uuid;

/// What a read asks for.
#[derive(Debug, Clone, Copy)]
pub enum Window {
    /// Every visible event.
    All,
    /// Events changed, linked, newly visible or seen through other calendars after this
    /// instant.
    Since(DateTime<Utc>),
    /// Events overlapping `[start, end)`, and every recurring one.
    Range(DateTime<Utc>, DateTime<Utc>),
}

/// The live events of one calendar overlapping `[start, end)`, and its recurring ones.
pub async fn in_calendar(
    db: &impl ConnectionTrait,
    calendar_id: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<events::Model>, DbErr> {
    let rows = calendar_events::Entity::find()
        .find_also_related(events::Entity)
        .filter(calendar_events::Column::CalendarId.eq(calendar_id))
        .filter(events::Column::DeletedAt.is_null())
        .filter(
            Condition::any()
                .add(
                    Condition::all()
                        .add(events::Column::Start.lt(end))
                        .add(events::Column::End.gt(start)),
                )
                .add(events::Column::Recurrence.is_not_null()),
        )
        .all(db)
        .await?;
    Ok(rows.into_iter().filter_map(|(_, event)| event).collect())
}

/// The columns packed per event, in the order of [`PackedEvent`].
const COLUMNS: &str = "e.id, e.creator_id, e.organizer, e.title, e.color, e.start, e.\"end\", \
    e.is_all_day, e.is_canceled, e.has_attendees, e.description, e.location, e.recurrence, \
    e.url, e.origin_calendar_id, e.revision, e.created_at, e.updated_at";

/// The live events `user_id` can see in `window`, each with the reader's calendars it is
/// in (in link order), ordered by start, then id.
pub async fn visible(
    db: &impl ConnectionTrait,
    user_id: &str,
    window: Window,
) -> Result<Vec<(events::Model, Vec<Uuid>)>, DbErr> {
    let backend = db.get_database_backend();
    let postgres = backend == DbBackend::Postgres;
    let param = |n: usize| {
        if postgres {
            format!("${n}")
        } else {
            format!("?{n}")
        }
    };
    let mut values: Vec<Value> = vec![user_id.into()];
    let mut bind = |at: DateTime<Utc>| {
        values.push(at.into());
        param(values.len())
    };
    let user = param(1);
    let window_condition = match window {
        Window::All => String::new(),
        Window::Since(since) => {
            let since = bind(since);
            format!(
                " AND (e.updated_at > {since} OR e.id IN (SELECT l2.event_id FROM calendar_events l2 \
                 JOIN calendar_members m2 ON m2.calendar_id = l2.calendar_id \
                 WHERE m2.user_id = {user} AND (l2.created_at > {since} OR m2.created_at > {since})) \
                 OR e.id IN (SELECT v.event_id FROM event_view_changes v \
                 WHERE v.user_id = {user} AND v.at > {since}))"
            )
        }
        Window::Range(start, end) => {
            let start = bind(start);
            let end = bind(end);
            format!(" AND ((e.start < {end} AND e.\"end\" > {start}) OR e.recurrence IS NOT NULL)")
        }
    };
    // SQLite keeps UUIDs as 16-byte blobs (packed as hex) and booleans as 0/1.
    let (columns, calendars, pack, packed) = if postgres {
        (
            COLUMNS.to_owned(),
            "string_agg(l.calendar_id::text, ',' ORDER BY l.created_at, l.calendar_id)",
            "json_build_array",
            "coalesce(json_agg(r ORDER BY s, i), '[]'::json)::text",
        )
    } else {
        (
            COLUMNS
                .replace("e.id,", "hex(e.id),")
                .replace("e.origin_calendar_id,", "hex(e.origin_calendar_id),"),
            "group_concat(hex(l.calendar_id), ',' ORDER BY l.created_at, l.calendar_id)",
            "json_array",
            "json_group_array(json(r) ORDER BY s, i)",
        )
    };
    let sql = format!(
        "SELECT {packed} AS events FROM (\
           SELECT {pack}({columns}, {calendars}) AS r, e.start AS s, e.id AS i FROM events e \
           JOIN calendar_events l ON l.event_id = e.id \
           JOIN calendar_members m ON m.calendar_id = l.calendar_id \
           WHERE m.user_id = {user} AND e.deleted_at IS NULL{window_condition} \
           GROUP BY e.id\
         ) packed"
    );
    let row = db
        .query_one_raw(Statement::from_sql_and_values(backend, sql, values))
        .await?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let text: String = row.try_get("", "events")?;
    let packed: Vec<PackedEvent> =
        serde_json::from_str(&text).map_err(|err| DbErr::Type(format!("packed events: {err}")))?;
    packed.into_iter().map(PackedEvent::into_model).collect()
}

/// One event as packed by [`visible`]: its columns in [`COLUMNS`] order, then its calendars.
#[derive(Debug, Deserialize)]
struct PackedEvent(
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    Flag,
    Flag,
    Flag,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    String,
    String,
    String,
);

/// A boolean as PostgreSQL (`true`) or SQLite (`1`) packs it.
#[derive(Debug)]
struct Flag(bool);

impl Flag {
    fn value(&self) -> bool {
        self.0
    }
}

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FlagVisitor;
        impl serde::de::Visitor<'_> for FlagVisitor {
            type Value = Flag;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a boolean or 0/1")
            }
            fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Flag, E> {
                Ok(Flag(value))
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Flag, E> {
                Ok(Flag(value != 0))
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Flag, E> {
                Ok(Flag(value != 0))
            }
        }
        deserializer.deserialize_any(FlagVisitor)
    }
}

fn uuid(text: &str) -> Result<Uuid, DbErr> {
    Uuid::try_parse(text).map_err(|err| DbErr::Type(format!("packed id {text}: {err}")))
}

fn timestamp(text: &str) -> Result<DateTime<Utc>, DbErr> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|err| DbErr::Type(format!("packed timestamp {text}: {err}")))
}

impl PackedEvent {
    fn into_model(self) -> Result<(events::Model, Vec<Uuid>), DbErr> {
        let calendars = self
            .18
            .split(',')
            .map(uuid)
            .collect::<Result<Vec<Uuid>, DbErr>>()?;
        let event = events::Model {
            id: uuid(&self.0)?,
            creator_id: self.1,
            organizer: self.2,
            title: self.3,
            color: self.4,
            start: timestamp(&self.5)?,
            end: timestamp(&self.6)?,
            is_all_day: self.7.value(),
            is_canceled: self.8.value(),
            has_attendees: self.9.value(),
            description: self.10,
            location: self.11,
            recurrence: self.12,
            url: self.13,
            origin_calendar_id: self.14.as_deref().map(uuid).transpose()?,
            revision: self.15,
            created_at: timestamp(&self.16)?,
            updated_at: timestamp(&self.17)?,
            deleted_at: None,
        };
        Ok((event, calendars))
    }
}
