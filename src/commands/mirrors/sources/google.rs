//! The Google Calendar adapter.
//!
//! Pulls list each calendar's events from its sync token (a `410 fullSyncRequired`, on any
//! page, discards the pages read so far and lists everything again, sweeping what vanished).
//! A series is one resource, named by its master's id, holding the master and its edited
//! instances; instances removed from it ("delete this event only": cancelled exceptions)
//! become EXDATEs of the master. When an incremental listing touches a series, the whole
//! series is read again (`iCalUID=` with deleted instances), so the resource is always
//! complete. A cancelled event without a series is deleted.
//!
//! The resource's tag is its master's etag, followed by `+<digest>` of its instances' etags
//! when it has any, so a change to any of them is seen; writes send only the master's own
//! quoted etag in `If-Match`. New events are inserted under an id derived from their
//! Bowline id, so a retried insert meets `409` ("already there") and is adopted instead of
//! duplicated.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use chrono_tz::Tz;
use entities::{accounts, events, external_events};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::super::Mirrors;
use super::super::resources::{Fetched, Resource};
use super::super::source::{Changes, Known, RemoteCalendar, Source, SyncError, Written};
use super::super::tokens::Tokens;
use super::vevent::{self, Item, When};
use super::{read, wanted};
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::ical::export::recurrence_lines;
use crate::ical::timezones::named_zone;
use crate::providers::ProviderError;
use crate::providers::google::{EventTime, EventsQuery, GoogleCalendar, GoogleEvent};
use crate::providers::oauth::OAuthApp;

/// Pages one listing may take before it is refused as endless.
const MAX_PAGES: usize = 10_000;

/// A Google account's calendars.
pub struct GoogleSource<'a> {
    env: &'a Mirrors,
    api: GoogleCalendar,
    tokens: Tokens<'a>,
    zone: Tz,
}

impl<'a> GoogleSource<'a> {
    /// The adapter of a linked account; events are written in its owner's `zone`.
    pub fn open(
        env: &'a Mirrors,
        app: OAuthApp,
        api_url: &str,
        account: &accounts::Model,
        zone: Tz,
    ) -> Result<Self, AppError> {
        let api = GoogleCalendar::new(env.guard.clone(), api_url)
            .map_err(|err| AppError::internal(err.to_string()))?;
        Ok(Self {
            env,
            api,
            tokens: Tokens::open(env, app, account)?,
            zone,
        })
    }

    /// Every item of a listing of `calendar_id` (all pages) and the token that ends it.
    async fn listing(
        &self,
        calendar_id: &str,
        sync_token: Option<&str>,
    ) -> Result<(Vec<GoogleEvent>, Option<String>), ProviderError> {
        self.pages(calendar_id, sync_token, None).await
    }

    async fn pages(
        &self,
        calendar_id: &str,
        sync_token: Option<&str>,
        ical_uid: Option<&str>,
    ) -> Result<(Vec<GoogleEvent>, Option<String>), ProviderError> {
        let mut items = Vec::new();
        let mut page_token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let query = EventsQuery {
                sync_token,
                page_token: page_token.as_deref(),
                ical_uid,
            };
            let page = self
                .tokens
                .with(|token| {
                    let query = &query;
                    async move { self.api.events_page(&token, calendar_id, query).await }
                })
                .await?;
            items.extend(page.items);
            match page.next_page_token.filter(|next| !next.is_empty()) {
                Some(next) => page_token = Some(next),
                None => return Ok((items, page.next_sync_token)),
            }
        }
        Err(ProviderError::Malformed(
            "the event listing never ends".into(),
        ))
    }

    /// A series as Google holds it now: its master and every instance of it (removed ones
    /// included); `None` when the master is gone.
    async fn series(
        &self,
        calendar_id: &str,
        master_id: &str,
    ) -> Result<Option<(GoogleEvent, Vec<GoogleEvent>)>, ProviderError> {
        let master = self
            .tokens
            .with(|token| async move { self.api.event(&token, calendar_id, master_id).await })
            .await?;
        let Some(master) = master.filter(|master| !master.is_cancelled()) else {
            return Ok(None);
        };
        let instances = match (&master.ical_uid, master.is_series()) {
            (Some(uid), true) => self
                .pages(calendar_id, None, Some(uid))
                .await?
                .0
                .into_iter()
                .filter(|item| item.recurring_event_id.as_deref() == Some(master_id))
                .collect(),
            _ => Vec::new(),
        };
        Ok(Some((master, instances)))
    }

    /// The resource text of a master and its instances.
    fn fetched(&self, master: &GoogleEvent, instances: &[GoogleEvent]) -> Fetched {
        Fetched {
            href: master.id.clone(),
            etag: resource_tag(master, instances),
            text: vevent::calendar(&items_of(master, instances)),
        }
    }

    /// The event's body for Google.
    fn body(&self, event: &events::Model) -> Value {
        let time = |at: DateTime<Utc>, day: NaiveDate| {
            if event.is_all_day {
                json!({ "date": day.format("%Y-%m-%d").to_string() })
            } else {
                json!({
                    "dateTime": at.to_rfc3339_opts(SecondsFormat::Secs, true),
                    "timeZone": self.zone.name(),
                })
            }
        };
        let first = event.start.date_naive();
        let last = event.end.date_naive().max(first);
        let mut body = json!({
            "summary": event.title,
            "description": event.description,
            "location": event.location,
            "start": time(event.start, first),
            "end": time(event.end, last + Duration::days(1)),
        });
        let recurrence = recurrence_lines(event);
        if !recurrence.is_empty() {
            body["recurrence"] = json!(recurrence);
        }
        body
    }
}

