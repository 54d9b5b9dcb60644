//! Settings: `GET /api/v1/users/settings` (the raw row, created with the defaults when
//! missing), `PUT` (complete settings; omitted optional fields keep their values),
//! `GET /api/v1/users/settings/document` and the compare-and-swap
//! `PATCH /api/v1/users/me/settings {baseRevision, patch}` (409 with `current`).

use crate::http::endpoint::endpoint;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{AuthUser, json_body, respond, signed_in, with_ctx};
use crate::commands::settings as commands;
use crate::context::Ctx;
use crate::domain::settings;
use crate::error::AppError;
use crate::http::input::Lenient;
use crate::http::openapi::schemas::StaleRevision;
use crate::views::settings::{
    AllDayReminder, CompleteSettings, DateFormat, DefaultCalendarView, NotificationEmails,
    ReminderRule, Settings, SettingsDocument, SettingsPatch, SettingsRow, Theme, TimeFormat,
    WeekStart, document, row,
};

/// The settings operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(read_settings, replace_settings, read_document, patch_settings),
    components(schemas(
        SettingsRow,
        SettingsDocument,
        Settings,
        CompleteSettings,
        SettingsPatch,
        PatchRequest,
        ReminderRule,
        AllDayReminder,
        NotificationEmails,
        DefaultCalendarView,
        WeekStart,
        TimeFormat,
        DateFormat,
        Theme,
    )),
    tags((name = "settings", description = "The user's settings: a raw row and a versioned document."))
)]
pub struct Api;

/// The settings routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    read_document(ctx.clone())
        .or(read_settings(ctx.clone()))
        .unify()
        .or(replace_settings(ctx.clone()))
        .unify()
        .or(patch_settings(ctx))
        .unify()
        .boxed()
}

const INVALID_SETTINGS: &str = "Request is missing valid settings data...";
const INVALID_PATCH: &str = "Request is missing a valid settings patch.";

/// GET /api/v1/users/settings — the raw row.
#[utoipa::path(
    get,
    path = "/api/v1/users/settings",
    tag = "settings",
    security(("bearer" = []), ("cookie" = [])),
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of the settings the client holds.")),
    responses(
        (status = 200, description = "The settings row, created with the defaults when missing.",
         body = SettingsRow, headers(("ETag" = String, description = "The settings' version."))),
        (status = 304, description = "The client's settings are current."),
    )
)]
fn read_settings(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "settings")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(if_none_match())
        .and_then(
            |ctx: Ctx, user: AuthUser, if_none_match: Option<String>| async move {
                respond(read_handler(&ctx, &user, if_none_match.as_deref(), "settings", row).await)
            },
        )
}

/// GET /api/v1/users/settings/document — `{value, revision, updatedAt}`.
#[utoipa::path(
    get,
    path = "/api/v1/users/settings/document",
    tag = "settings",
    security(("bearer" = []), ("cookie" = [])),
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of the document the client holds.")),
    responses(
        (status = 200, description = "The settings document, created with the defaults when missing.",
         body = SettingsDocument, headers(("ETag" = String, description = "The document's version."))),
        (status = 304, description = "The client's document is current."),
    )
)]
fn read_document(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "settings" / "document")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(if_none_match())
        .and_then(
            |ctx: Ctx, user: AuthUser, if_none_match: Option<String>| async move {
                respond(
                    read_handler(
                        &ctx,
                        &user,
                        if_none_match.as_deref(),
                        "settings document",
                        document,
                    )
                    .await,
                )
            },
        )
}

/// The settings in one of their two shapes (`resource`, rendered by `render`), tagged with
/// the row's revision, raised by every write.
async fn read_handler(
    ctx: &Ctx,
    user: &AuthUser,
    if_none_match: Option<&str>,
    resource: &str,
    render: fn(&entities::user_settings::Model) -> Value,
) -> Result<Response, AppError> {
    let stored = commands::read(&ctx.services, user.id()).await?;
    let versions = format!(
        "{}|{}",
        stored.revision,
        stored.updated_at.timestamp_nanos_opt().unwrap_or_default()
    );
    let tag = EntityTag::weak(resource, user.id(), &versions);
    Ok(conditional::answer(&tag, if_none_match, || {
        warp::reply::json(&render(&stored)).into_response()
    }))
}

/// PUT /api/v1/users/settings — complete settings, upserted.
#[utoipa::path(
    put,
    path = "/api/v1/users/settings",
    tag = "settings",
    security(("bearer" = []), ("cookie" = [])),
    request_body = CompleteSettings,
    responses(
        (status = 200, description = "The saved settings row.", body = SettingsRow),
    )
)]
fn replace_settings(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "settings")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<Lenient<Map<String, Value>>>(INVALID_SETTINGS))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: Lenient<Map<String, Value>>| async move {
                respond(replace_handler(&ctx, &user, body).await)
            },
        )
}

async fn replace_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: Lenient<Map<String, Value>>,
) -> Result<Response, AppError> {
    let changes = body
        .valid()
        .and_then(|body| settings::complete(&body))
        .ok_or_else(|| AppError::bad_request(INVALID_SETTINGS))?;
    let saved = commands::write(&ctx.services, user.id(), None, &changes).await?;
    Ok(warp::reply::json(&row(&saved)).into_response())
}

/// `PATCH /api/v1/users/me/settings` body (strict).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PatchRequest {
    /// The revision the change was made on.
    #[schema(minimum = 1)]
    base_revision: i64,
    /// The fields to change.
    #[schema(value_type = SettingsPatch)]
    patch: Lenient<Map<String, Value>>,
}

/// PATCH /api/v1/users/me/settings — compare-and-swap on the revision.
#[utoipa::path(
    patch,
    path = "/api/v1/users/me/settings",
    tag = "settings",
    security(("bearer" = []), ("cookie" = [])),
    request_body = PatchRequest,
    responses(
        (status = 200, description = "The saved settings document.", body = SettingsDocument),
        (status = 409, description = "The settings changed since `baseRevision` (`SettingsConflict`); `current` is the document now.",
         body = StaleRevision<SettingsDocument>),
    )
)]
fn patch_settings(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "me" / "settings")
        .and(warp::patch())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<PatchRequest>(INVALID_PATCH))
        .and_then(|ctx: Ctx, user: AuthUser, body: PatchRequest| async move {
            respond(patch_handler(&ctx, &user, body).await)
        })
}

async fn patch_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: PatchRequest,
) -> Result<Response, AppError> {
    if body.base_revision < 1 {
        return Err(AppError::bad_request(INVALID_PATCH));
    }
    let changes = body
        .patch
        .valid()
        .and_then(|patch| settings::patch(&patch))
        .ok_or_else(|| AppError::bad_request(INVALID_PATCH))?;
    let saved =
        commands::write(&ctx.services, user.id(), Some(body.base_revision), &changes).await?;
    Ok(warp::reply::json(&document(&saved)).into_response())
}
