//! Everything the fake knows, kept in one place behind one lock: accounts and their
//! calendars and events, the OAuth codes and tokens it issued, the delta rounds it
//! served, the faults armed by the test, and the requests it received.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE;
use chrono::{DateTime, NaiveDateTime, Utc};
use chrono_tz::Tz;
use serde_json::{Map, Value};

use super::recurrence::Recurrence;
use super::times::{day_start, instant};
use super::{GraphUser, Recorded, Reset, TokenAnswer};

/// The fake's whole state.
pub(super) struct State {
    /// `http://127.0.0.1:<port>`.
    pub(super) base: String,
    pub(super) users: Vec<GraphUser>,
    pub(super) calendars: Vec<CalendarRecord>,
    /// Singles, series masters and exceptions, by id.
    pub(super) events: BTreeMap<String, EventRecord>,
    pub(super) codes: HashMap<String, AuthCode>,
    pub(super) access_tokens: HashMap<String, AccessToken>,
    pub(super) refresh_tokens: HashMap<String, RefreshToken>,
    pub(super) rounds: Vec<Round>,
    pub(super) delta_tokens: HashMap<String, DeltaToken>,
    pub(super) faults: Faults,
    pub(super) requests: Vec<Recorded>,
    pub(super) token_requests: Vec<Value>,
    pub(super) token_answers: Vec<TokenAnswer>,
    seq: u64,
}

/// Faults and switches armed by the test.
pub(super) struct Faults {
    pub(super) rate_limited: usize,
    pub(super) retry_after_secs: u64,
    pub(super) failing: usize,
    pub(super) fail_status: u16,
    pub(super) conflict_status: u16,
    pub(super) replay_next_round: bool,
    pub(super) empty_first_page: bool,
    pub(super) access_token_lifetime: Duration,
    /// Times are written in each event's own zone, whatever the client prefers.
    pub(super) original_zones: bool,
    /// Successful requests still to be answered 504 after they took effect.
    pub(super) lost_answers: usize,
    /// How the next request for a round's next page (`$skiptoken`) is refused.
    pub(super) reset_next_page: Option<Reset>,
}

/// A calendar of some account.
#[derive(Clone, Debug)]
pub(super) struct CalendarRecord {
    pub(super) id: String,
    pub(super) owner_oid: String,
    pub(super) name: String,
    pub(super) color: String,
    pub(super) change_key: String,
    pub(super) can_edit: bool,
    pub(super) is_default: bool,
}

/// An authorization code handed to the browser at consent.
pub(super) struct AuthCode {
    pub(super) oid: String,
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    pub(super) scopes: Vec<String>,
    pub(super) challenge: String,
    pub(super) issued: Instant,
    /// Aged past its ten minutes by the test.
    pub(super) expired: bool,
    pub(super) redeemed: bool,
}

/// An access token for Graph.
pub(super) struct AccessToken {
    pub(super) oid: String,
    pub(super) expires: Instant,
}

/// A refresh token (old ones stay valid when new ones are issued).
pub(super) struct RefreshToken {
    pub(super) oid: String,
    pub(super) client_id: String,
    pub(super) scopes: Vec<String>,
    pub(super) expired: bool,
}

/// A local time with the zone it was written in.
#[derive(Clone, Debug)]
pub(super) struct Stamp {
    pub(super) local: NaiveDateTime,
    /// The zone as the client named it (IANA or Windows).
    pub(super) zone: String,
    pub(super) tz: Tz,
}

/// When an event happens.
#[derive(Clone, Debug)]
pub(super) struct When {
    pub(super) start: Stamp,
    pub(super) end: Stamp,
    pub(super) all_day: bool,
}

impl When {
    /// The span as instants (all-day days are floating: placed at midnight UTC).
    pub(super) fn span(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        if self.all_day {
            (
                day_start(self.start.local.date()),
                day_start(self.end.local.date()),
            )
        } else {
            (
                instant(self.start.tz, self.start.local),
                instant(self.end.tz, self.end.local),
            )
        }
    }

    /// Whether the span meets `[from, to)` (an empty span counts at its start).
    pub(super) fn overlaps(&self, window: (DateTime<Utc>, DateTime<Utc>)) -> bool {
        let (start, end) = self.span();
        if start == end {
            start >= window.0 && start < window.1
        } else {
            start < window.1 && end > window.0
        }
    }
}

/// What kind of item an event record is.
#[derive(Clone, Debug)]
pub(super) enum Kind {
    Single,
    Master {
        recurrence: Recurrence,
        /// Original starts of occurrences deleted from the series.
        cancelled: BTreeSet<DateTime<Utc>>,
    },
    /// An edited occurrence, stored under the occurrence's id.
    Exception {
        master_id: String,
        original: DateTime<Utc>,
    },
    /// An occurrence computed from its master (never stored).
    Occurrence {
        master_id: String,
        original: DateTime<Utc>,
    },
}

impl Kind {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Kind::Single => "singleInstance",
            Kind::Master { .. } => "seriesMaster",
            Kind::Exception { .. } => "exception",
            Kind::Occurrence { .. } => "occurrence",
        }
    }

    pub(super) fn master_id(&self) -> Option<&str> {
        match self {
            Kind::Exception { master_id, .. } | Kind::Occurrence { master_id, .. } => {
                Some(master_id)
            }
            _ => None,
        }
    }
}

