//! The Microsoft Graph (Outlook) adapter.
//!
//! Graph's delta works on a window of time (`MICROSOFT_SYNC_PAST_DAYS` back,
//! `MICROSOFT_SYNC_FUTURE_DAYS` ahead), so a mirror holds what lies in it: each round of
//! `calendarView/delta` pages through `@odata.nextLink`s to an `@odata.deltaLink`, which the
//! next pull calls as given. The cursor stored with the mirror is that link and when its
//! round began; a cursor older than a week, a `410` or `syncStateNotFound` starts a new full
//! round (with a fresh window). Items that are `@removed` were deleted or left the window,
//! and a full round does not list what the mirror holds outside its window: each such item
//! the mirror holds is looked up, removed only when Graph no longer has it, and otherwise
//! kept with what Graph now says of it (an event written here for last year stays). Graph
//! expands series into their occurrences
//! in the window: each is its own event here (an occurrence that lacks a title takes its
//! series master's). Items may come twice in a round; the last one counts.
//!
//! Writes: `PATCH` and `DELETE` with `If-Match: W/"<changeKey>"`; new events carry their
//! Bowline id as `transactionId`, so a retried create is not a second event. A recurring
//! event is refused (Graph's series are structured patterns, not RRULE text; writing one
//! wrongly would be worse than saying so) and the refusal is reported to the calendar.

mod mapping;

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use entities::{accounts, events, external_events};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::super::Mirrors;
use super::super::resources::Resource;
use super::super::source::{Changes, Known, RemoteCalendar, Source, SyncError, Written};
use super::super::tokens::Tokens;
use super::{read, wanted};
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::providers::ProviderError;
use crate::providers::graph::{GraphCalendar, GraphEvent};
use crate::providers::oauth::OAuthApp;
use mapping::{body, fetched};

/// Pages one round may take before it is refused as endless.
const MAX_PAGES: usize = 10_000;
/// How often a new round reset midway starts again before the pull gives up.
const RESTARTS: usize = 3;
/// A round older than this starts again (so the window moves with time).
const MAX_ROUND_AGE: Duration = Duration::days(7);

/// What a mirror's cursor holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Cursor {
    delta_link: String,
    started_at: DateTime<Utc>,
}

/// A Microsoft account's calendars.
pub struct GraphSource<'a> {
    env: &'a Mirrors,
    api: GraphCalendar,
    tokens: Tokens<'a>,
    zone: Tz,
    window: (Duration, Duration),
}

impl<'a> GraphSource<'a> {
    /// The adapter of a linked account, mirroring `window` (days back, days ahead).
    pub fn open(
        env: &'a Mirrors,
        app: OAuthApp,
        graph_url: &str,
        window: (u32, u32),
        account: &accounts::Model,
        zone: Tz,
    ) -> Result<Self, AppError> {
        let api = GraphCalendar::new(env.guard.clone(), graph_url)
            .map_err(|err| AppError::internal(err.to_string()))?;
        Ok(Self {
            env,
            api,
            tokens: Tokens::open(env, app, account)?,
            zone,
            window: (
                Duration::days(i64::from(window.0)),
                Duration::days(i64::from(window.1)),
            ),
        })
    }

    /// The window of a round begun at `at`.
    fn window_at(&self, at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        (at - self.window.0, at + self.window.1)
    }

    /// One round from `link` (or a new round over the window): every item by id (`None`
    /// for removed ones), and the delta link that ends it.
    async fn round(
        &self,
        calendar_id: &str,
        link: Option<&str>,
    ) -> Result<(BTreeMap<String, Option<GraphEvent>>, String), ProviderError> {
        let (from, to) = self.window_at(Utc::now());
        let mut page = match link {
            Some(link) => {
                self.tokens
                    .with(|token| async move { self.api.delta_page(&token, link).await })
                    .await?
            }
            None => {
                self.tokens
                    .with(|token| async move {
                        self.api.delta_start(&token, calendar_id, from, to).await
                    })
                    .await?
            }
        };
        let mut items = BTreeMap::new();
        for _ in 0..MAX_PAGES {
            for item in std::mem::take(&mut page.value) {
                let id = item.id.clone();
                if item.removed.is_some() {
                    items.insert(id, None);
                } else if item.kind.as_deref() != Some("seriesMaster") {
                    items.insert(id, Some(item));
                }
            }
            if let Some(next) = page.next_link.take() {
                page = self
                    .tokens
                    .with(|token| {
                        let next = next.as_str();
                        async move { self.api.delta_page(&token, next).await }
                    })
                    .await?;
                continue;
            }
            let delta = page.delta_link.take().ok_or_else(|| {
                ProviderError::Malformed("a delta page without nextLink or deltaLink".into())
            })?;
            return Ok((items, delta));
        }
        Err(ProviderError::Malformed(
            "the delta round never ends".into(),
        ))
    }

