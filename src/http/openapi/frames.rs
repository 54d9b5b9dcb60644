//! The frames of `GET /api/stream` as named schemas: one per frame `type`, each
//! `{type, payload}` exactly as the server writes it after `data: ` (see
//! [`crate::domain::frames`]), and [`StreamFrame`], any one of them told apart by `type`.
//!
//! The payload types here describe what the senders build (`src/commands`,
//! `src/federation`); `tests/api/stream_frames_schema.rs` checks frames the server sends
//! against these schemas, so the two cannot drift apart unnoticed. Event and calendar
//! payloads are the event and calendar documents of the REST answers (`EventView`,
//! `CalendarView`).

use std::borrow::Cow;

use utoipa::openapi::schema::{Discriminator, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

use crate::views::calendars::CalendarView;
use crate::views::events::EventView;
use crate::views::pages::PageDocument;

/// `event_removed`: the reader can no longer see the event (deleted, or moved out of their
/// calendars).
#[derive(ToSchema)]
pub struct EventRemovedPayload {
    /// The event.
    pub id: Uuid,
    /// Always empty.
    #[schema(max_items = 0)]
    pub calendars: Vec<Uuid>,
    /// Always `true`.
    pub removed: bool,
}

/// `calendar_removed`: the reader lost the calendar (left, removed, or it was deleted). A
/// deleted calendar's frame carries the whole calendar document (without members); a lost
/// membership's carries the id alone.
#[derive(ToSchema)]
pub struct CalendarRemovedPayload {
    /// The calendar.
    pub id: Uuid,
}

/// An attendee as `attendance_changed` lists them (never an email).
#[derive(ToSchema)]
pub struct FrameAttendee {
    /// User id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Avatar URL.
    #[schema(required = true)]
    pub image: Option<String>,
    /// The answer.
    pub status: AttendanceStatus,
}

/// An attendee's answer.
#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AttendanceStatus {
    /// Going.
    Going,
    /// Maybe.
    Maybe,
    /// Not going.
    Declined,
}

/// `attendance_changed`: an event's attendees after someone answered.
#[derive(ToSchema)]
pub struct AttendanceChangedPayload {
    /// The event.
    #[serde(rename = "eventID")]
    pub event_id: Uuid,
    /// Everyone who answered, in the order the event's attendee list has them.
    pub attendees: Vec<FrameAttendee>,
}

/// `external_sync`: a provider pull changed these calendars of the reader; re-read them.
#[derive(ToSchema)]
pub struct ExternalSyncPayload {
    /// The calendars that changed.
    pub calendars: Vec<Uuid>,
}

/// `settings_updated`: the reader's settings changed (on any device).
#[derive(ToSchema)]
pub struct SettingsUpdatedPayload {
    /// The settings' revision now.
    pub revision: i64,
}

/// `page_created` / `page_updated`: one of the reader's Pages, as `GET /api/v1/pages/{id}`
/// answers it.
#[derive(ToSchema)]
pub struct PagePayload {
    /// The Page.
    pub page: PageDocument,
}

/// `page_removed`: one of the reader's Pages was deleted.
#[derive(ToSchema)]
pub struct PageRemovedPayload {
    /// The Page.
    pub id: Uuid,
}

/// `federated_sync`: a connected server's stream sent a frame; re-read what comes from it.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedSyncPayload {
    /// The connected server (its base URL).
    pub server: String,
    /// The `type` of the frame it sent (`unknown` when unreadable).
    pub upstream_type: String,
}

/// How a write reached a provider, when it did not simply succeed.
#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = FrameDeliveryState)]
pub enum DeliveryState {
    /// The provider's copy had changed; the provider's version stands.
    Conflict,
    /// The provider refused the write, or it kept failing.
    Failed,
}

/// `provider_delivery`: a write to a mirrored calendar did not reach its provider.
#[derive(ToSchema)]
pub struct ProviderDeliveryPayload {
    /// The mirrored calendar.
    #[serde(rename = "calendarID")]
    pub calendar_id: Uuid,
    /// The event written.
    #[serde(rename = "eventID")]
    pub event_id: Uuid,
    /// What happened.
    pub state: DeliveryState,
    /// Why, for people (`null` for a conflict).
    #[schema(required = true)]
    pub error: Option<String>,
}

/// A reference to a named schema.
fn named<T: ToSchema>() -> RefOr<Schema> {
    Ref::from_schema_name(T::name()).into()
}

/// The empty object of `reminders_updated`.
fn empty_object() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some("Empty: re-read the reminders."))
        .into()
}

/// `{type: <kind>, payload}`, described by the type's doc lines.
fn frame_schema(kind: &str, doc: &[&str], payload: RefOr<Schema>) -> RefOr<Schema> {
    let description: Vec<&str> = doc.iter().map(|line| line.trim()).collect();
    ObjectBuilder::new()
        .description(Some(description.join(" ")))
        .property(
            "type",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some([kind])),
        )
        .required("type")
        .property("payload", payload)
        .required("payload")
        .into()
}

