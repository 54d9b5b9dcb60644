//! iCalendar import and export:
//!
//! - `POST /api/v1/calendars/import?name=&color=` takes a raw iCalendar body of any content
//!   type (read here, up to 10 MiB, 413 beyond) and creates a native calendar owned by the
//!   caller with the file's events in one transaction (see `crate::ics` for what is read
//!   and how leniently). 201 with the create-calendar document plus `imported`. `name`
//!   falls back to `X-WR-CALNAME`, then `Imported calendar`; `color` to `#7a9e7e`. Like a
//!   create, it sends no frame. With `provider=caldav&accountId=`, the calendar is made in
//!   that connected account and the events are written there through the outbox.
//! - `GET /api/v1/calendars/:id/export` (any member) returns a `text/calendar` snapshot as
//!   an attachment named after the calendar.

use crate::http::endpoint::endpoint;
use bytes::Bytes;
use chrono::Utc;
use chrono_tz::Tz;
use http::StatusCode;
use http::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderValue};
use serde::{Deserialize, Serialize};
use warp::filters::BoxedFilter;
use warp::reply::Response;
use warp::{Filter, Rejection, Reply};

use super::calendars::destination;
use super::extract::{AuthUser, body_bytes, respond, session_or_member_token, signed_in, with_ctx};
use crate::commands::mirrors::calendars::import_into_account;
use crate::context::Ctx;
use crate::domain::ids::{CalendarId, require_uuid};
use crate::domain::roles::Role;
use crate::error::AppError;
use crate::http::openapi::schemas::ErrorBody;
use crate::ical::{ExportCalendar, IcsError, ImportOptions, export_calendar, parse_calendar};
use crate::store::calendars::{self as calendar_store, NewCalendar};
use crate::store::{ics as ics_store, members, settings};
use crate::views::calendars::CalendarView;

/// The import and export operations of the OpenAPI document.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(import, export),
    components(schemas(ImportedCalendarView)),
    tags((name = "calendars", description = "Calendars, their members and invites, import and export."))
)]
pub struct Api;

/// Largest import body (10 MiB).
pub const IMPORT_BODY_LIMIT: u64 = 10 * 1024 * 1024;
/// Name of an imported calendar when neither the query nor the file names it.
pub const DEFAULT_IMPORT_NAME: &str = "Imported calendar";
/// Colour of an imported calendar when the query has none.
pub const DEFAULT_IMPORT_COLOR: &str = "#7a9e7e";

/// The import and export routes.
pub fn routes(ctx: Ctx) -> BoxedFilter<(Response,)> {
    import(ctx.clone()).or(export(ctx)).unify().boxed()
}

/// Query of an import.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportQuery {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    color: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    account_id: Option<String>,
}

/// The import answer: the create-calendar document plus the number of events imported.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct ImportedCalendarView {
    /// The new calendar.
    #[serde(flatten)]
    calendar: CalendarView,
    /// How many events were imported.
    imported: usize,
}

/// POST /api/v1/calendars/import — a new calendar from an iCalendar file (201).
#[utoipa::path(
    post,
    path = "/api/v1/calendars/import",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = [])),
    params(
        ("name" = Option<String>, Query, max_length = 200,
         description = "The new calendar's name, at most 200 characters once trimmed (blank or absent: the file's \
                        `X-WR-CALNAME`, else `Imported calendar`)."),
        ("color" = Option<String>, Query, pattern = r"^\s*(#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8}))?\s*$",
         description = "`#RGB`, `#RRGGBB` or `#RRGGBBAA` (blank or absent: `#7a9e7e`)."),
        ("provider" = Option<String>, Query,
         description = "With `accountId`: make the calendar in this connected account (`google`, `microsoft` or `caldav`)."),
        ("accountId" = Option<String>, Query, description = "With `provider`: the connected account."),
    ),
    request_body(content = String, content_type = "text/calendar",
                 description = "An iCalendar file (any content type is read as one), at most 10 MiB and 10,000 events."),
    responses(
        (status = 201, description = "The new calendar, owned by the caller, with the number of events imported.",
         body = ImportedCalendarView),
        (status = 400, description = "Invalid query, an empty or unreadable file, too many events, or the provider refused.",
         body = ErrorBody),
        (status = 403, description = "The account is not the caller's.", body = ErrorBody),
    )
)]
fn import(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / "import")
        .and(warp::post())
        .and(with_ctx(ctx.clone()))
        .and(signed_in(ctx))
        .and(warp::query::<ImportQuery>())
        .and(body_bytes(IMPORT_BODY_LIMIT))
        .and_then(
            |ctx: Ctx, user: AuthUser, query: ImportQuery, body: Bytes| async move {
                respond(import_handler(&ctx, &user, query, body).await)
            },
        )
}

