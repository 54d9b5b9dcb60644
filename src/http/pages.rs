//! Self-hosted HTML pages at the origin root: `GET /reset-password`, `GET /delete-account`,
//! `GET /email-verified` (and better-auth's error page). Small, self-contained (inline CSS
//! and script, no external assets), readable on a phone; they read their token from the URL
//! and call the API on the same origin.

use http::HeaderValue;
use http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Reply};

use super::extract::route;

const STYLE: &str = include_str!("html/page.css");
const RESET_PASSWORD: &str = include_str!("html/reset-password.html");
const DELETE_ACCOUNT: &str = include_str!("html/delete-account.html");
const EMAIL_VERIFIED: &str = include_str!("html/email-verified.html");
const AUTH_ERROR: &str = include_str!("html/auth-error.html");

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

/// The page routes.
pub fn routes() -> BoxedFilter<(Response,)> {
    let reset = warp::path!("reset-password")
        .and(route("/reset-password"))
        .and(warp::get())
        .map(|| html(page(RESET_PASSWORD)));
    let delete = warp::path!("delete-account")
        .and(route("/delete-account"))
        .and(warp::get())
        .map(|| html(page(DELETE_ACCOUNT)));
    let verified = warp::path!("email-verified")
        .and(route("/email-verified"))
        .and(warp::get())
        .map(|| html(page(EMAIL_VERIFIED)));
    reset.or(delete).unify().or(verified).unify().boxed()
}
