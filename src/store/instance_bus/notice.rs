//! The notices of the instance bus as they travel: one JSON object per notice, naming its
//! sender and numbered by it, or `{"stored": id}` for one kept in `instance_notices`; frames
//! carry each distinct block once and each user's list of them, split into notices that
//! each fit in a notification.

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

/// The longest payload sent in a notification itself: the trigger of `instance_notices`
/// stores a longer one and sends its id, which every listener must then read back
/// (migration `m20261126_000019`).
const NOTIFY_LIMIT: usize = 7_900;
/// What a frames notice's message holds besides its blocks and users' lists, at most: the
/// sender (a UUID), its number, the kind and the punctuation around them.
const ENVELOPE: usize = 200;

/// The notices of `frames`, to be sent one after the other: each distinct block once and
/// each user's list of them. Frames that do not fit in one notification are split into
/// several that do (one frame larger than that alone is one stored notice) without sending
/// any block twice: the blocks, in the order they were added, are cut into runs, so that
/// read in order the notices give every user their frames in order. None for no frames.
pub(super) fn frames_notices(frames: FrameBatch) -> Vec<Notice> {
    if frames.is_empty() {
        return Vec::new();
    }
    let (blocks, users) = frames.shared_blocks();
    let blocks: Vec<String> = blocks
        .iter()
        .map(|block| String::from_utf8_lossy(block).into_owned())
        .collect();
    let room = NOTIFY_LIMIT - ENVELOPE;
    let costs: Vec<usize> = blocks.iter().map(|block| json_len(block) + 1).collect();
    let whole = costs.iter().sum::<usize>()
        + users
            .iter()
            .map(|(user, indices)| user_len(user) + indices.len() * (digits(blocks.len()) + 1))
            .sum::<usize>();
    if whole <= room {
        return vec![Notice::Frames { blocks, users }];
    }
    split(blocks, &costs, users, room)
}

/// `users`' frames in notices of at most `room` bytes each (but for a single block larger
/// than that), `costs` being each block's length in a notice: the blocks in their order,
/// cut into runs, each notice holding one run once and each user's indices into it. Each
/// user's indices increase ([`FrameBatch::shared_blocks`]), so the notices read in order
/// give every user their frames in order; were they not, the frames go as one notice.
fn split(
    blocks: Vec<String>,
    costs: &[usize],
    users: Vec<(UserId, Vec<u32>)>,
    room: usize,
) -> Vec<Notice> {
    if users
        .iter()
        .any(|(_, indices)| indices.windows(2).any(|pair| pair[0] >= pair[1]))
    {
        return vec![Notice::Frames { blocks, users }];
    }
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); blocks.len()];
    for (holder, (_, indices)) in users.iter().enumerate() {
        for &index in indices {
            if let Some(held) = holders.get_mut(index as usize) {
                held.push(holder);
            }
        }
    }
    // A block's length in a run from `start`: its text, its index in each holder's list,
    // and the entry of each holder not in the run yet.
    let cost = |index: usize, start: usize, in_run: &[bool]| {
        let held = &holders[index];
        costs[index]
            + held.len() * (digits(index - start) + 1)
            + held
                .iter()
                .filter(|&&holder| !in_run[holder])
                .map(|&holder| user_len(&users[holder].0))
                .sum::<usize>()
    };
    // Where each run ends: as many blocks as fit, at least one.
    let mut ends = Vec::new();
    let mut in_run = vec![false; users.len()];
    let (mut start, mut size) = (0, 0);
    for (index, held) in holders.iter().enumerate() {
        let mut length = cost(index, start, &in_run);
        if size + length > room && index > start {
            ends.push(index);
            (start, size) = (index, 0);
            in_run.fill(false);
            length = cost(index, start, &in_run);
        }
        size += length;
        for &holder in held {
            in_run[holder] = true;
        }
    }
    ends.push(blocks.len());
    let mut blocks = blocks.into_iter();
    let mut taken = vec![0usize; users.len()];
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let run: Vec<String> = blocks.by_ref().take(end - start).collect();
            let run_users = users
                .iter()
                .zip(taken.iter_mut())
                .filter_map(|((user, indices), taken)| {
                    let rest = &indices[*taken..];
                    let within = rest.iter().take_while(|&&index| (index as usize) < end);
                    let numbers: Vec<u32> = within.map(|&index| index - start as u32).collect();
                    *taken += numbers.len();
                    (!numbers.is_empty()).then(|| (user.clone(), numbers))
                })
                .collect();
            start = end;
            Notice::Frames {
                blocks: run,
                users: run_users,
            }
        })
        .collect()
}

/// The length of `text` as a JSON string: its quotes, and each character escaped as
/// `serde_json` writes it.
fn json_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// The length of a user's entry in a notice's users, without its indices: `["id",[]],`.
fn user_len(user: &UserId) -> usize {
    json_len(user.as_str()) + 6
}

