//! An event's content fields, listed once: what a client writes in an Event body and every
//! write path stores (title, times, flags, texts). [`event_fields!`] hands the list to a
//! macro of the caller, which writes its code from it: the validated input
//! ([`super::events::EventInput`]), the stored row's update and insert, the packed read's
//! columns and row, the event document and its packed writer, a fork's copy. A field added
//! here (and to the entity, its migration, the Event body and, for a text, its limit in
//! [`super::event_content`]) reaches all of them; one forgotten in any of those fails to
//! compile.
//!
//! Each entry is `name: [Rust type] kind "wireName" "doc",`, in the order documents list
//! the fields. `kind` says how the field is stored and written: `text` (a string),
//! `optional` (a string or null), `time` (an instant, written `2026-07-23T12:00:00.000Z`),
//! `flag` (a boolean).

/// Calls `$callback! { $prefix… <the list> }`: the caller's macro gets its own tokens first
/// (names of its variables, say), then every content field as described in the module.
macro_rules! event_fields {
    ($callback:ident { $($prefix:tt)* }) => {
        $callback! { $($prefix)*
            title: [String] text "title" "Title.",
            color: [String] text "color" "Colour.",
            start: [chrono::DateTime<chrono::Utc>] time "start" "Start.",
            end: [chrono::DateTime<chrono::Utc>] time "end" "End.",
            is_all_day: [bool] flag "isAllDay" "All-day.",
            description: [Option<String>] optional "description" "Description.",
            location: [Option<String>] optional "location" "Location.",
            is_canceled: [bool] flag "isCanceled" "Cancelled.",
            has_attendees: [bool] flag "hasAttendees" "Shows attendance.",
            organizer: [String] text "organizer" "Organizer.",
            recurrence: [Option<String>] optional "recurrence" "Recurrence.",
            url: [Option<String>] optional "url" "URL.",
        }
    };
}

pub(crate) use event_fields;
