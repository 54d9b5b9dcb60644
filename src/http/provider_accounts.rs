//! Connected accounts (under `/api/v1/users/connections`): `GET`, `POST` and `DELETE
//! …/caldav`, `GET …/google` and `POST …/google/revoke`, `POST …/disconnect {provider,
//! accountId}` and `POST …/calendars/disconnect {calendarId}`, with the reference's bodies
//! and messages. (Google and Microsoft accounts are linked through `/api/auth/link-social`.)

use std::collections::HashMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};
use uuid::Uuid;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::endpoint::endpoint;
use super::extract::{
    AuthUser, JSON_BODY_LIMIT, body_bytes, json_body, ok_text, respond, signed_in, with_ctx,
};
use crate::actors::providers::ProvidersMsg;
use crate::commands::mirrors::connect::{CaldavCredentials, connect_caldav};
use crate::commands::mirrors::disconnect::{
    disconnect_caldav, disconnect_calendar, disconnect_linked, revoke_google,
};
use crate::context::Ctx;
use crate::domain::ids::{CaldavAccountId, CalendarId};
use crate::domain::providers::{AccountKey, Provider};
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::providers::oauth::grants_calendar;
use crate::store::caldav_accounts as account_store;
use crate::store::oauth_accounts;

/// The connected-account operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        list_caldav,
        connect,
        remove_caldav,
        google_status,
        google_revoke,
        disconnect,
        disconnect_mirror
    ),
    components(schemas(
        CaldavBody,
        CaldavAccounts,
        CaldavAccount,
        RemoveCaldavBody,
        GoogleStatus,
        DisconnectBody,
        ProviderName,
        MirrorBody,
        DisconnectedCalendar
    )),
    tags((name = "connections", description = "Connected calendar accounts (CalDAV, Google, Microsoft) and their mirrors."))
)]
pub struct Api;

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

/// `{serverUrl, username, password}`: each required and trimmed; blank is refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CaldavBody {
    /// The CalDAV server's URL (at most 2048 bytes).
    #[schema(
        required = true,
        nullable = false,
        min_length = 1,
        max_length = 2048,
        format = "uri"
    )]
    server_url: Option<String>,
    /// The user name (at most 512 bytes).
    #[schema(required = true, nullable = false, min_length = 1, max_length = 512)]
    username: Option<String>,
    /// The (app-specific) password (at most 1024 bytes), stored encrypted.
    #[schema(required = true, nullable = false, min_length = 1, max_length = 1024, format = Password)]
    password: Option<String>,
}

/// `{provider, accountId}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ProviderDisconnectBody)]
struct DisconnectBody {
    /// The account's provider.
    #[schema(required = true, nullable = false, value_type = ProviderName)]
    provider: Option<String>,
    /// The account's id (a CalDAV account's id, or the provider's account id); an unknown
    /// one changes nothing.
    #[schema(required = true, nullable = false)]
    account_id: Option<String>,
}

/// A provider's name in `POST /api/v1/users/connections/disconnect`.
#[derive(Debug, ToSchema)]
#[schema(as = ConnectionProvider)]
pub enum ProviderName {
    /// CalDAV.
    #[schema(rename = "caldav")]
    Caldav,
    /// Google.
    #[schema(rename = "google")]
    Google,
    /// Google, by its wire alias.
    #[schema(rename = "provider_a")]
    ProviderA,
    /// Microsoft.
    #[schema(rename = "microsoft")]
    Microsoft,
    /// Microsoft, by its wire alias.
    #[schema(rename = "provider_c")]
    ProviderC,
}

/// `{calendarId}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MirrorBody {
    /// The mirror calendar's id.
    #[schema(required = true, nullable = false, value_type = Uuid)]
    calendar_id: Option<String>,
}

/// `DELETE /api/v1/users/connections/caldav` body (or `?accountId=`). It describes the body
/// only: [`remove_handler`] reads `accountId` leniently from whatever was sent.
#[allow(dead_code)]
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RemoveCaldavBody {
    /// The CalDAV account's id; an unknown one changes nothing.
    #[schema(format = Uuid)]
    account_id: String,
}

/// `GET /api/v1/users/connections/caldav` answer.
#[derive(Debug, Serialize, ToSchema)]
struct CaldavAccounts {
    /// The caller's CalDAV accounts.
    accounts: Vec<CaldavAccount>,
}

