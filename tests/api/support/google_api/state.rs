//! Everything the fake knows, kept in one place behind one lock: accounts with their
//! calendarLists, calendars and their events, the OAuth codes and tokens it issued, the
//! sync and page tokens it handed out, the faults armed by the test, and the Calendar API
//! requests it received.

use std::collections::HashMap;
use std::time::Instant;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use rand::Rng;
use serde_json::{Map, Value};

use super::oauth::DEFAULT_ACCESS_TOKEN_LIFETIME;
use super::reply::{Reply, full_sync_required, invalid_parameter};
use super::{GoogleUser, RateLimit, Recorded};

/// Items per page unless a test changes it (also Google's default `maxResults` of events).
pub(super) const DEFAULT_PAGE_SIZE: usize = 250;

/// The fake's whole state.
pub(super) struct State {
    pub(super) accounts: Vec<Account>,
    pub(super) calendars: Vec<Calendar>,
    /// Scopes granted to the test client, per user `sub` (kept for `include_granted_scopes`).
    pub(super) granted: HashMap<String, Vec<String>>,
    pub(super) codes: HashMap<String, AuthCode>,
    pub(super) refresh_tokens: HashMap<String, RefreshGrant>,
    pub(super) access_tokens: HashMap<String, AccessGrant>,
    pub(super) access_token_lifetime: u64,
    pub(super) token_requests: Vec<Value>,
    /// Every token issued, in order: `(kind, sub, token)`.
    pub(super) issued: Vec<(TokenKind, String, String)>,
    pub(super) revoked: Vec<String>,
    pub(super) sync_tokens: HashMap<String, SyncToken>,
    pub(super) sync_epoch: u64,
    pub(super) page_tokens: HashMap<String, PageCursor>,
    pub(super) page_size: usize,
    pub(super) expire_after_pages: Option<usize>,
    pub(super) rate_limit: Option<(usize, u64, RateLimit)>,
    pub(super) failures: Option<(usize, u16)>,
    /// The next token requests to refuse, and with which status.
    pub(super) token_failures: Option<(usize, u16)>,
    pub(super) requests: Vec<Recorded>,
    pub(super) etag_counter: u64,
    pub(super) next_sub: u128,
    pub(super) last_update: DateTime<Utc>,
    pub(super) next_color: usize,
}

/// A Google account and its calendarList.
pub(super) struct Account {
    pub(super) user: GoogleUser,
    pub(super) list: Vec<ListEntry>,
    /// The calendarList's change sequence (sync tokens of the list are cut from it).
    pub(super) list_seq: u64,
}

/// One calendar in an account's calendarList, with the account's own settings of it.
pub(super) struct ListEntry {
    pub(super) calendar_id: String,
    pub(super) access_role: String,
    pub(super) color_id: String,
    pub(super) background: String,
    pub(super) foreground: String,
    pub(super) summary_override: Option<String>,
    pub(super) hidden: bool,
    pub(super) selected: bool,
    pub(super) deleted: bool,
    pub(super) etag: String,
    pub(super) changed_at: u64,
}

/// A calendar and its events (tombstones included).
pub(super) struct Calendar {
    pub(super) id: String,
    /// `sub` of the owner (empty: somebody outside the fake).
    pub(super) owner: String,
    pub(super) summary: String,
    pub(super) description: Option<String>,
    pub(super) time_zone: String,
    pub(super) etag: String,
    pub(super) primary: bool,
    pub(super) deleted: bool,
    /// The change sequence events' sync tokens are cut from.
    pub(super) seq: u64,
    pub(super) updated: String,
    pub(super) events: Vec<Stored>,
    pub(super) index: HashMap<String, usize>,
}

/// An event resource as stored, and the calendar change that last touched it.
pub(super) struct Stored {
    pub(super) body: Map<String, Value>,
    pub(super) changed_at: u64,
}

/// An authorization code the consent screen issued.
pub(super) struct AuthCode {
    pub(super) client_id: String,
    pub(super) redirect_uri: String,
    pub(super) challenge: String,
    pub(super) scopes: Vec<String>,
    pub(super) sub: String,
    pub(super) issued: Instant,
    pub(super) used: bool,
    pub(super) offline: bool,
    pub(super) prompt_consent: bool,
    pub(super) nonce: Option<String>,
    /// Set by `expire_authorization_codes`.
    pub(super) expired: bool,
}

/// What a refresh token stands for.
pub(super) struct RefreshGrant {
    pub(super) sub: String,
    pub(super) scopes: Vec<String>,
    pub(super) revoked: bool,
}

/// What an access token stands for (it also dies with its refresh token).
pub(super) struct AccessGrant {
    pub(super) sub: String,
    pub(super) scopes: Vec<String>,
    pub(super) refresh_token: Option<String>,
    pub(super) expires_at: Instant,
    pub(super) expired: bool,
    pub(super) revoked: bool,
}

/// What a sync token lists: a calendar's events or an account's calendarList.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum SyncScope {
    Events(String),
    CalendarList(String),
}

/// Which kind of token was issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TokenKind {
    /// A refresh token.
    Refresh,
    /// An access token.
    Access,
}

