//! Invites: create `POST /api/v1/calendars/invites`, list
//! `GET /api/v1/calendars/:calendarId/invites`, revoke
//! `DELETE /api/v1/calendars/invites/:inviteId`, mail the link
//! `POST /api/v1/calendars/invites/:inviteId/send {email}` (20 per hour per account); the
//! public preview lives in `invite_preview`.

use crate::http::endpoint::endpoint;
use chrono::{DateTime, Utc};
use http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{AuthUser, json_body, respond, session_or_member_token, with_ctx};
use crate::actors::calendar::CalendarCommand;
use crate::commands::{not_a_member, not_allowed};
use crate::context::Ctx;
use crate::domain::email;
use crate::domain::ids::{CalendarId, InviteId, canonical_uuid, require_uuid};
use crate::domain::invites::invite_not_found;
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::mail::templates;
use crate::rate_limit::INVITE_SEND;
use crate::store::{calendars as calendar_store, invites, members};
use crate::views::calendars::InviteView;

/// The invite operations of the OpenAPI document (the public preview is in
/// [`super::invite_preview::Api`]).
#[derive(OpenApi)]
#[openapi(
    paths(create_invite, list_invites, revoke_invite, send_invite),
    components(schemas(CreateInviteRequest, SendInviteRequest, InviteView)),
    tags((name = "calendars", description = "Calendars, their members and invites, import and export."))
)]
pub struct Api;

/// The invite routes (static paths first).
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    super::invite_preview::preview(ctx.clone())
        .or(create_invite(ctx.clone()))
        .unify()
        .or(send_invite(ctx.clone()))
        .unify()
        .or(revoke_invite(ctx.clone()))
        .unify()
        .or(list_invites(ctx))
        .unify()
        .boxed()
}

/// `POST /api/v1/calendars/invites` body: the Invite document (`id` and `uses` ignored).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreateInviteRequest {
    /// The calendar (the caller needs the invite right there: owner or editor).
    #[serde(rename = "calendarID")]
    #[schema(value_type = uuid::Uuid)]
    calendar_id: String,
    /// When the invite stops working (in the future), or null for never.
    #[serde(deserialize_with = "required_nullable")]
    #[schema(value_type = Option<DateTime<Utc>>, required = true)]
    expires_at: Option<Value>,
    /// How many memberships it may create, or null for unlimited.
    #[serde(deserialize_with = "required_nullable")]
    #[schema(value_type = Option<i32>, minimum = 1, required = true)]
    max_uses: Option<Value>,
}

/// A key that must be present, with `null` allowed.
fn required_nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Some(Value::deserialize(d)?))
}

const INVALID_INVITE: &str = "Request is missing valid invite data...";

/// POST /api/v1/calendars/invites — creates an invite (owner or editor), 201.
#[utoipa::path(
    post,
    path = "/api/v1/calendars/invites",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    request_body(content = CreateInviteRequest, description = "The Invite document (`id` and `uses`, if sent, are ignored)."),
    responses(
        (status = 201, description = "The new invite; its `id` is the token of the link.", body = InviteView),
        (status = 403, description = "The caller may not invite to this calendar.", body = ErrorBody),
    )
)]
fn create_invite(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "invites")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<CreateInviteRequest>(INVALID_INVITE))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: CreateInviteRequest| async move {
                respond(create_invite_handler(&ctx, &user, body).await)
            },
        )
}

async fn create_invite_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: CreateInviteRequest,
) -> Result<Response, AppError> {
    let calendar_id = CalendarId::from_uuid(require_uuid("calendarID", &body.calendar_id)?);
    let expires_at = match body.expires_at.unwrap_or(Value::Null) {
        Value::Null => None,
        Value::String(text) => {
            let at = DateTime::parse_from_rfc3339(&text)
                .map_err(|_| AppError::bad_request("expiresAt must be a valid timestamp or null."))?
                .with_timezone(&Utc);
            if at <= Utc::now() {
                return Err(AppError::bad_request("expiresAt must be in the future."));
            }
            Some(at)
        }
        _ => {
            return Err(AppError::bad_request(
                "expiresAt must be a valid timestamp or null.",
            ));
        }
    };
    let max_uses = match body.max_uses.unwrap_or(Value::Null) {
        Value::Null => None,
        Value::Number(n) => Some(
            n.as_i64()
                .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(|| {
                    AppError::bad_request("maxUses must be a positive whole number or null.")
                })?,
        ),
        _ => {
            return Err(AppError::bad_request(
                "maxUses must be a positive whole number or null.",
            ));
        }
    };
    let actor = user.id().clone();
    let invite = ctx
        .ask_calendar(calendar_id, |reply| CalendarCommand::CreateInvite {
            by: actor,
            expires_at,
            max_uses,
            reply,
        })
        .await?;
    Ok(warp::reply::with_status(warp::reply::json(&invite), StatusCode::CREATED).into_response())
}

/// GET /api/v1/calendars/:calendarId/invites — usable invites, newest first (invite right).
#[utoipa::path(
    get,
    path = "/api/v1/calendars/{calendarId}/invites",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("calendarId" = uuid::Uuid, Path, description = "The calendar's id.")),
    responses(
        (status = 200, description = "The usable invites, newest first.", body = Vec<InviteView>),
        (status = 403, description = "The caller may not invite to this calendar.", body = ErrorBody),
    )
)]
fn list_invites(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {calendarId: String} / "invites")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(list_invites_handler(&ctx, &user, &id).await)
        })
}

