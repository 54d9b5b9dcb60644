//! Self-hosted HTML pages at the origin root: `GET /reset-password`, `GET /delete-account`,
//! `GET /email-verified`, the invite hand-off `GET /invite/:token` (and better-auth's error
//! page), plus the app-site-association document `GET /.well-known/apple-app-site-association`. Small, self-contained (inline CSS
//! and script, no external assets), readable on a phone; they read their token from the URL
//! and call the API on the same origin.

use crate::http::endpoint::endpoint;
use http::HeaderValue;
use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Reply};

use super::extract::with_ctx;
use crate::context::Ctx;

const STYLE: &str = include_str!("page.css");
const RESET_PASSWORD: &str = include_str!("reset-password.html");
const DELETE_ACCOUNT: &str = include_str!("delete-account.html");
const EMAIL_VERIFIED: &str = include_str!("email-verified.html");
const AUTH_ERROR: &str = include_str!("auth-error.html");
const INVITE: &str = include_str!("invite.html");

/// Only inline style and script of our own, and requests to this origin.
const PAGE_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// An HTML response of `body` (pages carry tokens: never cached).
pub fn html(body: String) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CSP));
    response
}

fn page(template: &str) -> String {
    template.replace("/*STYLE*/", STYLE)
}

/// better-auth's error page for `code` (already restricted to `[A-Za-z0-9_'-]`).
pub fn auth_error_page(code: &str) -> String {
    page(AUTH_ERROR).replace("{{CODE}}", code)
}

/// Whether `token` has the shape of an invite token (`[0-9a-f-]{16,64}`).
fn is_invite_token(token: &str) -> bool {
    (16..=64).contains(&token.len())
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b'-'))
}

/// The invite hand-off page: opens `{app_scheme}://invite/<token>?server=<origin>`.
fn invite_page(ctx: &Ctx, token: &str) -> Response {
    if !is_invite_token(token) {
        let mut response = "Invalid invite.".into_response();
        *response.status_mut() = http::StatusCode::BAD_REQUEST;
        return response;
    }
    let server: String = url::form_urlencoded::byte_serialize(ctx.base_url.as_bytes()).collect();
    let link = format!(
        "{}://invite/{token}?server={server}",
        ctx.settings.server.app_scheme
    );
    html(page(INVITE).replace("{{APP_LINK}}", &link))
}

/// The universal-link association for `/invite/*`, once the team id is configured.
fn apple_app_site_association(ctx: &Ctx) -> Response {
    let Some(team) = &ctx.settings.apple.team_id else {
        let mut response =
            warp::reply::json(&serde_json::json!({ "error": "Not found." })).into_response();
        *response.status_mut() = http::StatusCode::NOT_FOUND;
        return response;
    };
    let document = serde_json::json!({
        "applinks": { "details": [ {
            "appIDs": [format!("{team}.{}", ctx.settings.apple.bundle_id)],
            "components": [ { "/": "/invite/*", "comment": "Calendar invite" } ]
        } ] }
    });
    warp::reply::json(&document).into_response()
}

/// The page routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    let invite = endpoint!("invite" / {token: String})
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .map(|token: String, ctx: Ctx| invite_page(&ctx, &token));
    let association = endpoint!(".well-known" / "apple-app-site-association")
        .and(warp::get())
        .and(with_ctx(ctx))
        .map(|ctx: Ctx| apple_app_site_association(&ctx));
    let reset = endpoint!("reset-password")
        .and(warp::get())
        .map(|| html(page(RESET_PASSWORD)));
    let delete = endpoint!("delete-account")
        .and(warp::get())
        .map(|| html(page(DELETE_ACCOUNT)));
    let verified = endpoint!("email-verified")
        .and(warp::get())
        .map(|| html(page(EMAIL_VERIFIED)));
    reset
        .or(delete)
        .unify()
        .or(verified)
        .unify()
        .or(invite)
        .unify()
        .or(association)
        .unify()
        .boxed()
}
