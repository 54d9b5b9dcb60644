//! The notices of the instance bus as they travel: one JSON object per notice, naming its
//! sender and numbered by it, or `{"stored": id}` for one kept in `instance_notices`; frames
//! carry each distinct block once and each user's list of them.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::frames::FrameBatch;
use crate::domain::ids::{AccountId, UserId};

/// One notice on the bus, as sent.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Message {
    /// The sending instance.
    pub(super) from: String,
    /// The sender's count of its notices: PostgreSQL folds identical notifications of one
    /// transaction into one, so no two notices are identical.
    pub(super) n: u64,
    #[serde(flatten)]
    pub(super) notice: Notice,
}

/// What a notice says.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum Notice {
    /// A user's credentials changed.
    Credentials { user: UserId },
    /// Frames for users' streams: each user's frames are the listed blocks, in order.
    Frames {
        blocks: Vec<String>,
        users: Vec<(UserId, Vec<u32>)>,
    },
    /// A batch of change mails is due at `at`.
    MailBatchDue { at: DateTime<Utc> },
    /// Rows were queued in the outbox of these accounts (`(provider, account)`).
    ProviderWrites { accounts: Vec<(String, AccountId)> },
}

/// What a notification carries: a notice, or the id of a stored one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Heard {
    Stored { stored: i64 },
    Message(Message),
}

/// The notice of `frames`: each distinct block once, and each user's list of them.
pub(super) fn frames_notice(frames: FrameBatch) -> Option<Notice> {
    if frames.is_empty() {
        return None;
    }
    let (blocks, users) = frames.shared_blocks();
    let blocks = blocks
        .iter()
        .map(|block| String::from_utf8_lossy(block).into_owned())
        .collect();
    Some(Notice::Frames { blocks, users })
}

/// Each user's frames as one block, from the distinct `blocks` and the users' lists.
pub(super) fn user_blocks(
    blocks: &[String],
    users: Vec<(UserId, Vec<u32>)>,
) -> Vec<(UserId, Bytes)> {
    let blocks: Vec<Bytes> = blocks
        .iter()
        .map(|block| Bytes::copy_from_slice(block.as_bytes()))
        .collect();
    users
        .into_iter()
        .filter_map(|(user, indices)| {
            let mut joined = Vec::new();
            for index in indices {
                joined.extend_from_slice(blocks.get(index as usize)?);
            }
            Some((user, Bytes::from(joined)))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::domain::frames::Frame;
    use serde_json::json;

    #[test]
    fn a_frames_notice_gives_each_user_their_frames_in_order() {
        let mut batch = FrameBatch::default();
        let (ann, bob) = (UserId::new("ann"), UserId::new("bob"));
        batch.add([&ann, &bob], &Frame::new("a", json!({})));
        batch.add([&ann], &Frame::new("b", json!({"x": "é"})));
        let Some(Notice::Frames { blocks, users }) = frames_notice(batch) else {
            panic!("frames give a frames notice");
        };
        assert_eq!(blocks.len(), 2, "a block shared by two users is sent once");
        let mut delivered = user_blocks(&blocks, users);
        delivered.sort();
        assert_eq!(
            delivered,
            vec![
                (
                    ann,
                    Bytes::from(
                        "data: {\"type\":\"a\",\"payload\":{}}\n\ndata: {\"type\":\"b\",\"payload\":{\"x\":\"é\"}}\n\n"
                    )
                ),
                (
                    bob,
                    Bytes::from_static(b"data: {\"type\":\"a\",\"payload\":{}}\n\n")
                ),
            ]
        );
        assert!(frames_notice(FrameBatch::default()).is_none());
    }

    #[test]
    fn a_stored_notice_and_a_message_are_told_apart() {
        assert!(matches!(
            serde_json::from_str::<Heard>("{\"stored\": 7}"),
            Ok(Heard::Stored { stored: 7 })
        ));
        let message = Message {
            from: "a".into(),
            n: 1,
            notice: Notice::Credentials { user: "u".into() },
        };
        let text = serde_json::to_string(&message).unwrap();
        assert!(matches!(
            serde_json::from_str::<Heard>(&text),
            Ok(Heard::Message(Message {
                notice: Notice::Credentials { .. },
                ..
            }))
        ));
    }
}