/// One CalDAV account (never its password).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CaldavAccount {
    /// The account's id.
    id: Uuid,
    /// The CalDAV server's URL.
    server_url: String,
    /// The user name.
    username: String,
}

/// `GET /api/v1/users/connections/google` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct GoogleStatus {
    /// A Google account is linked.
    is_linked: bool,
    /// One of them can sync calendars (a refresh token with calendar scope, not waiting to
    /// be reconnected).
    calendar_connected: bool,
}

/// `POST /api/v1/users/connections/calendars/disconnect` answer.
#[derive(Debug, Serialize, ToSchema)]
struct DisconnectedCalendar {
    /// The disabled mirror calendar.
    id: Uuid,
}

/// GET /api/v1/users/connections/caldav → `{accounts: [{id, serverUrl, username}]}`.
#[utoipa::path(
    get,
    path = "/api/v1/users/connections/caldav",
    tag = "connections",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "The caller's CalDAV accounts.", body = CaldavAccounts),
    )
)]
fn list_caldav(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "caldav")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let accounts = account_store::caldav_accounts_of(&ctx.db, user.id()).await?;
                    let accounts = accounts
                        .iter()
                        .map(|account| CaldavAccount {
                            id: account.id.uuid(),
                            server_url: account.server_url.clone(),
                            username: account.username.clone(),
                        })
                        .collect();
                    Ok::<_, AppError>(warp::reply::json(&CaldavAccounts { accounts }))
                }
                .await,
            )
        })
}

/// POST /api/v1/users/connections/caldav — discovery, strict initial sync, then stored.
#[utoipa::path(
    post,
    path = "/api/v1/users/connections/caldav",
    tag = "connections",
    operation_id = "connect_caldav",
    security(("bearer" = []), ("cookie" = [])),
    request_body = CaldavBody,
    responses(
        (status = 200, description = "The account is connected (or its password replaced) and its calendars are mirrored.",
         body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "A credential is missing or too long, CalDAV is not enabled here, the server could \
            not be discovered with these credentials, or the initial sync failed.", body = ErrorBody),
    )
)]
fn connect(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "caldav")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
    let account_id = connect_caldav(&ctx.mirrors, user.id(), credentials).await?;
    ctx.actors.providers.tell(ProvidersMsg::Start {
        account: AccountKey::new(Provider::Caldav, account_id),
        pull: false,
    });
    Ok(ok_text())
}

/// DELETE /api/v1/users/connections/caldav — `accountId` in the JSON body or the query.
#[utoipa::path(
    delete,
    path = "/api/v1/users/connections/caldav",
    tag = "connections",
    operation_id = "remove_caldav",
    security(("bearer" = []), ("cookie" = [])),
    params(("accountId" = Option<String>, Query, description = "The account's id, when the body does not carry it.")),
    request_body(content = Option<RemoveCaldavBody>, description = "`{accountId}`; optional when the query carries it (any other body is ignored)."),
    responses(
        (status = 200, description = "The account and its mirrors are removed (an unknown or foreign id changes nothing).",
         body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "Neither the body nor the query carries `accountId`.", body = ErrorBody),
    )
)]
fn remove_caldav(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "caldav")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
    if let Some(account_id) = caldav_account_id(&account) {
        remove_account(ctx, user, account_id).await?;
    }
    Ok(ok_text())
}

/// A CalDAV account's id as a request names it; text that is no UUID names no account.
fn caldav_account_id(text: &str) -> Option<CaldavAccountId> {
    Uuid::parse_str(text).ok().map(CaldavAccountId::from_uuid)
}

/// Removes one of the caller's CalDAV accounts (an unknown or foreign id changes nothing).
async fn remove_account(
    ctx: &Ctx,
    user: &AuthUser,
    account_id: CaldavAccountId,
) -> Result<bool, AppError> {
    let removed = disconnect_caldav(&ctx.mirrors, user.id(), account_id).await?;
    if removed {
        ctx.actors.providers.tell(ProvidersMsg::Stop {
            account: AccountKey::new(Provider::Caldav, account_id),
        });
    }
    Ok(removed)
}

/// The 404 of an account that is not one of the caller's.
fn account_not_found() -> AppError {
    AppError::not_found("Account not found...")
}

