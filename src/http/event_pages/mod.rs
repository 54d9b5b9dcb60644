//! Published event pages: the organizer's side under `/api/v1/events/:eventId/share`
//! ([`share`]: needs the right to edit the event) and the public side under
//! `/api/v1/public/events/:token` ([`public`]: the page with exactly its fields, and the
//! answers given there by a session with a verified email, which land in the event's
//! attendee list through the event's calendar actor; rate-limited per address).

mod public;
mod share;

use utoipa::OpenApi;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use crate::context::Ctx;
use crate::domain::event_pages::{
    AttendeeVisibility, Cover, Font, Layout, PageMode, PageTheme, Palette, Rsvp, RsvpCounts,
    RsvpSummary,
};

/// Published event pages in the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        share::get_share,
        share::put_share,
        share::delete_share,
        public::public_event,
        public::get_rsvp,
        public::put_rsvp
    ),
    components(schemas(
        share::ShareView,
        share::PublishBody,
        public::PublicEventView,
        public::RsvpBody,
        RsvpSummary,
        RsvpCounts,
        PageMode,
        AttendeeVisibility,
        PageTheme,
        Rsvp,
        Cover,
        Font,
        Layout,
        Palette,
    )),
    tags((name = "event pages", description = "Published event pages: publishing an event, its public page and the answers given there."))
)]
pub struct Api;

/// The organizer's routes (under `/api/v1/events`).
pub fn share_routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    share::get_share(ctx.clone())
        .or(share::put_share(ctx.clone()))
        .unify()
        .or(share::delete_share(ctx))
        .unify()
        .boxed()
}

/// The public routes (under `/api/v1/public/events`).
pub fn public_routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    public::public_event(ctx.clone())
        .or(public::get_rsvp(ctx.clone()))
        .unify()
        .or(public::put_rsvp(ctx))
        .unify()
        .boxed()
}
