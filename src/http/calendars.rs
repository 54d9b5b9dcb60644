//! Calendars: `GET /api/v1/calendars` (the caller's, with role and provider fields),
//! `GET /api/v1/calendars/:id` (with members; membership required), `POST`, `PUT`,
//! `DELETE /api/v1/calendars`, and the legacy `GET /api/v1/calendars/google` sync trigger.
//! Changes go through the calendar's actor.

use crate::domain::providers::Provider;
use crate::http::endpoint::endpoint;
use http::StatusCode;
use serde::Deserialize;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{
    AuthUser, json_body, ok_text, request_ctx, respond, session_or_member_token, signed_in,
    with_ctx,
};
use super::rejection::render_error;
use super::request::RequestCtx;
use crate::actors::calendar::CalendarCommand;
use crate::actors::providers::ProvidersMsg;
use crate::actors::{ActorKind, ask_slot};
use crate::commands::calendar::CalendarChange;
use crate::commands::mirrors::calendars::{RemoteChange, before_change, create_in_account};
use crate::commands::not_a_member;
use crate::context::Ctx;
use crate::domain::ids::{AccountId, CalendarId, require_uuid};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::store::calendars::{self as calendar_store, NewCalendar};
use crate::store::{members, mirrors};
use crate::views::calendars::CalendarView;
use std::time::Duration;

/// The calendar operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        legacy_sync,
        list_calendars,
        get_calendar,
        create_calendar,
        update_calendar,
        delete_calendar
    ),
    components(schemas(CalendarRequest, CalendarView)),
    tags((name = "calendars", description = "Calendars, their members and invites, import and export."))
)]
pub struct Api;

/// The calendar routes (static paths first).
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    legacy_sync(ctx.clone())
        .or(list_calendars(ctx.clone()))
        .unify()
        .or(create_calendar(ctx.clone()))
        .unify()
        .or(update_calendar(ctx.clone()))
        .unify()
        .or(delete_calendar(ctx.clone()))
        .unify()
        .or(get_calendar(ctx))
        .unify()
        .boxed()
}

/// The body of calendar create, update and delete: the Calendar document. Fields the server
/// owns (`creatorID`, `members`, `isDefault`) are accepted and ignored. A create needs
/// `name` and `color`, an update `id`, `name` and `color`, a delete `id`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CalendarRequest {
    /// The calendar (update and delete).
    #[serde(default)]
    #[schema(value_type = Option<uuid::Uuid>)]
    id: Option<String>,
    /// 1 to 200 characters once trimmed (create and update).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    name: Option<String>,
    /// 1 to 32 characters once trimmed (create and update).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 32)]
    color: Option<String>,
    /// Create only: make the calendar in this connected account's provider (`google`,
    /// `microsoft` or `caldav`), with `accountId`.
    #[serde(default)]
    provider: Option<String>,
    /// Create only: the connected account, with `provider`.
    #[serde(default)]
    account_id: Option<String>,
}

const INVALID_CALENDAR: &str = "Request is missing valid calendar data...";

impl CalendarRequest {
    fn id(&self) -> Result<CalendarId, AppError> {
        require_uuid("id", self.id.as_deref().unwrap_or_default()).map(CalendarId::from_uuid)
    }

    fn change(&self) -> Result<CalendarChange, AppError> {
        let name = self.name.as_deref().map(str::trim).unwrap_or_default();
        let color = self.color.as_deref().map(str::trim).unwrap_or_default();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(AppError::bad_request(format!(
                "{INVALID_CALENDAR} (name must be 1 to 200 characters)"
            )));
        }
        if color.is_empty() || color.chars().count() > 32 {
            return Err(AppError::bad_request(format!(
                "{INVALID_CALENDAR} (color must be 1 to 32 characters)"
            )));
        }
        Ok(CalendarChange {
            name: name.to_owned(),
            color: color.to_owned(),
        })
    }
}

/// GET /api/v1/calendars/google — the legacy "sync my providers" trigger: delivers and
/// pulls every account of the caller now, and answers once they are done.
#[utoipa::path(
    get,
    path = "/api/v1/calendars/google",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "Every connected account of the caller was delivered and pulled.",
         body = String, content_type = "text/plain", example = "OK"),
    )
)]
fn legacy_sync(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "google")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(request_ctx())
        .then(|ctx: Ctx, user: AuthUser, rctx: RequestCtx| async move {
            // Answered here, success or failure: a failure passed on as a rejection would
            // be outranked by `GET /api/v1/calendars/:id`'s refusal of the id "google".
            match sync_now(&ctx, &user).await {
                Ok(()) => ok_text(),
                Err(err) => render_error(&rctx, &err),
            }
        })
}

