//! The outer stages of the request pipeline, in the spec's order, wrapped around warp:
//!
//! 1. metrics (`svc_http_*`, recorded when the response head is ready, or `aborted`);
//! 2. request id (kept from a valid `x-request-id`, else generated) and the access log line;
//! 3. cross-origin policy ([`CorsPolicy`]);
//! 4. JSON bodies: a request declaring a JSON content type has its body read here, capped at
//!    512 KB (413) and checked to be JSON without NUL in any string (400, see
//!    [`super::json_text`]), before any route sees it; a `%00` in the path or query is a 400
//!    here too. Under `/api/auth/*` these 400s use better-auth's `{message, code}` shape
//!    (`Invalid JSON in request body`, code `BAD_REQUEST`); better-auth defines no 413, so
//!    an oversized body is the pipeline's `{error, requestId}` everywhere;
//!
//! then warp's routes (`/api/auth/*`, application and page routes) ending in the error
//! renderer. Every response carries `x-request-id` and the
//! security headers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Method, Request};
use http_body_util::{BodyExt, BodyStream, Either, Full};
use hyper::body::Incoming;
use tower_service::Service;
use tracing::Instrument;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::body::{self, BodyError, Deadline};
use super::cors::{CorsDecision, CorsPolicy};
use super::extract::JSON_BODY_LIMIT;
use super::json_text::{self, JsonProblem, NUL_MESSAGE};
use super::rejection::{RenderedError, render_error};
use super::request::{REQUEST_ID_HEADER, RequestCtx, client_ip, request_id_from};
use crate::auth::error::AuthError;
use crate::context::Ctx;
use crate::error::AppError;
use crate::metrics::ABORTED_STATUS;

/// The whole request pipeline of one server; cheap to clone per connection.
#[derive(Clone)]
pub struct Pipeline {
    ctx: Ctx,
    cors: Arc<CorsPolicy>,
    routes: BoxedFilter<(Response,)>,
}

impl Pipeline {
    /// The pipeline around `routes` (see [`super::routes`]).
    pub fn new(ctx: Ctx, routes: BoxedFilter<(Response,)>) -> Self {
        let cors = CorsPolicy::new(ctx.auth.origins.clone());
        Self {
            ctx,
            cors: Arc::new(cors),
            routes,
        }
    }

    /// Handles one request from `client_addr`.
    pub async fn handle(&self, request: Request<Incoming>, client_addr: SocketAddr) -> Response {
        let method = method_label(request.method());
        let request_id = request_id_from(request.headers());
        let span = tracing::info_span!(
            "request",
            requestId = %request_id,
            userId = tracing::field::Empty
        );
        let auth = &self.ctx.settings.auth;
        let proxies: &[ipnet::IpNet] = if auth.trust_proxy_headers {
            &auth.trusted_proxies
        } else {
            &[]
        };
        let ip = client_ip(client_addr.ip(), request.headers(), proxies);
        let rctx = RequestCtx::new(request_id, client_addr, ip, span.clone());
        let mut completion = Completion::start(self.ctx.clone(), method, rctx.clone());

        let mut response = self.dispatch(request, &rctx).instrument(span).await;

        let headers = response.headers_mut();
        if let Ok(id) = HeaderValue::from_str(rctx.id()) {
            headers.insert(REQUEST_ID_HEADER, id);
        }
        for (name, value) in SECURITY_HEADERS {
            headers
                .entry(*name)
                .or_insert_with(|| HeaderValue::from_static(value));
        }
        let error = response
            .extensions()
            .get::<RenderedError>()
            .map(|e| e.0.as_str());
        completion.finish(Some(response.status().as_u16()), error);
        response
    }

    async fn dispatch(&self, request: Request<Incoming>, rctx: &RequestCtx) -> Response {
        let origin = match self.cors.decide(request.method(), request.headers()) {
            CorsDecision::Preflight(response) => return response,
            CorsDecision::Forbidden => {
                return render_error(
                    rctx,
                    &AppError::forbidden("Origin is not allowed to call this API."),
                );
            }
            CorsDecision::Allowed(origin) => Some(origin),
            CorsDecision::NotCors => None,
        };
        let is_auth = is_auth_path(request.uri().path());
        let due = tokio::time::Instant::now()
            + Duration::from_millis(self.ctx.settings.server.body_read_timeout_ms);
        let request = request.map(|body| Deadline::new(body, due));
        let checked = match refuse_nul_in_uri(request.uri()) {
            Ok(()) => read_json_body(request).await,
            Err(problem) => Err(problem),
        };
        let mut request = match checked {
            Ok(request) => request,
            Err(problem) => return render_error(rctx, &problem.into_error(is_auth)),
        };
        request.extensions_mut().insert(rctx.clone());
        let mut service = warp::service(self.routes.clone());
        let mut response = match service.call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        if let Some(origin) = origin {
            CorsPolicy::decorate(&mut response, origin);
        }
        response
    }
}

/// The body warp sees: untouched (but due by its deadline), or the JSON already read by
/// stage 4.
type RequestBody = Either<Deadline<Incoming>, Full<Bytes>>;

/// What stage 4 refuses.
#[derive(Debug)]
enum BodyProblem {
    /// Over [`JSON_BODY_LIMIT`].
    TooLarge,
    /// The body did not arrive by its deadline.
    TimedOut,
    /// The connection failed while the body was read.
    Unreadable,
    /// Not JSON (the parser's message).
    Malformed(serde_json::Error),
    /// U+0000 in a JSON string, or `%00` in the path or query.
    Nul,
}

