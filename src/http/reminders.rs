//! Reminder rules: `GET /api/v1/reminders` (explicit choices only:
//! `{default, calendars: {id: rule}, events: {id: rule}}`), `PUT
//! /api/v1/reminders/calendars/:calendarId {rule}` (any member; null inherits), `PUT
//! /api/v1/reminders/events/:eventId {rule}` (the event must be visible; null clears) and
//! `DELETE /api/v1/reminders/events/:eventId`. Writes answer an empty 200.

use std::fmt::Display;

use crate::http::endpoint::endpoint;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{OpenApi, ToSchema};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::conditional::{self, EntityTag, if_none_match};
use super::extract::{AuthUser, json_body, respond, signed_in, with_ctx};
use crate::commands::{reminders as commands, settings as settings_commands};
use crate::context::Ctx;
use crate::domain::ids::{CalendarId, EventId, require_uuid};
use crate::domain::{reminders, settings};
use crate::error::AppError;
use crate::http::input::{Field, Lenient};
use crate::http::openapi::schemas::ErrorBody;
use crate::store::reminders as reminder_store;
use crate::views::settings::ReminderRule;

/// The reminder operations of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    paths(read_rules, set_calendar_rule, set_event_rule, clear_event_rule),
    components(schemas(ReminderRules, RuleBody, ReminderRule)),
    tags((name = "reminders", description = "Reminder rules: the user's default, per-calendar and per-event choices."))
)]
pub struct Api;

/// The reminder routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    read_rules(ctx.clone())
        .or(set_calendar_rule(ctx.clone()))
        .unify()
        .or(set_event_rule(ctx.clone()))
        .unify()
        .or(clear_event_rule(ctx))
        .unify()
        .boxed()
}

const INVALID_RULE: &str = "Body must be { rule } — a reminder rule, or null to inherit.";

/// `{rule}`: a reminder rule, or null to inherit (strict: no other keys).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct RuleBody {
    /// The rule, or `null`: a calendar inherits the default, an event's override is cleared.
    #[serde(default)]
    #[schema(value_type = Option<ReminderRule>, required = true)]
    rule: Field<Value>,
}

/// `GET /api/v1/reminders` answer: the explicit choices only.
#[derive(Debug, Serialize, ToSchema)]
struct ReminderRules {
    /// The user's default rule (the settings' `defaultReminder`).
    #[schema(value_type = ReminderRule)]
    default: Value,
    /// The user's rule per calendar id, where they chose one.
    #[schema(value_type = HashMap<Uuid, ReminderRule>)]
    calendars: Map<String, Value>,
    /// The user's override per event id, where they chose one.
    #[schema(value_type = HashMap<Uuid, ReminderRule>)]
    events: Map<String, Value>,
}

/// A rule to store, or `None` to inherit.
struct RuleChange(Option<Value>);

impl TryFrom<Lenient<RuleBody>> for RuleChange {
    type Error = AppError;

    fn try_from(body: Lenient<RuleBody>) -> Result<Self, AppError> {
        let invalid = || AppError::bad_request(INVALID_RULE);
        match body.valid().map(|body| body.rule) {
            Some(Field::Valid(Value::Null)) => Ok(Self(None)),
            Some(Field::Valid(rule)) => reminders::parse_rule(&rule)
                .map(|rule| Self(Some(rule)))
                .ok_or_else(invalid),
            _ => Err(invalid()),
        }
    }
}

/// The spec's empty 200 of a side-effect-only route.
fn empty_ok() -> Response {
    warp::reply().into_response()
}

/// GET /api/v1/reminders.
#[utoipa::path(
    get,
    path = "/api/v1/reminders",
    tag = "reminders",
    security(("bearer" = []), ("cookie" = [])),
    params(("If-None-Match" = Option<String>, Header, description = "The `ETag` of the rules the client holds.")),
    responses(
        (status = 200, description = "The default rule and the explicit per-calendar and per-event rules.",
         body = ReminderRules, headers(("ETag" = String, description = "The rules' version."))),
        (status = 304, description = "The client's rules are current."),
    )
)]
fn read_rules(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "reminders")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(if_none_match())
        .and_then(
            |ctx: Ctx, user: AuthUser, if_none_match: Option<String>| async move {
                respond(read_handler(&ctx, &user, if_none_match.as_deref()).await)
            },
        )
}

