//! The internal metrics listener's only route: `GET /metrics` (Prometheus text format).
//! Anything else on that listener is a plain-text 404. Every answer says
//! `X-Content-Type-Options: nosniff`, as the API's do.

use std::sync::Arc;

use http::StatusCode;
use warp::Filter;
use warp::Reply;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use crate::metrics::Metrics;

/// The metrics listener's routes.
pub fn routes(metrics: Arc<Metrics>) -> BoxedFilter<(Response,)> {
    let scrape = warp::path!("metrics").and(warp::get()).map(move || {
        let mut response = warp::reply::with_header(
            metrics.render(),
            "content-type",
            "text/plain; version=0.0.4; charset=utf-8",
        )
        .into_response();
        response
            .headers_mut()
            .insert("cache-control", http::HeaderValue::from_static("no-store"));
        response
    });
    let not_found = warp::any()
        .map(|| warp::reply::with_status("Not found", StatusCode::NOT_FOUND).into_response());
    scrape
        .or(not_found)
        .unify()
        .map(|mut response: Response| {
            response.headers_mut().insert(
                "x-content-type-options",
                http::HeaderValue::from_static("nosniff"),
            );
            response
        })
        .boxed()
}
