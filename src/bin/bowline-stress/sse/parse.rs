//! The wire side of a stream: Server-Sent-Events text cut into frames' JSON texts
//! ([`Parser`]), and each text reduced to the change it reports ([`FrameKey`]): on
//! Bowline's wire an event frame is known by its event's `revision`, on the original's
//! (which has none) by its event's `title`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use crate::wire::{Mark, Wire};

/// The change a frame reports: enough to tell two changes apart, and a repeat of one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKey {
    /// `event_created` of an event in the state its mark names.
    Created(Uuid, Mark),
    /// `event_updated` of an event in the state its mark names.
    Updated(Uuid, Mark),
    /// `event_removed` of an event.
    Removed(Uuid),
    /// `attendance_changed` of an event with this attendee list (JSON text).
    Attendance(Uuid, String),
    /// Any other frame (the run makes no change that sends one).
    Other(String),
}

/// The parts of a frame the key needs; everything else is skipped without being built.
#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    payload: RawPayload<'a>,
}

#[derive(Default, Deserialize)]
struct RawPayload<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, rename = "eventID", borrow)]
    event_id: Option<Cow<'a, str>>,
    #[serde(default)]
    revision: Option<i64>,
    #[serde(default, borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(default)]
    attendees: Option<Value>,
}

impl RawPayload<'_> {
    /// The mark `wire` identifies the event's state by, if the payload has it.
    fn mark(&self, wire: Wire) -> Option<Mark> {
        match wire {
            Wire::Bowline => self.revision.map(Mark::Revision),
            Wire::Musubi => self.title.as_deref().map(|t| Mark::Title(t.to_owned())),
        }
    }
}

impl FrameKey {
    /// The key of a frame's JSON text on `wire` (cheaper than parsing the frame: with ten
    /// thousand streams the tool shares the machine with the server).
    pub fn parse(text: &[u8], wire: Wire) -> Self {
        let Ok(raw) = serde_json::from_slice::<RawFrame<'_>>(text) else {
            return Self::Other("unreadable".into());
        };
        let id =
            |field: &Option<Cow<'_, str>>| field.as_deref().and_then(|id| Uuid::parse_str(id).ok());
        let payload = &raw.payload;
        let key = match &*raw.kind {
            "event_created" => id(&payload.id)
                .zip(payload.mark(wire))
                .map(|(id, mark)| Self::Created(id, mark)),
            "event_updated" => id(&payload.id)
                .zip(payload.mark(wire))
                .map(|(id, mark)| Self::Updated(id, mark)),
            "event_removed" => id(&payload.id).map(Self::Removed),
            "attendance_changed" => id(&payload.event_id)
                .zip(payload.attendees.as_ref())
                .map(|(id, attendees)| Self::Attendance(id, attendees.to_string())),
            _ => None,
        };
        key.unwrap_or_else(|| Self::Other(raw.kind.into_owned()))
    }

    /// The key of a frame `{type, payload}` on Bowline's wire.
    #[cfg(test)]
    pub fn of(frame: &Value) -> Self {
        let kind = frame["type"].as_str().unwrap_or_default();
        let payload = &frame["payload"];
        let id = |field: &str| {
            payload[field]
                .as_str()
                .and_then(|id| Uuid::parse_str(id).ok())
        };
        let mark = Wire::Bowline.mark(payload);
        let key = match kind {
            "event_created" => id("id").zip(mark).map(|(id, m)| Self::Created(id, m)),
            "event_updated" => id("id").zip(mark).map(|(id, m)| Self::Updated(id, m)),
            "event_removed" => id("id").map(Self::Removed),
            "attendance_changed" => {
                id("eventID").map(|id| Self::Attendance(id, payload["attendees"].to_string()))
            }
            _ => None,
        };
        key.unwrap_or_else(|| Self::Other(kind.to_owned()))
    }

    /// The event the frame is about.
    pub fn event(&self) -> Option<Uuid> {
        match self {
            Self::Created(id, _)
            | Self::Updated(id, _)
            | Self::Removed(id)
            | Self::Attendance(id, _) => Some(*id),
            Self::Other(_) => None,
        }
    }
}

