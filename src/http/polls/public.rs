//! The public page's half of scheduling polls (`/api/v1/public/polls/:token…`): reading the
//! grid and answering, with their bodies and the poll as a participant sees it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use entities::scheduling_polls as polls;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::{RoleValue, slot_of, viewer};
use crate::commands::polls::{self as commands, Ballot};
use crate::context::Ctx;
use crate::domain::ids::is_random_token;
use crate::domain::polls::{self as rules, Answer, Participant, PollRole, Slot, Viewer, Vote};
use crate::error::AppError;
use crate::http::endpoint::endpoint;
use crate::http::extract::{AuthUser, json_body, optional_session, request_ctx, respond, with_ctx};
use crate::http::openapi::schemas::ErrorBody;
use crate::http::request::RequestCtx;
use crate::rate_limit::{POLL_READ, POLL_VOTE};
use crate::store::polls as poll_store;
use ids::PollSlotId;

const INVALID_VOTES: &str = "Request is missing valid answers...";

/// The poll at a public `:token`; a token of the wrong shape names none.
async fn poll_at(ctx: &Ctx, token: &str) -> Result<polls::Model, AppError> {
    if !is_random_token(token) {
        return Err(rules::poll_unavailable());
    }
    poll_store::find_by_token(&ctx.db, token)
        .await?
        .ok_or_else(rules::poll_unavailable)
}

/// A `vote` as the wire writes it.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub(super) enum VoteValue {
    /// Yes.
    Yes,
    /// If needed.
    IfNeeded,
    /// No.
    No,
}

impl From<Vote> for VoteValue {
    fn from(vote: Vote) -> Self {
        match vote {
            Vote::Yes => Self::Yes,
            Vote::IfNeeded => Self::IfNeeded,
            Vote::No => Self::No,
        }
    }
}

/// The poll as a participant sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PublicPoll {
    /// The `HH:mm` hint, if any.
    approximate_start_time: Option<String>,
    /// The day picked, once decided.
    #[serde(rename = "chosenSlotID")]
    chosen_slot_id: Option<Uuid>,
    /// Shut to answers: closed, decided, or past its deadline.
    closed: bool,
    /// When it stops taking answers by itself.
    #[serde(serialize_with = "crate::views::optional_timestamp")]
    deadline: Option<DateTime<Utc>>,
    /// More about it.
    description: Option<String>,
    /// Always 1,440, for older clients.
    duration_minutes: i32,
    /// The reader's own answers by slot (empty when they have none).
    mine: BTreeMap<Uuid, VoteValue>,
    /// Which of `people` is the reader.
    #[serde(rename = "mineID")]
    mine_id: Option<String>,
    /// Everyone, with their answers (names only).
    people: Vec<PollPerson>,
    /// How many answered.
    respondents: usize,
    /// The days, with who said what.
    slots: Vec<PollSlotView>,
    /// The question.
    title: String,
    /// The reader's role, when signed in with a proven address (or as the owner).
    viewer_role: Option<RoleValue>,
}

/// A person on a poll: a name and answers, never an address.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct PollPerson {
    /// Their answers by slot.
    answers: BTreeMap<Uuid, VoteValue>,
    /// Poll-local id (`"1"`, `"2"`, …).
    id: String,
    /// Their name.
    name: String,
}

/// A day with who said what.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct PollSlotView {
    /// End.
    #[serde(serialize_with = "crate::views::timestamp")]
    end: DateTime<Utc>,
    /// The slot.
    id: Uuid,
    /// Names that said if needed.
    if_needed: Vec<String>,
    /// Names that said no.
    no: Vec<String>,
    /// Start.
    #[serde(serialize_with = "crate::views::timestamp")]
    start: DateTime<Utc>,
    /// Names that said yes.
    yes: Vec<String>,
}