/// A sync token: the change sequence it was cut at, in the epoch that expiries end.
pub(super) struct SyncToken {
    pub(super) scope: SyncScope,
    pub(super) seq: u64,
    pub(super) epoch: u64,
}

/// A page token: the query it belongs to, the last item listed, the snapshot the listing
/// started from, and the pages left before an armed mid-pagination 410.
pub(super) struct PageCursor {
    pub(super) fingerprint: String,
    pub(super) after: (usize, usize),
    pub(super) snapshot_seq: u64,
    pub(super) pages_before_expiry: Option<usize>,
}

impl State {
    /// No accounts, no tokens, no faults.
    pub(super) fn new() -> Self {
        Self {
            accounts: Vec::new(),
            calendars: Vec::new(),
            granted: HashMap::new(),
            codes: HashMap::new(),
            refresh_tokens: HashMap::new(),
            access_tokens: HashMap::new(),
            access_token_lifetime: DEFAULT_ACCESS_TOKEN_LIFETIME,
            token_requests: Vec::new(),
            issued: Vec::new(),
            revoked: Vec::new(),
            sync_tokens: HashMap::new(),
            sync_epoch: 0,
            page_tokens: HashMap::new(),
            page_size: DEFAULT_PAGE_SIZE,
            expire_after_pages: None,
            rate_limit: None,
            failures: None,
            token_failures: None,
            requests: Vec::new(),
            etag_counter: 3_181_161_784_712_000,
            next_sub: 110_169_484_474_386_276_334,
            last_update: DateTime::<Utc>::MIN_UTC,
            next_color: 0,
        }
    }

    /// The tokens of `kind` issued to `sub`, oldest first.
    pub(super) fn issued_tokens(&self, sub: &str, kind: TokenKind) -> Vec<String> {
        self.issued
            .iter()
            .filter(|(k, s, _)| *k == kind && s == sub)
            .map(|(_, _, token)| token.clone())
            .collect()
    }

    /// The account with this address.
    pub(super) fn account(&self, email: &str) -> Option<usize> {
        self.accounts.iter().position(|a| a.user.email == email)
    }

    /// The account with this `sub` (it must exist).
    pub(super) fn account_by_sub(&self, sub: &str) -> usize {
        self.accounts
            .iter()
            .position(|a| a.user.sub == sub)
            .expect("known account")
    }

    /// The calendar with this id (deleted ones included).
    pub(super) fn calendar_index(&self, id: &str) -> Option<usize> {
        self.calendars.iter().position(|c| c.id == id)
    }

    /// A quoted etag, different from every earlier one.
    pub(super) fn next_etag(&mut self) -> String {
        self.etag_counter += 1000 + rand::rng().random_range(0..1000);
        format!("\"{}\"", self.etag_counter)
    }

    /// Now as `updated` writes it, later than every earlier stamp.
    pub(super) fn next_update(&mut self) -> String {
        let now = Utc::now().max(self.last_update + Duration::milliseconds(1));
        self.last_update = now;
        now.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// Every sync token issued so far answers 410 from now on.
    pub(super) fn expire_sync_tokens(&mut self) {
        self.sync_epoch += 1;
    }

    /// The token for `scope` at `seq` (the same string while nothing changed).
    pub(super) fn sync_token(&mut self, scope: SyncScope, seq: u64) -> String {
        let epoch = self.sync_epoch;
        if let Some((token, _)) = self
            .sync_tokens
            .iter()
            .find(|(_, t)| t.scope == scope && t.seq == seq && t.epoch == epoch)
        {
            return token.clone();
        }
        let token = format!("CP{}=", random_token(40));
        self.sync_tokens
            .insert(token.clone(), SyncToken { scope, seq, epoch });
        token
    }

    /// The sequence a presented sync token was cut at, or 410.
    pub(super) fn check_sync_token(&self, token: &str, scope: &SyncScope) -> Result<u64, Reply> {
        match self.sync_tokens.get(token) {
            Some(t) if &t.scope == scope && t.epoch == self.sync_epoch => Ok(t.seq),
            _ => Err(full_sync_required()),
        }
    }

    /// The cursor a page token stands for, if it was issued for this very query.
    pub(super) fn cursor(&self, page_token: &str, fingerprint: &str) -> Result<&PageCursor, Reply> {
        self.page_tokens
            .get(page_token)
            .filter(|c| c.fingerprint == fingerprint)
            .ok_or_else(|| invalid_parameter("pageToken", "Invalid page token value."))
    }

    /// A page token for the rest of a listing after item `after`.
    pub(super) fn new_cursor(
        &mut self,
        fingerprint: String,
        after: (usize, usize),
        snapshot_seq: u64,
        pages_before_expiry: Option<usize>,
    ) -> String {
        let token = format!("Eh{}", random_token(40));
        self.page_tokens.insert(
            token.clone(),
            PageCursor {
                fingerprint,
                after,
                snapshot_seq,
                pages_before_expiry,
            },
        );
        token
    }
}

/// `len` random characters from `[A-Za-z0-9_-]`.
pub(super) fn random_token(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// `len` random base32hex characters (`0-9a-v`), the alphabet of Google's event ids.
pub(super) fn random_base32hex(len: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuv";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}
