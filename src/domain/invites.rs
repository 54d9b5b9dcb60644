//! When an invite can still be used: not revoked, not past `expiresAt`, and `uses` below
//! `maxUses`. Checked on every read and every join.

use chrono::{DateTime, Utc};
use entities::invites;

use crate::error::AppError;

/// Whether `invite` may be previewed or used at `now`.
pub fn is_usable(invite: &invites::Model, now: DateTime<Utc>) -> bool {
    invite.revoked_at.is_none()
        && invite.expires_at.is_none_or(|expires| expires > now)
        && invite.max_uses.is_none_or(|max| invite.uses < max)
}

/// 404 for an invite that does not exist, is not the calendar's, or is no longer usable.
pub fn invite_not_found() -> AppError {
    AppError::not_found("Invite not found...")
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::Duration;

    use super::*;

    fn invite() -> invites::Model {
        let now = Utc::now();
        invites::Model {
            id: uuid::Uuid::new_v4(),
            calendar_id: uuid::Uuid::new_v4(),
            created_by: None,
            expires_at: None,
            max_uses: None,
            uses: 0,
            revoked_at: None,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn expiry_exhaustion_and_revocation() {
        let now = Utc::now();
        assert!(is_usable(&invite(), now));
        let expired = invites::Model {
            expires_at: Some(now - Duration::seconds(1)),
            ..invite()
        };
        assert!(!is_usable(&expired, now));
        let exhausted = invites::Model {
            max_uses: Some(2),
            uses: 2,
            ..invite()
        };
        assert!(!is_usable(&exhausted, now));
        let one_left = invites::Model {
            max_uses: Some(2),
            uses: 1,
            ..invite()
        };
        assert!(is_usable(&one_left, now));
        let revoked = invites::Model {
            revoked_at: Some(now),
            ..invite()
        };
        assert!(!is_usable(&revoked, now));
    }
}
