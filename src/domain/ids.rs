//! Identifiers: the typed ids of the `ids` crate ([`UserId`], [`CalendarId`], [`EventId`],
//! …), which the entities' columns and the store's signatures use, so that passing one for
//! another does not compile; and the checks at the boundary that make them from text
//! (canonical hyphenated UUIDs for calendars, events, invites and Pages, the text ids of
//! users): anything else is a 400 before authorization or any database access.

use rand::distr::Alphanumeric;
use rand::{Rng, RngCore};
use uuid::Uuid;

use crate::error::AppError;

pub use ids::{
    AccountId, CaldavAccountId, CalendarId, ConnectionId, EventId, InviteId, PageId, UserId,
};

/// `len` random characters from `[A-Za-z0-9]`.
pub fn random_alphanumeric(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// A capability token of 128 random bits, as 32 lowercase hex digits (the address of a
/// published event page or of a scheduling poll: knowing it is the permission).
pub fn random_token() -> String {
    let mut random = [0u8; 16];
    rand::rng().fill_bytes(&mut random);
    hex::encode(random)
}

/// Whether `text` has the shape of a [`random_token`] (checked before any database access).
pub fn is_random_token(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A new user, session, account or verification id (better-auth's 32-character format).
pub fn new_id() -> String {
    random_alphanumeric(32)
}

/// Parses a canonical hyphenated UUID (`8-4-4-4-12` hex digits, any case).
pub fn canonical_uuid(text: &str) -> Option<Uuid> {
    let bytes = text.as_bytes();
    let canonical = bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    if canonical {
        Uuid::parse_str(text).ok()
    } else {
        None
    }
}

/// `field` as a canonical UUID, else 400 "`field` must be a valid UUID.".
pub fn require_uuid(field: &str, text: &str) -> Result<Uuid, AppError> {
    canonical_uuid(text)
        .ok_or_else(|| AppError::bad_request(format!("{field} must be a valid UUID.")))
}

/// Whether `text` looks like a user id (better-auth's alphanumerics, `fed_<uuid>` shadows).
pub fn is_user_id(text: &str) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_uuids() {
        assert!(canonical_uuid("123e4567-e89b-12d3-a456-426614174000").is_some());
        assert!(canonical_uuid("123E4567-E89B-12D3-A456-426614174000").is_some());
        for bad in [
            "123e4567e89b12d3a456426614174000",
            "{123e4567-e89b-12d3-a456-426614174000}",
            "urn:uuid:123e4567-e89b-12d3-a456-426614174000",
            "123e4567-e89b-12d3-a456-42661417400",
            "not-a-uuid",
            "",
        ] {
            assert!(canonical_uuid(bad).is_none(), "{bad}");
        }
        assert_eq!(
            require_uuid("calendarID", "x")
                .expect_err("bad")
                .to_string(),
            "calendarID must be a valid UUID."
        );
    }
}