    /// A new round over the window; one that Graph resets midway (its pages are dropped)
    /// starts again, a few times at most.
    async fn new_round(
        &self,
        calendar_id: &str,
    ) -> Result<(BTreeMap<String, Option<GraphEvent>>, String), ProviderError> {
        for _ in 0..RESTARTS {
            match self.round(calendar_id, None).await {
                Err(ProviderError::SyncReset) => {
                    tracing::info!(provider = "microsoft", "sync.round_restarted");
                }
                other => return other,
            }
        }
        Err(ProviderError::SyncReset)
    }

    /// Series masters of occurrences that lack their own title, by id.
    async fn masters(
        &self,
        items: &BTreeMap<String, Option<GraphEvent>>,
    ) -> Result<HashMap<String, GraphEvent>, ProviderError> {
        let mut masters = HashMap::new();
        for item in items.values().flatten() {
            let Some(master_id) = item.series_master_id.as_deref() else {
                continue;
            };
            if item.subject.is_some() || masters.contains_key(master_id) {
                continue;
            }
            let master = self
                .tokens
                .with(|token| async move { self.api.event(&token, master_id).await })
                .await?;
            if let Some(master) = master {
                masters.insert(master_id.to_owned(), master);
            }
        }
        Ok(masters)
    }
}

impl Source for GraphSource<'_> {
    fn provider(&self) -> Provider {
        Provider::Microsoft
    }

    async fn calendars(&self) -> Result<Vec<RemoteCalendar>, SyncError> {
        let entries = self
            .tokens
            .with(|token| async move { self.api.calendars(&token).await })
            .await?;
        Ok(entries
            .into_iter()
            .map(|entry| RemoteCalendar {
                read_only: !entry.can_edit,
                name: entry.name.clone(),
                color: entry.hex_color.clone().filter(|color| !color.is_empty()),
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
        let now = Utc::now();
        let stored = cursor
            .and_then(|text| serde_json::from_str::<Cursor>(text).ok())
            .filter(|cursor| now - cursor.started_at < MAX_ROUND_AGE);
        let (items, delta_link, started_at, full) = match stored {
            Some(cursor) => match self.round(&calendar.id, Some(&cursor.delta_link)).await {
                Ok((items, link)) => (items, link, cursor.started_at, false),
                Err(ProviderError::SyncReset) => {
                    tracing::info!(provider = "microsoft", "sync.token_refused");
                    let (items, link) = self.new_round(&calendar.id).await?;
                    (items, link, now, true)
                }
                Err(err) => return Err(err.into()),
            },
            None => {
                let (items, link) = self.new_round(&calendar.id).await?;
                (items, link, now, true)
            }
        };
        let masters = self.masters(&items).await?;
        let (from, to) = self.window_at(started_at);
        let mut listed = HashSet::new();
        // Known items Graph no longer shows: deleted, or out of the window (kept).
        let mut missing = Vec::new();
        let mut wanted_items = Vec::new();
        for (id, item) in &items {
            match item {
                None => {
                    if known.contains_key(id) {
                        missing.push(id.clone());
                    }
                }
                Some(event) => {
                    listed.insert(id.clone());
                    if wanted(id, event.tag().as_ref(), known, skip) {
                        let master = event
                            .series_master_id
                            .as_deref()
                            .and_then(|master| masters.get(master));
                        wanted_items.push(fetched(event, master));
                    }
                }
            }
        }
        if full {
            // What the mirror holds inside the window but the round did not list.
            missing.extend(
                known
                    .iter()
                    .filter(|(href, item)| {
                        !listed.contains(*href)
                            && item
                                .span
                                .is_none_or(|(start, end)| start < to && end >= from)
                    })
                    .map(|(href, _)| href.clone()),
            );
        }
        missing.sort();
        missing.dedup();
        // An item that left the window still exists: it is kept (with its new times); only
        // what Graph no longer has is removed.
        let mut removed = Vec::new();
        for id in missing.into_iter().filter(|id| !skip.contains(id)) {
            let there = self
                .tokens
                .with(|token| {
                    let id = id.as_str();
                    async move { self.api.event(&token, id).await }
                })
                .await?;
            match there.filter(|event| event.kind.as_deref() != Some("seriesMaster")) {
                None => removed.push(id),
                Some(event) => {
                    if wanted(&id, event.tag().as_ref(), known, skip) {
                        wanted_items.push(fetched(&event, None));
                    }
                }
            }
        }
        let cursor = serde_json::to_string(&Cursor {
            delta_link,
            started_at,
        })
        .map_err(|err| AppError::internal(err.to_string()))?;
        Ok(Changes {
            resources: read(self.env, wanted_items, self.zone).await?,
            removed,
            cursor: Some(cursor),
        })
    }

    async fn resource(
        &self,
        _calendar_id: &str,
        href: &str,
    ) -> Result<Option<Resource>, SyncError> {
        let event = self
            .tokens
            .with(|token| async move { self.api.event(&token, href).await })
            .await?;
        let Some(event) = event.filter(|event| event.kind.as_deref() != Some("seriesMaster"))
        else {
            return Ok(None);
        };
        let master = match event.series_master_id.as_deref() {
            Some(master_id) if event.subject.is_none() => {
                self.tokens
                    .with(|token| async move { self.api.event(&token, master_id).await })
                    .await?
            }
            _ => None,
        };
        let item = fetched(&event, master.as_ref());
        Ok(read(self.env, vec![item], self.zone).await?.pop())
    }

    async fn write(
        &self,
        calendar_id: &str,
        event: &events::Model,
        existing: Option<&external_events::Model>,
    ) -> Result<Written, SyncError> {
        if event
            .recurrence
            .as_deref()
            .is_some_and(|rule| !rule.trim().is_empty())
        {
            return Err(ProviderError::Unsupported(
                "Recurring events can't be written to Outlook calendars yet; the change stays in Bowline."
                    .into(),
            )
            .into());
        }
        let body = body(event);
        let stored = match existing {
            Some(mapping) => {
                let (href, etag) = (mapping.remote_href.as_str(), mapping.etag.as_deref());
                self.tokens
                    .with(|token| {
                        let body = &body;
                        async move { self.api.update_event(&token, href, body, etag).await }
                    })
                    .await?
            }
            None => {
                let mut body = body.clone();
                body["transactionId"] = json!(event.id.to_string());
                self.tokens
                    .with(|token| {
                        let body = &body;
                        async move { self.api.create_event(&token, calendar_id, body).await }
                    })
                    .await?
            }
        };
        Ok(Written {
            etag: stored.tag(),
            uid: stored.ical_uid.clone(),
            href: stored.id,
        })
    }

    async fn delete(
        &self,
        _calendar_id: &str,
        href: &str,
        etag: Option<&str>,
    ) -> Result<(), SyncError> {
        self.tokens
            .with(|token| async move { self.api.delete_event(&token, href, etag).await })
            .await?;
        Ok(())
    }

    async fn create_calendar(&self, name: &str, _color: &str) -> Result<String, SyncError> {
        Ok(self
            .tokens
            .with(|token| async move { self.api.create_calendar(&token, name).await })
            .await?)
    }

    async fn update_calendar(
        &self,
        calendar_id: &str,
        name: &str,
        _color: &str,
    ) -> Result<(), SyncError> {
        self.tokens
            .with(|token| async move { self.api.rename_calendar(&token, calendar_id, name).await })
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
