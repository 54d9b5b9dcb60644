//! The cache of full events reads (`GET /api/v1/events` without `since` or a range): per
//! user, the rendered events and the calendar versions they were read at
//! ([`crate::store::events::reads::versions`], read in the same snapshot as the events).
//!
//! A read asks the database for the reader's current versions first; when they equal the
//! cached ones, nothing the reader can see has changed (triggers raise a calendar's version
//! with every change to its links or linked events, and the versions name the reader's
//! calendars), so the cached events are served. The versions live in the database, so this
//! holds with several servers on one database. The cache is bounded by `READ_CACHE_BYTES`;
//! the least recently used entries go first.
//!
//! Only small reads are cached: a reader who sees more than `EVENTS_STREAM_ABOVE` events is
//! streamed their events ([`super::streamed`]), and the limits of those streams (how many
//! at once, in what chunks, for how long) are kept here too, one set per server.
//!
//! **One reader cannot take every stream.** A reader found to see more than
//! `EVENTS_STREAM_ABOVE` events is remembered as a big reader ([`StreamLimits::reader`]):
//! their next full reads go straight to a stream, without first sizing the read on a
//! pooled connection, and at most [`StreamLimits::per_reader`] of their streams run at
//! once (2, and always fewer than the streams the server runs at once), so a hundred full
//! reads from one account wait in that account's own line, holding no connection, while
//! other readers' streams and small reads go on. A big reader whose stream turns out small
//! is forgotten.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Semaphore;

use crate::config::StorageSettings;
use crate::domain::ids::UserId;

/// Cached full events reads of one server, and the limits of those too big to cache.
#[derive(Debug)]
pub struct EventReadCache {
    limit: usize,
    inner: Mutex<Entries>,
    streams: StreamLimits,
}

/// How full reads too big for the cache are streamed.
#[derive(Debug)]
pub(crate) struct StreamLimits {
    /// Reads listing more events than this are streamed.
    pub(crate) above: u64,
    /// Events per chunk.
    pub(crate) chunk: usize,
    /// The longest a stream may hold its snapshot.
    pub(crate) timeout: Duration,
    /// One permit per stream that may run at once.
    pub(crate) permits: Arc<Semaphore>,
    /// How many streams of one reader may run at once.
    pub(crate) per_reader: usize,
    /// The big readers, each with one permit per stream of theirs that may run at once.
    readers: Arc<Mutex<HashMap<UserId, Arc<Semaphore>>>>,
}

/// A big reader's place in [`StreamLimits`]: the permits of their streams, and the way to
/// forget them once their events fit a small read again.
#[derive(Debug, Clone)]
pub(crate) struct BigReader {
    user: UserId,
    pub(crate) permits: Arc<Semaphore>,
    readers: Arc<Mutex<HashMap<UserId, Arc<Semaphore>>>>,
}

impl BigReader {
    /// The reader's streamed read listed no more events than a small read may: their next
    /// full read is sized (and perhaps cached) again.
    pub(crate) fn forget(&self) {
        let mut readers = self.readers.lock();
        if readers
            .get(&self.user)
            .is_some_and(|permits| Arc::ptr_eq(permits, &self.permits))
        {
            readers.remove(&self.user);
        }
    }
}

impl StreamLimits {
    /// The limits `settings` configure: streams above `events_stream_above` events, in
    /// chunks of `events_stream_chunk`, for `events_stream_timeout_ms` at most, half of the
    /// pool's connections (at least one) streaming at once, and of those at most two (and
    /// always one fewer than all, where there are two or more) for one reader.
    pub(crate) fn new(settings: &StorageSettings) -> Self {
        let streams = (settings.max_connections as usize / 2).max(1);
        Self {
            above: u64::from(settings.events_stream_above),
            chunk: (settings.events_stream_chunk as usize).max(1),
            timeout: Duration::from_millis(settings.events_stream_timeout_ms),
            permits: Arc::new(Semaphore::new(streams)),
            per_reader: streams.saturating_sub(1).clamp(1, 2),
            readers: Arc::default(),
        }
    }

    /// Whether `user` is a known big reader (their full reads go straight to a stream).
    pub(crate) fn is_big_reader(&self, user: &UserId) -> bool {
        self.readers.lock().contains_key(user)
    }

    /// `user` as a big reader, remembered from now on.
    pub(crate) fn reader(&self, user: &UserId) -> BigReader {
        let permits = self
            .readers
            .lock()
            .entry(user.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_reader)))
            .clone();
        BigReader {
            user: user.clone(),
            permits,
            readers: self.readers.clone(),
        }
    }
}

#[derive(Debug, Default)]
struct Entries {
    by_user: HashMap<UserId, Entry>,
    bytes: usize,
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    versions: String,
    events: Arc<str>,
    used: u64,
}

impl Entry {
    fn size(&self, user: &UserId) -> usize {
        user.as_str().len() + self.versions.len() + self.events.len()
    }
}

impl EventReadCache {
    /// A cache holding at most `limit` bytes of events (`0` keeps nothing), for reads of at
    /// most as many events as `streams` allow.
    pub(crate) fn new(limit: usize, streams: StreamLimits) -> Self {
        Self {
            limit,
            inner: Mutex::new(Entries::default()),
            streams,
        }
    }

