//! Page changes. Every write locks the owner's user row, repairs the default first (none
//! active: create "My calendar"; none default: promote the first), commits in one
//! transaction, and then sends `page_created` / `page_updated` / `page_removed` to every
//! connection of the owner. Pages are never visible to anyone else.

use std::collections::HashSet;

use crate::store::Connection;
use chrono::{DateTime, Utc};
use entities::pages;
use serde_json::{Value, json};

use crate::commands::Services;
use crate::domain::frames::Frame;
use crate::domain::ids::{PageId, UserId};
use crate::domain::pages::{DEFAULT_PAGE_NAME, MAX_PAGES, default_config};
use crate::error::AppError;
use crate::store::WriteTxn;
use crate::store::pages::{self as page_store, NewPage};
use crate::store::{members, settings as settings_store};
use crate::views::pages::PageDocument;

/// 404 for a Page that is not the caller's, deleted or unknown.
pub fn page_not_found() -> AppError {
    AppError::not_found("Page not found.")
}

/// The calendars `user_id` can access, as they appear in Page configs.
async fn accessible(db: &impl Connection, user_id: &UserId) -> Result<HashSet<String>, AppError> {
    Ok(members::calendars_of(db, user_id)
        .await?
        .into_iter()
        .map(|id| id.to_string())
        .collect())
}

/// A write in progress: its transaction's view of the owner's Pages and the frames to send
/// after commit.
struct PageWrite {
    user_id: UserId,
    now: DateTime<Utc>,
    frames: Vec<(&'static str, pages::Model)>,
}

impl PageWrite {
    fn new(user_id: &UserId) -> Self {
        Self {
            user_id: user_id.clone(),
            now: Utc::now(),
            frames: Vec::new(),
        }
    }