/// Delivers and pulls every account of `user` now (each bounded by its requests' timeouts).
async fn sync_now(ctx: &Ctx, user: &AuthUser) -> Result<(), AppError> {
    let accounts = ctx.mirrors.accounts_of(user.id()).await?;
    if accounts.is_empty() {
        return Ok(());
    }
    let wait = Duration::from_millis(ctx.settings.caldav.request_timeout_ms.saturating_mul(4));
    ask_slot(
        &ctx.actors.providers.supervisor,
        ActorKind::ProviderSupervisor,
        wait,
        |reply| ProvidersMsg::SyncNow { accounts, reply },
    )
    .await
}

/// GET /api/v1/calendars — the caller's calendars with their role.
#[utoipa::path(
    get,
    path = "/api/v1/calendars",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of a listing the client holds.")),
    responses(
        (status = 200, description = "The caller's calendars with their role, members and provider fields.",
         body = Vec<CalendarView>, headers(("ETag" = String, description = "The listing's version."))),
        (status = 304, description = "The client's listing is current."),
    )
)]
fn list_calendars(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(if_none_match())
        .and_then(
            |ctx: Ctx, user: AuthUser, if_none_match: Option<String>| async move {
                respond(list_calendars_handler(&ctx, &user, if_none_match.as_deref()).await)
            },
        )
}

async fn list_calendars_handler(
    ctx: &Ctx,
    user: &AuthUser,
    if_none_match: Option<&str>,
) -> Result<Response, AppError> {
    let calendars = calendar_store::list_for_user(&ctx.db, user.id()).await?;
    let ids: Vec<_> = calendars.iter().map(|(calendar, _)| calendar.id).collect();
    let members = members::list_for_calendars(&ctx.db, &ids).await?;
    let links = mirrors::provider_links(&ctx.db, &ids).await?;
    let views: Vec<CalendarView> = calendars
        .iter()
        .map(|(calendar, role)| {
            let members = members
                .get(&calendar.id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            CalendarView::new(calendar, members, Some(*role))
                .with_provider(links.get(&calendar.id), user.id())
        })
        .collect();
    let tag = EntityTag::weak("calendars", user.id(), &calendar_versions(&views));
    Ok(conditional::answer(&tag, if_none_match, || {
        warp::reply::json(&views).into_response()
    }))
}

/// What a calendars listing is built from, field by field: each calendar's row as of its
/// last change (owner, name, colour), the reader's role and each member's id, name and
/// email.
fn calendar_versions(views: &[CalendarView]) -> String {
    use std::fmt::Write;
    let mut versions = String::new();
    for view in views {
        let _ = write!(
            versions,
            "{}|{}|{}|{}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|{:?}|",
            view.id,
            view.updated_at.timestamp_nanos_opt().unwrap_or_default(),
            view.creator_id,
            view.is_default,
            view.name.len(),
            view.name,
            view.color,
            view.role,
            view.provider,
            view.account_id,
            view.account_label,
            view.server_url,
            view.sync_status,
            view.sync_error_code
        );
        for member in &view.members {
            let _ = write!(
                versions,
                "{}|{}|{}|{}|{}|",
                member.id,
                member.name.len(),
                member.name,
                member.email.len(),
                member.email
            );
        }
        versions.push('\n');
    }
    versions
}

/// GET /api/v1/calendars/:id — one calendar with its members (members only).
#[utoipa::path(
    get,
    path = "/api/v1/calendars/{id}",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("id" = uuid::Uuid, Path, description = "The calendar's id.")),
    responses(
        (status = 200, description = "The calendar with its members and the caller's role.", body = CalendarView),
        (status = 403, description = "The caller is not a member.", body = ErrorBody),
    )
)]
fn get_calendar(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {id: String})
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(get_calendar_handler(&ctx, &user, &id).await)
        })
}

async fn get_calendar_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("id", id)?);
    let role = members::role_of(&ctx.db, id, user.id())
        .await?
        .ok_or_else(not_a_member)?;
    let calendar = calendar_store::find(&ctx.db, id)
        .await?
        .ok_or_else(|| AppError::not_found("Calendar not found..."))?;
    let members = members::list(&ctx.db, id).await?;
    Ok(warp::reply::json(&CalendarView::new(&calendar, &members, Some(role))).into_response())
}

/// POST /api/v1/calendars — creates a calendar owned by the caller (201).
#[utoipa::path(
    post,
    path = "/api/v1/calendars",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    request_body = CalendarRequest,
    responses(
        (status = 201, description = "The new calendar, owned by the caller (with `provider`, made there first, then mirrored).",
         body = CalendarView),
        (status = 400, description = "Invalid fields, or the provider refused the new calendar.", body = ErrorBody),
        (status = 403, description = "The account is not the caller's.", body = ErrorBody),
        (status = 503, description = "The provider could not be reached (or the server is busy).", body = ErrorBody),
    )
)]
fn create_calendar(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<CalendarRequest>(INVALID_CALENDAR))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: CalendarRequest| async move {
                respond(create_calendar_handler(&ctx, &user, body).await)
            },
        )
}