/// Server-Sent-Events parsing: bytes in, frames' JSON texts out. Lines are cut and `data:`
/// values gathered as bytes (no text is built per line: with ten thousand streams the tool
/// shares the machine with the server); reading a text's [`FrameKey`] is left to the caller,
/// which can do it after the time that is measured.
#[derive(Debug, Default)]
pub struct Parser {
    /// The start of a line whose end has not arrived yet.
    pending: Vec<u8>,
    /// The `data:` values of the frame so far, joined by newlines.
    data: Vec<u8>,
    /// Whether the frame so far has a `data:` line (an empty value is still one).
    has_data: bool,
}

impl Parser {
    /// Feeds a chunk; returns the JSON texts of the frames it completed (their `data:`
    /// values joined by newlines).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Vec<u8>> {
        self.pending.extend_from_slice(chunk);
        let mut texts = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.pending[start..].iter().position(|b| *b == b'\n') {
            let line = &self.pending[start..start + offset];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if self.has_data {
                    texts.push(std::mem::take(&mut self.data));
                    self.has_data = false;
                }
            } else if let Some(value) = line.strip_prefix(b"data:") {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data
                    .extend_from_slice(value.strip_prefix(b" ").unwrap_or(value));
                self.has_data = true;
            }
            start += offset + 1;
        }
        self.pending.drain(..start);
        texts
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn keys(parser: &mut Parser, chunk: &[u8]) -> Vec<FrameKey> {
        parser
            .push(chunk)
            .iter()
            .map(|text| FrameKey::parse(text, Wire::Bowline))
            .collect()
    }

    #[test]
    fn frames_are_cut_at_blank_lines_across_chunks_and_comments_are_skipped() {
        let id = Uuid::new_v4();
        let mut parser = Parser::default();
        assert!(parser.push(b"retry: 3000\n\n: ping\n\nda").is_empty());
        let frame = format!(
            "ta: {{\"type\":\"event_updated\",\"payload\":{{\"id\":\"{id}\",\"revision\":3}}}}\n"
        );
        assert!(parser.push(frame.as_bytes()).is_empty());
        let removed = format!(
            "\ndata: {{\"type\":\"event_removed\",\"payload\":{{\"id\":\"{id}\"}}}}\r\n\r\n"
        );
        assert_eq!(
            keys(&mut parser, removed.as_bytes()),
            vec![
                FrameKey::Updated(id, Mark::Revision(3)),
                FrameKey::Removed(id)
            ]
        );
    }

    #[test]
    fn a_frame_of_several_data_lines_is_read_as_one_text() {
        let id = Uuid::new_v4();
        let mut parser = Parser::default();
        let frame = format!(
            "data: {{\"type\":\"event_created\",\ndata:\"payload\":{{\"id\":\"{id}\",\"revision\":1}}}}\n\ndata: not json\n\n"
        );
        assert_eq!(
            keys(&mut parser, frame.as_bytes()),
            vec![
                FrameKey::Created(id, Mark::Revision(1)),
                FrameKey::Other("unreadable".into())
            ]
        );
    }

    #[test]
    fn attendance_frames_are_told_apart_by_their_attendees() {
        let id = Uuid::new_v4();
        let frame = serde_json::json!({"type": "attendance_changed", "payload": {"eventID": id, "attendees": [{"id": "u1", "status": "going"}]}});
        assert_eq!(
            FrameKey::of(&frame),
            FrameKey::Attendance(id, r#"[{"id":"u1","status":"going"}]"#.into())
        );
        let other = serde_json::json!({"type": "calendar_updated", "payload": {}});
        assert_eq!(
            FrameKey::of(&other),
            FrameKey::Other("calendar_updated".into())
        );
    }

    #[test]
    fn on_the_originals_wire_event_frames_are_known_by_title_and_need_no_revision() {
        let id = Uuid::new_v4();
        let created = format!(
            r#"{{"type":"event_created","payload":{{"id":"{id}","title":"w3-1","calendars":[]}}}}"#
        );
        let updated = format!(
            r#"{{"type":"event_updated","payload":{{"id":"{id}","revision":4,"title":"w3-2"}}}}"#
        );
        assert_eq!(
            FrameKey::parse(created.as_bytes(), Wire::Musubi),
            FrameKey::Created(id, Mark::Title("w3-1".into()))
        );
        assert_eq!(
            FrameKey::parse(updated.as_bytes(), Wire::Musubi),
            FrameKey::Updated(id, Mark::Title("w3-2".into())),
            "a revision, when there is one, is not what the frame is known by"
        );
        assert_eq!(
            FrameKey::parse(created.as_bytes(), Wire::Bowline),
            FrameKey::Other("event_created".into()),
            "Bowline's wire needs the revision"
        );
    }
}
