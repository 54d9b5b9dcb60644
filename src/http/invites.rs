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
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{AuthUser, authenticated, json_body, respond, with_ctx};
use crate::actors::calendar::CalendarCommand;
use crate::commands::{not_a_member, not_allowed};
use crate::context::Ctx;
use crate::domain::email;
use crate::domain::ids::{CalendarId, canonical_uuid, require_uuid};
use crate::domain::invites::invite_not_found;
use crate::domain::roles::Action;
use crate::error::AppError;
use crate::mail::templates;
use crate::rate_limit::INVITE_SEND;
use crate::store::{calendars as calendar_store, invites, members};
use crate::views::calendars::InviteView;

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
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateInviteRequest {
    #[serde(rename = "calendarID")]
    calendar_id: String,
    #[serde(deserialize_with = "required_nullable")]
    expires_at: Option<Value>,
    #[serde(deserialize_with = "required_nullable")]
    max_uses: Option<Value>,
}

/// A key that must be present, with `null` allowed.
fn required_nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Ok(Some(Value::deserialize(d)?))
}

const INVALID_INVITE: &str = "Request is missing valid invite data...";

/// POST /api/v1/calendars/invites — creates an invite (owner or editor), 201.
fn create_invite(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "invites")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
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
    let calendar_id = require_uuid("calendarID", &body.calendar_id)?;
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
    let actor = user.id().to_owned();
    let invite = ctx
        .ask_calendar(CalendarId(calendar_id), |reply| {
            CalendarCommand::CreateInvite {
                by: actor.into(),
                expires_at,
                max_uses,
                reply,
            }
        })
        .await?;
    Ok(warp::reply::with_status(warp::reply::json(&invite), StatusCode::CREATED).into_response())
}

/// GET /api/v1/calendars/:calendarId/invites — usable invites, newest first (invite right).
fn list_invites(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {calendarId: String} / "invites")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(list_invites_handler(&ctx, &user, &id).await)
        })
}

async fn list_invites_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let id = require_uuid("calendarId", id)?;
    let role = members::role_of(ctx.db.conn(), id, user.id())
        .await?
        .ok_or_else(not_a_member)?;
    if !role.allows(Action::Invite) {
        return Err(not_allowed(Action::Invite));
    }
    let listed: Vec<InviteView> = invites::list_usable(ctx.db.conn(), id, Utc::now())
        .await?
        .iter()
        .map(InviteView::from)
        .collect();
    Ok(warp::reply::json(&listed).into_response())
}

/// The invite's calendar, for routing a command to its actor (404 when there is none).
async fn calendar_of(ctx: &Ctx, invite_id: &str) -> Result<(uuid::Uuid, uuid::Uuid), AppError> {
    let invite_id = canonical_uuid(invite_id).ok_or_else(invite_not_found)?;
    let invite = invites::find(ctx.db.conn(), invite_id)
        .await?
        .ok_or_else(invite_not_found)?;
    Ok((invite_id, invite.calendar_id))
}

/// DELETE /api/v1/calendars/invites/:inviteId — revokes at once (invite right).
fn revoke_invite(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "invites" / {inviteId: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(revoke_invite_handler(&ctx, &user, &id).await)
        })
}

async fn revoke_invite_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let (invite, calendar_id) = calendar_of(ctx, id).await?;
    let actor = user.id().to_owned();
    ctx.ask_calendar(CalendarId(calendar_id), |reply| {
        CalendarCommand::RevokeInvite {
            by: actor.into(),
            invite,
            reply,
        }
    })
    .await?;
    Ok(super::extract::ok_text())
}

/// `POST /api/v1/calendars/invites/:inviteId/send` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendInviteRequest {
    email: String,
}

/// POST /api/v1/calendars/invites/:inviteId/send — mails the invite link (204).
fn send_invite(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "invites" / {inviteId: String} / "send")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
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
    let (invite_id, calendar_id) = calendar_of(ctx, id).await?;
    let role = members::role_of(ctx.db.conn(), calendar_id, user.id())
        .await?
        .ok_or_else(not_a_member)?;
    if !role.allows(Action::Invite) {
        return Err(not_allowed(Action::Invite));
    }
    let usable = invites::find_usable(ctx.db.conn(), invite_id, Utc::now()).await?;
    let calendar = calendar_store::find(ctx.db.conn(), calendar_id).await?;
    let (Some(_), Some(calendar)) = (usable, calendar) else {
        return Err(invite_not_found());
    };
    if !ctx.capabilities.email {
        return Err(AppError::bad_request("This server cannot send email."));
    }
    ctx.limits
        .check(INVITE_SEND, user.id(), std::time::Instant::now())
        .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })?;
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

/// This resource's operations in the OpenAPI document (see [`crate::http::openapi`]).
#[derive(utoipa::OpenApi)]
pub struct Api;
