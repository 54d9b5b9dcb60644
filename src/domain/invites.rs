//! When an invite can still be used: not revoked, not past `expiresAt`, and `uses` below
//! `maxUses`. Checked on every read and every join.

use chrono::{DateTime, Utc};

use crate::error::AppError;

/// What decides whether an invite can still be used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InviteUse {
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
    /// When it expires, if it does.
    pub expires_at: Option<DateTime<Utc>>,
    /// How many joins it allows, if it is limited.
    pub max_uses: Option<i32>,
    /// How many joins it had.
    pub uses: i32,
}

impl InviteUse {
    /// Whether the invite may be previewed or used at `now`.
    pub fn is_usable(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none()
            && self.expires_at.is_none_or(|expires| expires > now)
            && self.max_uses.is_none_or(|max| self.uses < max)
    }
}

/// 404 for an invite that does not exist, is not the calendar's, or is no longer usable.
pub fn invite_not_found() -> AppError {
    AppError::not_found("Invite not found...")
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn expiry_exhaustion_and_revocation() {
        let now = Utc::now();
        assert!(InviteUse::default().is_usable(now));
        let expired = InviteUse {
            expires_at: Some(now - Duration::seconds(1)),
            ..InviteUse::default()
        };
        assert!(!expired.is_usable(now));
        let exhausted = InviteUse {
            max_uses: Some(2),
            uses: 2,
            ..InviteUse::default()
        };
        assert!(!exhausted.is_usable(now));
        let one_left = InviteUse {
            max_uses: Some(2),
            uses: 1,
            ..InviteUse::default()
        };
        assert!(one_left.is_usable(now));
        let revoked = InviteUse {
            revoked_at: Some(now),
            ..InviteUse::default()
        };
        assert!(!revoked.is_usable(now));
    }
}