/// The Google id a new event gets: its Bowline id's 32 hex digits (base32hex, as Google
/// wants client ids).
fn google_id(event: &events::Model) -> String {
    event.id.simple().to_string()
}

/// The stored tag of a resource: the master's etag, and a digest of its instances' tags.
fn resource_tag(master: &GoogleEvent, instances: &[GoogleEvent]) -> Option<String> {
    let own = master.etag.clone()?;
    if instances.is_empty() {
        return Some(own);
    }
    let mut parts: Vec<String> = instances
        .iter()
        .map(|item| format!("{}={}", item.id, item.etag.as_deref().unwrap_or_default()))
        .collect();
    parts.sort();
    let digest = Sha256::digest(parts.join("\n").as_bytes());
    let short: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Some(format!("{own}+{short}"))
}

/// The `If-Match` value of a stored tag: the master's own quoted etag.
fn if_match(stored: Option<&str>) -> Option<&str> {
    stored.map(|tag| match tag.rfind('"') {
        Some(end) => &tag[..=end],
        None => tag,
    })
}

/// A Google time as the importer reads it.
fn when(time: &EventTime) -> Option<When> {
    if let Some(date) = &time.date {
        return NaiveDate::parse_from_str(date, "%Y-%m-%d")
            .ok()
            .map(When::Date);
    }
    let text = time.date_time.as_deref()?;
    let zone = time
        .time_zone
        .as_deref()
        .filter(|zone| named_zone(zone).is_some());
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(
            match zone.and_then(|name| Some((name, named_zone(name)?))) {
                Some((name, tz)) => When::Zoned {
                    local: at.with_timezone(&tz).naive_local(),
                    zone: name.to_owned(),
                },
                None => When::Utc(at.naive_utc()),
            },
        );
    }
    // A wall-clock time without offset, in its named zone.
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S").ok()?;
    Some(match zone {
        Some(name) => When::Zoned {
            local,
            zone: name.to_owned(),
        },
        None => When::Utc(local),
    })
}

/// The VEVENTs of a master and its instances: removed instances become EXDATEs, edited
/// ones overrides.
fn items_of(master: &GoogleEvent, instances: &[GoogleEvent]) -> Vec<Item> {
    let uid = master.ical_uid.clone().unwrap_or_else(|| master.id.clone());
    let item = |event: &GoogleEvent| Item {
        uid: uid.clone(),
        summary: event.summary.clone(),
        description: event.description.clone(),
        location: event.location.clone(),
        start: event.start.as_ref().and_then(when),
        end: event.end.as_ref().and_then(when),
        ..Item::default()
    };
    let mut first = item(master);
    first.recurrence = master.recurrence.clone().unwrap_or_default();
    let mut items = vec![first];
    for instance in instances {
        let Some(original) = instance.original_start_time.as_ref().and_then(when) else {
            continue;
        };
        if instance.is_cancelled() {
            items[0].exdates.push(original);
        } else {
            let mut edited = item(instance);
            edited.recurrence_id = Some(original);
            items.push(edited);
        }
    }
    if !master.is_series() {
        items.truncate(1);
        items[0].exdates.clear();
    }
    items
}

/// A master and its instances as one listing holds them.
#[derive(Default)]
struct Group {
    master: Option<GoogleEvent>,
    instances: Vec<GoogleEvent>,
}