    /// How reads too big for the cache are streamed.
    pub(crate) fn streams(&self) -> &StreamLimits {
        &self.streams
    }

    /// Whether `user` has an entry (otherwise there is nothing to validate).
    pub fn holds(&self, user: &UserId) -> bool {
        self.limit > 0 && self.inner.lock().by_user.contains_key(user)
    }

    /// The events cached for `user`, if they were read at `versions`.
    pub fn get(&self, user: &UserId, versions: &str) -> Option<Arc<str>> {
        let mut entries = self.inner.lock();
        entries.clock += 1;
        let now = entries.clock;
        let entry = entries.by_user.get_mut(user)?;
        if entry.versions != versions {
            return None;
        }
        entry.used = now;
        Some(entry.events.clone())
    }

    /// Keeps `events`, read at `versions`, for `user`, evicting the least recently used
    /// entries beyond the limit.
    pub fn put(&self, user: &UserId, versions: String, events: Arc<str>) {
        let mut entries = self.inner.lock();
        entries.clock += 1;
        let entry = Entry {
            versions,
            events,
            used: entries.clock,
        };
        let size = entry.size(user);
        if let Some(old) = entries.by_user.remove(user) {
            entries.bytes -= old.size(user);
        }
        if size > self.limit {
            return;
        }
        while entries.bytes + size > self.limit {
            let Some(oldest) = entries
                .by_user
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(u, _)| u.clone())
            else {
                break;
            };
            if let Some(old) = entries.by_user.remove(&oldest) {
                entries.bytes -= old.size(&oldest);
            }
        }
        entries.bytes += size;
        entries.by_user.insert(user.clone(), entry);
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn limits() -> StreamLimits {
        StreamLimits {
            above: 10,
            chunk: 5,
            timeout: Duration::from_secs(1),
            permits: Arc::new(Semaphore::new(1)),
            per_reader: 1,
            readers: Arc::default(),
        }
    }

    #[test]
    fn one_reader_gets_fewer_streams_than_all_and_is_forgotten_once_small() {
        for (connections, streams, per_reader) in
            [(1, 1, 1), (2, 1, 1), (4, 2, 1), (6, 3, 2), (20, 10, 2)]
        {
            let mut settings = crate::config::Settings::load_with(&[], &|_| None)
                .expect("defaults load")
                .storage;
            settings.max_connections = connections;
            let limits = StreamLimits::new(&settings);
            assert_eq!(limits.permits.available_permits(), streams, "{connections}");
            assert_eq!(limits.per_reader, per_reader, "{connections}");
        }
        let limits = limits();
        assert!(!limits.is_big_reader(&UserId::new("u")));
        let reader = limits.reader(&UserId::new("u"));
        assert!(limits.is_big_reader(&UserId::new("u")));
        assert!(Arc::ptr_eq(
            &reader.permits,
            &limits.reader(&UserId::new("u")).permits
        ));
        reader.forget();
        assert!(!limits.is_big_reader(&UserId::new("u")));
    }

    #[test]
    fn serves_only_what_was_read_at_the_same_versions() {
        let cache = EventReadCache::new(1024, limits());
        assert!(!cache.holds(&UserId::new("u")));
        cache.put(&UserId::new("u"), "a:1".into(), "[1]".into());
        assert!(cache.holds(&UserId::new("u")));
        assert_eq!(cache.get(&UserId::new("u"), "a:1").as_deref(), Some("[1]"));
        assert_eq!(cache.get(&UserId::new("u"), "a:2"), None);
        assert_eq!(cache.get(&UserId::new("v"), "a:1"), None);
        cache.put(&UserId::new("u"), "a:2".into(), "[2]".into());
        assert_eq!(cache.get(&UserId::new("u"), "a:1"), None);
        assert_eq!(cache.get(&UserId::new("u"), "a:2").as_deref(), Some("[2]"));
    }

    #[test]
    fn keeps_within_its_limit_evicting_the_least_recently_used() {
        // Each entry: 1 (user) + 3 (versions) + 16 (events) = 20 bytes.
        let cache = EventReadCache::new(50, limits());
        let events = || Arc::<str>::from("0123456789abcdef");
        cache.put(&UserId::new("a"), "x:1".into(), events());
        cache.put(&UserId::new("b"), "x:1".into(), events());
        assert!(cache.get(&UserId::new("a"), "x:1").is_some());
        cache.put(&UserId::new("c"), "x:1".into(), events());
        assert!(cache.holds(&UserId::new("a")) && cache.holds(&UserId::new("c")));
        assert!(!cache.holds(&UserId::new("b")), "b was used least recently");
        assert_eq!(cache.inner.lock().bytes, 40);
        // Too big for the cache: not kept, and the old entry of that user is gone.
        cache.put(&UserId::new("a"), "x:2".into(), "x".repeat(60).into());
        assert!(!cache.holds(&UserId::new("a")));
        assert_eq!(cache.inner.lock().bytes, 20);
        let off = EventReadCache::new(0, limits());
        off.put(&UserId::new("a"), "x:1".into(), events());
        assert!(!off.holds(&UserId::new("a")));
    }
}
