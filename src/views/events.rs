//! Event and attendee documents.

use chrono::{DateTime, Utc};
use entities::events;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{optional_timestamp, timestamp};
use crate::domain::event_fields::event_fields;
use crate::domain::ids::CalendarId;
use crate::store::attendance::Attendee;

/// Writes [`EventView`] with the content fields of [`event_fields!`], in their order: each
/// field's attributes by its kind (instants written as wire timestamps).
macro_rules! event_view {
    (@fields [$($done:tt)*]) => {
        /// An event with the calendars (of the reader) it is in.
        #[derive(Debug, Clone, Serialize, ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct EventView {
            /// Id.
            pub id: Uuid,
            /// Creation time.
            #[serde(serialize_with = "timestamp")]
            pub created_at: DateTime<Utc>,
            /// Last change.
            #[serde(serialize_with = "timestamp")]
            pub updated_at: DateTime<Utc>,
            /// Creator.
            #[serde(rename = "creatorID")]
            pub creator_id: String,
            $($done)*
            /// Home calendar.
            #[serde(rename = "originCalendarID")]
            pub origin_calendar_id: Option<Uuid>,
            /// Tombstone time (always null in answers and reads: they carry live events).
            #[serde(serialize_with = "optional_timestamp")]
            pub deleted_at: Option<DateTime<Utc>>,
            /// Increases with every change.
            pub revision: i64,
            /// The reader's calendars this event is in.
            pub calendars: Vec<Uuid>,
            /// In a write's answer: how the write reaches the providers of the mirrors it
            /// touched (absent when it touched none; clients that do not know it ignore it).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub provider_delivery: Option<Vec<ProviderDelivery>>,
        }
    };
    (@fields [$($done:tt)*] $name:ident: [$($ty:tt)*] time $wire:literal $doc:literal, $($rest:tt)*) => {
        event_view!(@fields [$($done)*
            #[doc = $doc]
            #[serde(serialize_with = "timestamp")]
            pub $name: $($ty)*,
        ] $($rest)*);
    };
    (@fields [$($done:tt)*] $name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal, $($rest:tt)*) => {
        event_view!(@fields [$($done)* #[doc = $doc] pub $name: $($ty)*,] $($rest)*);
    };
    (@from $event:ident, $calendars:ident;
        $($name:ident: [$($ty:tt)*] $kind:ident $wire:literal $doc:literal,)*) => {
        EventView {
            id: $event.id.uuid(),
            created_at: $event.created_at,
            updated_at: $event.updated_at,
            creator_id: $event.creator_id.into_string(),
            $($name: $event.$name,)*
            origin_calendar_id: $event.origin_calendar_id.map(CalendarId::uuid),
            deleted_at: $event.deleted_at,
            revision: $event.revision,
            calendars: $calendars.into_iter().map(CalendarId::uuid).collect(),
            provider_delivery: None,
        }
    };
    ($($list:tt)*) => {
        event_view!(@fields [] $($list)*);
    };
}

event_fields!(event_view {});

/// How a write reaches one mirror's provider: `pending` when it answers (committed to the
/// outbox, delivered by the account's actor; a later failure or conflict is announced with
/// a `provider_delivery` frame).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ToSchema)]
pub struct ProviderDelivery {
    /// The mirror.
    #[serde(rename = "calendarID")]
    pub calendar_id: Uuid,
    /// `caldav`, `google` or `microsoft`.
    #[schema(value_type = ProviderName)]
    pub provider: String,
    /// `put` or `delete`.
    #[schema(value_type = DeliveryAction)]
    pub action: &'static str,
    /// `pending`.
    #[schema(value_type = DeliveryState)]
    pub state: &'static str,
}

/// The provider of a mirror, as documents name it (the document's type of
/// [`ProviderDelivery::provider`] and of a calendar's `provider`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderName {
    /// A CalDAV server.
    Caldav,
    /// Google Calendar.
    Google,
    /// Microsoft Outlook.
    Microsoft,
}

/// What a write does at a mirror's provider (the document's type of
/// [`ProviderDelivery::action`]).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryAction {
    /// The event is written there.
    Put,
    /// The event is deleted there.
    Delete,
}

/// Where a provider write stands when the write answers (the document's type of
/// [`ProviderDelivery::state`]).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Committed to the outbox; the account's actor delivers it.
    Pending,
}

impl EventView {
    /// The document of `event` for a reader who sees it in `calendars`.
    pub fn new(event: &events::Model, calendars: Vec<CalendarId>) -> Self {
        Self::from_model(event.clone(), calendars)
    }

    /// The document of `event` (taken, not copied) for a reader who sees it in `calendars`.
    pub fn from_model(event: events::Model, calendars: Vec<CalendarId>) -> Self {
        event_fields!(event_view { @from event, calendars; })
    }
}

/// An attendee: `{id, name, image, status}` (never an email).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, ToSchema)]
pub struct AttendeeView {
    /// User id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Avatar.
    pub image: Option<String>,
    /// `going`, `maybe` or `declined` (an answer of `none` removes the attendee).
    #[schema(value_type = AttendeeStatus)]
    pub status: String,
}

/// A stored attendance answer (the document's type of [`AttendeeView::status`]).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttendeeStatus {
    /// Going.
    Going,
    /// Maybe.
    Maybe,
    /// Declined.
    Declined,
}

impl From<Attendee> for AttendeeView {
    fn from(attendee: Attendee) -> Self {
        Self {
            id: attendee.id.into_string(),
            name: attendee.name,
            image: attendee.image,
            status: attendee.status,
        }
    }
}

/// The answer to a delete: `{id, calendars, removed}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeletedEventView {
    /// The event.
    pub id: Uuid,
    /// Calendars it is still in (empty when removed).
    pub calendars: Vec<Uuid>,
    /// `true` when no calendar keeps it (it was deleted).
    pub removed: bool,
    /// How the deletion reaches the mirrors' providers (see [`EventView`]).
    #[serde(rename = "providerDelivery", skip_serializing_if = "Option::is_none")]
    pub provider_delivery: Option<Vec<ProviderDelivery>>,
}