async fn list_invites_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("calendarId", id)?);
    let role = members::role_of(&ctx.db, id, user.id())
        .await?
        .ok_or_else(not_a_member)?;
    if !role.allows(Action::Invite) {
        return Err(not_allowed(Action::Invite));
    }
    let listed: Vec<InviteView> = invites::list_usable(&ctx.db, id, Utc::now())
        .await?
        .iter()
        .map(InviteView::from)
        .collect();
    Ok(warp::reply::json(&listed).into_response())
}

/// The invite's calendar, for routing a command to its actor (404 when there is none).
async fn calendar_of(ctx: &Ctx, invite_id: InviteId) -> Result<CalendarId, AppError> {
    let invite = invites::find(&ctx.db, invite_id)
        .await?
        .ok_or_else(invite_not_found)?;
    Ok(invite.calendar_id)
}

/// An `:inviteId` path segment: one that is no canonical UUID names no invite (404).
fn path_invite_id(text: &str) -> Result<InviteId, AppError> {
    canonical_uuid(text)
        .map(InviteId::from_uuid)
        .ok_or_else(invite_not_found)
}

/// DELETE /api/v1/calendars/invites/:inviteId — revokes at once (invite right).
#[utoipa::path(
    delete,
    path = "/api/v1/calendars/invites/{inviteId}",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("inviteId" = uuid::Uuid, Path, description = "The invite's id (its token).")),
    responses(
        (status = 200, description = "The invite is revoked: every copy of the link stops working.",
         body = String, content_type = "text/plain", example = "OK"),
        (status = 403, description = "The caller may not invite to this calendar.", body = ErrorBody),
    )
)]
fn revoke_invite(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "invites" / {inviteId: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(revoke_invite_handler(&ctx, &user, &id).await)
        })
}

async fn revoke_invite_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let invite = path_invite_id(id)?;
    let calendar_id = calendar_of(ctx, invite).await?;
    let actor = user.id().clone();
    ctx.ask_calendar(calendar_id, |reply| CalendarCommand::RevokeInvite {
        by: actor,
        invite,
        reply,
    })
    .await?;
    Ok(super::extract::ok_text())
}

/// `POST /api/v1/calendars/invites/:inviteId/send` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SendInviteRequest {
    /// One address (`local@domain.tld`, at most 320 characters; trimmed).
    #[schema(max_length = 320)]
    email: String,
}

/// POST /api/v1/calendars/invites/:inviteId/send — mails the invite link (204).
#[utoipa::path(
    post,
    path = "/api/v1/calendars/invites/{inviteId}/send",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("inviteId" = uuid::Uuid, Path, description = "The invite's id (its token).")),
    request_body = SendInviteRequest,
    responses(
        (status = 204, description = "The mail server accepted the invitation mail."),
        (status = 400, description = "Not one valid address, or this server cannot send email.", body = ErrorBody),
        (status = 403, description = "The caller may not invite to this calendar.", body = ErrorBody),
        (status = 429, description = "More than 20 invitation mails in an hour from this account (see `Retry-After`).",
         body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until another mail is allowed."))),
        (status = 502, description = "`MailNotSent`: the mail server did not accept the mail.", body = ErrorBody),
    )
)]
fn send_invite(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "invites" / {inviteId: String} / "send")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and(json_body::<SendInviteRequest>(
            "Body must be { email } with one address.",
        ))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: SendInviteRequest| async move {
                respond(send_invite_handler(&ctx, &user, &id, body).await)
            },
        )
}

async fn send_invite_handler(
    ctx: &Ctx,
    user: &AuthUser,
    id: &str,
    body: SendInviteRequest,
) -> Result<Response, AppError> {
    let address = body.email.trim().to_lowercase();
    if !email::is_valid(&address) {
        return Err(AppError::bad_request(
            "Body must be { email } with one address.",
        ));
    }
    let invite_id = path_invite_id(id)?;
    let calendar_id = calendar_of(ctx, invite_id).await?;
    let role = members::role_of(&ctx.db, calendar_id, user.id())
        .await?
        .ok_or_else(not_a_member)?;
    if !role.allows(Action::Invite) {
        return Err(not_allowed(Action::Invite));
    }
    let usable = invites::find_usable(&ctx.db, invite_id, Utc::now()).await?;
    let calendar = calendar_store::find(&ctx.db, calendar_id).await?;
    let (Some(_), Some(calendar)) = (usable, calendar) else {
        return Err(invite_not_found());
    };
    if !ctx.capabilities.email {
        return Err(AppError::bad_request("This server cannot send email."));
    }
    ctx.limits.admit(INVITE_SEND, user.id().as_str())?;
    let link = format!("{}/invite/{invite_id}", ctx.base_url);
    let mail = templates::calendar_invitation(
        &templates::server_name(&ctx.base_url),
        &address,
        &user.user().name,
        &calendar.name,
        &link,
    );
    let mailer = &ctx.actors.mailer;
    crate::actors::ask_slot(
        mailer,
        crate::actors::ActorKind::Mailer,
        ctx.settings.call_timeout(),
        |reply| crate::actors::mailer::MailerMsg::Deliver { mail, reply },
    )
    .await?;
    Ok(warp::reply::with_status(warp::reply(), StatusCode::NO_CONTENT).into_response())
}
