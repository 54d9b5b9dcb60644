//! Realtime frames: `{"type": "...", "payload": {...}}`, written on `/api/stream` as one
//! `data: <json>` line and a blank line. A frame is encoded once per broadcast and the
//! bytes are shared by every connection that receives it.
//!
//! A change that owes many frames (deleting a calendar tells its members about every event
//! in it) gathers them in a [`FrameBatch`], which hands each user their frames as one
//! block: one entry in each of their connections' bounded queues, so a large change never
//! overflows a queue on its own.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use serde::Serialize;
use serde_json::Value;

use super::ids::UserId;

/// One frame of the `/api/stream` protocol, encoded once, as the stream writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// `data: {"type": …, "payload": …}` and a blank line.
    block: Bytes,
}

impl Frame {
    /// A frame of `kind` carrying `payload`.
    pub fn new(kind: &'static str, payload: Value) -> Self {
        Self::of(kind, &payload).unwrap_or_else(|err| {
            // Writing a `Value` into memory cannot fail; were it to, the frame says so and
            // writes nothing.
            tracing::error!(error = %err, "frame.encode_failed");
            Self {
                block: Bytes::new(),
            }
        })
    }

    /// A frame of `kind` carrying `payload` (an object), written straight from its type:
    /// no JSON tree is built in between. The JSON is compact (no line breaks), so one
    /// `data:` line carries the whole frame.
    pub fn of<T: Serialize + ?Sized>(
        kind: &'static str,
        payload: &T,
    ) -> Result<Self, serde_json::Error> {
        /// The frame as it is written, borrowing its payload.
        #[derive(Serialize)]
        struct Wire<'a, T: ?Sized> {
            #[serde(rename = "type")]
            kind: &'a str,
            payload: &'a T,
        }
        let mut block = Vec::with_capacity(256);
        block.extend_from_slice(b"data: ");
        serde_json::to_writer(&mut block, &Wire { kind, payload })?;
        block.extend_from_slice(b"\n\n");
        Ok(Self {
            block: Bytes::from(block),
        })
    }

    /// The frame as the stream writes it: `data: <json>` and a blank line (shared, not
    /// copied).
    pub fn block(&self) -> Bytes {
        self.block.clone()
    }
}

/// The frames one change owes, gathered per user in the order they were added.
#[derive(Debug, Default)]
pub struct FrameBatch {
    by_user: HashMap<UserId, Vec<Bytes>>,
    /// Every block, once, in the order added (shared with `by_user`).
    added: Vec<Bytes>,
}

impl FrameBatch {
    /// Adds `frame` for each user in `users`, once per user.
    pub fn add<'a>(&mut self, users: impl IntoIterator<Item = &'a UserId>, frame: &Frame) {
        // A block of its own: a frame added twice is delivered twice.
        let block = Bytes::copy_from_slice(&frame.block);
        self.added.push(block.clone());
        for user in users {
            let blocks = self.by_user.entry(user.clone()).or_default();
            // Users come once per frame, so a repeat is always the block just added.
            if blocks
                .last()
                .is_none_or(|last| last.as_ptr() != block.as_ptr())
            {
                blocks.push(block.clone());
            }
        }
    }

    /// Adds every frame of `other` after this batch's own, user by user.
    pub fn append(&mut self, other: FrameBatch) {
        for (user, blocks) in other.by_user {
            self.by_user.entry(user).or_default().extend(blocks);
        }
        self.added.extend(other.added);
    }

    /// Each distinct block once, numbered in the order they were added, and each user's
    /// blocks as indices into them, in order (so each user's indices increase). Empty
    /// blocks (a frame that could not be encoded) carry nothing and are left out.
    pub fn shared_blocks(self) -> (Vec<Bytes>, Vec<(UserId, Vec<u32>)>) {
        // Each block added is an allocation of its own, told apart by its address.
        let key = |block: &Bytes| block.as_ptr() as usize;
        let mut number: HashMap<usize, u32> = self
            .by_user
            .values()
            .flatten()
            .filter(|block| !block.is_empty())
            .map(|block| (key(block), 0))
            .collect();
        let mut blocks: Vec<Bytes> = Vec::with_capacity(number.len());
        for block in self.added {
            if let Some(n) = number.get_mut(&key(&block))
                && !block.is_empty()
            {
                *n = blocks.len() as u32;
                blocks.push(block);
            }
        }
        let users = self
            .by_user
            .into_iter()
            .filter_map(|(user, own)| {
                let indices: Vec<u32> = own
                    .iter()
                    .filter(|block| !block.is_empty())
                    .filter_map(|block| number.get(&key(block)).copied())
                    .collect();
                (!indices.is_empty()).then_some((user, indices))
            })
            .collect();
        (blocks, users)
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.by_user.is_empty()
    }

    /// Each user with their frames as one block (a single frame's bytes stay shared).
    pub fn into_blocks(self) -> impl Iterator<Item = (UserId, Bytes)> {
        self.by_user.into_iter().map(|(user, blocks)| {
            let joined = match <[Bytes; 1]>::try_from(blocks) {
                Ok([single]) => single,
                Err(blocks) => {
                    let mut joined = BytesMut::with_capacity(blocks.iter().map(Bytes::len).sum());
                    for block in &blocks {
                        joined.extend_from_slice(block);
                    }
                    joined.freeze()
                }
            };
            (user, joined)
        })
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_frame_is_one_spaced_data_line_with_type_then_payload() {
        let frame = Frame::new("event_updated", json!({"id": "event-1"}));
        assert_eq!(
            &frame.block()[..],
            b"data: {\"type\":\"event_updated\",\"payload\":{\"id\":\"event-1\"}}\n\n"
        );
    }

    #[test]
    fn a_batch_gives_each_user_their_frames_in_order_and_once() {
        let mut batch = FrameBatch::default();
        let (ann, bob) = (UserId::new("ann"), UserId::new("bob"));
        batch.add([&ann, &bob, &ann], &Frame::new("a", json!({})));
        batch.add([&ann], &Frame::new("b", json!({})));
        assert!(!batch.is_empty());
        let mut blocks: Vec<(UserId, Bytes)> = batch.into_blocks().collect();
        blocks.sort();
        assert_eq!(
            blocks,
            vec![
                (
                    ann,
                    Bytes::from_static(
                        b"data: {\"type\":\"a\",\"payload\":{}}\n\ndata: {\"type\":\"b\",\"payload\":{}}\n\n"
                    )
                ),
                (
                    bob,
                    Bytes::from_static(b"data: {\"type\":\"a\",\"payload\":{}}\n\n")
                ),
            ]
        );
        assert!(FrameBatch::default().is_empty());
    }
}