/// The public document of `poll`: its grid with `reader`'s row marked.
async fn public_poll(
    ctx: &Ctx,
    poll: &polls::Model,
    reader: Option<&str>,
    role: Option<PollRole>,
) -> Result<PublicPoll, AppError> {
    let ids = [poll.id];
    let slots: Vec<Slot> = poll_store::slots_of(&ctx.db, &ids)
        .await?
        .iter()
        .map(slot_of)
        .collect();
    let participants: Vec<Participant> = poll_store::participants_of(&ctx.db, &ids)
        .await?
        .into_iter()
        .map(|participant| Participant {
            id: participant.id,
            name: participant.name,
            email: participant.email,
        })
        .collect();
    let answers: Vec<Answer> = poll_store::votes_of(&ctx.db, &ids)
        .await?
        .into_iter()
        .filter_map(|vote| {
            Some(Answer {
                participant: vote.participant_id,
                slot: vote.slot_id,
                vote: Vote::parse(&vote.value)?,
            })
        })
        .collect();
    let grid = rules::grid(&slots, &participants, &answers, reader);
    let answers_of = |answers: &BTreeMap<PollSlotId, Vote>| {
        answers
            .iter()
            .map(|(slot, vote)| (slot.uuid(), VoteValue::from(*vote)))
            .collect::<BTreeMap<_, _>>()
    };
    let mine = grid.mine.and_then(|index| grid.people.get(index));
    Ok(PublicPoll {
        approximate_start_time: poll.approximate_start_time.clone(),
        chosen_slot_id: poll.chosen_slot_id.map(PollSlotId::uuid),
        closed: rules::is_closed(poll.closed_at, poll.deadline, Utc::now()),
        deadline: poll.deadline,
        description: poll.description.clone(),
        duration_minutes: poll.duration_minutes,
        mine: mine
            .map(|person| answers_of(&person.answers))
            .unwrap_or_default(),
        mine_id: mine.map(|person| person.id.clone()),
        people: grid
            .people
            .iter()
            .map(|person| PollPerson {
                answers: answers_of(&person.answers),
                id: person.id.clone(),
                name: person.name.clone(),
            })
            .collect(),
        respondents: grid.respondents,
        slots: grid
            .days
            .into_iter()
            .map(|day| PollSlotView {
                end: day.slot.end,
                id: day.slot.id.uuid(),
                if_needed: day.if_needed,
                no: day.no,
                start: day.slot.start,
                yes: day.yes,
            })
            .collect(),
        title: poll.title.clone(),
        viewer_role: role.map(RoleValue::from),
    })
}

/// GET /api/v1/public/polls/:token — the poll's grid.
#[utoipa::path(
    get,
    path = "/api/v1/public/polls/{token}",
    tag = "scheduling",
    security((), ("bearer" = []), ("cookie" = [])),
    params(("token" = String, Path, description = "The poll's token (32 hex digits).")),
    responses(
        (status = 200, description = "The poll: its days with who said what, and everyone's answers by name. A reader signed in with a proven address joins the grid of an open poll (without answers) and sees their own row.",
         body = PublicPoll),
        (status = 404, description = "No poll has this token.", body = ErrorBody),
        (status = 429, description = "More than 60 reads in 15 minutes from this address (see `Retry-After`).",
         body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until another read is allowed."))),
    )
)]
pub(super) fn read_poll(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "public" / "polls" / {token: String})
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(optional_session(ctx))
        .and_then(
            |token: String, ctx: Ctx, rctx: RequestCtx, user: Option<AuthUser>| async move {
                respond(read_handler(&ctx, &rctx, user.as_ref(), &token).await)
            },
        )
}

async fn read_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    user: Option<&AuthUser>,
    token: &str,
) -> Result<Response, AppError> {
    ctx.limits.admit(POLL_READ, &rctx.client_ip().to_string())?;
    let poll = poll_at(ctx, token).await?;
    let viewer = user.map(viewer);
    let role = viewer
        .as_ref()
        .and_then(|viewer| viewer.role(poll.owner_id.as_ref(), &poll.owner_email));
    if let (Some(viewer), Some(_)) = (&viewer, role)
        && !rules::is_closed(poll.closed_at, poll.deadline, Utc::now())
    {
        commands::opened_by(&ctx.db, &poll, viewer).await?;
    }
    let reader = viewer.as_ref().and_then(Viewer::verified_email);
    let document = public_poll(ctx, &poll, reader.as_deref(), role).await?;
    Ok(warp::reply::json(&document).into_response())
}

