//! Published event pages: publishing an event (or changing how), revoking its page, and
//! the organizer's read of it. Publishing and revoking are edits of the event's batch (see
//! [`super::edits`]), so they are serialized with every other change of the event; both
//! need the right to edit the event, since publishing hands it to the open internet.
//! Answers given on a page are attendance edits ([`super::links::set_attendance`]).

use crate::store::{Connection, WriteTxn};

use super::add_event;
use super::edits::EditBatch;
use super::links::{Visible, visible_event};
use crate::commands::Services;
use crate::domain::event_pages::Publication;
use crate::domain::ids::{EventId, UserId};
use crate::error::AppError;
use crate::store::event_shares::{self, PublishedPage};
use crate::store::events as event_store;

/// What a token that opens no live page of a live event answers.
pub fn page_not_found() -> AppError {
    AppError::not_found("This event page is not available...")
}

fn may_not_publish() -> AppError {
    AppError::forbidden("You can't edit this event.")
}

/// Publishes the event (or changes how; a live page keeps its token), as one edit of
/// `batch`. A page collects answers into the event's attendee list, so publishing turns
/// the list on (`event_updated` to its readers) if it was off.
pub(super) async fn publish(
    txn: &WriteTxn,
    services: &Services,
    batch: &mut EditBatch,
    actor: &UserId,
    event_id: EventId,
    publication: Publication,
) -> Result<Option<PublishedPage>, AppError> {
    let (event, links) = batch.visible(event_id, actor)?;
    if !batch.memberships.may_edit(&event, &links, actor) {
        return Err(may_not_publish());
    }
    let page = event_shares::publish(txn, event_id, actor, publication, batch.now).await?;
    if !event.has_attendees {
        let event = event_store::open_attendees(txn, event, batch.now).await?;
        let readers = batch.memberships.readers(&links);
        add_event(
            services,
            &mut batch.frames,
            "event_updated",
            &event,
            &readers,
        );
        batch.wrote(event, links);
    }
    Ok(Some(page))
}

/// Revokes the event's page, if it has one (its token stays dead; publishing again issues
/// a new one), as one edit of `batch`.
pub(super) async fn unpublish(
    txn: &impl Connection,
    batch: &mut EditBatch,
    actor: &UserId,
    event_id: EventId,
) -> Result<Option<PublishedPage>, AppError> {
    let (event, links) = batch.visible(event_id, actor)?;
    if !batch.memberships.may_edit(&event, &links, actor) {
        return Err(may_not_publish());
    }
    event_shares::revoke(txn, event_id, batch.now).await?;
    Ok(None)
}

/// The event's live page, for someone who may edit the event (a read; no actor needed).
pub async fn published(
    services: &Services,
    reader: &UserId,
    event_id: EventId,
) -> Result<Option<PublishedPage>, AppError> {
    let db = &services.db;
    let Visible {
        event,
        links,
        memberships,
    } = visible_event(db, event_id, reader).await?;
    if !memberships.may_edit(&event, &links, reader) {
        return Err(may_not_publish());
    }
    Ok(event_shares::live_of(db, event_id).await?)
}
