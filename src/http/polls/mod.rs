//! Scheduling polls, on the original's wire.
//!
//! The organizer's routes under `/api/v1/scheduling/polls`: `POST` makes a poll (a session is
//! optional: without one, a name and an address make the organizer; 30 per 15 minutes per
//! address), `GET` lists the caller's polls, `GET …/calendar` is their calendar layer (per
//! day counts of the polls they organize or answered), `POST …/:pollId/decide` picks a day
//! and creates its all-day event through the calendar's actor, `POST …/:pollId/close` stops
//! the answers, `DELETE …/:pollId` removes the poll (the event stays). The public page's
//! routes under `/api/v1/public/polls/:token` (a session is optional; 60 per 15 minutes per
//! address each): `GET` reads the grid, `PUT …/votes` answers.
//!
//! Addresses never leave the server: the grid names people and gives them poll-local ids.
//!
//! The organizer's half is in `organizer`, the public page's in `public`; this module
//! holds the OpenAPI operations of both, their route trees and what both halves use.

use entities::scheduling_slots as slots;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::reply::Response;

use super::extract::AuthUser;
use crate::context::Ctx;
use crate::domain::polls::{PollRole, Slot, Viewer};

mod organizer;
mod public;

/// The scheduling-poll operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(
        organizer::list_polls, organizer::create_poll, organizer::poll_layer,
        organizer::decide_poll, organizer::close_poll, organizer::delete_poll,
        public::read_poll, public::vote_poll
    ),
    components(schemas(
        organizer::CreatePollBody, organizer::SlotBody, organizer::PollSummary,
        organizer::PollLayerEntry, organizer::PollDay, organizer::DecideBody,
        organizer::Decision, organizer::Closed, public::PublicPoll, public::PollPerson,
        public::PollSlotView, public::VoteBody, public::VoteItem, public::VoteValue, RoleValue
    )),
    tags((name = "scheduling", description = "Scheduling polls: candidate days, answers by name and address, a decision that becomes an all-day event."))
)]
pub struct Api;

/// The organizer's routes (`/api/v1/scheduling/polls…`; the literal `calendar` before
/// `:pollId`).
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    organizer::list_polls(ctx.clone())
        .or(organizer::create_poll(ctx.clone()))
        .unify()
        .or(organizer::poll_layer(ctx.clone()))
        .unify()
        .or(organizer::decide_poll(ctx.clone()))
        .unify()
        .or(organizer::close_poll(ctx.clone()))
        .unify()
        .or(organizer::delete_poll(ctx))
        .unify()
        .boxed()
}

/// The public page's routes (`/api/v1/public/polls/:token…`).
pub fn public_routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    public::read_poll(ctx.clone())
        .or(public::vote_poll(ctx))
        .unify()
        .boxed()
}

/// The signed-in caller as a poll sees them.
fn viewer(user: &AuthUser) -> Viewer<'_> {
    let account = user.user();
    Viewer {
        id: &account.id,
        email: &account.email,
        email_verified: account.email_verified,
        name: &account.name,
    }
}

fn slot_of(slot: &slots::Model) -> Slot {
    Slot {
        id: slot.id,
        start: slot.start_at,
        end: slot.end_at,
    }
}

/// A reader's role on a poll as the wire writes it.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum RoleValue {
    /// They organize it.
    Organizer,
    /// They take part.
    Participant,
}

impl From<PollRole> for RoleValue {
    fn from(role: PollRole) -> Self {
        match role {
            PollRole::Organizer => Self::Organizer,
            PollRole::Participant => Self::Participant,
        }
    }
}