/// Adds `T` and the schemas it refers to.
fn register<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

macro_rules! frames {
    ($(
        $(#[doc = $doc:literal])+
        $name:ident = $kind:literal, payload = $payload:expr, refers = [$($dep:ty),*];
    )*) => {
        $(
            $(#[doc = $doc])+
            #[derive(Debug, Clone, Copy)]
            pub struct $name;

            impl PartialSchema for $name {
                fn schema() -> RefOr<Schema> {
                    frame_schema($kind, &[$($doc),+], $payload)
                }
            }

            impl ToSchema for $name {
                fn name() -> Cow<'static, str> {
                    Cow::Borrowed(stringify!($name))
                }

                // Frames whose payload is described inline refer to nothing.
                #[allow(unused_variables)]
                fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                    $(register::<$dep>(schemas);)*
                }
            }
        )*

        /// Every frame `type` the stream sends, with the name of its schema.
        pub const FRAME_TYPES: &[(&str, &str)] = &[$(($kind, stringify!($name))),*];

        /// Any frame of the stream: one of the frame schemas, told apart by `type`.
        #[derive(Debug, Clone, Copy)]
        pub struct StreamFrame;

        impl PartialSchema for StreamFrame {
            fn schema() -> RefOr<Schema> {
                let mut discriminator = Discriminator::new("type");
                $(
                    discriminator.mapping.insert(
                        $kind.to_owned(),
                        format!("#/components/schemas/{}", stringify!($name)),
                    );
                )*
                OneOfBuilder::new()
                    .description(Some(
                        "One `data:` line of `GET /api/stream`: `{type, payload}`. The stream \
                         also sends `retry: 3000` first and `: ping` comments when idle.",
                    ))
                    $(.item(named::<$name>()))*
                    .discriminator(Some(discriminator))
                    .into()
            }
        }

        impl ToSchema for StreamFrame {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed("StreamFrame")
            }

            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                $(register::<$name>(schemas);)*
            }
        }
    };
}

frames! {
    /// `event_created`: an event the reader can see was created (or became visible), as the
    /// reader sees it.
    EventCreatedFrame = "event_created", payload = named::<EventView>(), refers = [EventView];
    /// `event_updated`: an event the reader can see changed (or its calendars did), as the
    /// reader sees it.
    EventUpdatedFrame = "event_updated", payload = named::<EventView>(), refers = [EventView];
    /// `event_removed`: the reader can no longer see an event.
    EventRemovedFrame = "event_removed", payload = named::<EventRemovedPayload>(),
        refers = [EventRemovedPayload];
    /// `calendar_updated`: a calendar of the reader changed (its row or members), as the
    /// reader sees it.
    CalendarUpdatedFrame = "calendar_updated", payload = named::<CalendarView>(), refers = [CalendarView];
    /// `calendar_removed`: the reader lost a calendar.
    CalendarRemovedFrame = "calendar_removed", payload = named::<CalendarRemovedPayload>(),
        refers = [CalendarRemovedPayload];
    /// `attendance_changed`: someone answered an event the reader can see.
    AttendanceChangedFrame = "attendance_changed",
        payload = named::<AttendanceChangedPayload>(), refers = [AttendanceChangedPayload];
    /// `external_sync`: a provider pull changed calendars of the reader.
    ExternalSyncFrame = "external_sync", payload = named::<ExternalSyncPayload>(),
        refers = [ExternalSyncPayload];
    /// `settings_updated`: the reader's settings changed.
    SettingsUpdatedFrame = "settings_updated", payload = named::<SettingsUpdatedPayload>(),
        refers = [SettingsUpdatedPayload];
    /// `reminders_updated`: the reader's reminders changed; the payload is empty.
    RemindersUpdatedFrame = "reminders_updated", payload = empty_object(), refers = [];
    /// `page_created`: the reader has a new Page.
    PageCreatedFrame = "page_created", payload = named::<PagePayload>(), refers = [PagePayload];
    /// `page_updated`: one of the reader's Pages changed (name, configuration or place).
    PageUpdatedFrame = "page_updated", payload = named::<PagePayload>(), refers = [PagePayload];
    /// `page_removed`: one of the reader's Pages was deleted.
    PageRemovedFrame = "page_removed", payload = named::<PageRemovedPayload>(),
        refers = [PageRemovedPayload];
    /// `federated_sync`: a connected server announced a change.
    FederatedSyncFrame = "federated_sync", payload = named::<FederatedSyncPayload>(),
        refers = [FederatedSyncPayload];
    /// `provider_delivery`: a write to a mirrored calendar did not reach its provider.
    ProviderDeliveryFrame = "provider_delivery", payload = named::<ProviderDeliveryPayload>(),
        refers = [ProviderDeliveryPayload];
}
