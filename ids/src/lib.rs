//! Typed ids: one newtype per kind of thing an id names, so that passing a calendar's id
//! where an event's is wanted does not compile.
//!
//! The inner value is private. An id comes from the database (the entities' columns are
//! these types, through sea-orm's `DeriveValueType`), from a new id made here, or from text
//! checked once at the edge of the server (`bowline::domain::ids` parses request paths and
//! bodies into them). Code that needs the raw value for a foreign format (a URL, a UID, an
//! iCalendar property) asks for it by name: [`CalendarId::uuid`], [`UserId::as_str`].

use std::fmt;

use uuid::Uuid;

/// Defines a UUID-valued id type.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, sea_orm::DeriveValueType,
        )]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A new random id (a version 4 UUID: it tells nothing of when or where it was
            /// made, and cannot be guessed from another).
            pub fn generate() -> Self {
                Self(Uuid::new_v4())
            }

            /// The id whose value is `uuid` (one read from the database or checked at the
            /// edge).
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            /// The id's value.
            pub const fn uuid(self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self(uuid)
            }
        }

        /// A primary key sea-orm never reads back as a row number: ids are made here.
        impl sea_orm::TryFromU64 for $name {
            fn try_from_u64(_: u64) -> Result<Self, sea_orm::DbErr> {
                Err(sea_orm::DbErr::ConvertFromU64(stringify!($name)))
            }
        }
    };
}

/// Defines a text-valued id type.
macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord,
            serde::Serialize, serde::Deserialize, sea_orm::DeriveValueType,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id whose text is `id` (one read from the database or checked at the edge).
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The id's text, taken.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        /// Lets a query compare a column with a borrowed id.
        impl From<&$name> for sea_orm::Value {
            fn from(id: &$name) -> Self {
                id.0.as_str().into()
            }
        }

        /// A primary key sea-orm never reads back as a row number: ids are made elsewhere.
        impl sea_orm::TryFromU64 for $name {
            fn try_from_u64(_: u64) -> Result<Self, sea_orm::DbErr> {
                Err(sea_orm::DbErr::ConvertFromU64(stringify!($name)))
            }
        }
    };
}

uuid_id!(
    /// A calendar's id.
    CalendarId
);
uuid_id!(
    /// An event's id.
    EventId
);
uuid_id!(
    /// An invite's id.
    InviteId
);
uuid_id!(
    /// A Page's id.
    PageId
);
uuid_id!(
    /// A connection to another Bowline server (federation).
    ConnectionId
);
uuid_id!(
    /// A connected CalDAV account's id (its text is the account's [`AccountId`]).
    CaldavAccountId
);
uuid_id!(
    /// A scheduling poll's id.
    PollId
);
uuid_id!(
    /// A candidate day (slot) of a scheduling poll.
    PollSlotId
);
uuid_id!(
    /// A participant of a scheduling poll (one per poll and address).
    PollParticipantId
);
text_id!(
    /// A user's id: better-auth's alphanumerics, or `fed_<uuid>` for a shadow user of a
    /// federated server.
    UserId
);
text_id!(
    /// A connected calendar account's id, as mirror, lease and outbox rows name it: a CalDAV
    /// account's UUID as text, or the provider's subject id of a Google or Microsoft account.
    AccountId
);

impl From<CaldavAccountId> for AccountId {
    fn from(id: CaldavAccountId) -> Self {
        Self(id.0.to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_their_values() {
        let uuid = Uuid::new_v4();
        let calendar = CalendarId::from_uuid(uuid);
        assert_eq!(
            serde_json::to_string(&calendar).unwrap(),
            format!("\"{uuid}\"")
        );
        assert_eq!(calendar.to_string(), uuid.to_string());
        let user = UserId::new("abc");
        assert_eq!(serde_json::to_string(&user).unwrap(), "\"abc\"");
        assert_eq!(user, "abc");
        assert_eq!(
            AccountId::from(CaldavAccountId::from_uuid(uuid)).as_str(),
            uuid.to_string()
        );
    }
}
