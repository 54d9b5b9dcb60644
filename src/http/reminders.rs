//! Reminder rules: `GET /api/v1/reminders` (explicit choices only:
//! `{default, calendars: {id: rule}, events: {id: rule}}`), `PUT
//! /api/v1/reminders/calendars/:calendarId {rule}` (any member; null inherits), `PUT
//! /api/v1/reminders/events/:eventId {rule}` (the event must be visible; null clears) and
//! `DELETE /api/v1/reminders/events/:eventId`. Writes answer 204.

use serde_json::{Map, Value, json};
use uuid::Uuid;
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::extract::{AuthUser, authenticated, json_body, respond, route, with_ctx};
use crate::commands::{reminders as commands, settings as settings_commands};
use crate::context::Ctx;
use crate::domain::ids::require_uuid;
use crate::domain::{reminders, settings};
use crate::error::AppError;
use crate::store::reminders as reminder_store;

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

/// `{rule}` with a valid rule or null (strict: no other keys).
fn parse_body(body: &Value) -> Result<Option<Value>, AppError> {
    let invalid = || AppError::bad_request(INVALID_RULE);
    let object = body
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(invalid)?;
    match object.get("rule").ok_or_else(invalid)? {
        Value::Null => Ok(None),
        rule => reminders::parse_rule(rule).map(Some).ok_or_else(invalid),
    }
}

/// The spec's empty 200 of a side-effect-only route.
fn empty_ok() -> Response {
    warp::reply().into_response()
}

/// GET /api/v1/reminders.
fn read_rules(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "reminders")
        .and(route("/api/v1/reminders"))
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(
            |ctx: Ctx, user: AuthUser| async move { respond(read_handler(&ctx, &user).await) },
        )
}

async fn read_handler(ctx: &Ctx, user: &AuthUser) -> Result<Response, AppError> {
    let stored = settings_commands::read(&ctx.services, user.id()).await?;
    let default = settings::with_defaults(&stored.value)["defaultReminder"].clone();
    let as_map = |rules: Vec<(Uuid, Value)>| -> Map<String, Value> {
        rules
            .into_iter()
            .map(|(id, rule)| (id.to_string(), rule))
            .collect()
    };
    let db = ctx.db.conn();
    let calendars = as_map(reminder_store::calendar_rules(db, user.id()).await?);
    let events = as_map(reminder_store::event_rules(db, user.id()).await?);
    Ok(
        warp::reply::json(&json!({ "default": default, "calendars": calendars, "events": events }))
            .into_response(),
    )
}

/// PUT /api/v1/reminders/calendars/:calendarId.
fn set_calendar_rule(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "reminders" / "calendars" / String)
        .and(route("/api/v1/reminders/calendars/:calendarId"))
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<Value>(INVALID_RULE))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Value| async move {
                respond(
                    async {
                        let calendar = require_uuid("calendarId", &id)?;
                        let rule = parse_body(&body)?;
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
fn set_event_rule(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "reminders" / "events" / String)
        .and(route("/api/v1/reminders/events/:eventId"))
        .and(warp::put())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and(json_body::<Value>(INVALID_RULE))
        .and_then(
            |id: String, ctx: Ctx, user: AuthUser, body: Value| async move {
                respond(
                    async {
                        let event = require_uuid("eventId", &id)?;
                        let rule = parse_body(&body)?;
                        commands::set_event_rule(&ctx.services, user.id(), event, rule).await?;
                        Ok(empty_ok())
                    }
                    .await,
                )
            },
        )
}

/// DELETE /api/v1/reminders/events/:eventId — the same as PUT with a null rule.
fn clear_event_rule(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    warp::path!("api" / "v1" / "reminders" / "events" / String)
        .and(route("/api/v1/reminders/events/:eventId"))
        .and(warp::delete())
        .and(with_ctx(ctx.clone()))
        .and(authenticated(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(
                async {
                    let event = require_uuid("eventId", &id)?;
                    commands::set_event_rule(&ctx.services, user.id(), event, None).await?;
                    Ok(empty_ok())
                }
                .await,
            )
        })
}