async fn import_handler(
    ctx: &Ctx,
    user: &AuthUser,
    query: ImportQuery,
    body: Bytes,
) -> Result<Response, AppError> {
    let destination = destination(query.provider.as_deref(), query.account_id.as_deref())?;
    let color = import_color(query.color.as_deref())?;
    let requested_name = query
        .name
        .as_deref()
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned);
    if requested_name
        .as_ref()
        .is_some_and(|name| name.chars().count() > 200)
    {
        return Err(AppError::bad_request(
            "name must be at most 200 characters.",
        ));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(AppError::bad_request(
            "Request body must be an iCalendar file...",
        ));
    }
    let options = ImportOptions {
        user_zone: user_zone(ctx, user).await?,
    };
    let parsed = ctx
        .cpu
        .run("calendar import", move || parse_calendar(&body, &options))
        .await?
        .map_err(|err| match err {
            IcsError::TooManyEvents => {
                AppError::bad_request("An iCalendar import may contain at most 10,000 events.")
            }
            IcsError::Unreadable { .. } => {
                AppError::bad_request(format!("That file isn't valid iCalendar data ({err})."))
            }
        })?;
    let name = requested_name
        .or(parsed.name)
        .unwrap_or_else(|| DEFAULT_IMPORT_NAME.to_owned());
    if let Some((provider, account)) = &destination {
        let calendar = import_into_account(
            &ctx.mirrors,
            user.id(),
            (provider, account),
            &name,
            &color,
            &parsed.events,
        )
        .await?;
        let view = ImportedCalendarView {
            calendar,
            imported: parsed.events.len(),
        };
        return Ok(
            warp::reply::with_status(warp::reply::json(&view), StatusCode::CREATED).into_response(),
        );
    }
    let calendar = ics_store::create_imported(
        &ctx.db,
        NewCalendar {
            creator_id: user.id().clone(),
            name,
            color,
        },
        &parsed.events,
    )
    .await?;
    tracing::info!(
        calendarId = %calendar.id,
        imported = parsed.events.len(),
        skipped = parsed.skipped,
        "calendar.imported"
    );
    let members = members::list(&ctx.db, calendar.id).await?;
    let view = ImportedCalendarView {
        calendar: CalendarView::new(&calendar, &members, Some(Role::Owner)),
        imported: parsed.events.len(),
    };
    Ok(warp::reply::with_status(warp::reply::json(&view), StatusCode::CREATED).into_response())
}

/// The `color` query: absent or empty → the default; else `#RGB`, `#RRGGBB` or `#RRGGBBAA`.
fn import_color(color: Option<&str>) -> Result<String, AppError> {
    let Some(color) = color.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(DEFAULT_IMPORT_COLOR.to_owned());
    };
    let hex = color.strip_prefix('#').unwrap_or_default();
    if matches!(hex.len(), 3 | 6 | 8) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(color.to_owned())
    } else {
        Err(AppError::bad_request(
            "color must be a hex colour such as #7a9e7e.",
        ))
    }
}

/// The caller's settings time zone (UTC when unset or unknown).
async fn user_zone(ctx: &Ctx, user: &AuthUser) -> Result<Tz, AppError> {
    Ok(settings::zone_of(&ctx.db, user.id()).await?)
}

/// GET /api/v1/calendars/:id/export — the calendar as `text/calendar` (members only).
#[utoipa::path(
    get,
    path = "/api/v1/calendars/{id}/export",
    tag = "calendars",
    security(("bearer" = []), ("cookie" = []), ("memberToken" = [])),
    params(("id" = uuid::Uuid, Path, description = "The calendar's id.")),
    responses(
        (status = 200, description = "The calendar's live events as an iCalendar file (times in the caller's time zone).",
         body = String, content_type = "text/calendar",
         headers(("Content-Disposition" = String, description = "`attachment; filename=\"<name>.ics\"`"))),
        (status = 403, description = "The caller is not a member.", body = ErrorBody),
    )
)]
fn export(ctx: Ctx) -> impl Filter<Extract = (Response,), Error = Rejection> + Clone {
    endpoint!("api" / "v1" / "calendars" / {id: String} / "export")
        .and(warp::get())
        .and(with_ctx(ctx.clone()))
        .and(session_or_member_token(ctx))
        .and_then(|id: String, ctx: Ctx, user: AuthUser| async move {
            respond(export_handler(&ctx, &user, &id).await)
        })
}

async fn export_handler(ctx: &Ctx, user: &AuthUser, id: &str) -> Result<Response, AppError> {
    let id = CalendarId::from_uuid(require_uuid("id", id)?);
    members::role_of(&ctx.db, id, user.id())
        .await?
        .ok_or_else(|| AppError::forbidden("You can't access this calendar."))?;
    let calendar = calendar_store::find(&ctx.db, id)
        .await?
        .ok_or_else(|| AppError::not_found("Calendar not found..."))?;
    let events = ics_store::live_events_in(&ctx.db, id).await?;
    let zone = user_zone(ctx, user).await?;
    let name = calendar.name.clone();
    let text = ctx
        .cpu
        .run("calendar export", move || {
            let snapshot = ExportCalendar {
                name: &name,
                zone,
                events: &events,
            };
            export_calendar(&snapshot, Utc::now())
        })
        .await?;
    let mut response = Response::new(text.into());
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/calendar; charset=utf-8"),
    );
    let disposition = format!(
        "attachment; filename=\"{}\"",
        export_file_name(&calendar.name)
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// `<name>.ics` with every run of characters other than ASCII letters, digits, `_`, `.`
/// and `-` replaced by `_` (`calendar.ics` for an empty name).
pub fn export_file_name(name: &str) -> String {
    let mut safe = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
            safe.push(c);
            in_run = false;
        } else if !in_run {
            safe.push('_');
            in_run = true;
        }
    }
    if safe.is_empty() {
        safe.push_str("calendar");
    }
    format!("{safe}.ics")
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn file_names_and_colours() {
        assert_eq!(export_file_name("Team – Café 2026"), "Team_Caf_2026.ics");
        assert_eq!(export_file_name(""), "calendar.ics");
        assert_eq!(export_file_name("a.b-c_d"), "a.b-c_d.ics");
        assert_eq!(import_color(None).unwrap(), DEFAULT_IMPORT_COLOR);
        assert_eq!(import_color(Some("")).unwrap(), DEFAULT_IMPORT_COLOR);
        assert_eq!(import_color(Some("#C8553D")).unwrap(), "#C8553D");
        assert!(import_color(Some("red")).is_err());
        assert!(import_color(Some("#12345")).is_err());
    }
}