/// `PUT …/votes` body (unknown fields are ignored).
#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct VoteBody {
    /// The voter's address (default: the signed-in user's); private.
    #[serde(default)]
    email: Option<String>,
    /// The name shown with the answers (default: the signed-in user's).
    #[serde(default)]
    name: Option<String>,
    /// The answers: each a day of the poll, each day at most once; they replace the ones
    /// given before (an empty list withdraws them).
    #[serde(default)]
    votes: Option<Vec<VoteItem>>,
}

/// One answer.
#[derive(Debug, Deserialize, ToSchema)]
pub(super) struct VoteItem {
    /// The slot.
    #[serde(rename = "slotID", alias = "slotId")]
    #[schema(value_type = Uuid)]
    slot_id: String,
    /// `yes`, `if-needed` or `no`.
    #[schema(value_type = VoteValue)]
    value: String,
}

/// PUT /api/v1/public/polls/:token/votes — answers the poll.
#[utoipa::path(
    put,
    path = "/api/v1/public/polls/{token}/votes",
    tag = "scheduling",
    security((), ("bearer" = []), ("cookie" = [])),
    params(("token" = String, Path, description = "The poll's token (32 hex digits).")),
    request_body = VoteBody,
    responses(
        (status = 200, description = "The answers replaced the ones this address gave before; the poll as the voter now sees it.", body = PublicPoll),
        (status = 400, description = "The poll is closed or decided, an answer names a day that is not on this poll (or one twice) or is not yes/if-needed/no, or the name or address is missing or malformed.", body = ErrorBody),
        (status = 403, description = "This address has answered already: only a session that proved it may change those answers.", body = ErrorBody),
        (status = 404, description = "No poll has this token.", body = ErrorBody),
        (status = 429, description = "More than 60 answers in 15 minutes from this address (see `Retry-After`).",
         body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until another answer is allowed."))),
    )
)]
pub(super) fn vote_poll(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "public" / "polls" / {token: String} / "votes")
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(request_ctx())
        .and(optional_session(ctx))
        .and(json_body::<VoteBody>(INVALID_VOTES))
        .and_then(
            |token: String,
             ctx: Ctx,
             rctx: RequestCtx,
             user: Option<AuthUser>,
             body: VoteBody| async move {
                respond(vote_handler(&ctx, &rctx, user.as_ref(), &token, body).await)
            },
        )
}

async fn vote_handler(
    ctx: &Ctx,
    rctx: &RequestCtx,
    user: Option<&AuthUser>,
    token: &str,
    body: VoteBody,
) -> Result<Response, AppError> {
    ctx.limits.admit(POLL_VOTE, &rctx.client_ip().to_string())?;
    let poll = poll_at(ctx, token).await?;
    if let Some(refusal) = rules::refuses_answers(poll.closed_at, poll.deadline, Utc::now()) {
        return Err(refusal);
    }
    let sent = body.votes.unwrap_or_default();
    if sent.len() > rules::MAX_SLOTS {
        return Err(AppError::bad_request(
            "Answer each time on this poll at most once...",
        ));
    }
    let offered: Vec<PollSlotId> = poll_store::slots_of(&ctx.db, &[poll.id])
        .await?
        .iter()
        .map(|slot| slot.id)
        .collect();
    let votes = rules::ballot(
        sent.iter()
            .map(|vote| (vote.slot_id.as_str(), vote.value.as_str())),
        &offered,
    )?;
    let viewer = user.map(viewer);
    let account = user.map(AuthUser::user);
    let email = rules::email_identity(
        body.email
            .as_deref()
            .or(account.map(|account| account.email.as_str())),
    )?;
    let name = rules::person_name(
        body.name
            .as_deref()
            .or(account.map(|account| account.name.as_str())),
    )?;
    let proven_by = viewer
        .as_ref()
        .filter(|viewer| viewer.verified_email().as_deref() == Some(email.as_str()))
        .map(|viewer| viewer.id.clone());
    let ballot = Ballot {
        email: email.clone(),
        name,
        proven_by,
        votes,
    };
    commands::vote(&ctx.db, poll.id, ballot).await?;
    let role = viewer
        .as_ref()
        .and_then(|viewer| viewer.role(poll.owner_id.as_ref(), &poll.owner_email));
    let document = public_poll(ctx, &poll, Some(&email), role).await?;
    Ok(warp::reply::json(&document).into_response())
}
