//! The error renderer, last stage of the pipeline and the only place an error becomes a
//! response.
//!
//! Handlers reject with [`AppRejection`] (an [`AppError`]); warp's own rejections (no route,
//! wrong method, bad query) are mapped to `AppError` here too. Every error response is JSON
//! `{error, requestId, ...}` with the request's id. 5xx causes are logged once, here, at error
//! level; the client sees a fixed text.
//!
//! When several routes take a path (a literal one and a parameter one, `GET
//! /calendars/google` and `GET /calendars/{id}`), warp keeps each route's rejection and
//! finds the last route's first; a route that refused a member token ([`MemberTokenRefused`])
//! is the one the request meant, so that refusal is rendered before any other.

use http::header::{CONTENT_TYPE, HeaderValue};
use warp::Rejection;
use warp::reject::{
    InvalidHeader, InvalidQuery, LengthRequired, MethodNotAllowed, MissingHeader, PayloadTooLarge,
    Reject, UnsupportedMediaType,
};
use warp::reply::Response;

use super::request::RequestCtx;
use crate::error::AppError;

/// An [`AppError`] travelling through warp as a rejection.
#[derive(Debug)]
pub struct AppRejection(pub AppError);

impl Reject for AppRejection {}

/// Rejects with `err`.
pub fn reject(err: AppError) -> Rejection {
    warp::reject::custom(AppRejection(err))
}

/// A route that takes no member token refused one (403, [`MEMBER_TOKEN_REFUSED`]).
#[derive(Debug)]
pub struct MemberTokenRefused;

impl Reject for MemberTokenRefused {}

/// What a member token is told on a route it may not use.
pub const MEMBER_TOKEN_REFUSED: &str = "A member token acts only within the calendars it was \
    admitted to (their events, attendance, members and invites, leaving, the stream); this \
    action needs a signed-in account on this server.";

/// The client-visible message of an error response, kept for the access log.
#[derive(Debug, Clone)]
pub struct RenderedError(pub String);

/// Renders a rejection that reached the end of the pipeline.
pub fn render_rejection(rctx: &RequestCtx, rejection: &Rejection) -> Response {
    if rejection.find::<MemberTokenRefused>().is_some() {
        return render_error(rctx, &AppError::forbidden(MEMBER_TOKEN_REFUSED));
    }
    if let Some(AppRejection(err)) = rejection.find::<AppRejection>() {
        return render_error(rctx, err);
    }
    let err = if rejection.is_not_found() {
        AppError::not_found("Not found.")
    } else if rejection.find::<PayloadTooLarge>().is_some() {
        AppError::PayloadTooLarge("request entity too large".into())
    } else if rejection.find::<LengthRequired>().is_some() {
        AppError::bad_request("A content-length header is required.")
    } else if rejection.find::<UnsupportedMediaType>().is_some() {
        AppError::UnsupportedMediaType("Unsupported content type.".into())
    } else if rejection.find::<InvalidQuery>().is_some() {
        AppError::bad_request("Invalid query string.")
    } else if let Some(missing) = rejection.find::<MissingHeader>() {
        AppError::bad_request(format!("Missing request header {}.", missing.name()))
    } else if let Some(invalid) = rejection.find::<InvalidHeader>() {
        AppError::bad_request(format!("Invalid request header {}.", invalid.name()))
    } else if rejection.find::<MethodNotAllowed>().is_some() {
        // Last: another route whose path matched took another method, while the problems
        // above come from a route that took the request's method and path.
        AppError::MethodNotAllowed
    } else {
        AppError::internal(format!("unhandled rejection: {rejection:?}"))
    };
    render_error(rctx, &err)
}

/// Renders `err` as the JSON error body for this request.
pub fn render_error(rctx: &RequestCtx, err: &AppError) -> Response {
    let status = err.status();
    if status.is_server_error() {
        let _span = rctx.span().enter();
        tracing::error!(
            status = status.as_u16(),
            error = err as &dyn std::error::Error,
            "http.request.failed"
        );
    }
    let body = serde_json::Value::Object(err.body(rctx.id()));
    let mut response = Response::new(body.to_string().into());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in err.headers() {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(name, value);
        }
    }
    response
        .extensions_mut()
        .insert(RenderedError(err.client_message().into_owned()));
    response
}
