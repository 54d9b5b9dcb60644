//! Pages, the owner's private view profiles: `GET /api/v1/pages`, `POST /api/v1/pages
//! {name, config}` (201), `PUT /api/v1/pages/reorder {pageIds, defaultPageId?}`, and
//! `GET`/`PATCH {baseRevision, name, config}`/`DELETE /api/v1/pages/:id` (owned Pages only:
//! anything else is 404). Bodies are strict and configs are checked against `PageConfigV1`.

use crate::http::endpoint::endpoint;
use http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{AuthUser, authenticated, json_body, respond, with_ctx};
use crate::commands::pages::{self as commands, page_not_found};
use crate::context::Ctx;
use crate::domain::ids::canonical_uuid;
use crate::domain::pages::{MAX_PAGES, parse_config, parse_name};
use crate::error::AppError;

/// The Page routes (the static `reorder` before `:id`).
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    list_pages(ctx.clone())
        .or(create_page(ctx.clone()))
        .unify()
        .or(reorder_pages(ctx.clone()))
        .unify()
        .or(read_page(ctx.clone()))
        .unify()
        .or(save_page(ctx.clone()))
        .unify()
        .or(delete_page(ctx))
        .unify()
        .boxed()
}

const INVALID_PAGE: &str = "Request is missing valid page data.";
const INVALID_DOCUMENT: &str = "Request is missing a valid page document.";
const INVALID_ORDER: &str = "Request is missing a valid page order.";

/// A Page id from the path; a malformed one names no Page.
fn page_id(text: &str) -> Result<Uuid, AppError> {
    canonical_uuid(text).ok_or_else(page_not_found)
}

/// Validated name and config, or 400 with `invalid`.
fn name_and_config(
    name: &Value,
    config: &Value,
    invalid: &'static str,
) -> Result<(String, Value), AppError> {
    let name = parse_name(name).ok_or_else(|| AppError::bad_request(invalid))?;
    let config = parse_config(config).ok_or_else(|| AppError::bad_request(invalid))?;
    Ok((name, config))
}

/// GET /api/v1/pages — active Pages by position.
fn list_pages(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(if_none_match())
        .and_then(
            |ctx: Ctx, user: AuthUser, if_none_match: Option<String>| async move {
                respond(commands::list(&ctx.services, user.id()).await.map(|pages| {
                    let tag = EntityTag::weak("pages", user.id(), &page_versions(&pages));
                    conditional::answer(&tag, if_none_match.as_deref(), || {
                        warp::reply::json(&pages).into_response()
                    })
                }))
            },
        )
}

/// What a pages listing is built from: each page's id, place and revision (raised by every
/// change of its name or configuration).
fn page_versions(pages: &[crate::views::pages::PageDocument]) -> String {
    use std::fmt::Write;
    let mut versions = String::new();
    for page in pages {
        let _ = writeln!(
            versions,
            "{}|{}|{}|{}|{}",
            page.id,
            page.position,
            page.is_default,
            page.revision,
            page.updated_at.timestamp_nanos_opt().unwrap_or_default()
        );
    }
    versions
}

/// `POST /api/v1/pages` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    name: Value,
    config: Value,
}

/// POST /api/v1/pages — 201 PageDocument.
fn create_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<CreateRequest>(INVALID_PAGE))
        .and_then(|ctx: Ctx, user: AuthUser, body: CreateRequest| async move {
            respond(
                async {
                    let (name, config) = name_and_config(&body.name, &body.config, INVALID_PAGE)?;
                    let page = commands::create(&ctx.services, user.id(), name, config).await?;
                    Ok(warp::reply::with_status(
                        warp::reply::json(&page),
                        StatusCode::CREATED,
                    ))
                }
                .await,
            )
        })
}

/// `PUT /api/v1/pages/reorder` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReorderRequest {
    page_ids: Vec<String>,
    #[serde(default)]
    default_page_id: Option<String>,
}

/// PUT /api/v1/pages/reorder — all active Pages in the new order.
fn reorder_pages(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / "reorder")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<ReorderRequest>(INVALID_ORDER))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: ReorderRequest| async move {
                respond(reorder_handler(&ctx, &user, body).await)
            },
        )
}

async fn reorder_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: ReorderRequest,
) -> Result<Response, AppError> {
    let invalid = || AppError::bad_request(INVALID_ORDER);
    let ids = body
        .page_ids
        .iter()
        .map(|id| canonical_uuid(id))
        .collect::<Option<Vec<Uuid>>>()
        .filter(|ids| (1..=MAX_PAGES).contains(&ids.len()))
        .ok_or_else(invalid)?;
    if ids.iter().collect::<std::collections::HashSet<_>>().len() != ids.len() {
        return Err(invalid());
    }
    let default = match body.default_page_id {
        None => None,
        Some(id) => Some(
            canonical_uuid(&id)
                .filter(|id| ids.contains(id))
                .ok_or_else(invalid)?,
        ),
    };
    let pages = commands::reorder(&ctx.services, user.id(), &ids, default).await?;
    Ok(warp::reply::json(&pages).into_response())
}

/// GET /api/v1/pages/:id.
fn read_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / {id: String})
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let page = commands::get(&ctx.services, user.id(), page_id(&id)?).await?;
                    Ok(warp::reply::json(&page))
                }
                .await,
            )
        })
}

/// `PATCH /api/v1/pages/:id` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SaveRequest {
    base_revision: i64,
    name: Value,
    config: Value,
}

/// PATCH /api/v1/pages/:id — compare-and-swap save.
fn save_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / {id: String})
        .and(warp::patch())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<SaveRequest>(INVALID_DOCUMENT))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: SaveRequest| async move {
                respond(
                    async {
                        if body.base_revision < 1 {
                            return Err(AppError::bad_request(INVALID_DOCUMENT));
                        }
                        let (name, config) =
                            name_and_config(&body.name, &body.config, INVALID_DOCUMENT)?;
                        let id = page_id(&id)?;
                        let page = commands::save(
                            &ctx.services,
                            user.id(),
                            id,
                            body.base_revision,
                            name,
                            config,
                        )
                        .await?;
                        Ok(warp::reply::json(&page))
                    }
                    .await,
                )
            },
        )
}

/// DELETE /api/v1/pages/:id — soft delete, 200 `{id}`.
fn delete_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / {id: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let id = page_id(&id)?;
                    commands::delete(&ctx.services, user.id(), id).await?;
                    Ok(warp::reply::json(&serde_json::json!({ "id": id })))
                }
                .await,
            )
        })
}
