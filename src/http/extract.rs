//! Filters shared by the route modules: the server context, the request context, route
//! labelling, size-capped JSON bodies, and turning a handler's `Result<_, AppError>` into a
//! reply or a rejection.

use std::convert::Infallible;

use bytes::{Bytes, BytesMut};
use futures::TryStreamExt;
use serde::de::DeserializeOwned;
use warp::{Buf, Filter, Rejection, Reply};

use super::json_text::{self, JsonProblem, NUL_MESSAGE};
use super::rejection::{MemberTokenRefused, reject};
use super::request::RequestCtx;
use crate::auth::csrf;
use crate::auth::principal::{self, Identity, Resolution, Transport};
use crate::context::Ctx;
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::http::input;

/// The JSON body cap of the spec's pipeline (512 KB).
pub const JSON_BODY_LIMIT: u64 = 512 * 1024;

/// Extracts the server context.
pub fn with_ctx(ctx: Ctx) -> impl Filter<Extract = (Ctx,), Error = Infallible> + Clone {
    warp::any().map(move || ctx.clone())
}

/// Extracts the request context the pipeline attached.
pub fn request_ctx() -> impl Filter<Extract = (RequestCtx,), Error = Rejection> + Clone {
    warp::ext::get::<RequestCtx>()
}

/// Labels the request with its route `pattern` (metrics, logs) once its path matched.
pub fn route(pattern: &'static str) -> impl Filter<Extract = (), Error = Infallible> + Clone {
    warp::ext::optional::<RequestCtx>()
        .map(move |rctx: Option<RequestCtx>| {
            if let Some(rctx) = rctx {
                rctx.set_route(pattern);
            }
        })
        .untuple_one()
}

/// Reads the body, refusing more than `limit` bytes with 413 (by `Content-Length` before
/// reading, and while reading for chunked bodies; the rest is read and thrown away first,
/// [`super::body::discard`]) and a body past its deadline with 408.
pub fn body_bytes(limit: u64) -> impl Filter<Extract = (Bytes,), Error = Rejection> + Clone {
    warp::header::headers_cloned()
        .and(warp::body::stream())
        .and_then(move |headers, stream| collect_limited(headers, stream, limit))
}

async fn collect_limited<S, B>(
    headers: http::HeaderMap,
    stream: S,
    limit: u64,
) -> Result<Bytes, Rejection>
where
    S: futures::Stream<Item = Result<B, warp::Error>>,
    B: Buf,
{
    let mut stream = std::pin::pin!(stream);
    let length = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if length.is_some_and(|length| length > limit) {
        super::body::discard(&headers, stream).await;
        return Err(reject(too_large(limit)));
    }
    let mut body = BytesMut::new();
    while let Some(mut chunk) = stream.try_next().await.map_err(|err| {
        if super::body::is_timeout(&err) {
            reject(super::body::timed_out())
        } else {
            reject(AppError::bad_request("The request body could not be read."))
        }
    })? {
        if body.len() as u64 + chunk.remaining() as u64 > limit {
            super::body::discard(&headers, stream).await;
            return Err(reject(too_large(limit)));
        }
        while chunk.has_remaining() {
            let part = chunk.chunk();
            body.extend_from_slice(part);
            let n = part.len();
            chunk.advance(n);
        }
    }
    Ok(body.freeze())
}

fn too_large(limit: u64) -> AppError {
    AppError::PayloadTooLarge(
        format!("request entity too large (limit {} KB)", limit / 1024).into(),
    )
}

/// Parses a JSON body of at most 512 KB into `T`. Malformed JSON is 400 with the parser's
/// message; JSON of the wrong shape is 400 with `invalid` followed by what was wrong.
pub fn json_body<T>(invalid: &'static str) -> impl Filter<Extract = (T,), Error = Rejection> + Clone
where
    T: DeserializeOwned + Send + 'static,
{
    body_bytes(JSON_BODY_LIMIT)
        .and_then(move |bytes: Bytes| async move { parse_json(&bytes, invalid).map_err(reject) })
}

/// Parses `bytes` as JSON of type `T` (see [`json_body`]). A string holding U+0000 is a 400
/// whatever the content type said (see [`super::json_text`]).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8], invalid: &str) -> Result<T, AppError> {
    if let Err(JsonProblem::Nul) = json_text::check(bytes) {
        return Err(AppError::bad_request(NUL_MESSAGE));
    }
    serde_json::from_slice(bytes).map_err(|err| match err.classify() {
        serde_json::error::Category::Data => {
            // Valid JSON of the wrong shape: say where, never what (see `http::input`).
            let problem = serde_json::from_slice(bytes).map_or_else(
                |_| "the body does not have the expected shape".to_owned(),
                |body| input::shape_problem::<T>(&body),
            );
            AppError::bad_request(format!("{invalid} ({problem})"))
        }
        _ if bytes.iter().all(u8::is_ascii_whitespace) => {
            AppError::bad_request(format!("{invalid} (the request body is empty)"))
        }
        // A syntax error's message is its position and what the parser expected.
        _ => AppError::bad_request(format!("Request body is not valid JSON: {err}")),
    })
}

