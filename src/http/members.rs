//! Members: `GET /api/v1/calendars/:calendarId/members`, join
//! `POST /api/v1/calendars/members/:calendarId {token}`, leave
//! `DELETE /api/v1/calendars/members/:calendarId`, role change
//! `PUT /api/v1/calendars/:calendarId/members/:userId {role}`, removal
//! `DELETE /api/v1/calendars/:calendarId/members/:userId`.

use crate::http::endpoint::endpoint;
use serde::Deserialize;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{
    AuthUser, json_body, ok_text, respond, session_or_member_token, signed_in, with_ctx,
};
use crate::actors::calendar::CalendarCommand;
use crate::commands::not_a_member;
use crate::context::Ctx;
use crate::domain::ids::{CalendarId, InviteId, UserId, canonical_uuid, is_user_id, require_uuid};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::store::members;
use crate::views::calendars::{MemberView, MembershipView};
use crate::views::schemas::RoleSchema;

/// The member operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(list_members, join, leave, set_role, remove_member),
    components(schemas(JoinRequest, RoleRequest, MemberView, MembershipView)),
    tags((name = "calendars", description = "Calendars, their members and invites, import and export."))
)]
pub struct Api;

/// The member routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    join(ctx.clone())
        .or(leave(ctx.clone()))
        .unify()
        .or(list_members(ctx.clone()))
        .unify()
        .or(set_role(ctx.clone()))
        .unify()
        .or(remove_member(ctx))
        .unify()
        .boxed()
}

/// GET /api/v1/calendars/:calendarId/members — `[{id, name, image, role}]`, owner first.
#[utoipa::path(
    get,
    path = "/api/v1/calendars/{calendarId}/members",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("calendarId" = uuid::Uuid, Path, description = "The calendar's id.")),
    responses(
        (status = 200, description = "The members, owner first (never their emails).", body = Vec<MemberView>),
        (status = 403, description = "The caller is not a member.", body = ErrorBody),
    )
)]
fn list_members(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {calendarId: String} / "members")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(list_members_handler(&ctx, &user, &id).await)
        })
}

async fn list_members_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("calendarId", id)?);
    members::role_of(&ctx.db, id, user.id())
        .await?
        .ok_or_else(not_a_member)?;
    let listed: Vec<MemberView> = members::list(&ctx.db, id)
        .await?
        .iter()
        .map(MemberView::new)
        .collect();
    Ok(warp::reply::json(&listed).into_response())
}

/// `POST /api/v1/calendars/members/:calendarId` body.
#[derive(Debug, Deserialize, ToSchema)]
struct JoinRequest {
    /// The invite's token, an invite of this calendar that is still usable (missing, empty
    /// or another calendar's: 403; unknown, expired or used up: 404).
    #[serde(default)]
    #[schema(value_type = uuid::Uuid, required = true)]
    token: Option<String>,
}

/// POST /api/v1/calendars/members/:calendarId — joins with an invite token, as a viewer.
#[utoipa::path(
    post,
    path = "/api/v1/calendars/members/{calendarId}",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    params(("calendarId" = uuid::Uuid, Path, description = "The calendar's id.")),
    request_body = JoinRequest,
    responses(
        (status = 200, description = "The membership created, as a viewer (empty when the caller was a member already).",
         body = Vec<MembershipView>),
        (status = 403, description = "No invite token was sent, or the invite is of another calendar.", body = ErrorBody),
        (status = 404, description = "The invite is unknown, expired or used up.", body = ErrorBody),
    )
)]
fn join(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "members" / {calendarId: String})
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<JoinRequest>("Body must be { token }."))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: JoinRequest| async move {
                respond(join_handler(&ctx, &user, &id, body).await)
            },
        )
}

async fn join_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: JoinRequest,
) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("calendarId", id)?);
    let token = body
        .token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| AppError::forbidden("A valid invite is required to join this calendar."))?;
    let invite = canonical_uuid(&token)
        .map(InviteId::from_uuid)
        .ok_or_else(|| AppError::not_found("Invite not found..."))?;
    let user_id = user.id().clone();
    let joined = ctx
        .ask_calendar(id, |reply| CalendarCommand::Join {
            user: user_id,
            invite,
            reply,
        })
        .await?;
    Ok(warp::reply::json(&joined).into_response())
}

