//! Connected accounts (under `/api/v1/users/connections`): `GET`, `POST` and `DELETE
//! …/caldav`, `GET …/google` and `POST …/google/revoke`, `POST …/disconnect {provider,
//! accountId}` and `POST …/calendars/disconnect {calendarId}`, with the reference's bodies
//! and messages. (Google and Microsoft accounts are linked through `/api/auth/link-social`.)

use std::collections::HashMap;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::endpoint::endpoint;
use super::extract::{
    AuthUser, JSON_BODY_LIMIT, authenticated, body_bytes, json_body, ok_text, respond, with_ctx,
};
use crate::actors::providers::ProvidersMsg;
use crate::commands::mirrors::connect::{CaldavCredentials, connect_caldav};
use crate::commands::mirrors::disconnect::{
    disconnect_caldav, disconnect_calendar, disconnect_linked, revoke_google,
};
use crate::context::Ctx;
use crate::domain::ids::UserId;
use crate::domain::providers::{AccountKey, Provider};
use crate::error::AppError;
use crate::providers::oauth::grants_calendar;
use crate::store::caldav_accounts as account_store;
use crate::store::oauth_accounts;

/// The connection routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    list_caldav(ctx.clone())
        .or(connect(ctx.clone()))
        .unify()
        .or(google_status(ctx.clone()))
        .unify()
        .or(google_revoke(ctx.clone()))
        .unify()
        .or(remove_caldav(ctx.clone()))
        .unify()
        .or(disconnect(ctx.clone()))
        .unify()
        .or(disconnect_mirror(ctx))
        .unify()
        .boxed()
}

const MISSING_CREDENTIALS: &str = "serverUrl, username and password are required.";

/// `{serverUrl, username, password}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CaldavBody {
    server_url: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// `{provider, accountId}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DisconnectBody {
    provider: Option<String>,
    account_id: Option<String>,
}

/// `{calendarId}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MirrorBody {
    calendar_id: Option<String>,
}

/// GET /api/v1/users/connections/caldav → `{accounts: [{id, serverUrl, username}]}`.
fn list_caldav(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "caldav")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let accounts =
                        account_store::caldav_accounts_of(ctx.db.conn(), user.id()).await?;
                    let accounts: Vec<_> = accounts
                        .iter()
                        .map(|account| {
                            json!({
                                "id": account.id,
                                "serverUrl": account.server_url,
                                "username": account.username,
                            })
                        })
                        .collect();
                    Ok::<_, AppError>(warp::reply::json(&json!({ "accounts": accounts })))
                }
                .await,
            )
        })
}

/// POST /api/v1/users/connections/caldav — discovery, strict initial sync, then stored.
fn connect(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "caldav")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<CaldavBody>(MISSING_CREDENTIALS))
        .and_then(|ctx: Ctx, user: AuthUser, body: CaldavBody| async move {
            respond(connect_handler(&ctx, &user, body).await)
        })
}

async fn connect_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: CaldavBody,
) -> Result<Response, AppError> {
    let trimmed = |value: Option<String>| {
        value
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let (Some(server_url), Some(username), Some(password)) = (
        trimmed(body.server_url),
        trimmed(body.username),
        trimmed(body.password),
    ) else {
        return Err(AppError::bad_request(MISSING_CREDENTIALS));
    };
    if server_url.len() > 2_048 || username.len() > 512 || password.len() > 1_024 {
        return Err(AppError::bad_request(MISSING_CREDENTIALS));
    }
    let credentials = CaldavCredentials {
        server_url,
        username,
        password,
    };
    let account_id = connect_caldav(&ctx.mirrors, &UserId::from(user.id()), credentials).await?;
    ctx.actors.providers.tell(ProvidersMsg::Start {
        account: AccountKey::new(Provider::Caldav, account_id.to_string()),
        pull: false,
    });
    Ok(ok_text())
}

/// DELETE /api/v1/users/connections/caldav — `accountId` in the JSON body or the query.
fn remove_caldav(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "caldav")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(warp::query::<HashMap<String, String>>())
        .and(body_bytes(JSON_BODY_LIMIT))
        .and_then(
            |ctx: Ctx, user: AuthUser, query: HashMap<String, String>, body: Bytes| async move {
                respond(remove_handler(&ctx, &user, &query, &body).await)
            },
        )
}

