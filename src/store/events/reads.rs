//! The events read (`GET /api/v1/events`), the request clients repeat most (the delta poll).
//!
//! One statement finds each visible event once, with the reader's calendars it is in
//! aggregated, and has the database pack all of them into a single JSON text: an array with
//! one array of plain column values per event, strings already escaped as JSON. One value
//! crosses from the database instead of a row per event (on SQLite every row is a hand-off
//! between the driver's worker thread and the runtime), and the JSON view renders the
//! response from it without building models: strings are copied as the database escaped
//! them, ids and timestamps reformatted in place.
//!
//! The outer array is joined as text (`group_concat`/`string_agg`), not as JSON, so the
//! database never re-parses the rows it has just packed.
//!
//! Also the range read of one calendar that invite previews summarize.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use entities::{calendar_events, events};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Statement, Value,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::domain::event_fields::event_fields;
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::store::Database;
use crate::store::statements::placeholder;

/// What a read asks for.
#[derive(Debug, Clone, Copy)]
pub enum Window {
    /// Every visible event.
    All,
    /// Events changed, linked, newly visible or seen through other calendars after `since`,
    /// as last changed at or before `until` (a delta read's horizon): an event with a
    /// change after `until` is left to the delta read that starts there, which returns it
    /// with that change, so no change is returned twice.
    Since {
        /// The earlier read's `serverTime`.
        since: DateTime<Utc>,
        /// This read's `serverTime`.
        until: DateTime<Utc>,
    },
    /// Events overlapping `[start, end)`, and every recurring one.
    Range(DateTime<Utc>, DateTime<Utc>),
}

/// What an invite preview shows of an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRow {
    /// Id.
    pub id: Uuid,
    /// Title.
    pub title: String,
    /// Colour.
    pub color: String,
    /// Start.
    pub start: DateTime<Utc>,
    /// End.
    pub end: DateTime<Utc>,
    /// All-day.
    pub is_all_day: bool,
    /// Recurrence, if any.
    pub recurrence: Option<String>,
}

/// Most single and most recurring events one preview reads (a preview is a glimpse of a
/// calendar, and this bounds what one public request can make the server hold).
pub const PREVIEW_ROWS: u64 = 500;