/// GET /api/v1/users/connections/google → `{isLinked, calendarConnected}`: a Google account
/// is linked, and one of them holds a refresh token with calendar scope and is not waiting
/// to be reconnected.
#[utoipa::path(
    get,
    path = "/api/v1/users/connections/google",
    tag = "connections",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "Whether a Google account is linked and can sync calendars.", body = GoogleStatus),
    )
)]
fn google_status(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "google")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let accounts =
                        oauth_accounts::of_user(&ctx.db, user.id(), Provider::Google).await?;
                    let connected = accounts.iter().any(|account| {
                        account.sync_status.is_none()
                            && account.refresh_token.is_some()
                            && grants_calendar(Provider::Google, account.scope.as_deref())
                    });
                    Ok::<_, AppError>(warp::reply::json(&GoogleStatus {
                        is_linked: !accounts.is_empty(),
                        calendar_connected: connected,
                    }))
                }
                .await,
            )
        })
}

/// POST /api/v1/users/connections/google/revoke → "OK": every Google account's tokens are
/// revoked at Google (best effort) and forgotten here; the accounts stay linked for sign-in.
#[utoipa::path(
    post,
    path = "/api/v1/users/connections/google/revoke",
    tag = "connections",
    security(("bearer" = []), ("cookie" = [])),
    responses(
        (status = 200, description = "Every Google account's calendar tokens are revoked (best effort) and forgotten; \
            the accounts stay linked for sign-in.", body = String, content_type = "text/plain", example = "OK"),
    )
)]
fn google_revoke(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "google" / "revoke")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let revoked = revoke_google(&ctx.mirrors, user.id()).await?;
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
#[utoipa::path(
    post,
    path = "/api/v1/users/connections/disconnect",
    tag = "connections",
    operation_id = "disconnect_account",
    security(("bearer" = []), ("cookie" = [])),
    request_body = DisconnectBody,
    responses(
        (status = 200, description = "Exactly that account is disconnected (where unlinking is refused, only its calendar \
            credentials are cleared).", body = String, content_type = "text/plain", example = "OK"),
        (status = 400, description = "`provider` or `accountId` is missing, or the provider is not supported.", body = ErrorBody),
        (status = 404, description = "No such account of the caller's (unknown, someone else's, or of another provider); nothing changed.", body = ErrorBody),
    )
)]
fn disconnect(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "disconnect")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
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
                            Some(Provider::Caldav) => {
                                let removed = match caldav_account_id(&account) {
                                    Some(account_id) => {
                                        remove_account(&ctx, &user, account_id).await?
                                    }
                                    None => false,
                                };
                                if !removed {
                                    return Err(account_not_found());
                                }
                            }
                            Some(provider) => {
                                // The provider's account id, or the account row's id.
                                let account =
                                    disconnect_linked(&ctx.mirrors, user.id(), provider, &account)
                                        .await?
                                        .ok_or_else(account_not_found)?;
                                ctx.actors.providers.tell(ProvidersMsg::Stop { account });
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
#[utoipa::path(
    post,
    path = "/api/v1/users/connections/calendars/disconnect",
    tag = "connections",
    security(("bearer" = []), ("cookie" = [])),
    request_body = MirrorBody,
    responses(
        (status = 200, description = "The mirror is disabled (the provider is not touched) and `calendar_removed` is sent to its members.",
         body = DisconnectedCalendar),
        (status = 400, description = "`calendarId` is missing or is not an external calendar of the caller's.", body = ErrorBody),
    )
)]
fn disconnect_mirror(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "users" / "connections" / "calendars" / "disconnect")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<MirrorBody>("calendarId is required"))
        .and_then(|ctx: Ctx, user: AuthUser, body: MirrorBody| async move {
            respond(
                async {
                    let Some(calendar) = body.calendar_id.filter(|id| !id.is_empty()) else {
                        return Err(AppError::bad_request("calendarId is required"));
                    };
                    let calendar_id = Uuid::parse_str(&calendar)
                        .map(CalendarId::from_uuid)
                        .map_err(|_| {
                            AppError::bad_request("Not an external calendar you can disconnect")
                        })?;
                    disconnect_calendar(&ctx.mirrors, user.id(), calendar_id).await?;
                    Ok(warp::reply::json(&DisconnectedCalendar {
                        id: calendar_id.uuid(),
                    })
                    .into_response())
                }
                .await,
            )
        })
}
