//! [`TxnOutgoing`]: what a write transaction announces once it commits — its frames, and
//! steps to run after the commit. Kept with the transaction ([`super::WriteTxn::outgoing`]),
//! so nothing of it happens unless the transaction commits.

use std::sync::Arc;

use crate::domain::frames::{Frame, FrameBatch};
use crate::domain::ids::UserId;

/// What a write transaction announces once it commits ([`super::WriteTxn::outgoing`]): its
/// frames, and other steps. Nothing of it happens if the transaction does not commit.
///
/// On PostgreSQL the frames go into the transaction itself, as a notice the database sends
/// every instance at the commit, in commit order ([`super::instance_bus`]); on SQLite they
/// are delivered on this instance after the commit.
#[derive(Clone, Default)]
pub struct TxnOutgoing(Arc<parking_lot::Mutex<Outgoing>>);

#[derive(Default)]
struct Outgoing {
    frames: FrameBatch,
    /// Delivers the frames on this instance (when no database notice carries them).
    deliver: Option<Box<dyn FnOnce(FrameBatch) + Send>>,
    /// Steps run after the commit, in order.
    after: Vec<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for TxnOutgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnOutgoing").finish_non_exhaustive()
    }
}

impl TxnOutgoing {
    /// Adds `frame` for each user in `users` (once per user), after the frames added before.
    pub fn add_frame<'a>(&self, users: impl IntoIterator<Item = &'a UserId>, frame: &Frame) {
        self.0.lock().frames.add(users, frame);
    }

    /// Adds the frames of `batch`, after the frames added before.
    pub fn add_frames(&self, batch: FrameBatch) {
        self.0.lock().frames.append(batch);
    }

    /// Where the frames go after the commit when the database does not carry them (the
    /// first place given is kept).
    pub fn deliver_with(&self, deliver: impl FnOnce(FrameBatch) + Send + 'static) {
        let mut outgoing = self.0.lock();
        if outgoing.deliver.is_none() {
            outgoing.deliver = Some(Box::new(deliver));
        }
    }

    /// Runs `step` after the commit.
    pub fn after_commit(&self, step: impl FnOnce() + Send + 'static) {
        self.0.lock().after.push(Box::new(step));
    }

    pub(super) fn take_frames(&self) -> FrameBatch {
        std::mem::take(&mut self.0.lock().frames)
    }

    /// After the commit: the frames still held are delivered here, then the steps run.
    pub(super) fn run(self) {
        let outgoing = std::mem::take(&mut *self.0.lock());
        if let Some(deliver) = outgoing.deliver
            && !outgoing.frames.is_empty()
        {
            deliver(outgoing.frames);
        }
        for step in outgoing.after {
            step();
        }
    }
}