/// The live events of one calendar overlapping `[start, end)` (the first [`PREVIEW_ROWS`]
/// by start), and its recurring ones that start before `end` (as many), with only what a
/// preview shows.
pub async fn for_preview(
    db: &impl ConnectionTrait,
    calendar_id: CalendarId,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<PreviewRow>, DbErr> {
    let in_calendar = || {
        calendar_events::Entity::find()
            .select_only()
            .inner_join(events::Entity)
            .columns([
                events::Column::Id,
                events::Column::Title,
                events::Column::Color,
                events::Column::Start,
                events::Column::End,
                events::Column::IsAllDay,
                events::Column::Recurrence,
            ])
            .filter(calendar_events::Column::CalendarId.eq(calendar_id))
            .filter(events::Column::DeletedAt.is_null())
            .filter(events::Column::Start.lt(end))
            .order_by_asc(events::Column::Start)
            .order_by_asc(events::Column::Id)
            .limit(PREVIEW_ROWS)
    };
    type Columns = (
        Uuid,
        String,
        String,
        DateTime<Utc>,
        DateTime<Utc>,
        bool,
        Option<String>,
    );
    let single: Vec<Columns> = in_calendar()
        .filter(events::Column::Recurrence.is_null())
        .filter(events::Column::End.gt(start))
        .into_tuple()
        .all(db)
        .await?;
    let recurring: Vec<Columns> = in_calendar()
        .filter(events::Column::Recurrence.is_not_null())
        .into_tuple()
        .all(db)
        .await?;
    Ok(single
        .into_iter()
        .chain(recurring)
        .map(
            |(id, title, color, start, end, is_all_day, recurrence)| PreviewRow {
                id,
                title,
                color,
                start,
                end,
                is_all_day,
                recurrence,
            },
        )
        .collect())
}

/// The live events a reader can see, as the database packed them (ordered by start, then
/// id). Read them with [`PackedEvents::rows`].
#[derive(Debug)]
pub struct PackedEvents(String);

/// The live events `user_id` can see in `window`, each with the reader's calendars it is
/// in (in link order).
pub async fn visible(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    window: Window,
) -> Result<PackedEvents, DbErr> {
    let backend = db.get_database_backend();
    let postgres = backend == DbBackend::Postgres;
    let param = |n: usize| placeholder(backend, n);
    let mut values: Vec<Value> = vec![user_id.into()];
    let mut bind = |at: DateTime<Utc>| {
        values.push(Value::from(at));
        param(values.len())
    };
    let user = param(1);
    let window_condition = match window {
        Window::All => String::new(),
        Window::Since { since, until } => {
            let since = bind(since);
            let until = bind(until);
            // Changed after `since` (its row, a link or membership through which the reader
            // sees it, or the calendars they see it through), and by nothing after `until`.
            format!(
                " AND (e.updated_at > {since} OR e.id IN (SELECT l2.event_id FROM calendar_events l2 \
                 JOIN calendar_members m2 ON m2.calendar_id = l2.calendar_id \
                 WHERE m2.user_id = {user} AND (l2.created_at > {since} OR m2.created_at > {since})) \
                 OR e.id IN (SELECT v.event_id FROM event_view_changes v \
                 WHERE v.user_id = {user} AND v.at > {since})) \
                 AND e.updated_at <= {until} AND e.id NOT IN (SELECT l3.event_id FROM calendar_events l3 \
                 JOIN calendar_members m3 ON m3.calendar_id = l3.calendar_id \
                 WHERE m3.user_id = {user} AND (l3.created_at > {until} OR m3.created_at > {until})) \
                 AND e.id NOT IN (SELECT v3.event_id FROM event_view_changes v3 \
                 WHERE v3.user_id = {user} AND v3.at > {until})"
            )
        }
        Window::Range(start, end) => {
            let start = bind(start);
            let end = bind(end);
            format!(" AND ((e.start < {end} AND e.\"end\" > {start}) OR e.recurrence IS NOT NULL)")
        }
    };
    // SQLite keeps UUIDs as 16-byte blobs (packed as hex) and booleans as 0/1.
    let (columns, calendars, pack, join) = if postgres {
        (
            COLUMNS.to_owned(),
            "string_agg(l.calendar_id::text, ',' ORDER BY l.created_at, l.calendar_id)",
            "json_build_array",
            "string_agg(r::text, ',' ORDER BY s, i)",
        )
    } else {
        (
            sqlite_columns(),
            "group_concat(hex(l.calendar_id), ',' ORDER BY l.created_at, l.calendar_id)",
            "json_array",
            "group_concat(r, ',' ORDER BY s, i)",
        )
    };
    let sql = format!(
        "SELECT '[' || coalesce({join}, '') || ']' AS events FROM (\
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
    let text = match row {
        Some(row) => row.try_get("", "events")?,
        None => "[]".to_owned(),
    };
    Ok(PackedEvents(text))
}

/// What changed for `user_id` in `(since, until]`: the live events it can see that changed
/// and the ids of those it lost sight of, from one snapshot, so that no change falls
/// between the two reads.
pub async fn changed_since(
    db: &Database,
    user_id: &UserId,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<(PackedEvents, Vec<EventId>), DbErr> {
    let txn = db.begin_read().await?;
    let deleted = super::history::deleted_since(&txn, user_id, since, until).await?;
    let changed = visible(&txn, user_id, Window::Since { since, until }).await?;
    txn.commit().await?;
    Ok((changed, deleted))
}

/// The events version of calendar `c` on PostgreSQL, as a literal for `concat!`: its
/// `events_version` plus the raises counted apart, in a few rows per calendar (migrations
/// `m20261130_000026`, `m20261201_000027`).
macro_rules! events_version_postgres {
    () => {
        "(c.events_version + (SELECT coalesce(sum(r.raised), 0)::bigint \
         FROM calendar_events_raised r WHERE r.calendar_id = c.id))"
    };
}

/// [`versions`] on PostgreSQL.
pub(super) const VERSIONS_POSTGRES: &str = concat!(
    "SELECT coalesce(string_agg(c.id::text || ':' || ",
    events_version_postgres!(),
    ", ',' ORDER BY c.id), '') \
     AS versions FROM calendar_members m JOIN calendars c ON c.id = m.calendar_id \
     WHERE m.user_id = $1"
);

/// [`versions`] on SQLite.
pub(super) const VERSIONS_SQLITE: &str = "SELECT coalesce(group_concat(hex(c.id) || ':' || c.events_version, ',' ORDER BY c.id), '') \
     AS versions FROM calendar_members m JOIN calendars c ON c.id = m.calendar_id \
     WHERE m.user_id = ?1";

/// What the events `user_id` can see depend on, as one comparable text: each calendar they
/// are a member of with its events version (raised by triggers whenever a link into it or
/// a linked event changes). Equal versions, read at two moments, mean the same events.
pub async fn versions(db: &impl ConnectionTrait, user_id: &UserId) -> Result<String, DbErr> {
    let backend = db.get_database_backend();
    let sql = if backend == DbBackend::Postgres {
        VERSIONS_POSTGRES
    } else {
        VERSIONS_SQLITE
    };
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            sql,
            [Value::from(user_id)],
        ))
        .await?;
    match row {
        Some(row) => row.try_get("", "versions"),
        None => Ok(String::new()),
    }
}

/// A full read's events as the caller rendered them, and whether they came from the cache.
#[derive(Debug)]
pub struct FullRead {
    /// The rendered events.
    pub events: Arc<str>,
    /// Whether they were served from the cache.
    pub cached: bool,
    /// The reader's calendar versions the events were read at ([`versions`]).
    pub versions: String,
}

/// [`versions`] and how many live events the reader can see, counted up to `?2`, on
/// PostgreSQL.
const VERSIONS_AND_SIZE_POSTGRES: &str = concat!(
    "SELECT coalesce((SELECT string_agg(c.id::text || ':' || ",
    events_version_postgres!(),
    ", ',' ORDER BY c.id) \
     FROM calendar_members m JOIN calendars c ON c.id = m.calendar_id WHERE m.user_id = $1), '') AS versions, \
     (SELECT count(*) FROM (SELECT 1 FROM events e WHERE e.deleted_at IS NULL AND e.id IN (\
     SELECT l.event_id FROM calendar_events l JOIN calendar_members m ON m.calendar_id = l.calendar_id \
     WHERE m.user_id = $1) LIMIT $2) AS counted) AS size"
);

/// [`VERSIONS_AND_SIZE_POSTGRES`] on SQLite.
const VERSIONS_AND_SIZE_SQLITE: &str = "SELECT coalesce((SELECT group_concat(hex(c.id) || ':' || c.events_version, ',' ORDER BY c.id) \
     FROM calendar_members m JOIN calendars c ON c.id = m.calendar_id WHERE m.user_id = ?1), '') AS versions, \
     (SELECT count(*) FROM (SELECT 1 FROM events e WHERE e.deleted_at IS NULL AND e.id IN (\
     SELECT l.event_id FROM calendar_events l JOIN calendar_members m ON m.calendar_id = l.calendar_id \
     WHERE m.user_id = ?1) LIMIT ?2) AS counted) AS size";

/// [`versions`], and how many live events `user_id` can see if that is at most `limit`
/// (else `limit`), in one statement.
async fn versions_and_size(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    limit: u64,
) -> Result<(String, u64), DbErr> {
    let backend = db.get_database_backend();
    let sql = if backend == DbBackend::Postgres {
        VERSIONS_AND_SIZE_POSTGRES
    } else {
        VERSIONS_AND_SIZE_SQLITE
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let row = db
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            sql,
            [Value::from(user_id), Value::from(limit)],
        ))
        .await?
        .ok_or_else(|| DbErr::RecordNotFound("versions".into()))?;
    let versions: String = row.try_get("", "versions")?;
    let size: i64 = row.try_get("", "size")?;
    Ok((versions, u64::try_from(size).unwrap_or_default()))
}