    /// Locks the owner and returns the active Pages with the default repaired.
    async fn begin(&mut self, txn: &impl Connection) -> Result<Vec<pages::Model>, AppError> {
        if !page_store::lock_owner(txn, &self.user_id).await? {
            return Err(AppError::Unauthorized(
                "Your account no longer exists.".into(),
            ));
        }
        let mut active = page_store::active(txn, &self.user_id).await?;
        if active.is_empty() {
            let view = settings_store::value_of(txn, &self.user_id)
                .await?
                .and_then(|v| {
                    v.get("defaultCalendarView")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            let page = page_store::insert(
                txn,
                NewPage {
                    user_id: self.user_id.clone(),
                    name: DEFAULT_PAGE_NAME.to_owned(),
                    position: 0,
                    is_default: true,
                    config: default_config(view.as_deref()),
                },
                self.now,
            )
            .await?;
            self.frames.push(("page_created", page.clone()));
            active.push(page);
        } else if !active.iter().any(|p| p.is_default) {
            let mut first = active[0].clone();
            first.is_default = true;
            first.revision += 1;
            active[0] = self.save(txn, first).await?;
        }
        Ok(active)
    }

    /// Writes a changed Page and queues its `page_updated`.
    async fn save(
        &mut self,
        txn: &impl Connection,
        page: pages::Model,
    ) -> Result<pages::Model, AppError> {
        let saved = page_store::update(txn, page, self.now).await?;
        self.frames.push(("page_updated", saved.clone()));
        Ok(saved)
    }

    /// Announces the queued frames into `txn` (they leave when it commits), documents as
    /// the owner reads them; the calendars the owner may show, as read in `txn`.
    async fn announce(
        self,
        services: &Services,
        txn: &WriteTxn,
        removed: Option<PageId>,
    ) -> Result<HashSet<String>, AppError> {
        let calendars = accessible(txn, &self.user_id).await?;
        let sessions = &services.within(txn);
        if let Some(id) = removed {
            sessions.broadcast(
                [&self.user_id],
                &Frame::new("page_removed", json!({ "id": id })),
            );
        }
        for (kind, page) in &self.frames {
            let payload = json!({ "page": PageDocument::new(page, &calendars) });
            sessions.broadcast([&self.user_id], &Frame::new(kind, payload));
        }
        Ok(calendars)
    }
}

/// The owner's active Pages by position, creating or repairing the default when needed.
pub async fn list(services: &Services, user_id: &UserId) -> Result<Vec<PageDocument>, AppError> {
    let db = &services.db;
    let mut active = page_store::active(db, user_id).await?;
    if active.iter().filter(|p| p.is_default).count() != 1 {
        let mut write = PageWrite::new(user_id);
        active = services
            .db
            .write(async |txn| {
                let active = write.begin(txn).await?;
                write.announce(services, txn, None).await?;
                Ok::<_, AppError>(active)
            })
            .await?;
    }
    let calendars = accessible(db, user_id).await?;
    Ok(active
        .iter()
        .map(|p| PageDocument::new(p, &calendars))
        .collect())
}

/// One of the owner's active Pages.
pub async fn get(
    services: &Services,
    user_id: &UserId,
    id: PageId,
) -> Result<PageDocument, AppError> {
    let db = &services.db;
    let page = page_store::find_active(db, user_id, id)
        .await?
        .ok_or_else(page_not_found)?;
    Ok(PageDocument::new(&page, &accessible(db, user_id).await?))
}

/// Creates a Page after the others (not the default).
pub async fn create(
    services: &Services,
    user_id: &UserId,
    name: String,
    config: Value,
) -> Result<PageDocument, AppError> {
    let mut write = PageWrite::new(user_id);
    services
        .db
        .write(async |txn| {
            let active = write.begin(txn).await?;
            if active.len() >= MAX_PAGES {
                return Err(AppError::bad_request(format!(
                    "You can have at most {MAX_PAGES} pages."
                )));
            }
            let position = active
                .iter()
                .map(|p| p.position)
                .max()
                .map_or(0, |max| max + 1);
            let page = page_store::insert(
                txn,
                NewPage {
                    user_id: user_id.clone(),
                    name,
                    position,
                    is_default: false,
                    config,
                },
                write.now,
            )
            .await?;
            write.frames.push(("page_created", page.clone()));
            let calendars = write.announce(services, txn, None).await?;
            Ok(PageDocument::new(&page, &calendars))
        })
        .await
}

/// Saves name and config if `base_revision` is still current (else 409 `PAGE_CONFLICT`).
pub async fn save(
    services: &Services,
    user_id: &UserId,
    id: PageId,
    base_revision: i64,
    name: String,
    config: Value,
) -> Result<PageDocument, AppError> {
    let mut write = PageWrite::new(user_id);
    services
        .db
        .write(async |txn| {
            let active = write.begin(txn).await?;
            let mut page = active
                .into_iter()
                .find(|p| p.id == id)
                .ok_or_else(page_not_found)?;
            if page.revision != base_revision {
                let calendars = accessible(txn, user_id).await?;
                return Err(AppError::Conflict {
                    error: "PAGE_CONFLICT".into(),
                    message: "Page changed on another device.".into(),
                    current: Some(json!(PageDocument::new(&page, &calendars))),
                });
            }
            page.name = name;
            page.config = config;
            page.revision += 1;
            let saved = write.save(txn, page).await?;
            let calendars = write.announce(services, txn, None).await?;
            Ok(PageDocument::new(&saved, &calendars))
        })
        .await
}

/// Soft-deletes a Page; a deleted default passes to the lowest-positioned survivor.
pub async fn delete(services: &Services, user_id: &UserId, id: PageId) -> Result<(), AppError> {
    let mut write = PageWrite::new(user_id);
    services
        .db
        .write(async |txn| {
            let active = write.begin(txn).await?;
            let (mut gone, survivors): (Vec<_>, Vec<_>) =
                active.into_iter().partition(|p| p.id == id);
            let mut page = gone.pop().ok_or_else(page_not_found)?;
            let was_default = page.is_default;
            page.is_default = false;
            page.deleted_at = Some(write.now);
            page.revision += 1;
            page_store::update(txn, page, write.now).await?;
            if was_default && let Some(heir) = survivors.into_iter().next() {
                let mut heir = heir;
                heir.is_default = true;
                heir.revision += 1;
                write.save(txn, heir).await?;
            }
            write.announce(services, txn, Some(id)).await?;
            Ok::<_, AppError>(())
        })
        .await
}

/// Puts the owner's active Pages in the order of `page_ids` (every one exactly once), and
/// moves the default to `default_id` when given.
pub async fn reorder(
    services: &Services,
    user_id: &UserId,
    page_ids: &[PageId],
    default_id: Option<PageId>,
) -> Result<Vec<PageDocument>, AppError> {
    let mut write = PageWrite::new(user_id);
    let (ordered, calendars) = services
        .db
        .write(async |txn| {
            let active = write.begin(txn).await?;
            let listed: HashSet<PageId> = page_ids.iter().copied().collect();
            if listed.len() != page_ids.len()
                || active.len() != page_ids.len()
                || !active.iter().all(|p| listed.contains(&p.id))
            {
                return Err(AppError::bad_request(
                    "Page order must contain every active page exactly once.",
                ));
            }
            let default_id = default_id
                .or_else(|| active.iter().find(|p| p.is_default).map(|p| p.id))
                .or_else(|| page_ids.first().copied());
            let mut by_id: std::collections::HashMap<PageId, pages::Model> =
                active.into_iter().map(|p| (p.id, p)).collect();
            let mut planned = Vec::with_capacity(page_ids.len());
            for (index, id) in page_ids.iter().enumerate() {
                let Some(mut page) = by_id.remove(id) else {
                    continue;
                };
                let position = i32::try_from(index).unwrap_or(i32::MAX);
                let is_default = Some(page.id) == default_id;
                let changed = page.position != position || page.is_default != is_default;
                page.position = position;
                page.is_default = is_default;
                if changed {
                    page.revision += 1;
                }
                planned.push((changed, page));
            }
            // The old default loses its flag before the new one gains it (one active default at
            // every statement: the unique index is not deferred).
            planned.sort_by_key(|(_, page)| page.is_default);
            let mut ordered = Vec::with_capacity(planned.len());
            for (changed, page) in planned {
                ordered.push(if changed {
                    write.save(txn, page).await?
                } else {
                    page
                });
            }
            ordered.sort_by_key(|p| p.position);
            let calendars = write.announce(services, txn, None).await?;
            Ok::<_, AppError>((ordered, calendars))
        })
        .await?;
    Ok(ordered
        .iter()
        .map(|p| PageDocument::new(p, &calendars))
        .collect())
}