/// How many decimal digits `n` has.
fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
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
    use std::collections::HashMap;

    use super::*;
    use crate::domain::frames::Frame;
    use serde_json::json;

    #[test]
    fn a_frames_notice_gives_each_user_their_frames_in_order() {
        let mut batch = FrameBatch::default();
        let (ann, bob) = (UserId::new("ann"), UserId::new("bob"));
        batch.add([&ann, &bob], &Frame::new("a", json!({})));
        batch.add([&ann], &Frame::new("b", json!({"x": "é"})));
        let Ok([Notice::Frames { blocks, users }]) = <[Notice; 1]>::try_from(frames_notices(batch))
        else {
            panic!("a few frames give one frames notice");
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
        assert!(frames_notices(FrameBatch::default()).is_empty());
    }

    /// Each notice as sent by an instance, and each user's frames read back from all of them
    /// in order.
    fn sent_and_delivered(notices: Vec<Notice>) -> (Vec<String>, HashMap<UserId, Vec<u8>>) {
        let mut sent = Vec::new();
        let mut delivered: HashMap<UserId, Vec<u8>> = HashMap::new();
        for (n, notice) in notices.into_iter().enumerate() {
            let message = Message {
                from: uuid::Uuid::new_v4().to_string(),
                n: u64::MAX - n as u64,
                notice,
            };
            sent.push(serde_json::to_string(&message).unwrap());
            let Notice::Frames { blocks, users } = message.notice else {
                panic!("frames notices only");
            };
            for (user, block) in user_blocks(&blocks, users) {
                delivered.entry(user).or_default().extend_from_slice(&block);
            }
        }
        (sent, delivered)
    }

    #[test]
    fn frames_past_one_notification_are_split_each_users_in_order() {
        let users: Vec<UserId> = (0..7).map(|n| UserId::new(format!("user-{n}"))).collect();
        let batch = || {
            let mut batch = FrameBatch::default();
            for n in 0..60usize {
                // Most frames go to everyone, some to a few, some to one; escapes count.
                let to: Vec<&UserId> = match n % 5 {
                    0 => users.iter().take(2).collect(),
                    1 => vec![&users[n % 7]],
                    _ => users.iter().collect(),
                };
                let text = format!("{n} \"quoted\" \\ é\n\u{1}").repeat(n % 9 * 10 + 1);
                batch.add(
                    to,
                    &Frame::new("event_updated", json!({ "n": n, "text": text })),
                );
            }
            batch
        };
        let expected: HashMap<UserId, Bytes> = batch().into_blocks().collect();

        let batch = batch();
        let notices = frames_notices(batch);
        assert!(notices.len() > 3, "{} notices", notices.len());
        let sent_blocks: usize = notices
            .iter()
            .map(|notice| match notice {
                Notice::Frames { blocks, .. } => blocks.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(sent_blocks, 60, "each frame is sent once");
        let (sent, delivered) = sent_and_delivered(notices);
        for text in &sent {
            assert!(
                text.len() < NOTIFY_LIMIT,
                "a notice of {} bytes",
                text.len()
            );
        }
        assert_eq!(delivered.len(), expected.len());
        for (user, frames) in expected {
            assert_eq!(
                delivered[&user],
                frames.to_vec(),
                "{user:?}'s frames, in order"
            );
        }
    }

    #[test]
    fn a_frame_larger_than_a_notification_is_one_notice_between_the_others() {
        let ann = UserId::new("ann");
        let batch = || {
            let mut batch = FrameBatch::default();
            batch.add([&ann], &Frame::new("a", json!({"text": "small"})));
            batch.add(
                [&ann],
                &Frame::new("b", json!({"text": "x".repeat(NOTIFY_LIMIT)})),
            );
            batch.add([&ann], &Frame::new("c", json!({"text": "small"})));
            batch
        };
        let expected: HashMap<UserId, Bytes> = batch().into_blocks().collect();
        let batch = batch();
        let notices = frames_notices(batch);
        assert_eq!(notices.len(), 3);
        let (sent, delivered) = sent_and_delivered(notices);
        assert!(sent[1].len() > NOTIFY_LIMIT, "the large frame is stored");
        assert_eq!(delivered[&ann], expected[&ann].to_vec());
    }

    #[test]
    fn a_strings_json_length_is_what_serde_json_writes() {
        for text in [
            "",
            "plain",
            "\"\\/",
            "é\u{1}\u{1f}\u{7f}\n\r\t\u{8}\u{c}",
            "data: {}\n\n",
        ] {
            assert_eq!(
                json_len(text),
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
        assert_eq!(
            (digits(0), digits(9), digits(10), digits(12_345)),
            (1, 1, 2, 5)
        );
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