impl Source for GoogleSource<'_> {
    fn provider(&self) -> Provider {
        Provider::Google
    }

    async fn calendars(&self) -> Result<Vec<RemoteCalendar>, SyncError> {
        let entries = self
            .tokens
            .with(|token| async move { self.api.calendar_list(&token).await })
            .await?;
        Ok(entries
            .into_iter()
            // A free/busy view shows no events to mirror.
            .filter(|entry| entry.access_role.as_deref() != Some("freeBusyReader"))
            .map(|entry| RemoteCalendar {
                read_only: !entry.writable(),
                name: entry.summary_override.clone().or(entry.summary.clone()),
                color: entry.background_color.clone(),
                id: entry.id,
                version: None,
            })
            .collect())
    }

    async fn changes(
        &self,
        calendar: &RemoteCalendar,
        cursor: Option<&str>,
        known: &Known,
        skip: &HashSet<String>,
    ) -> Result<Changes, SyncError> {
        let calendar_id = calendar.id.as_str();
        let (items, token, full) = match cursor {
            Some(cursor) => match self.listing(calendar_id, Some(cursor)).await {
                Ok((items, token)) => (items, token, false),
                Err(ProviderError::SyncReset) => {
                    tracing::info!(provider = "google", "sync.token_refused");
                    let (items, token) = self.listing(calendar_id, None).await?;
                    (items, token, true)
                }
                Err(err) => return Err(err.into()),
            },
            None => {
                let (items, token) = self.listing(calendar_id, None).await?;
                (items, token, true)
            }
        };
        let mut groups: BTreeMap<String, Group> = BTreeMap::new();
        for item in items {
            match item.recurring_event_id.clone() {
                Some(series) => groups.entry(series).or_default().instances.push(item),
                None => {
                    let id = item.id.clone();
                    groups.entry(id).or_default().master = Some(item);
                }
            }
        }
        let mut listed: HashSet<String> = HashSet::new();
        let mut removed = Vec::new();
        let mut fetched = Vec::new();
        for (id, group) in groups {
            if skip.contains(&id) {
                listed.insert(id);
                continue;
            }
            let cancelled = group.master.as_ref().is_some_and(GoogleEvent::is_cancelled);
            if cancelled {
                if known.contains_key(&id) {
                    removed.push(id);
                }
                continue;
            }
            let whole = match group.master {
                // A plain event, or a whole series as a full listing holds it.
                Some(master) if full || (!master.is_series() && group.instances.is_empty()) => {
                    Some((master, group.instances))
                }
                // A series touched by an incremental listing: read it whole.
                _ => self.series(calendar_id, &id).await?,
            };
            let Some((master, instances)) = whole else {
                if known.contains_key(&id) {
                    removed.push(id);
                }
                continue;
            };
            listed.insert(id.clone());
            let resource = self.fetched(&master, &instances);
            if wanted(&id, resource.etag.as_ref(), known, skip) {
                fetched.push(resource);
            }
        }
        if full {
            removed.extend(known.keys().filter(|href| !listed.contains(*href)).cloned());
        }
        removed.sort();
        removed.dedup();
        Ok(Changes {
            resources: read(self.env, fetched, self.zone).await?,
            removed,
            cursor: token.filter(|token| !token.is_empty()),
        })
    }

    async fn resource(&self, calendar_id: &str, href: &str) -> Result<Option<Resource>, SyncError> {
        let Some((master, instances)) = self.series(calendar_id, href).await? else {
            return Ok(None);
        };
        let fetched = self.fetched(&master, &instances);
        Ok(read(self.env, vec![fetched], self.zone).await?.pop())
    }

    async fn write(
        &self,
        calendar_id: &str,
        event: &events::Model,
        existing: Option<&external_events::Model>,
    ) -> Result<Written, SyncError> {
        let body = self.body(event);
        let written = |stored: GoogleEvent| Written {
            href: stored.id,
            etag: stored.etag,
            uid: stored.ical_uid,
        };
        if let Some(mapping) = existing {
            let href = mapping.remote_href.as_str();
            let etag = if_match(mapping.etag.as_deref());
            let stored = self
                .tokens
                .with(|token| {
                    let body = &body;
                    async move {
                        self.api
                            .update_event(&token, calendar_id, href, body, etag)
                            .await
                    }
                })
                .await?;
            return Ok(written(stored));
        }
        let id = google_id(event);
        let mut with_id = body.clone();
        with_id["id"] = json!(id);
        let inserted = self
            .tokens
            .with(|token| {
                let body = &with_id;
                async move { self.api.insert_event(&token, calendar_id, body).await }
            })
            .await;
        match inserted {
            Ok(stored) => Ok(written(stored)),
            Err(ProviderError::AlreadyExists) => {
                // An earlier attempt got through unrecorded (the event is there: write the
                // current state over it), or the id belongs to an event deleted there
                // earlier (insert anew under an id Google picks).
                let there = self
                    .tokens
                    .with(|token| {
                        let id = id.as_str();
                        async move { self.api.event(&token, calendar_id, id).await }
                    })
                    .await?;
                let stored = match there.filter(|there| !there.is_cancelled()) {
                    Some(there) => {
                        let etag = there.etag.clone();
                        self.tokens
                            .with(|token| {
                                let (body, id, etag) = (&body, id.as_str(), etag.as_deref());
                                async move {
                                    self.api
                                        .update_event(&token, calendar_id, id, body, etag)
                                        .await
                                }
                            })
                            .await?
                    }
                    None => self
                        .tokens
                        .with(|token| {
                            let body = &body;
                            async move { self.api.insert_event(&token, calendar_id, body).await }
                        })
                        .await?,
                };
                Ok(written(stored))
            }
            Err(err) => Err(err.into()),
        }
    }

    async fn delete(
        &self,
        calendar_id: &str,
        href: &str,
        etag: Option<&str>,
    ) -> Result<(), SyncError> {
        let etag = if_match(etag);
        self.tokens
            .with(
                |token| async move { self.api.delete_event(&token, calendar_id, href, etag).await },
            )
            .await?;
        Ok(())
    }

    async fn create_calendar(&self, name: &str, color: &str) -> Result<String, SyncError> {
        let id = self
            .tokens
            .with(|token| async move { self.api.insert_calendar(&token, name).await })
            .await?;
        let colored = self
            .tokens
            .with(|token| {
                let id = id.as_str();
                async move { self.api.update_calendar(&token, id, name, color).await }
            })
            .await;
        if let Err(err) = colored {
            tracing::warn!(error = %err, "sync.calendar_color_not_set");
        }
        Ok(id)
    }

    async fn update_calendar(
        &self,
        calendar_id: &str,
        name: &str,
        color: &str,
    ) -> Result<(), SyncError> {
        self.tokens
            .with(|token| async move {
                self.api
                    .update_calendar(&token, calendar_id, name, color)
                    .await
            })
            .await?;
        Ok(())
    }

    async fn delete_calendar(&self, calendar_id: &str) -> Result<(), SyncError> {
        self.tokens
            .with(|token| async move { self.api.delete_calendar(&token, calendar_id).await })
            .await?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn event(value: Value) -> GoogleEvent {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_series_tag_covers_its_instances_and_if_match_sends_the_masters_own() {
        let master = event(json!({"id": "m", "etag": "\"1\"", "recurrence": ["RRULE:FREQ=DAILY"]}));
        assert_eq!(resource_tag(&master, &[]).as_deref(), Some("\"1\""));
        let cancelled = event(json!({"id": "m_1", "etag": "\"2\"", "status": "cancelled",
            "recurringEventId": "m", "originalStartTime": {"date": "2026-12-02"}}));
        let tag = resource_tag(&master, std::slice::from_ref(&cancelled)).unwrap();
        assert!(tag.starts_with("\"1\"+"), "{tag}");
        assert_eq!(if_match(Some(&tag)), Some("\"1\""));
        assert_eq!(if_match(Some("\"1\"")), Some("\"1\""));
        let items = items_of(&master, &[cancelled]);
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].exdates.len(), 1);
    }

    #[test]
    fn times_keep_their_zone_or_are_read_in_utc() {
        let zoned = EventTime {
            date_time: Some("2026-12-01T09:00:00+01:00".into()),
            time_zone: Some("Europe/Berlin".into()),
            ..EventTime::default()
        };
        assert!(matches!(when(&zoned), Some(When::Zoned { zone, .. }) if zone == "Europe/Berlin"));
        let utc = EventTime {
            date_time: Some("2026-12-01T09:00:00+01:00".into()),
            ..EventTime::default()
        };
        assert_eq!(
            when(&utc),
            Some(When::Utc(
                NaiveDateTime::parse_from_str("2026-12-01T08:00:00", "%Y-%m-%dT%H:%M:%S").unwrap()
            ))
        );
        let day = EventTime {
            date: Some("2026-12-01".into()),
            ..EventTime::default()
        };
        assert!(matches!(when(&day), Some(When::Date(_))));
    }
}