async fn read_handler(
    ctx: &Ctx,
    user: &AuthUser,
    if_none_match: Option<&str>,
) -> Result<Response, AppError> {
    let stored = settings_commands::read(&ctx.services, user.id()).await?;
    let default = settings::with_defaults(&stored.value)["defaultReminder"].clone();
    let db = &ctx.db;
    let calendar_rules = reminder_store::calendar_rules(db, user.id()).await?;
    let event_rules = reminder_store::event_rules(db, user.id()).await?;
    // Built from the settings' revision (the default rule) and the rules themselves.
    let mut versions = stored.revision.to_string();
    push_versions(&mut versions, "calendar", &calendar_rules);
    push_versions(&mut versions, "event", &event_rules);
    let tag = EntityTag::weak("reminders", user.id(), &versions);
    Ok(conditional::answer(&tag, if_none_match, || {
        let calendars = as_map(calendar_rules);
        let events = as_map(event_rules);
        warp::reply::json(&ReminderRules {
            default,
            calendars,
            events,
        })
        .into_response()
    }))
}

/// The rules keyed by their calendar's or event's id.
fn as_map<Id: Display>(rules: Vec<(Id, Value)>) -> Map<String, Value> {
    rules
        .into_iter()
        .map(|(id, rule)| (id.to_string(), rule))
        .collect()
}

/// Appends the `kind` rules to what the rules' tag is built from.
fn push_versions<Id: Display>(versions: &mut String, kind: &str, rules: &[(Id, Value)]) {
    for (id, rule) in rules {
        versions.push_str(&format!("\n{kind}|{id}|{rule}"));
    }
}

/// PUT /api/v1/reminders/calendars/:calendarId.
#[utoipa::path(
    put,
    path = "/api/v1/reminders/calendars/{calendarId}",
    tag = "reminders",
    security(("bearer" = []), ("cookie" = [])),
    params(("calendarId" = String, Path, description = "The calendar's id (a UUID).")),
    request_body = RuleBody,
    responses(
        (status = 200, description = "The rule is stored (or, for null, the calendar inherits the default); `reminders_updated` \
            is sent to the user's connections. Empty body."),
        (status = 400, description = "`calendarId` is not a UUID, or the body is not `{rule}` with a valid rule or null.", body = ErrorBody),
        (status = 403, description = "The caller is not a member of the calendar.", body = ErrorBody),
    )
)]
fn set_calendar_rule(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "reminders" / "calendars" / {calendarId: String})
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<Lenient<RuleBody>>(INVALID_RULE))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Lenient<RuleBody>| async move {
                respond(
                    async {
                        let calendar = CalendarId::from_uuid(require_uuid("calendarId", &id)?);
                        let RuleChange(rule) = RuleChange::try_from(body)?;
                        commands::set_calendar_rule(&ctx.services, user.id(), calendar, rule)
                            .await?;
                        Ok(empty_ok())
                    }
                    .await,
                )
            },
        )
}

/// PUT /api/v1/reminders/events/:eventId.
#[utoipa::path(
    put,
    path = "/api/v1/reminders/events/{eventId}",
    tag = "reminders",
    security(("bearer" = []), ("cookie" = [])),
    params(("eventId" = String, Path, description = "The event's id (a UUID).")),
    request_body = RuleBody,
    responses(
        (status = 200, description = "The override is stored (or, for null, cleared); `reminders_updated` is sent to the \
            user's connections. Empty body."),
        (status = 400, description = "`eventId` is not a UUID, or the body is not `{rule}` with a valid rule or null.", body = ErrorBody),
        (status = 403, description = "The caller cannot see the event.", body = ErrorBody),
        (status = 404, description = "No such event.", body = ErrorBody),
    )
)]
fn set_event_rule(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "reminders" / "events" / {eventId: String})
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(json_body::<Lenient<RuleBody>>(INVALID_RULE))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Lenient<RuleBody>| async move {
                respond(
                    async {
                        let event = EventId::from_uuid(require_uuid("eventId", &id)?);
                        let RuleChange(rule) = RuleChange::try_from(body)?;
                        commands::set_event_rule(&ctx.services, user.id(), event, rule).await?;
                        Ok(empty_ok())
                    }
                    .await,
                )
            },
        )
}

/// DELETE /api/v1/reminders/events/:eventId — the same as PUT with a null rule.
#[utoipa::path(
    delete,
    path = "/api/v1/reminders/events/{eventId}",
    tag = "reminders",
    security(("bearer" = []), ("cookie" = [])),
    params(("eventId" = String, Path, description = "The event's id (a UUID).")),
    responses(
        (status = 200, description = "The override is cleared; `reminders_updated` is sent to the user's connections. Empty body."),
        (status = 400, description = "`eventId` is not a UUID.", body = ErrorBody),
        (status = 403, description = "The caller cannot see the event.", body = ErrorBody),
        (status = 404, description = "No such event.", body = ErrorBody),
    )
)]
fn clear_event_rule(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "reminders" / "events" / {eventId: String})
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let event = EventId::from_uuid(require_uuid("eventId", &id)?);
                    commands::set_event_rule(&ctx.services, user.id(), event, None).await?;
                    Ok(empty_ok())
                }
                .await,
            )
        })
}
