//! `GET /api/stream`: the authenticated Server-Sent-Events stream.
//!
//! The user's session actor (through the registry) hands each connection a bounded queue of
//! frames, already written as `data: <json>` lines ([`crate::domain::frames`]), each block
//! ending in a blank line. The body is written here byte for byte: it opens with
//! `retry: 3000`, sends a `: ping` comment when idle (every `STREAM_KEEPALIVE_MS`), writes
//! the queued frames, and ends when the client
//! goes away (the connection is detached), when the session actor dropped the connection
//! (for falling behind, or because the session or member token it was opened with ended),
//! or when the server shuts down.

use crate::http::endpoint::endpoint;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use http::HeaderValue;
use ractor::ActorRef;
use tokio::sync::mpsc;
use tokio::time::Sleep;
use tokio_util::sync::WaitForCancellationFutureOwned;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Reply};

use super::extract::{AuthUser, respond, session_or_member_token, with_ctx};
use crate::actors::session::StreamCredential;
use crate::actors::sessions::{Attached, RegistryMsg};
use crate::actors::{ActorKind, ask_slot};
use crate::auth::principal::Identity;
use crate::context::Ctx;
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::http::openapi::frames;

/// The stream operation and the frame schemas of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(routes),
    components(schemas(
        frames::StreamFrame,
        frames::EventCreatedFrame,
        frames::EventUpdatedFrame,
        frames::EventRemovedFrame,
        frames::CalendarUpdatedFrame,
        frames::CalendarRemovedFrame,
        frames::AttendanceChangedFrame,
        frames::ExternalSyncFrame,
        frames::SettingsUpdatedFrame,
        frames::RemindersUpdatedFrame,
        frames::PageCreatedFrame,
        frames::PageUpdatedFrame,
        frames::PageRemovedFrame,
        frames::FederatedSyncFrame,
        frames::ProviderDeliveryFrame,
    )),
    tags((name = "stream", description = "The live stream of changes (Server-Sent Events)."))
)]
pub struct Api;

/// GET /api/stream — the caller's live frames.
#[utoipa::path(
    get,
    path = "/api/stream",
    tag = "stream",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    responses(
        (status = 200,
         description = "A `text/event-stream` that stays open: `retry: 3000` first, then one \
                        `data: <json>` line and a blank line per frame, each frame a \
                        `StreamFrame` (`#/components/schemas/StreamFrame`: `{type, payload}`), \
                        and a `: ping` comment when idle. It ends when the session or member \
                        token it was opened with ends, when the connection falls too far \
                        behind, or at shutdown.",
         body = String, content_type = "text/event-stream",
         headers(("Cache-Control" = String, description = "`no-cache, no-transform`."))),
    )
)]
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    endpoint!("api" / "stream")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move { respond(open_stream(ctx, user).await) })
        .boxed()
}

/// Detaches the connection from the registry when the stream is dropped.
struct DetachOnDrop {
    registry: Option<ActorRef<RegistryMsg>>,
    user_id: UserId,
    connection: u64,
}

impl Drop for DetachOnDrop {
    fn drop(&mut self) {
        if let Some(registry) = &self.registry {
            let _ = registry.send_message(RegistryMsg::Detach {
                user_id: std::mem::take(&mut self.user_id),
                connection: self.connection,
            });
        }
    }
}

async fn open_stream(ctx: Ctx, user: AuthUser) -> Result<Response, AppError> {
    let user_id = user.id().clone();
    let (credential, expires_at) = match &user.identity {
        Identity::Session(session) => (
            StreamCredential::Session(session.session.id.clone()),
            session.session.expires_at,
        ),
        Identity::Member {
            token_hash,
            expires_at,
            ..
        } => (
            StreamCredential::MemberToken(token_hash.clone()),
            *expires_at,
        ),
    };
    let registry = &ctx.actors.sessions.registry;
    let Attached { connection, frames } = ask_slot(
        registry,
        ActorKind::SessionRegistry,
        ctx.settings.call_timeout(),
        |reply| RegistryMsg::Attach {
            user_id: user_id.clone(),
            credential,
            expires_at,
            credentials_seen: user.credentials_seen,
            reply,
        },
    )
    .await?;
    let guard = DetachOnDrop {
        registry: registry.get(),
        user_id,
        connection,
    };
    let body = EventStream {
        opening: Some(Bytes::from_static(RETRY_LINE)),
        frames,
        keep_alive: Duration::from_millis(ctx.settings.stream.keepalive_ms),
        idle: Box::pin(tokio::time::sleep(Duration::ZERO)),
        shutdown: Box::pin(ctx.shutdown.token().clone().cancelled_owned()),
        _guard: guard,
    };
    let mut response = warp::reply::stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// The advice that opens every stream.
const RETRY_LINE: &[u8] = b"retry: 3000\n\n";
/// The keep-alive comment.
const PING: &[u8] = b": ping\n\n";

/// The `text/event-stream` body of one connection, written byte for byte (warp's formatter
/// writes `retry:3000` and `data:{…}` without the space the wire format promises): the
/// opening `retry: 3000`, then each queued frame, or `: ping` after `keep_alive` without
/// one. It ends when the session actor drops the queue (a slow connection), or at shutdown;
/// dropping it (the client went away) detaches the connection.
struct EventStream {
    opening: Option<Bytes>,
    frames: mpsc::Receiver<Bytes>,
    keep_alive: Duration,
    idle: Pin<Box<Sleep>>,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    _guard: DetachOnDrop,
}

impl Stream for EventStream {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.shutdown.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        let next = if let Some(opening) = this.opening.take() {
            opening
        } else {
            match this.frames.poll_recv(cx) {
                Poll::Ready(Some(frames)) => frames,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => match this.idle.as_mut().poll(cx) {
                    Poll::Ready(()) => Bytes::from_static(PING),
                    Poll::Pending => return Poll::Pending,
                },
            }
        };
        let deadline = tokio::time::Instant::now() + this.keep_alive;
        this.idle.as_mut().reset(deadline);
        Poll::Ready(Some(Ok(next)))
    }
}
