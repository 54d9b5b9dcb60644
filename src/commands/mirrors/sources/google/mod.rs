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

mod mapping;

use std::collections::{BTreeMap, HashSet};

use chrono_tz::Tz;
use entities::{accounts, events, external_events};
use serde_json::json;

use super::super::Mirrors;
use super::super::resources::Resource;
use super::super::source::{Changes, Known, RemoteCalendar, Source, SyncError, Written};
use super::super::tokens::Tokens;
use super::{read, wanted};
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::providers::ProviderError;
use crate::providers::google::{EventsQuery, GoogleCalendar, GoogleEvent};
use crate::providers::oauth::OAuthApp;
use mapping::{body, fetched, google_id, if_match};

/// Pages one listing may take before it is refused as endless.
const MAX_PAGES: usize = 10_000;
/// How often a full listing reset midway starts again before the pull gives up.
const RESTARTS: usize = 3;

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

    /// Every item of a listing of `calendar_id` (all pages) and the token that ends it. A full
    /// listing that Google resets midway (`410`: its pages are dropped) starts again, a few
    /// times at most.
    async fn listing(
        &self,
        calendar_id: &str,
        sync_token: Option<&str>,
    ) -> Result<(Vec<GoogleEvent>, Option<String>), ProviderError> {
        if sync_token.is_some() {
            return self.pages(calendar_id, sync_token, None).await;
        }
        for _ in 0..RESTARTS {
            match self.pages(calendar_id, None, None).await {
                Err(ProviderError::SyncReset) => {
                    tracing::info!(provider = "google", "sync.listing_restarted");
                }
                other => return other,
            }
        }
        Err(ProviderError::SyncReset)
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
        let mut to_read = Vec::new();
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
            let resource = fetched(&master, &instances);
            if wanted(&id, resource.etag.as_ref(), known, skip) {
                to_read.push(resource);
            }
        }
        if full {
            removed.extend(known.keys().filter(|href| !listed.contains(*href)).cloned());
        }
        removed.sort();
        removed.dedup();
        Ok(Changes {
            resources: read(self.env, to_read, self.zone).await?,
            removed,
            cursor: token.filter(|token| !token.is_empty()),
        })
    }

    async fn resource(&self, calendar_id: &str, href: &str) -> Result<Option<Resource>, SyncError> {
        let Some((master, instances)) = self.series(calendar_id, href).await? else {
            return Ok(None);
        };
        let resource = fetched(&master, &instances);
        Ok(read(self.env, vec![resource], self.zone).await?.pop())
    }

    async fn write(
        &self,
        calendar_id: &str,
        event: &events::Model,
        existing: Option<&external_events::Model>,
    ) -> Result<Written, SyncError> {
        let body = body(event, self.zone);
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
