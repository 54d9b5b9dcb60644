//! `GET /api/stream`: the authenticated Server-Sent-Events stream.
//!
//! The user's session actor (through the registry) hands each connection a bounded queue of
//! encoded frames. The stream opens with `retry: 3000`, sends a `: ping` comment when idle
//! (every `STREAM_KEEPALIVE_MS`), writes each frame as one `data:` line, and ends when the
//! client goes away (the connection is detached) or the server shuts down.

use std::convert::Infallible;
use std::time::Duration;

use futures::{StreamExt, stream};
use http::HeaderValue;
use ractor::ActorRef;
use tokio_stream::wrappers::ReceiverStream;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::sse::Event;
use warp::{Filter, Reply};

use super::extract::{AuthUser, authenticated, respond, route, with_ctx};
use crate::actors::sessions::{Attached, RegistryMsg};
use crate::actors::{ActorKind, ask_slot};
use crate::context::Ctx;
use crate::error::AppError;

/// Reconnect delay the stream advises clients.
const RETRY: Duration = Duration::from_millis(3000);

/// The stream route.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    warp::path!("api" / "stream")
        .and(route("/api/stream"))
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|ctx: Ctx, user: AuthUser| async move { respond(open_stream(ctx, user).await) })
        .boxed()
}

/// Detaches the connection from the registry when the stream is dropped.
struct DetachOnDrop {
    registry: Option<ActorRef<RegistryMsg>>,
    user_id: String,
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
    let user_id = user.id().to_owned();
    let registry = &ctx.actors.sessions.registry;
    let Attached { connection, frames } = ask_slot(
        registry,
        ActorKind::SessionRegistry,
        ctx.settings.call_timeout(),
        |reply| RegistryMsg::Attach {
            user_id: user_id.clone(),
            reply,
        },
    )
    .await?;
    let guard = DetachOnDrop {
        registry: registry.get(),
        user_id,
        connection,
    };
    let opening = stream::once(async { Event::default().retry(RETRY) });
    let frames = ReceiverStream::new(frames).map(move |frame| {
        let _connection = &guard;
        Event::default().data(&*frame)
    });
    let shutdown = ctx.shutdown.token().clone().cancelled_owned();
    let events = opening
        .chain(frames)
        .map(Ok::<_, Infallible>)
        .take_until(shutdown);
    let keep_alive = warp::sse::keep_alive()
        .interval(Duration::from_millis(ctx.settings.stream.keepalive_ms))
        .text(" ping");
    let mut response = warp::sse::reply(keep_alive.stream(events)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}