/// The authenticated caller of an application route.
#[derive(Debug, Clone)]
pub struct AuthUser {
    /// Who it is, and how they authenticated.
    pub identity: Identity,
    /// How many credential changes the database had announced before the identity was
    /// resolved: what is opened with it (a stream) checks it again if that moved.
    pub credentials_seen: u64,
}

impl AuthUser {
    /// The user's id.
    pub fn id(&self) -> &UserId {
        &self.identity.user().id
    }

    /// The user.
    pub fn user(&self) -> &entities::users::Model {
        self.identity.user()
    }

    /// Whether a signed-in session (not a federation member token) authenticated the call.
    pub fn has_session(&self) -> bool {
        matches!(self.identity, Identity::Session(_))
    }
}

/// Requires a session (bearer or signed cookie) or, else, a federation member token; 401
/// without. Only the routes a home server's users reach through its gateway take it (event
/// reads and writes, attendance, the calendar and its members, invites, leaving, the
/// stream); they authorize against calendar membership like any other, so a shadow acts only
/// within the calendars it was admitted to. Every other route takes [`signed_in`].
/// Cookie-authenticated requests that change state also need a trusted origin (403).
pub fn session_or_member_token(
    ctx: Ctx,
) -> impl Filter<Extract = (AuthUser,), Error = Rejection> + Clone {
    presented_credentials(ctx).and_then(|caller: Option<AuthUser>| async move {
        caller.ok_or_else(|| reject(AppError::Unauthorized("Unauthorized".into())))
    })
}

/// Whoever the request's credentials name (`None`: no credentials, or none that name a live
/// session or member token). A cookie-authenticated change from an untrusted origin is
/// refused (403).
fn presented_credentials(
    ctx: Ctx,
) -> impl Filter<Extract = (Option<AuthUser>,), Error = Rejection> + Clone {
    with_ctx(ctx)
        .and(request_ctx())
        .and(warp::method())
        .and(warp::header::headers_cloned())
        .and_then(
            |ctx: Ctx, rctx: RequestCtx, method: http::Method, headers: http::HeaderMap| async move {
                let presented = principal::presented(&headers, ctx.auth.secret());
                let credentials_seen = ctx.db.credential_changes().count();
                let resolution = principal::resolve(&ctx.db, &presented, chrono::Utc::now())
                    .await
                    .map_err(reject)?;
                let Resolution::Authenticated(identity) = resolution else {
                    return Ok(None);
                };
                let by_cookie = matches!(
                    &identity,
                    Identity::Session(session) if session.transport == Transport::Cookie
                );
                if by_cookie
                    && csrf::is_mutating(&method)
                    && csrf::check_cookie_origin(&ctx.auth.origins, &headers).is_err()
                {
                    return Err(reject(AppError::forbidden(
                        "Cookie-authenticated changes need a trusted Origin.",
                    )));
                }
                rctx.set_user(&identity.user().id);
                Ok(Some(AuthUser {
                    identity,
                    credentials_seen,
                }))
            },
        )
}

/// Requires a signed-in session; a federation member token is refused (403,
/// [`MemberTokenRefused`]).
pub fn signed_in(ctx: Ctx) -> impl Filter<Extract = (AuthUser,), Error = Rejection> + Clone {
    session_or_member_token(ctx).and_then(|user: AuthUser| async move {
        if user.has_session() {
            Ok(user)
        } else {
            Err(warp::reject::custom(MemberTokenRefused))
        }
    })
}

/// The caller's signed-in session, if they sent one (the scheduling-poll routes where a
/// session is optional): `None` without credentials and with credentials that name no live
/// session (unknown, expired, a bad signature: the request goes on anonymous, as better-auth's
/// optional sessions do). A federation member token is refused (403,
/// [`MemberTokenRefused`]) as on every route outside its calendars, and a
/// cookie-authenticated change still needs a trusted origin (403), so another site cannot
/// act as the visitor.
pub fn optional_session(
    ctx: Ctx,
) -> impl Filter<Extract = (Option<AuthUser>,), Error = Rejection> + Clone {
    presented_credentials(ctx).and_then(|caller: Option<AuthUser>| async move {
        match caller {
            Some(user) if !user.has_session() => Err(warp::reject::custom(MemberTokenRefused)),
            caller => Ok(caller),
        }
    })
}

/// The empty success answer (`OK`, `text/plain`) older clients expect from side-effect routes.
pub fn ok_text() -> warp::reply::Response {
    warp::reply::with_header("OK", "content-type", "text/plain; charset=utf-8").into_response()
}

/// Turns a handler result into a reply, or a rejection the renderer will turn into JSON.
pub fn respond<R: Reply>(result: Result<R, AppError>) -> Result<warp::reply::Response, Rejection> {
    result.map(Reply::into_response).map_err(reject)
}