/// Everything `user_id` can see, as `render` writes it: from the server's cache while the
/// reader's calendar versions are those the cached text was read at (triggers raise a
/// calendar's version with every change to its links or linked events), else read, with
/// the versions, in one snapshot and kept for the next read. `None` when the reader sees
/// more events than `EVENTS_STREAM_ABOVE`: those are not rendered whole nor cached, but
/// streamed ([`super::streamed::all_visible`]).
///
/// `known` is the reader's current versions when the caller has just read them
/// ([`current_versions`]), so they are not read twice.
pub async fn all_visible<E: From<DbErr>>(
    db: &Database,
    user_id: &UserId,
    known: Option<String>,
    render: impl FnOnce(&[PackedEvent<'_>]) -> Result<String, E>,
) -> Result<Option<FullRead>, E> {
    let cache = &db.event_reads;
    if cache.holds(user_id) {
        let versions = match known {
            Some(versions) => versions,
            None => current_versions(db, user_id).await?,
        };
        if let Some(events) = cache.get(user_id, &versions) {
            return Ok(Some(FullRead {
                events,
                cached: true,
                versions,
            }));
        }
    }
    // A known big reader is streamed without sizing the read first (on a pooled
    // connection, which a hundred of their reads at once would all take).
    if cache.streams().is_big_reader(user_id) {
        return Ok(None);
    }
    let above = cache.streams().above;
    let txn = db.begin_read().await?;
    // The size comes with the versions: a small read costs no statement more than before.
    let (versions, size) = versions_and_size(&txn, user_id, above.saturating_add(1)).await?;
    if size > above {
        txn.commit().await?;
        return Ok(None);
    }
    let packed = visible(&txn, user_id, Window::All).await?;
    txn.commit().await?;
    let events: Arc<str> = render(&packed.rows()?)?.into();
    cache.put(user_id, versions.clone(), events.clone());
    Ok(Some(FullRead {
        events,
        cached: false,
        versions,
    }))
}

/// [`versions`] as of now, outside a transaction: on PostgreSQL through the connections
/// held for it beside the pool ([`crate::store::unpinged_connections`]), which spare the read the pool's ping.
pub async fn current_versions(db: &Database, user_id: &UserId) -> Result<String, DbErr> {
    if let Some(lane) = db.unpinged_connections()
        && let Some(row) = lane.text(VERSIONS_POSTGRES, user_id.as_str()).await
    {
        return Ok(row.unwrap_or_default());
    }
    versions(db.conn(), user_id).await
}

impl PackedEvents {
    /// `text`, a JSON array of packed events.
    pub(super) fn new(text: String) -> Self {
        Self(text)
    }

    /// The events, borrowing from the packed text.
    pub fn rows(&self) -> Result<Vec<PackedEvent<'_>>, DbErr> {
        serde_json::from_str(&self.0).map_err(|err| DbErr::Type(format!("packed events: {err}")))
    }
}

/// [`COLUMNS`] as SQLite packs them: its UUIDs (16-byte blobs) as hex, and a missing origin
/// calendar as `null` (SQLite's `hex` of NULL is an empty text, which no id reads as).
pub(super) fn sqlite_columns() -> String {
    COLUMNS.replace("e.id,", "hex(e.id),").replace(
        "e.origin_calendar_id,",
        "nullif(hex(e.origin_calendar_id), ''),",
    )
}

/// Writes [`COLUMNS`] and [`PackedEvent`] with the content fields of [`event_fields!`], in
/// the same order: each field read by its kind (texts as the database escaped them,
/// instants as stored, flags as either database packs them).
macro_rules! packed_event {
    (@fields [$($done:tt)*]) => {
        /// One event as [`visible`] packed it: a JSON array of its columns in [`COLUMNS`]
        /// order, then its calendars (serde reads a struct from an array field by field, in
        /// declaration order).
        ///
        /// Ids are hex (SQLite) or hyphenated (PostgreSQL), timestamps as stored (RFC 3339
        /// with any fraction), and the text columns JSON string tokens exactly as the
        /// database wrote them.
        #[derive(Debug, Deserialize)]
        pub struct PackedEvent<'a> {
            /// `id`.
            pub id: &'a str,
            /// `creator_id`.
            #[serde(borrow)]
            pub creator_id: &'a RawValue,
            $($done)*
            /// `origin_calendar_id`.
            pub origin_calendar_id: Option<&'a str>,
            /// `revision`.
            pub revision: i64,
            /// `created_at`.
            pub created_at: &'a str,
            /// `updated_at`.
            pub updated_at: &'a str,
            /// The reader's calendars, comma-separated.
            pub calendars: &'a str,
        }
    };
    (@fields [$($done:tt)*] $name:ident: [$($ty:tt)*] text $wire:literal $doc:literal, $($rest:tt)*) => {
        packed_event!(@fields [$($done)* #[doc = $doc] #[serde(borrow)] pub $name: &'a RawValue,] $($rest)*);
    };
    (@fields [$($done:tt)*] $name:ident: [$($ty:tt)*] optional $wire:literal $doc:literal, $($rest:tt)*) => {
        packed_event!(@fields [$($done)* #[doc = $doc] #[serde(borrow)] pub $name: Option<&'a RawValue>,] $($rest)*);
    };
    (@fields [$($done:tt)*] $name:ident: [$($ty:tt)*] time $wire:literal $doc:literal, $($rest:tt)*) => {
        packed_event!(@fields [$($done)* #[doc = $doc] pub $name: &'a str,] $($rest)*);
    };
    (@fields [$($done:tt)*] $name:ident: [$($ty:tt)*] flag $wire:literal $doc:literal, $($rest:tt)*) => {
        packed_event!(@fields [$($done)* #[doc = $doc] pub $name: Flag,] $($rest)*);
    };
    ($($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
        /// The columns packed per event, in the order of [`PackedEvent`] (every name
        /// quoted: `end` is a keyword).
        pub(super) const COLUMNS: &str = concat!(
            "e.id, e.creator_id, ",
            $("e.\"", stringify!($name), "\", ",)*
            "e.origin_calendar_id, e.revision, e.created_at, e.updated_at"
        );

        packed_event!(@fields [] $($name: [$($ty)*] $kind $wire $doc,)*);
    };
}

event_fields!(packed_event {});

/// A boolean as PostgreSQL (`true`) or SQLite (`1`) packs it.
#[derive(Debug, Clone, Copy)]
pub struct Flag(pub bool);

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

/// The live events `user_id` can see that may have an occurrence starting in
/// `[from, until)` (single events overlapping it, and every recurring one), each with the
/// user's calendars it is in: what the reminder dispatcher resolves.
pub async fn for_reminders(
    db: &impl ConnectionTrait,
    user_id: &UserId,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Vec<(events::Model, Vec<CalendarId>)>, DbErr> {
    use sea_orm::Condition;
    use sea_orm::sea_query::Query;
    let member_calendars = Query::select()
        .column(entities::calendar_members::Column::CalendarId)
        .from(entities::calendar_members::Entity)
        .and_where(entities::calendar_members::Column::UserId.eq(user_id))
        .to_owned();
    let in_window = Query::select()
        .column(events::Column::Id)
        .from(events::Entity)
        .and_where(events::Column::DeletedAt.is_null())
        .cond_where(
            Condition::any()
                .add(
                    Condition::all()
                        .add(events::Column::Start.lt(until))
                        .add(events::Column::End.gt(from)),
                )
                .add(events::Column::Recurrence.is_not_null()),
        )
        .to_owned();
    let links: Vec<(EventId, CalendarId)> = calendar_events::Entity::find()
        .select_only()
        .column(calendar_events::Column::EventId)
        .column(calendar_events::Column::CalendarId)
        .filter(calendar_events::Column::CalendarId.in_subquery(member_calendars))
        .filter(calendar_events::Column::EventId.in_subquery(in_window))
        .order_by_asc(calendar_events::Column::CreatedAt)
        .order_by_asc(calendar_events::Column::CalendarId)
        .into_tuple()
        .all(db)
        .await?;
    let mut calendars: HashMap<EventId, Vec<CalendarId>> = HashMap::new();
    for (event, calendar) in links {
        calendars.entry(event).or_default().push(calendar);
    }
    let ids: Vec<EventId> = calendars.keys().copied().collect();
    let mut found = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let rows = events::Entity::find()
            .filter(events::Column::Id.is_in(chunk.iter().copied()))
            .filter(events::Column::DeletedAt.is_null())
            .order_by_asc(events::Column::Start)
            .order_by_asc(events::Column::Id)
            .all(db)
            .await?;
        for event in rows {
            let links = calendars.remove(&event.id).unwrap_or_default();
            found.push((event, links));
        }
    }
    Ok(found)
}