async fn create_calendar_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: CalendarRequest,
) -> Result<Response, AppError> {
    let change = body.change()?;
    if let Some((provider, account)) =
        destination(body.provider.as_deref(), body.account_id.as_deref())?
    {
        let view = create_in_account(
            &ctx.mirrors,
            user.id(),
            provider,
            &account,
            &change.name,
            &change.color,
        )
        .await?;
        return Ok(
            warp::reply::with_status(warp::reply::json(&view), StatusCode::CREATED).into_response(),
        );
    }
    let calendar = calendar_store::create(
        &ctx.db,
        NewCalendar {
            creator_id: user.id().clone(),
            name: change.name,
            color: change.color,
        },
        chrono::Utc::now(),
    )
    .await?;
    let members = members::list(&ctx.db, calendar.id).await?;
    let view = CalendarView::new(&calendar, &members, Some(Role::Owner));
    Ok(warp::reply::with_status(warp::reply::json(&view), StatusCode::CREATED).into_response())
}

/// Checks the optional `provider` + `accountId` destination of a new calendar: none means
/// a native calendar.
pub(super) fn destination(
    provider: Option<&str>,
    account_id: Option<&str>,
) -> Result<Option<(&'static str, AccountId)>, AppError> {
    match (provider, account_id) {
        (None, None) => Ok(None),
        (Some(_), None) | (None, Some(_)) => Err(AppError::bad_request(
            "Calendar destination requires both provider and accountId.",
        )),
        (Some(provider), Some(account)) => match Provider::parse(provider) {
            Some(provider) => Ok(Some((provider.as_str(), AccountId::from(account)))),
            None => Err(AppError::bad_request("Unsupported provider.")),
        },
    }
}

/// PUT /api/v1/calendars — owner-only rename and recolor.
#[utoipa::path(
    put,
    path = "/api/v1/calendars",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    request_body = CalendarRequest,
    responses(
        (status = 200, description = "The renamed and recoloured calendar (a mirror's change is made at the provider first).",
         body = CalendarView),
        (status = 400, description = "Invalid fields, or the provider refused the change.", body = ErrorBody),
        (status = 403, description = "Only the owner may (a mirror: only the account's owner).", body = ErrorBody),
        (status = 503, description = "The provider could not be reached (or the server is busy).", body = ErrorBody),
    )
)]
fn update_calendar(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<CalendarRequest>(INVALID_CALENDAR))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: CalendarRequest| async move {
                respond(update_calendar_handler(&ctx, &user, body).await)
            },
        )
}

async fn update_calendar_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: CalendarRequest,
) -> Result<Response, AppError> {
    let id = body.id()?;
    let change = body.change()?;
    let actor = user.id().clone();
    before_change(
        &ctx.mirrors,
        id,
        user.id(),
        RemoteChange::Update {
            name: &change.name,
            color: &change.color,
        },
    )
    .await?;
    let view = ctx
        .ask_calendar(id, |reply| CalendarCommand::Update {
            by: actor,
            change,
            reply,
        })
        .await?;
    Ok(warp::reply::json(&view).into_response())
}

/// DELETE /api/v1/calendars — owner-only; never the personal calendar.
#[utoipa::path(
    delete,
    path = "/api/v1/calendars",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    request_body = CalendarRequest,
    responses(
        (status = 200, description = "The removed calendar (a mirror is deleted at the provider first).", body = CalendarView),
        (status = 400, description = "Invalid id, the personal calendar, or the provider refused.", body = ErrorBody),
        (status = 403, description = "Only the owner may.", body = ErrorBody),
        (status = 503, description = "The provider could not be reached (or the server is busy).", body = ErrorBody),
    )
)]
fn delete_calendar(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<CalendarRequest>(INVALID_CALENDAR))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: CalendarRequest| async move {
                respond(delete_calendar_handler(&ctx, &user, body).await)
            },
        )
}

async fn delete_calendar_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: CalendarRequest,
) -> Result<Response, AppError> {
    let id = body.id()?;
    let actor = user.id().clone();
    before_change(&ctx.mirrors, id, user.id(), RemoteChange::Delete).await?;
    let view = ctx
        .ask_calendar(id, |reply| CalendarCommand::Delete { by: actor, reply })
        .await?;
    Ok(warp::reply::json(&view).into_response())
}
