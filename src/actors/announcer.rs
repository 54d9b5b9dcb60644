//! Where this instance's committed changes go, and what it does with what the other
//! instances sharing its database tell it.
//!
//! [`Announcer`] sends frames to the streams — on PostgreSQL through the database, so the
//! streams of every instance get them, in commit order; on SQLite (one process) straight
//! to this instance's sessions — wakes the mailer for change-mail batches and the sync
//! actors for outbox rows, telling the other instances too. [`InstanceListener`] takes what
//! the others tell: frames for this instance's streams, batches and outbox rows to wake
//! for, and "notices may have been missed", on which every stream is closed so its client
//! reconnects and re-reads.

use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};

use super::{Actors, providers};
use crate::commands::Announce;
use crate::domain::frames::{Frame, FrameBatch};
use crate::domain::ids::{AccountId, UserId};
use crate::domain::providers::AccountKey;
use crate::store::{Database, InstanceEvents};

/// Where committed changes are announced ([`Announce`]).
#[derive(Debug)]
pub struct Announcer {
    actors: Arc<Actors>,
    db: Database,
}

impl Announcer {
    /// Announces to `actors`, and through `db` to the other instances sharing it.
    pub fn new(actors: Arc<Actors>, db: Database) -> Self {
        Self { actors, db }
    }
}

impl Announce for Announcer {
    fn broadcast_to(&self, users: &mut dyn Iterator<Item = &UserId>, frame: &Frame) {
        if self.db.crosses_instances() {
            let mut batch = FrameBatch::default();
            batch.add(users, frame);
            self.deliver(batch);
        } else {
            self.actors.sessions.broadcast(users, frame);
        }
    }

    fn deliver(&self, batch: FrameBatch) {
        if let Err(batch) = self.db.publish_frames(batch) {
            self.actors.sessions.deliver(batch);
        }
    }

    fn mail_batch_due(&self, due_at: DateTime<Utc>) {
        self.actors.notify_batch(due_at);
        self.db.tell_mail_batch_due(due_at);
    }

    fn is_connected(&self, user: &UserId) -> bool {
        // A user connected to another instance is not known here.
        self.db.crosses_instances() || self.actors.sessions.is_connected(user)
    }

    fn provider_writes_queued(&self, accounts: &[(String, AccountId)]) {
        wake_sync_actors(&self.actors, accounts);
        self.db.tell_provider_writes_queued(accounts);
    }
}

/// Has the sync actors of `accounts` (`(provider, account)`) deliver their outbox rows.
fn wake_sync_actors(actors: &Actors, accounts: &[(String, AccountId)]) {
    for (provider, account) in accounts {
        if let Some(account) = AccountKey::from_row(provider, account) {
            actors
                .providers
                .tell(providers::ProvidersMsg::Deliver { account });
        }
    }
}

/// What this instance does with what the other instances tell it ([`InstanceEvents`]).
#[derive(Debug)]
pub struct InstanceListener {
    actors: Arc<Actors>,
}

impl InstanceListener {
    /// Acts through `actors`.
    pub fn new(actors: Arc<Actors>) -> Self {
        Self { actors }
    }
}

impl InstanceEvents for InstanceListener {
    fn frames(&self, frames: Vec<(UserId, Bytes)>) {
        self.actors.sessions.deliver_blocks(frames);
    }

    fn notices_lost(&self) {
        self.actors.sessions.close_all_streams();
    }

    fn mail_batch_due(&self, at: DateTime<Utc>) {
        self.actors.notify_batch(at);
    }

    fn provider_writes_queued(&self, accounts: &[(String, AccountId)]) {
        wake_sync_actors(&self.actors, accounts);
    }
}