/// DELETE /api/v1/calendars/members/:calendarId — the caller leaves.
#[utoipa::path(
    delete,
    path = "/api/v1/calendars/members/{calendarId}",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("calendarId" = uuid::Uuid, Path, description = "The calendar's id.")),
    responses(
        (status = 200, description = "The caller has left the calendar.", body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "Invalid id, or the caller owns the calendar (an owner cannot leave).", body = ErrorBody),
    )
)]
fn leave(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "members" / {calendarId: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(leave_handler(&ctx, &user, &id).await)
        })
}

async fn leave_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("calendarId", id)?);
    let user_id = user.id().clone();
    ctx.ask_calendar(id, |reply| CalendarCommand::Leave {
        user: user_id,
        reply,
    })
    .await?;
    Ok(ok_text())
}

/// `PUT /api/v1/calendars/:calendarId/members/:userId` body.
#[derive(Debug, Deserialize, ToSchema)]
struct RoleRequest {
    /// The new role (`owner` transfers ownership: non-default native calendars only).
    #[serde(default)]
    #[schema(value_type = RoleSchema, required = true)]
    role: Option<String>,
}

fn target_user(user_id: &str) -> Result<UserId, AppError> {
    if is_user_id(user_id) {
        Ok(UserId::from(user_id))
    } else {
        Err(AppError::bad_request("userId must be a user id."))
    }
}

/// PUT /api/v1/calendars/:calendarId/members/:userId — changes a role (manageMembers).
#[utoipa::path(
    put,
    path = "/api/v1/calendars/{calendarId}/members/{userId}",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    params(("calendarId" = uuid::Uuid, Path, description = "The calendar's id."), ("userId" = String, Path, description = "The member's user id (1 to 64 letters, digits, `_` or `-`).", pattern = "^[A-Za-z0-9_-]{1,64}$")),
    request_body = RoleRequest,
    responses(
        (status = 200, description = "The role is changed.", body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "Invalid role or ids, or a transfer the calendar does not allow.", body = ErrorBody),
        (status = 403, description = "The caller may not manage members.", body = ErrorBody),
    )
)]
fn set_role(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {calendarId: String} / "members" / {userId: String})
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<RoleRequest>(
            "Role must be 'viewer', 'editor' or 'owner'.",
        ))
        .and_then(
            |id: String, target: String, ctx: Ctx, user: AuthUser, body: RoleRequest| async move {
                respond(set_role_handler(&ctx, &user, &id, &target, body).await)
            },
        )
}

async fn set_role_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    target: &str,
    body: RoleRequest,
) -> Result<Response, AppError> {
    let role = body
        .role
        .as_deref()
        .and_then(Role::parse)
        .ok_or_else(|| AppError::bad_request("Role must be 'viewer', 'editor' or 'owner'."))?;
    let id = CalendarId::from_uuid(require_uuid("calendarId", id)?);
    let target = target_user(target)?;
    let actor = user.id().clone();
    ctx.ask_calendar(id, |reply| CalendarCommand::SetRole {
        by: actor,
        target,
        role,
        reply,
    })
    .await?;
    // Side-effect only, like leave and remove: the original's web client reads a JSON body
    // here as an error (the mobile client ignores the body).
    Ok(ok_text())
}

/// DELETE /api/v1/calendars/:calendarId/members/:userId — removes a member (owner).
#[utoipa::path(
    delete,
    path = "/api/v1/calendars/{calendarId}/members/{userId}",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    params(("calendarId" = uuid::Uuid, Path, description = "The calendar's id."), ("userId" = String, Path, description = "The member's user id (1 to 64 letters, digits, `_` or `-`).", pattern = "^[A-Za-z0-9_-]{1,64}$")),
    responses(
        (status = 200, description = "The member is removed.", body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "Invalid ids, or the owner (who cannot be removed).", body = ErrorBody),
        (status = 403, description = "The caller may not manage members.", body = ErrorBody),
    )
)]
fn remove_member(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {calendarId: String} / "members" / {userId: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(
            |id: String, target: String, ctx: Ctx, user: AuthUser| async move {
                respond(remove_member_handler(&ctx, &user, &id, &target).await)
            },
        )
}

async fn remove_member_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    target: &str,
) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("calendarId", id)?);
    let target = target_user(target)?;
    let actor = user.id().clone();
    ctx.ask_calendar(id, |reply| CalendarCommand::RemoveMember {
        by: actor,
        target,
        reply,
    })
    .await?;
    Ok(ok_text())
}
