//! What a batch of edits locks and reads at its start ([`lock_for_changes`]), and the last
//! statement that confirms it before the commit ([`confirm_members`]).

use std::collections::HashMap;

use entities::{calendar_events, calendar_members, calendars, events};
use sea_orm::sea_query::{Alias, Condition, Expr, ExprTrait, LockType, Order, Query, UnionType};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, FromQueryResult, QueryFilter, QueryOrder,
    QueryResult, QuerySelect, QueryTrait,
};

use super::calendar_roles::{self, MembersByCalendar};
use crate::domain::ids::{CalendarId, EventId, UserId};
use crate::store::WriteTxn;
use crate::store::attendance::AttendeeLists;
use crate::store::statements::padded_keys;

/// The column the database raises on every change of a calendar's memberships (triggers;
/// not in the entity, which no write sets it through).
const MEMBERS_VERSION: &str = "members_version";

/// What a batch of changes to events holds once [`lock_for_changes`] returns.
#[derive(Debug)]
pub struct ChangeLocks {
    /// Each event found (deleted or not) with its links as they are under the locks.
    pub events: HashMap<EventId, (events::Model, Vec<CalendarId>)>,
    /// The members and roles of every calendar the batch may read or write: the events'
    /// links and homes, and `also`.
    pub members: MembersByCalendar,
    /// PostgreSQL: the `members_version` of each of those calendars that exists, as read,
    /// for [`confirm_members`] before the commit. Empty on SQLite.
    pub versions: HashMap<CalendarId, i64>,
    /// The attendees of the events the batch answers attendance for ([`Answering`]).
    pub attendees: AttendeeLists,
}

/// The attendance answers of a batch: the events answered and who answers. Their attendee
/// lists are read with the locks ([`ChangeLocks::attendees`]).
#[derive(Debug, Default)]
pub struct Answering {
    /// The events answered, each once, in order.
    pub events: Vec<EventId>,
    /// Who answers, each once.
    pub people: Vec<UserId>,
}