/// An event as stored (or computed, for occurrences).
#[derive(Clone, Debug)]
pub(super) struct EventRecord {
    pub(super) id: String,
    pub(super) calendar_id: String,
    /// Creation order.
    pub(super) seq: u64,
    pub(super) ical_uid: String,
    pub(super) change_key: String,
    pub(super) created: DateTime<Utc>,
    pub(super) modified: DateTime<Utc>,
    /// The writable properties as last written (`subject`, `body`, `start`, …).
    pub(super) props: Map<String, Value>,
    pub(super) when: When,
    pub(super) kind: Kind,
    pub(super) transaction_id: Option<String>,
}

/// One item of a calendar view: an event record (single or exception) or an occurrence.
#[derive(Clone, Debug)]
pub(super) struct ViewItem {
    pub(super) id: String,
    /// Changes whenever the item would be delivered again by delta.
    pub(super) version: String,
    pub(super) start: DateTime<Utc>,
}

/// What a delta round delivers, in order.
#[derive(Clone, Debug)]
pub(super) enum DeltaItem {
    Live(String),
    Removed(String),
}

/// Where a delta round started and what its client knows at its end.
#[derive(Clone, Debug)]
pub(super) struct Snapshot {
    pub(super) calendar_id: String,
    /// The path the round was started on (links repeat it).
    pub(super) path: String,
    pub(super) window: (DateTime<Utc>, DateTime<Utc>),
    /// Item id → version, as delivered.
    pub(super) known: BTreeMap<String, String>,
}

/// A delta round being paged.
pub(super) struct Round {
    pub(super) items: Vec<DeltaItem>,
    pub(super) snapshot: Snapshot,
    pub(super) empty_first_page: bool,
}

/// What a `$skiptoken` or `$deltatoken` stands for.
pub(super) enum TokenKind {
    Skip { round: usize, offset: usize },
    Delta(Snapshot),
}

/// A token handed out in a link.
pub(super) struct DeltaToken {
    pub(super) kind: TokenKind,
    pub(super) reset: Option<Reset>,
}

/// `len` random bytes, URL-safe base64 (padded, like Graph's ids).
pub(super) fn random_text(len: usize) -> String {
    let mut bytes = Vec::with_capacity(len + 16);
    while bytes.len() < len {
        bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    bytes.truncate(len);
    URL_SAFE.encode(bytes)
}

const OCCURRENCE_PREFIX: &str = "AAMkOC";

/// The id of the occurrence of `master_id` that starts (originally) at `original`.
pub(super) fn occurrence_id(master_id: &str, original: DateTime<Utc>) -> String {
    let stamp = original.format("%Y%m%dT%H%M%SZ");
    format!(
        "{OCCURRENCE_PREFIX}{}",
        URL_SAFE.encode(format!("{master_id}|{stamp}"))
    )
}

/// The master and original start an occurrence id stands for.
pub(super) fn parse_occurrence_id(id: &str) -> Option<(String, DateTime<Utc>)> {
    let encoded = id.strip_prefix(OCCURRENCE_PREFIX)?;
    let text = String::from_utf8(URL_SAFE.decode(encoded).ok()?).ok()?;
    let (master, stamp) = text.split_once('|')?;
    let original = NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ")
        .ok()?
        .and_utc();
    Some((master.to_owned(), original))
}

impl State {
    pub(super) fn new(base: String) -> Self {
        Self {
            base,
            users: Vec::new(),
            calendars: Vec::new(),
            events: BTreeMap::new(),
            codes: HashMap::new(),
            access_tokens: HashMap::new(),
            refresh_tokens: HashMap::new(),
            rounds: Vec::new(),
            delta_tokens: HashMap::new(),
            faults: Faults {
                rate_limited: 0,
                retry_after_secs: 0,
                failing: 0,
                fail_status: 500,
                conflict_status: 412,
                replay_next_round: false,
                empty_first_page: false,
                access_token_lifetime: Duration::from_secs(3599),
                original_zones: false,
                lost_answers: 0,
                reset_next_page: None,
            },
            requests: Vec::new(),
            token_requests: Vec::new(),
            token_answers: Vec::new(),
            seq: 0,
        }
    }

    /// The next number of a sequence that orders creations.
    pub(super) fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub(super) fn user(&self, oid: &str) -> Option<&GraphUser> {
        self.users.iter().find(|u| u.oid == oid)
    }

    pub(super) fn calendar(&self, id: &str) -> Option<&CalendarRecord> {
        self.calendars.iter().find(|c| c.id == id)
    }

    pub(super) fn calendar_mut(&mut self, id: &str) -> Option<&mut CalendarRecord> {
        self.calendars.iter_mut().find(|c| c.id == id)
    }

    /// `oid`'s calendar `id`, if it is one of theirs.
    pub(super) fn calendar_of(&self, oid: &str, id: &str) -> Option<&CalendarRecord> {
        self.calendar(id).filter(|c| c.owner_oid == oid)
    }

    /// The owner of the calendar holding `event`.
    pub(super) fn owner_of(&self, calendar_id: &str) -> Option<&GraphUser> {
        self.calendar(calendar_id)
            .and_then(|c| self.user(&c.owner_oid))
    }

    /// A new opaque event id (ends in `=` like Graph's).
    pub(super) fn new_event_id() -> String {
        format!("AAMkAD{}", random_text(43))
    }

    /// A new change key.
    pub(super) fn new_change_key() -> String {
        format!("DwAAABYAAA{}", random_text(18))
    }
}
