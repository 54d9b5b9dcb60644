//! The CalDAV adapter: RFC 6578 `sync-collection` from the mirror's token (a refused token
//! means a full listing that sweeps what vanished; a server without sync-collection is
//! listed with etags), multiget of what changed, `PUT` with `If-None-Match: *` for new
//! resources and `If-Match` for changes, `DELETE` with `If-Match`, and `MKCALENDAR`,
//! `PROPPATCH` and `DELETE` for calendars.

use std::collections::HashSet;

use chrono_tz::Tz;
use entities::{caldav_accounts, events, external_events};

use super::super::Mirrors;
use super::super::resources::{Fetched, Resource};
use super::super::source::{Changes, Known, RemoteCalendar, Source, SyncError, Written};
use super::{read, wanted};
use crate::domain::providers::Provider;
use crate::error::AppError;
use crate::ical::export::export_resource;
use crate::providers::ProviderError;
use crate::providers::caldav::{CaldavClient, CaldavError, RemoteObject, SyncChanges};
use crate::store::settings;

/// A CalDAV account's calendars.
pub struct CaldavSource<'a> {
    env: &'a Mirrors,
    client: CaldavClient,
    home: url::Url,
    zone: Tz,
}

impl<'a> CaldavSource<'a> {
    /// The adapter for `client`, whose calendars live in `home`; floating times are read in
    /// `zone`.
    pub fn new(env: &'a Mirrors, client: CaldavClient, home: url::Url, zone: Tz) -> Self {
        Self {
            env,
            client,
            home,
            zone,
        }
    }

    /// The adapter of a stored account (its password opened with the configured key).
    pub async fn open(
        env: &'a Mirrors,
        account: &caldav_accounts::Model,
    ) -> Result<Self, AppError> {
        let client = env.caldav_client(account)?;
        let home = url::Url::parse(&account.home_url)
            .map_err(|err| AppError::internal(format!("stored calendar home: {err}")))?;
        let zone = settings::zone_of(&env.services.db, &account.user_id).await?;
        Ok(Self::new(env, client, home, zone))
    }

    fn url(text: &str) -> Result<url::Url, SyncError> {
        url::Url::parse(text).map_err(|err| {
            SyncError::Local(AppError::internal(format!("stored CalDAV URL: {err}")))
        })
    }

    /// Records a write's tag, reading it back when the server sent none.
    async fn written(&self, url: &url::Url, etag: Option<String>, uid: &str) -> Written {
        let etag = match etag {
            Some(etag) => Some(etag),
            None => self
                .client
                .get(url)
                .await
                .ok()
                .flatten()
                .and_then(|object| object.etag),
        };
        Written {
            href: url.to_string(),
            etag,
            uid: Some(uid.to_owned()),
        }
    }
}

fn fetched(objects: Vec<RemoteObject>) -> Vec<Fetched> {
    objects
        .into_iter()
        .map(|object| Fetched {
            href: object.url.to_string(),
            etag: object.etag,
            text: object.data,
        })
        .collect()
}

