//! Pages, the owner's private view profiles: `GET /api/v1/pages`, `POST /api/v1/pages
//! {name, config}` (201), `PUT /api/v1/pages/reorder {pageIds, defaultPageId?}`, and
//! `GET`/`PATCH {baseRevision, name, config}`/`DELETE /api/v1/pages/:id` (owned Pages only:
//! anything else is 404). Bodies are strict and configs are checked against `PageConfigV1`.

use crate::http::endpoint::endpoint;
use http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{OpenApi, ToSchema};
use uuid::Uuid;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{AuthUser, json_body, respond, signed_in, with_ctx};
use crate::commands::pages::{self as commands, page_not_found};
use crate::context::Ctx;
use crate::domain::ids::{PageId, canonical_uuid};
use crate::domain::pages::{MAX_PAGES, parse_config, parse_name};
use crate::error::AppError;
use crate::http::openapi::schemas::{ErrorBody, StaleRevision};
use crate::views::pages::PageDocument;

/// The Page operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(list_pages, create_page, reorder_pages, read_page, save_page, delete_page),
    components(schemas(CreateRequest, ReorderRequest, SaveRequest, PageDocument, RemovedPage, crate::views::page_config::PageConfigV1)),
    tags((name = "pages", description = "Pages: the owner's private view profiles."))
)]
pub struct Api;

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
fn page_id(text: &str) -> Result<PageId, AppError> {
    canonical_uuid(text)
        .map(PageId::from_uuid)
        .ok_or_else(page_not_found)
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
#[utoipa::path(
    get,
    path = "/api/v1/pages",
    tag = "pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of a listing the client holds.")),
    responses(
        (status = 200, description = "Active Pages ordered by position; the default Page is created or repaired first.",
         body = Vec<PageDocument>, headers(("ETag" = String, description = "The listing's version."))),
        (status = 304, description = "The client's listing is current."),
    )
)]
fn list_pages(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    /// 1 to 80 characters.
    #[schema(value_type = String, min_length = 1, max_length = 80)]
    name: Value,
    /// A `PageConfigV1` document.
    #[schema(value_type = crate::views::page_config::PageConfigV1)]
    config: Value,
}

/// POST /api/v1/pages — 201 PageDocument.
#[utoipa::path(
    post,
    path = "/api/v1/pages",
    tag = "pages",
    security(("bearer" = []), ("cookie" = [])),
    request_body = CreateRequest,
    responses(
        (status = 201, description = "The new Page, placed last.", body = PageDocument),
        (status = 409, description = "The owner already has the most Pages allowed.", body = ErrorBody),
    )
)]
fn create_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ReorderRequest {
    /// Every active Page of the owner, once each, in the new order.
    #[schema(value_type = Vec<uuid::Uuid>, min_items = 1, max_items = 100)]
    page_ids: Vec<String>,
    /// The new default Page (one of `pageIds`); absent keeps the current default.
    #[serde(default)]
    #[schema(value_type = Option<uuid::Uuid>)]
    default_page_id: Option<String>,
}

/// PUT /api/v1/pages/reorder — all active Pages in the new order.
#[utoipa::path(
    put,
    path = "/api/v1/pages/reorder",
    tag = "pages",
    security(("bearer" = []), ("cookie" = [])),
    request_body = ReorderRequest,
    responses(
        (status = 200, description = "All active Pages in their new order.", body = Vec<PageDocument>),
    )
)]
fn reorder_pages(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / "reorder")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
        .map(|id| canonical_uuid(id).map(PageId::from_uuid))
        .collect::<Option<Vec<PageId>>>()
        .filter(|ids| (1..=MAX_PAGES).contains(&ids.len()))
        .ok_or_else(invalid)?;
    if ids.iter().collect::<std::collections::HashSet<_>>().len() != ids.len() {
        return Err(invalid());
    }
    let default = match body.default_page_id {
        None => None,
        Some(id) => Some(
            canonical_uuid(&id)
                .map(PageId::from_uuid)
                .filter(|id| ids.contains(id))
                .ok_or_else(invalid)?,
        ),
    };
    let pages = commands::reorder(&ctx.services, user.id(), &ids, default).await?;
    Ok(warp::reply::json(&pages).into_response())
}

/// GET /api/v1/pages/:id.
#[utoipa::path(
    get,
    path = "/api/v1/pages/{id}",
    tag = "pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("id" = String, Path, description = "The Page's id.")),
    responses(
        (status = 200, description = "The Page.", body = PageDocument),
    )
)]
fn read_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / {id: String})
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SaveRequest {
    /// The revision the change was made on.
    #[schema(minimum = 1)]
    base_revision: i64,
    /// 1 to 80 characters.
    #[schema(value_type = String, min_length = 1, max_length = 80)]
    name: Value,
    /// A `PageConfigV1` document.
    #[schema(value_type = crate::views::page_config::PageConfigV1)]
    config: Value,
}

/// PATCH /api/v1/pages/:id — compare-and-swap save.
#[utoipa::path(
    patch,
    path = "/api/v1/pages/{id}",
    tag = "pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("id" = String, Path, description = "The Page's id.")),
    request_body = SaveRequest,
    responses(
        (status = 200, description = "The saved Page.", body = PageDocument),
        (status = 409, description = "The Page changed since `baseRevision`; `current` is the Page now.",
         body = StaleRevision<PageDocument>),
    )
)]
fn save_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / {id: String})
        .and(warp::patch())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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

/// `DELETE /api/v1/pages/:id` answer.
#[derive(Debug, serde::Serialize, ToSchema)]
struct RemovedPage {
    /// The removed Page.
    id: Uuid,
}

/// DELETE /api/v1/pages/:id — soft delete, 200 `{id}`.
#[utoipa::path(
    delete,
    path = "/api/v1/pages/{id}",
    tag = "pages",
    security(("bearer" = []), ("cookie" = [])),
    params(("id" = String, Path, description = "The Page's id.")),
    responses(
        (status = 200, description = "The Page is removed (the default may have moved).", body = RemovedPage),
    )
)]
fn delete_page(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "pages" / {id: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let id = page_id(&id)?;
                    commands::delete(&ctx.services, user.id(), id).await?;
                    Ok(warp::reply::json(&RemovedPage { id: id.uuid() }))
                }
                .await,
            )
        })
}
