//! New events: their rows at revision 1, with their links and their creators' attendance,
//! inserted together, one round trip per [`INSERT_CHUNK`] events.

use chrono::{DateTime, Utc};
use entities::{calendar_events, events};
use sea_orm::sea_query::InsertStatement;
use sea_orm::{ActiveModelTrait, ActiveValue::Set, DbErr, EntityTrait, QueryTrait, SqlErr};

use super::calendar_roles;
use crate::domain::event_fields::event_fields;
use crate::domain::events::EventInput;
use crate::domain::ids::{CalendarId, UserId};
use crate::store::statements::one_statement;
use crate::store::{CommitWrite, WriteTxn, attendance};

/// Why an event could not be inserted.
#[derive(Debug, thiserror::Error)]
pub enum InsertEventError {
    /// An event with this id exists (ids are chosen by clients).
    #[error("an event with this id exists")]
    Duplicate,
    /// The memberships the inserts were checked against changed ([`calendar_roles::roles_unchanged_check`]).
    #[error("the memberships changed")]
    MembersChanged,
    /// PostgreSQL's check of the memberships waited for its locks past the write's time
    /// bound ([`calendar_roles::is_too_slow`]; nothing was inserted).
    #[error("the write waited too long for its locks")]
    TooSlow,
    /// The database failed.
    #[error(transparent)]
    Database(#[from] DbErr),
}

/// An event to insert: the client's input, its creator and its home calendar (it is linked
/// to `input.calendars`).
#[derive(Debug, Clone, Copy)]
pub struct NewEvent<'a> {
    /// What the client sent.
    pub input: &'a EventInput,
    /// Creator.
    pub creator: &'a UserId,
    /// Home calendar.
    pub home: CalendarId,
}

/// Most events per round trip (their inserts stay well under SQLite's and PostgreSQL's
/// parameter limits).
const INSERT_CHUNK: usize = 200;

/// Inserts new events at revision 1 with their links and their creators' attendance (going),
/// as deferred writes of `txn` ([`WriteTxn::defer_inserts`]: they go with the transaction's
/// next statement or its commit; on PostgreSQL as one statement per [`INSERT_CHUNK`]
/// events). An id that exists fails the statement the inserts go with (on SQLite the
/// writer's lock keeps the ids the caller read in the transaction; on PostgreSQL another
/// calendar's batch may take one meanwhile).
pub async fn insert_many(
    txn: &WriteTxn,
    new: &[NewEvent<'_>],
    now: DateTime<Utc>,
) -> Result<Vec<events::Model>, InsertEventError> {
    let models = new_models(new, now);
    for text in chunk_texts(&models, new, now) {
        txn.defer_inserts(text).await.map_err(insert_error)?;
    }
    Ok(models)
}

/// [`insert_many`] as the last writes of `write`, then its commit ([`CommitWrite::run`]: on
/// SQLite the commit goes in the last text, one hand-off to SQLite's thread fewer; on
/// PostgreSQL, with nothing begun, up to [`INSERT_CHUNK`] events are one statement that
/// commits on its own). `check` ([`calendar_roles::roles_unchanged_check`]), if any, goes in front of the
/// first insert, in the same text or statement; if it fails, nothing is inserted and the
/// error is [`InsertEventError::MembersChanged`] (or, on PostgreSQL, when its locks took
/// too long, [`InsertEventError::TooSlow`]). `also` (the outbox rows of the new events, if
/// any) goes after the last insert, in the same commit.
pub async fn insert_many_and_commit(
    write: impl Into<CommitWrite>,
    new: &[NewEvent<'_>],
    now: DateTime<Utc>,
    check: Option<InsertStatement>,
    also: Option<InsertStatement>,
) -> Result<Vec<events::Model>, InsertEventError> {
    let models = new_models(new, now);
    insert_models_and_commit(write, models, new, now, check, also.into_iter().collect()).await
}

/// [`insert_many_and_commit`] of `models`, the rows of `new` ([`new_models`]) built by the
/// caller beforehand, with every insert of `also` after the last.
pub async fn insert_models_and_commit(
    write: impl Into<CommitWrite>,
    models: Vec<events::Model>,
    new: &[NewEvent<'_>],
    now: DateTime<Utc>,
    check: Option<InsertStatement>,
    also: Vec<InsertStatement>,
) -> Result<Vec<events::Model>, InsertEventError> {
    let write = write.into();
    let backend = write.backend();
    let mut texts = chunk_texts(&models, new, now);
    if let Some(check) = check {
        match texts.first_mut() {
            Some(first) => first.insert(0, check),
            None => texts.push(vec![check]),
        }
    }
    for also in also {
        match texts.last_mut() {
            Some(last) => last.push(also),
            None => texts.push(vec![also]),
        }
    }
    let statements = texts
        .into_iter()
        .filter_map(|text| one_statement(backend, text))
        .collect();
    write.run(statements).await.map_err(insert_error)?;
    Ok(models)
}

/// The inserts of `models` (the rows of `new`), one text per [`INSERT_CHUNK`] events.
fn chunk_texts(
    models: &[events::Model],
    new: &[NewEvent<'_>],
    now: DateTime<Utc>,
) -> Vec<Vec<InsertStatement>> {
    models
        .chunks(INSERT_CHUNK)
        .zip(new.chunks(INSERT_CHUNK))
        .map(|(chunk, new)| chunk_inserts(chunk, new, now))
        .collect()
}

/// The rows of new events, at revision 1.
pub fn new_models(new: &[NewEvent<'_>], now: DateTime<Utc>) -> Vec<events::Model> {
    macro_rules! new_model {
        ($n:ident; $($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
            events::Model {
                id: $n.input.id,
                creator_id: $n.creator.clone(),
                $($name: $n.input.$name.clone(),)*
                origin_calendar_id: Some($n.home),
                revision: 1,
                created_at: now,
                updated_at: now,
                deleted_at: None,
            }
        };
    }
    new.iter()
        .map(|n| event_fields!(new_model { n; }))
        .collect()
}

/// The inserts of one chunk of new events: the events, their links and their creators'
/// attendance.
fn chunk_inserts(
    chunk: &[events::Model],
    new: &[NewEvent<'_>],
    now: DateTime<Utc>,
) -> Vec<InsertStatement> {
    let rows = chunk
        .iter()
        .map(|m| events::ActiveModel::from(m.clone()).reset_all());
    let links: Vec<calendar_events::ActiveModel> = new
        .iter()
        .flat_map(|n| {
            n.input
                .calendars
                .iter()
                .map(|calendar| calendar_events::ActiveModel {
                    event_id: Set(n.input.id),
                    calendar_id: Set(*calendar),
                    created_at: Set(now),
                    linked_by: Set((*calendar != n.home).then(|| n.creator.clone())),
                })
        })
        .collect();
    let mut inserts = vec![
        events::Entity::insert_many(rows).into_query(),
        attendance::creators_going(chunk, now),
    ];
    // Events are always linked somewhere, but an insert of no rows is not valid SQL.
    if !links.is_empty() {
        inserts.insert(1, calendar_events::Entity::insert_many(links).into_query());
    }
    inserts
}

/// Links and attendance are unique per event: a unique violation is an existing event id.
fn insert_error(err: DbErr) -> InsertEventError {
    if calendar_roles::is_members_changed(&err) {
        return InsertEventError::MembersChanged;
    }
    if calendar_roles::is_too_slow(&err) {
        return InsertEventError::TooSlow;
    }
    match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => InsertEventError::Duplicate,
        _ => InsertEventError::Database(err),
    }
}