impl Source for CaldavSource<'_> {
    fn provider(&self) -> Provider {
        Provider::Caldav
    }

    async fn calendars(&self) -> Result<Vec<RemoteCalendar>, SyncError> {
        Ok(self
            .client
            .calendars(&self.home)
            .await
            .map_err(ProviderError::from)?
            .into_iter()
            .filter(|calendar| calendar.has_events)
            .map(|calendar| RemoteCalendar {
                id: calendar.url.to_string(),
                name: calendar.name,
                color: calendar.color,
                read_only: calendar.read_only,
                version: calendar.sync_token.or(calendar.ctag),
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
        let url = Self::url(&calendar.id)?;
        let client = &self.client;
        let (listed, full) = match client.sync_collection(&url, cursor).await {
            Ok(changes) => (changes, cursor.is_none()),
            Err(CaldavError::InvalidSyncToken) => {
                tracing::info!("sync.token_refused");
                let listed = client
                    .sync_collection(&url, None)
                    .await
                    .map_err(ProviderError::from)?;
                (listed, true)
            }
            Err(CaldavError::SyncUnsupported) => {
                let members = client.members(&url).await.map_err(ProviderError::from)?;
                let token = calendar.version.clone().unwrap_or_default();
                (
                    SyncChanges {
                        token,
                        changed: members,
                        removed: Vec::new(),
                    },
                    true,
                )
            }
            Err(err) => return Err(ProviderError::from(err).into()),
        };
        let listed_hrefs: HashSet<String> =
            listed.changed.iter().map(|m| m.url.to_string()).collect();
        let mut removed: Vec<String> = listed
            .removed
            .iter()
            .map(ToString::to_string)
            .filter(|href| known.contains_key(href) && !listed_hrefs.contains(href))
            .collect();
        if full {
            removed.extend(
                known
                    .keys()
                    .filter(|href| !listed_hrefs.contains(*href))
                    .cloned(),
            );
            removed.sort();
            removed.dedup();
        }
        let wanted: Vec<url::Url> = listed
            .changed
            .into_iter()
            .filter(|member| wanted(member.url.as_str(), member.etag.as_ref(), known, skip))
            .map(|member| member.url)
            .collect();
        let objects = if wanted.is_empty() {
            Vec::new()
        } else {
            client
                .fetch(&url, &wanted)
                .await
                .map_err(ProviderError::from)?
        };
        Ok(Changes {
            resources: read(self.env, fetched(objects), self.zone).await?,
            removed,
            cursor: Some(listed.token).filter(|token| !token.is_empty()),
        })
    }

    async fn resource(
        &self,
        _calendar_id: &str,
        href: &str,
    ) -> Result<Option<Resource>, SyncError> {
        let url = Self::url(href)?;
        let Some(object) = self.client.get(&url).await.map_err(ProviderError::from)? else {
            return Ok(None);
        };
        Ok(read(self.env, fetched(vec![object]), self.zone)
            .await?
            .pop())
    }

    async fn write(
        &self,
        calendar_id: &str,
        event: &events::Model,
        existing: Option<&external_events::Model>,
    ) -> Result<Written, SyncError> {
        let client = &self.client;
        if let Some(mapping) = existing {
            let url = Self::url(&mapping.remote_href)?;
            let uid = mapping.uid.clone().unwrap_or_else(|| event.id.to_string());
            let ics = export_resource(event, &uid);
            let etag = match mapping.etag.as_deref() {
                Some(etag) => client.update(&url, &ics, etag).await,
                None => client.create(&url, &ics).await,
            }
            .map_err(ProviderError::from)?;
            return Ok(self.written(&url, etag, &uid).await);
        }
        let collection = Self::url(calendar_id)?;
        let url = collection
            .join(&format!("{}.ics", event.id))
            .map_err(|_| ProviderError::Unsupported("cannot name the new resource".into()))?;
        let uid = event.id.to_string();
        let ics = export_resource(event, &uid);
        match client.create(&url, &ics).await {
            Ok(etag) => Ok(self.written(&url, etag, &uid).await),
            Err(CaldavError::PreconditionFailed) => {
                // Already there: an earlier attempt was accepted before it could be
                // recorded. Adopt it and write the current state over it.
                let existing = client.get(&url).await.map_err(ProviderError::from)?;
                let Some(etag) = existing.and_then(|object| object.etag) else {
                    return Err(ProviderError::Unavailable {
                        status: Some(412),
                        retry_after: None,
                    }
                    .into());
                };
                let etag = client
                    .update(&url, &ics, &etag)
                    .await
                    .map_err(ProviderError::from)?;
                Ok(self.written(&url, etag, &uid).await)
            }
            Err(err) => Err(ProviderError::from(err).into()),
        }
    }

    async fn delete(
        &self,
        _calendar_id: &str,
        href: &str,
        etag: Option<&str>,
    ) -> Result<(), SyncError> {
        let Ok(url) = url::Url::parse(href) else {
            return Ok(());
        };
        match self.client.delete(&url, etag).await {
            Ok(()) | Err(CaldavError::NotFound) => Ok(()),
            Err(err) => Err(ProviderError::from(err).into()),
        }
    }

    async fn create_calendar(&self, name: &str, color: &str) -> Result<String, SyncError> {
        let url = self
            .client
            .make_calendar(&self.home, name, color)
            .await
            .map_err(ProviderError::from)?;
        Ok(url.to_string())
    }

    async fn update_calendar(
        &self,
        calendar_id: &str,
        name: &str,
        color: &str,
    ) -> Result<(), SyncError> {
        let url = Self::url(calendar_id)?;
        self.client
            .update_calendar(&url, name, color)
            .await
            .map_err(ProviderError::from)?;
        Ok(())
    }

    async fn delete_calendar(&self, calendar_id: &str) -> Result<(), SyncError> {
        let url = Self::url(calendar_id)?;
        self.client
            .delete_calendar(&url)
            .await
            .map_err(ProviderError::from)?;
        Ok(())
    }
}