/// Locks what a batch of changes to the events `ids` writes, in the one global order
/// ([`crate::store::calendars::lock_in_order`]): first the calendars it touches (the
/// events' links and `also`, such as a link's target, an update's new calendars or a
/// creation's), by id, then the events' rows, by id. Then reads, under the locks, the
/// events' links and the members of every calendar involved, and takes the transaction's
/// stamp, with the attendees of the events `answering` answers and who answers them, in as
/// few round trips as the backend allows ([`WriteTxn::read_together`]): on
/// SQLite, whose one writer holds the database, one hand-off with the transaction's
/// `BEGIN`; on PostgreSQL one too (`BEGIN` with the locks, the events' rows and the reads),
/// and a second for the events' rows alone when one holds a time the text format cannot
/// carry.
///
/// On PostgreSQL the calendars are locked `FOR KEY SHARE`, which the batches of two
/// calendars' actors can hold together: changing an event or its links raises its
/// calendars' events version when the transaction commits, in a row of its own (migrations
/// `m20261129_000025` and `m20261130_000026`), so the calendars' rows are never written by
/// a batch. Its last statement, [`confirm_members`], confirms the members read here (a
/// change of memberships that takes its calendar `FOR NO KEY UPDATE` does not wait for
/// this lock) and holds them `FOR SHARE` to the commit, in the order of their ids.
pub async fn lock_for_changes(
    txn: &WriteTxn,
    ids: &[EventId],
    also: &[CalendarId],
    answering: &Answering,
) -> Result<ChangeLocks, DbErr> {
    // On SQLite padded, so the texts repeat from batch to batch ([`crate::store::statements::padded_keys`]).
    let backend = txn.get_database_backend();
    let (ids, also) = (
        &padded_keys(backend, ids)[..],
        &padded_keys(backend, also)[..],
    );
    let attendees_read = AttendeeLists::reads(backend, &answering.events, &answering.people);
    let reads_attendees = !attendees_read.is_empty();
    let linked = || {
        Query::select()
            .column(calendar_events::Column::CalendarId)
            .from(calendar_events::Entity)
            .and_where(calendar_events::Column::EventId.is_in(ids.iter().copied()))
            .to_owned()
    };
    let homes = || {
        Query::select()
            .column(events::Column::OriginCalendarId)
            .from(events::Entity)
            .and_where(events::Column::Id.is_in(ids.iter().copied()))
            .and_where(events::Column::OriginCalendarId.is_not_null())
            .to_owned()
    };
    // The links are read after the events' locks, on a snapshot of their own: what a writer
    // that held one of the events committed meanwhile is read.
    let links_read = calendar_events::Entity::find()
        .filter(calendar_events::Column::EventId.is_in(ids.iter().copied()))
        .order_by_asc(calendar_events::Column::CreatedAt)
        .order_by_asc(calendar_events::Column::CalendarId)
        .into_query();
    // The events' rows, locked in the order of their ids.
    let events_locked = events::Entity::find()
        .filter(events::Column::Id.is_in(ids.iter().copied()))
        .order_by_asc(events::Column::Id)
        .lock_exclusive()
        .into_query();
    let postgres = txn.get_database_backend() == sea_orm::DbBackend::Postgres;
    let (found, mut sections) = if postgres {
        // One round trip: `BEGIN` with the calendars' locks, the events' rows locked, and the
        // reads under them (the links; the members with their versions) with the stamp.
        // Each statement of the text is planned for this execution: the events table grows,
        // and a plan kept while it was small would scan it whole.
        //
        // The calendars involved are one subquery, its parts joined by `UNION ALL`, not
        // several `IN (…)` joined by `OR`: PostgreSQL joins one to the calendars and reads
        // the links by their key, where each of an `OR` is a hashed subplan of its own,
        // which it planned as a whole scan of `calendar_events` until that table held tens
        // of thousands of links, in every batch.
        let listed = || {
            Query::select()
                .column(calendars::Column::Id)
                .from(calendars::Entity)
                .and_where(calendars::Column::Id.is_in(also.iter().copied()))
                .to_owned()
        };
        let calendars_locked = Query::select()
            .column(calendars::Column::Id)
            .from(calendars::Entity)
            .and_where(
                calendars::Column::Id
                    .in_subquery(linked().union(UnionType::All, listed()).to_owned()),
            )
            .order_by(calendars::Column::Id, Order::Asc)
            .lock(LockType::KeyShare)
            .to_owned();
        // The members of every calendar involved and its `members_version`, one statement:
        // every such calendar that exists gives a row, with or without members.
        let calendar = || Expr::col((calendars::Entity, calendars::Column::Id));
        let roles_read = Query::select()
            .expr_as(calendar(), Alias::new("calendar_id"))
            .column((calendar_members::Entity, calendar_members::Column::UserId))
            .column((calendar_members::Entity, calendar_members::Column::Role))
            .column((calendars::Entity, Alias::new(MEMBERS_VERSION)))
            .from(calendars::Entity)
            .left_join(
                calendar_members::Entity,
                Expr::col((
                    calendar_members::Entity,
                    calendar_members::Column::CalendarId,
                ))
                .equals((calendars::Entity, calendars::Column::Id)),
            )
            .and_where(
                calendar().in_subquery(
                    linked()
                        .union(UnionType::All, homes())
                        .union(UnionType::All, listed())
                        .to_owned(),
                ),
            )
            .to_owned();
        let mut reads = vec![
            calendars_locked,
            events_locked.clone(),
            links_read,
            roles_read,
        ];
        reads.extend(attendees_read);
        let mut sections = txn.read_together(&reads, true).await?.into_iter();
        sections.next();
        let found = match event_rows(&sections.next().unwrap_or_default()) {
            Ok(found) => found,
            // A stored time outside the text format's reach (a year past 9999, which no
            // write path makes but an old import did): the rows, locked already, are read
            // again in the binary format, and the rules refuse the time.
            Err(_) => event_rows(&txn.read_planned_now(&events_locked).await?)?,
        };
        (found, sections)
    } else {
        let members_read = calendar_members::Entity::find()
            .filter(
                Condition::any()
                    .add(calendar_members::Column::CalendarId.in_subquery(linked()))
                    .add(calendar_members::Column::CalendarId.in_subquery(homes()))
                    .add(calendar_members::Column::CalendarId.is_in(also.iter().copied())),
            )
            .into_query();
        let mut reads = vec![events_locked, links_read, members_read];
        reads.extend(attendees_read);
        let mut sections = txn.read_together(&reads, true).await?.into_iter();
        let found = event_rows(&sections.next().unwrap_or_default())?;
        (found, sections)
    };
    let mut section = || sections.next().unwrap_or_default();
    let mut links: HashMap<EventId, Vec<CalendarId>> = HashMap::new();
    for row in section() {
        let link = calendar_events::Model::from_query_result(&row, "")?;
        links
            .entry(link.event_id)
            .or_default()
            .push(link.calendar_id);
    }
    let (members, versions) = if postgres {
        calendar_roles::roles_and_versions(&section())?
    } else {
        let rows = section()
            .iter()
            .map(|row| calendar_members::Model::from_query_result(row, ""))
            .collect::<Result<Vec<_>, _>>()?;
        (
            crate::store::members::roles_by_calendar(rows),
            HashMap::new(),
        )
    };
    let attendees = if reads_attendees {
        // The events answered that exist (`answering.events` is sorted).
        let existing = found
            .iter()
            .map(|event| event.id)
            .filter(|id| answering.events.binary_search(id).is_ok());
        AttendeeLists::from_rows(existing, &section(), &section())?
    } else {
        AttendeeLists::default()
    };
    Ok(ChangeLocks {
        events: found
            .into_iter()
            .map(|event| {
                let event_links = links.remove(&event.id).unwrap_or_default();
                (event.id, (event, event_links))
            })
            .collect(),
        members,
        versions,
        attendees,
    })
}

/// The events' rows of a read.
fn event_rows(rows: &[QueryResult]) -> Result<Vec<events::Model>, DbErr> {
    rows.iter()
        .map(|row| events::Model::from_query_result(row, ""))
        .collect()
}

/// PostgreSQL: the last statement of a batch of [`lock_for_changes`] before its commit.
/// It confirms that the memberships the batch read (`versions`, [`ChangeLocks::versions`])
/// are current, locking their calendars `FOR SHARE` in the order of their ids (a change of
/// their memberships waits for the commit from here; another batch does not), and sends the
/// frames announced so far ([`WriteTxn::frames_insert`]), in one statement, deferred
/// ([`WriteTxn::defer`]: it goes in the commit's round trip). The commit then fails with
/// the refusal of [`calendar_roles::is_members_changed`] if a membership changed since the
/// read (the batch runs again), or with [`calendar_roles::is_too_slow`]'s if the locks took
/// too long. Nothing on SQLite, whose one writer held the database all along.
pub async fn confirm_members(
    txn: &WriteTxn,
    versions: &HashMap<CalendarId, i64>,
) -> Result<(), DbErr> {
    let backend = txn.get_database_backend();
    if backend != sea_orm::DbBackend::Postgres {
        return Ok(());
    }
    let Some(check) = calendar_roles::roles_unchanged_check(backend, versions) else {
        return Ok(());
    };
    let inserts = std::iter::once(check).chain(txn.frames_insert()).collect();
    match crate::store::statements::one_statement(backend, inserts) {
        Some(statement) => txn.defer_statement(statement).await,
        None => Ok(()),
    }
}
