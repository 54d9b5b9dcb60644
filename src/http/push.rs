//! Web push subscriptions: `POST /api/v1/push/subscriptions` (a browser's subscription, as
//! `PushSubscription.toJSON()` gives it: an https endpoint and its keys) and
//! `DELETE /api/v1/push/subscriptions` (`{endpoint}`; only the caller's own). A
//! subscription belongs to the session that made it. Both need a signed-in session and a
//! server with VAPID keys.

use crate::http::endpoint::endpoint;
use chrono::Utc;
use http::StatusCode;
use serde::Deserialize;
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{AuthUser, json_body, respond, signed_in, with_ctx};
use crate::auth::principal::Identity;
use crate::context::Ctx;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::push::encryption::SubscriptionKeys;
use crate::store::push::{self as push_store, NewSubscription, Subscription};

/// Push subscriptions in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(subscribe, unsubscribe),
    components(schemas(SubscribeBody, SubscriptionKeysBody, UnsubscribeBody)),
    tags((name = "push", description = "Web push: the browsers a user's reminders are pushed to."))
)]
pub struct Api;

/// The routes under `/api/v1/push`.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    subscribe(ctx.clone()).or(unsubscribe(ctx)).unify().boxed()
}

/// The longest endpoint URL accepted.
const MAX_ENDPOINT: usize = 2048;
/// The longest key text accepted.
const MAX_KEY: usize = 256;

/// A browser's push subscription.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SubscribeBody {
    /// The push service's https URL for this browser.
    #[schema(max_length = 2048)]
    endpoint: String,
    /// The keys messages are encrypted to.
    keys: SubscriptionKeysBody,
}

/// A subscription's keys, base64url.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct SubscriptionKeysBody {
    /// The browser's P-256 public key (65 bytes, uncompressed).
    #[schema(max_length = 256)]
    p256dh: String,
    /// The browser's authentication secret (16 bytes).
    #[schema(max_length = 256)]
    auth: String,
}

/// Which subscription to drop.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct UnsubscribeBody {
    /// The subscription's endpoint.
    #[schema(max_length = 2048)]
    endpoint: String,
}

const INVALID_SUBSCRIPTION: &str =
    "Body must be a PushSubscription — { endpoint, keys: { auth, p256dh } }...";
const INVALID_UNSUBSCRIPTION: &str = "Body must be { endpoint }...";

fn push_enabled(ctx: &Ctx) -> Result<(), AppError> {
    if ctx.capabilities.push_public_key.is_some() {
        Ok(())
    } else {
        Err(AppError::bad_request(
            "This server does not send push notifications (no VAPID keys are configured).",
        ))
    }
}

/// An https URL of at most [`MAX_ENDPOINT`] bytes without credentials.
fn checked_endpoint(endpoint: &str) -> Result<(), AppError> {
    let refused =
        || AppError::bad_request("endpoint must be an https URL of at most 2048 characters...");
    if endpoint.len() > MAX_ENDPOINT {
        return Err(refused());
    }
    let url = url::Url::parse(endpoint).map_err(|_| refused())?;
    if url.scheme() != "https"
        || url.host_str().is_none_or(str::is_empty)
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(refused());
    }
    Ok(())
}

/// POST /api/v1/push/subscriptions — remembers the caller's browser (again: renews it).
#[utoipa::path(
    post,
    path = "/api/v1/push/subscriptions",
    tag = "push",
    security(("bearer" = []), ("cookie" = [])),
    request_body = SubscribeBody,
    responses(
        (status = 204, description = "Subscribed (subscribing again renews the keys; an endpoint another account subscribed moves to the caller)."),
        (status = 400, description = "Not a subscription (an https endpoint and valid P-256 and auth keys), or this server does not push.", body = ErrorBody),
    )
)]
fn subscribe(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "push" / "subscriptions")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<SubscribeBody>(INVALID_SUBSCRIPTION))
        .and_then(|ctx: Ctx, user: AuthUser, body: SubscribeBody| async move {
            respond(subscribe_handler(&ctx, &user, body).await)
        })
}

async fn subscribe_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: SubscribeBody,
) -> Result<Response, AppError> {
    push_enabled(ctx)?;
    checked_endpoint(&body.endpoint)?;
    let keys = body.keys;
    if keys.p256dh.len() > MAX_KEY
        || keys.auth.len() > MAX_KEY
        || SubscriptionKeys::from_base64url(&keys.p256dh, &keys.auth).is_err()
    {
        return Err(AppError::bad_request(
            "keys must hold the browser's P-256 public key (p256dh) and its 16-byte auth secret, base64url...",
        ));
    }
    let Identity::Session(session) = &user.identity else {
        return Err(AppError::forbidden(
            "Only a signed-in session can subscribe.",
        ));
    };
    let new = NewSubscription {
        user: user.id(),
        session_id: &session.session.id,
        subscription: Subscription {
            endpoint: body.endpoint,
            p256dh: keys.p256dh,
            auth: keys.auth,
        },
    };
    push_store::subscribe(&ctx.db, new, Utc::now()).await?;
    Ok(warp::reply::with_status(warp::reply(), StatusCode::NO_CONTENT).into_response())
}

/// DELETE /api/v1/push/subscriptions — forgets the caller's browser.
#[utoipa::path(
    delete,
    path = "/api/v1/push/subscriptions",
    tag = "push",
    security(("bearer" = []), ("cookie" = [])),
    request_body = UnsubscribeBody,
    responses(
        (status = 204, description = "Not subscribed any more (also when it was not, or the endpoint is another account's, which stays)."),
        (status = 400, description = "Not `{endpoint}`.", body = ErrorBody),
    )
)]
fn unsubscribe(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "push" / "subscriptions")
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<UnsubscribeBody>(INVALID_UNSUBSCRIPTION))
        .and_then(
            |ctx: Ctx, user: AuthUser, body: UnsubscribeBody| async move {
                respond(unsubscribe_handler(&ctx, &user, body).await)
            },
        )
}

async fn unsubscribe_handler(
    ctx: &Ctx,
    user: &AuthUser,
    body: UnsubscribeBody,
) -> Result<Response, AppError> {
    if body.endpoint.len() > MAX_ENDPOINT {
        return Err(AppError::bad_request(INVALID_UNSUBSCRIPTION));
    }
    push_store::unsubscribe(&ctx.db, user.id(), &body.endpoint).await?;
    Ok(warp::reply::with_status(warp::reply(), StatusCode::NO_CONTENT).into_response())
}
