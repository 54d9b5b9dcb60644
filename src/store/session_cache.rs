//! Sessions recently found by the hash of their token, with their users, reused for
//! `SESSION_CACHE_MS` instead of asking the database on every request.
//!
//! Every change this server makes to a session or a user (sign-out, revocation, password
//! change, profile, email, avatar, deletion) forgets that user's entries once it is
//! committed, so on this server it takes effect at once; a server sharing the database sees
//! it within the cache's lifetime (better-auth's own session cookie cache keeps sessions for
//! minutes). A lookup that began before such a change never stores what it read: each
//! change moves a generation counter, and a result read under an older generation is
//! returned but not kept. Expiry is still checked on every request
//! (when the request pipeline resolves a session).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::domain::ids::UserId;
use entities::{sessions, users};
use parking_lot::Mutex;

/// Entries kept at most; past it, stale ones are dropped, and if none is, all.
const MAX_ENTRIES: usize = 10_000;

/// A session and its user, as found.
pub type Found = (sessions::Model, users::Model);

/// Recently found sessions of one server.
#[derive(Debug)]
pub struct SessionCache {
    ttl: Duration,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_token_hash: HashMap<String, Entry>,
    generation: u64,
}

#[derive(Debug)]
struct Entry {
    found: Found,
    at: Instant,
}

/// Where a lookup started: the generation it must still be in to keep what it read.
#[derive(Debug, Clone, Copy)]
pub struct Lookup(u64);

impl SessionCache {
    /// A cache keeping sessions for `ttl`; zero keeps nothing.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            inner: Mutex::new(Entries::default()),
        }
    }

    /// The session cached for `token_hash` if it is fresh, else where a lookup starts.
    pub fn get(&self, token_hash: &str, now: Instant) -> Result<Found, Lookup> {
        let entries = self.inner.lock();
        match entries.by_token_hash.get(token_hash) {
            Some(entry) if now.duration_since(entry.at) < self.ttl => Ok(entry.found.clone()),
            _ => Err(Lookup(entries.generation)),
        }
    }

    /// Keeps what a lookup found, unless a change was made since it started.
    pub fn put(&self, lookup: Lookup, token_hash: &str, found: &Found, now: Instant) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.inner.lock();
        if entries.generation != lookup.0 {
            return;
        }
        if entries.by_token_hash.len() >= MAX_ENTRIES {
            let ttl = self.ttl;
            entries
                .by_token_hash
                .retain(|_, entry| now.duration_since(entry.at) < ttl);
            if entries.by_token_hash.len() >= MAX_ENTRIES {
                entries.by_token_hash.clear();
            }
        }
        entries.by_token_hash.insert(
            token_hash.to_owned(),
            Entry {
                found: found.clone(),
                at: now,
            },
        );
    }

    /// Forgets every session (after this instance may have missed changes made by others).
    pub fn forget_all(&self) {
        let mut entries = self.inner.lock();
        entries.generation += 1;
        entries.by_token_hash.clear();
    }

    /// Forgets every session of `user_id` (after a committed change to them or the user).
    pub fn forget_user(&self, user_id: &UserId) {
        let mut entries = self.inner.lock();
        entries.generation += 1;
        entries
            .by_token_hash
            .retain(|_, entry| entry.found.1.id != *user_id);
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn found(user: &UserId) -> Found {
        let now = Utc::now();
        let session = sessions::Model {
            id: format!("s-{user}"),
            token_hash: format!("h-{user}"),
            user_id: user.to_owned(),
            expires_at: now,
            remember: true,
            ip_address: String::new(),
            user_agent: String::new(),
            created_at: now,
            updated_at: now,
        };
        let user = users::Model {
            id: user.clone(),
            name: user.to_string(),
            email: format!("{user}@example.com"),
            email_verified: true,
            image: None,
            is_external: false,
            home_server: None,
            created_at: now,
            updated_at: now,
        };
        (session, user)
    }

    #[test]
    fn keeps_a_session_for_its_lifetime() {
        let cache = SessionCache::new(Duration::from_secs(5));
        let start = Instant::now();
        let lookup = cache.get("h", start).expect_err("empty");
        cache.put(lookup, "h", &found(&UserId::new("u")), start);
        let hit = cache
            .get("h", start + Duration::from_secs(4))
            .expect("fresh");
        assert_eq!(hit.1.id, "u");
        assert!(cache.get("h", start + Duration::from_secs(5)).is_err());
        assert!(cache.get("other", start).is_err());
    }

    #[test]
    fn a_change_forgets_the_user_and_outdates_lookups_in_flight() {
        let cache = SessionCache::new(Duration::from_secs(5));
        let now = Instant::now();
        let lookup = cache.get("h-u", now).expect_err("empty");
        cache.put(lookup, "h-u", &found(&UserId::new("u")), now);
        let lookup = cache.get("h-v", now).expect_err("empty");
        cache.put(lookup, "h-v", &found(&UserId::new("v")), now);
        let in_flight = cache.get("h-w", now).expect_err("empty");
        cache.forget_user(&UserId::new("u"));
        assert!(cache.get("h-u", now).is_err(), "u forgotten");
        assert!(cache.get("h-v", now).is_ok(), "v kept");
        cache.put(in_flight, "h-w", &found(&UserId::new("w")), now);
        assert!(
            cache.get("h-w", now).is_err(),
            "read before the change: not kept"
        );
    }

    #[test]
    fn zero_lifetime_keeps_nothing() {
        let cache = SessionCache::new(Duration::ZERO);
        let now = Instant::now();
        let lookup = cache.get("h", now).expect_err("empty");
        cache.put(lookup, "h", &found(&UserId::new("u")), now);
        assert!(cache.get("h", now).is_err());
    }
}
