//! Changes to a user's credentials — their sessions, their member tokens, the user itself —
//! once committed: [`super::Database::credentials_changed`] forgets the cached sessions and
//! tells whoever listens ([`CredentialChanges::subscribe`]: the realtime streams, which end
//! when the credential they were opened with is gone). A counter of changes lets a check
//! that began before one see that it must look again.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::domain::ids::UserId;
use tokio::sync::broadcast;

/// Changes queued for a listener that has not read them yet; a listener that falls further
/// behind is told it lagged and must check everything.
const QUEUED: usize = 1_024;

/// A committed change.
#[derive(Debug, Clone)]
pub enum CredentialChange {
    /// To this user's credentials.
    User(UserId),
    /// To anyone's, as far as this server knows (it may have missed changes made by other
    /// instances): every credential must be checked.
    Everyone,
}

/// The changes of one server.
#[derive(Debug)]
pub struct CredentialChanges {
    changed: broadcast::Sender<CredentialChange>,
    count: AtomicU64,
}

impl Default for CredentialChanges {
    fn default() -> Self {
        Self {
            changed: broadcast::channel(QUEUED).0,
            count: AtomicU64::new(0),
        }
    }
}

impl CredentialChanges {
    /// Announces a committed change to `user_id`'s credentials.
    pub fn publish(&self, user_id: &UserId) {
        self.count.fetch_add(1, Ordering::SeqCst);
        let _ = self.changed.send(CredentialChange::User(user_id.clone()));
    }

    /// Announces that any credential may have changed.
    pub fn publish_everyone(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        let _ = self.changed.send(CredentialChange::Everyone);
    }

    /// The changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<CredentialChange> {
        self.changed.subscribe()
    }

    /// How many changes were announced so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }
}