impl BodyProblem {
    /// The error for a request under `/api/auth/*` (`auth`, better-auth's shape) or elsewhere.
    fn into_error(self, auth: bool) -> AppError {
        match (self, auth) {
            (Self::TooLarge, _) => AppError::PayloadTooLarge("request entity too large".into()),
            (Self::TimedOut, _) => body::timed_out(),
            (Self::Unreadable, true) => AuthError::unreadable_body().into(),
            (Self::Unreadable, false) => {
                AppError::bad_request("The request body could not be read.")
            }
            (Self::Malformed(_), true) => AuthError::invalid_json().into(),
            (Self::Malformed(err), false) => {
                AppError::bad_request(format!("Request body is not valid JSON: {err}"))
            }
            (Self::Nul, true) => AuthError::nul_in_body().into(),
            (Self::Nul, false) => AppError::bad_request(NUL_MESSAGE),
        }
    }
}

/// Whether `path` belongs to the authentication subsystem.
fn is_auth_path(path: &str) -> bool {
    path == "/api/auth" || path.starts_with("/api/auth/")
}

/// A percent-encoded NUL in the path or query would reach the store as a NUL in an id or a
/// name, which PostgreSQL cannot hold.
fn refuse_nul_in_uri(uri: &http::Uri) -> Result<(), BodyProblem> {
    let encoded_nul = |text: &str| text.contains("%00");
    if encoded_nul(uri.path()) || uri.query().is_some_and(encoded_nul) {
        return Err(BodyProblem::Nul);
    }
    Ok(())
}

/// Stage 4: reads and checks a JSON body (see the module doc); other bodies pass untouched
/// for their routes to read with their own limits. A body over the limit is read to its end
/// and thrown away (within bounds, [`body::discard`]) before it is refused.
async fn read_json_body(
    request: Request<Deadline<Incoming>>,
) -> Result<Request<RequestBody>, BodyProblem> {
    let declares_json = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json" || mime.ends_with("+json")
        })
        .unwrap_or(false);
    if !declares_json {
        return Ok(request.map(Either::Left));
    }
    let declared_length = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    let (parts, mut body) = request.into_parts();
    let too_large = |body| async {
        body::discard(
            &parts.headers,
            BodyStream::new(body).map(|frame| frame.map(|f| f.into_data().unwrap_or_default())),
        )
        .await;
        BodyProblem::TooLarge
    };
    if declared_length.is_some_and(|length| length > JSON_BODY_LIMIT) {
        return Err(too_large(body).await);
    }
    let mut bytes = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| match err {
            BodyError::TimedOut => BodyProblem::TimedOut,
            BodyError::Broken(_) => BodyProblem::Unreadable,
        })?;
        if let Ok(data) = frame.into_data() {
            if (bytes.len() + data.len()) as u64 > JSON_BODY_LIMIT {
                return Err(too_large(body).await);
            }
            bytes.extend_from_slice(&data);
        }
    }
    let bytes = bytes.freeze();
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        json_text::check(&bytes).map_err(|problem| match problem {
            JsonProblem::Malformed(err) => BodyProblem::Malformed(err),
            JsonProblem::Nul => BodyProblem::Nul,
        })?;
    }
    Ok(Request::from_parts(parts, Either::Right(Full::new(bytes))))
}

/// Headers every response carries (set unless a route chose otherwise).
const SECURITY_HEADERS: &[(&str, &str)] = &[
    ("content-security-policy", "frame-ancestors 'none'"),
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
];

/// The `method` label: the standard methods, else `OTHER`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Records a request's metrics and access log line exactly once: on [`Completion::finish`],
/// or as `aborted` if the client went away first (the future was dropped).
struct Completion {
    ctx: Ctx,
    method: &'static str,
    rctx: RequestCtx,
    started: Instant,
    done: bool,
}

impl Completion {
    fn start(ctx: Ctx, method: &'static str, rctx: RequestCtx) -> Self {
        ctx.metrics.http_started(method);
        Self {
            ctx,
            method,
            rctx,
            started: Instant::now(),
            done: false,
        }
    }

    /// `status` is `None` when the client went away before the response.
    fn finish(&mut self, status: Option<u16>, error: Option<&str>) {
        self.done = true;
        let elapsed = self.started.elapsed();
        let route = self.rctx.route();
        let label = status.map_or_else(|| ABORTED_STATUS.to_owned(), |code| code.to_string());
        self.ctx
            .metrics
            .http_finished(self.method, route, &label, elapsed);
        log_access(&self.rctx, self.method, route, status, elapsed, error);
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if !self.done {
            self.finish(None, None);
        }
    }
}

/// The access log line: info for success, warn for 4xx (and aborted), error for 5xx.
fn log_access(
    rctx: &RequestCtx,
    method: &str,
    route: &str,
    status: Option<u16>,
    elapsed: Duration,
    error: Option<&str>,
) {
    let _span = rctx.span().enter();
    let duration_ms = (elapsed.as_secs_f64() * 10_000.0).round() / 10.0;
    macro_rules! access {
        ($level:ident) => {
            match status {
                Some(status) => tracing::$level!(
                    method,
                    route,
                    status,
                    durationMs = duration_ms,
                    error,
                    "http.request.completed"
                ),
                None => tracing::$level!(
                    method,
                    route,
                    status = ABORTED_STATUS,
                    durationMs = duration_ms,
                    "http.request.completed"
                ),
            }
        };
    }
    match status {
        Some(500..) => access!(error),
        Some(400..) | None => access!(warn),
        Some(_) => access!(info),
    }
}