async fn remove_handler(
    ctx: &Ctx,
    user: &AuthUser,
    query: &HashMap<String, String>,
    body: &[u8],
) -> Result<Response, AppError> {
    let from_body = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|body| body.get("accountId")?.as_str().map(str::to_owned));
    let account = from_body
        .or_else(|| query.get("accountId").cloned())
        .ok_or_else(|| AppError::bad_request("accountId is required"))?;
    remove_account(ctx, user, &account).await?;
    Ok(ok_text())
}

/// Removes one of the caller's CalDAV accounts (an unknown or foreign id changes nothing).
async fn remove_account(ctx: &Ctx, user: &AuthUser, account: &str) -> Result<(), AppError> {
    let Ok(account_id) = Uuid::parse_str(account) else {
        return Ok(());
    };
    if disconnect_caldav(&ctx.mirrors, &UserId::from(user.id()), account_id).await? {
        ctx.actors.providers.tell(ProvidersMsg::Stop {
            account: AccountKey::new(Provider::Caldav, account_id.to_string()),
        });
    }
    Ok(())
}

/// GET /api/v1/users/connections/google → `{isLinked, calendarConnected}`: a Google account
/// is linked, and one of them holds a refresh token with calendar scope and is not waiting
/// to be reconnected.
fn google_status(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "google")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let accounts =
                        oauth_accounts::of_user(ctx.db.conn(), user.id(), Provider::Google).await?;
                    let connected = accounts.iter().any(|account| {
                        account.sync_status.is_none()
                            && account.refresh_token.is_some()
                            && grants_calendar(Provider::Google, account.scope.as_deref())
                    });
                    Ok::<_, AppError>(warp::reply::json(&json!({
                        "isLinked": !accounts.is_empty(),
                        "calendarConnected": connected,
                    })))
                }
                .await,
            )
        })
}

/// POST /api/v1/users/connections/google/revoke → "OK": every Google account's tokens are
/// revoked at Google (best effort) and forgotten here; the accounts stay linked for sign-in.
fn google_revoke(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "google" / "revoke")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let revoked = revoke_google(&ctx.mirrors, &UserId::from(user.id())).await?;
                    for account in revoked {
                        ctx.actors.providers.tell(ProvidersMsg::Stop { account });
                    }
                    Ok::<_, AppError>(ok_text())
                }
                .await,
            )
        })
}

/// POST /api/v1/users/connections/disconnect `{provider, accountId}`.
fn disconnect(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "disconnect")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<DisconnectBody>(
            "provider and accountId are required.",
        ))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: DisconnectBody| async move {
                respond(
                    async {
                        let (Some(provider), Some(account)) = (body.provider, body.account_id)
                        else {
                            return Err(AppError::bad_request(
                                "provider and accountId are required.",
                            ));
                        };
                        match Provider::parse(&provider) {
                            Some(Provider::Caldav) => remove_account(&ctx, &user, &account).await?,
                            Some(provider) => {
                                let user = UserId::from(user.id());
                                if let Some(account) =
                                    disconnect_linked(&ctx.mirrors, &user, provider, &account)
                                        .await?
                                {
                                    ctx.actors.providers.tell(ProvidersMsg::Stop { account });
                                }
                            }
                            None => return Err(AppError::bad_request("Unsupported provider")),
                        }
                        Ok(ok_text())
                    }
                    .await,
                )
            },
        )
}

/// POST /api/v1/users/connections/calendars/disconnect `{calendarId}` → `{id}`.
fn disconnect_mirror(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "calendars" / "disconnect")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<MirrorBody>("calendarId is required"))
        .and_then(|ctx: Ctx, user: AuthUser, body: MirrorBody| async move {
            respond(
                async {
                    let Some(calendar) = body.calendar_id.filter(|id| !id.is_empty()) else {
                        return Err(AppError::bad_request("calendarId is required"));
                    };
                    let calendar_id = Uuid::parse_str(&calendar).map_err(|_| {
                        AppError::bad_request("Not an external calendar you can disconnect")
                    })?;
                    disconnect_calendar(&ctx.mirrors, &UserId::from(user.id()), calendar_id)
                        .await?;
                    Ok(warp::reply::json(&json!({ "id": calendar_id })).into_response())
                }
                .await,
            )
        })
}

/// This resource's operations in the OpenAPI document (see [`crate::http::openapi`]).
#[derive(utoipa::OpenApi)]
pub struct Api;
