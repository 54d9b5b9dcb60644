//! Realtime frames: `{"type": "...", "payload": {...}}`, encoded once per broadcast and
//! shared by every connection that receives it.

use std::sync::Arc;

use serde_json::{Value, json};

/// One frame of the `/api/stream` protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// `event_created`, `calendar_updated`, `settings_updated`, ...
    pub kind: &'static str,
    /// The payload object.
    pub payload: Value,
}

impl Frame {
    /// A frame of `kind` carrying `payload`.
    pub fn new(kind: &'static str, payload: Value) -> Self {
        Self { kind, payload }
    }

    /// The JSON text of the frame (one line).
    pub fn encode(&self) -> Arc<str> {
        json!({ "type": self.kind, "payload": self.payload })
            .to_string()
            .into()
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn encodes_type_then_payload_on_one_line() {
        let frame = Frame::new("event_updated", json!({"id": "event-1"}));
        assert_eq!(
            &*frame.encode(),
            r#"{"type":"event_updated","payload":{"id":"event-1"}}"#
        );
    }
}
