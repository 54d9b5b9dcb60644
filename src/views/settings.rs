//! Settings as clients read them: the raw row (the settings fields plus `id`, `createdAt`,
//! `updatedAt`, `revision`) and the document `{revision, updatedAt, value}`, with the
//! schemas the OpenAPI document gives them and the settings bodies clients send.

use chrono::{DateTime, Utc};
use entities::user_settings;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::domain::settings;
use crate::views::timestamp;

/// The raw row of `GET`/`PUT /api/v1/users/settings`: every settings field, then the row's
/// identity and version.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsRow {
    /// The settings, defaults filled in.
    #[serde(flatten)]
    #[schema(value_type = Settings)]
    pub value: Value,
    /// The user's id.
    pub id: String,
    /// When the row was made.
    #[serde(serialize_with = "timestamp")]
    pub created_at: DateTime<Utc>,
    /// The last change.
    #[serde(serialize_with = "timestamp")]
    pub updated_at: DateTime<Utc>,
    /// Raised by every write; the `baseRevision` of a patch.
    #[schema(minimum = 1)]
    pub revision: i64,
}

impl From<&user_settings::Model> for SettingsRow {
    fn from(row: &user_settings::Model) -> Self {
        Self {
            value: settings::with_defaults(&row.value),
            id: row.user_id.to_string(),
            created_at: row.created_at,
            updated_at: row.updated_at,
            revision: row.revision,
        }
    }
}

/// The settings document of `GET /api/v1/users/settings/document` and `PATCH
/// /api/v1/users/me/settings` (also the `current` of a 409).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsDocument {
    /// Raised by every write; the `baseRevision` of the next patch.
    #[schema(minimum = 1)]
    pub revision: i64,
    /// The last change.
    #[serde(serialize_with = "timestamp")]
    pub updated_at: DateTime<Utc>,
    /// The settings, defaults filled in.
    #[schema(value_type = Settings)]
    pub value: Value,
}

impl From<&user_settings::Model> for SettingsDocument {
    fn from(row: &user_settings::Model) -> Self {
        Self {
            revision: row.revision,
            updated_at: row.updated_at,
            value: settings::with_defaults(&row.value),
        }
    }
}

/// The raw row of `GET`/`PUT /api/v1/users/settings`.
pub fn row(row: &user_settings::Model) -> Value {
    json!(SettingsRow::from(row))
}

/// The settings document (also the `current` of a 409).
pub fn document(row: &user_settings::Model) -> Value {
    json!(SettingsDocument::from(row))
}

/// A reminder rule: when to remind before timed events and before all-day events; `null`
/// in a branch never reminds for that kind of event. Both keys are required and no others
/// are taken.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReminderRule {
    /// Minutes before a timed event's start (0 to 40320, four weeks), or `null`.
    #[schema(required = true, minimum = 0, maximum = 40_320)]
    pub minutes_before: Option<u32>,
    /// When to remind of an all-day event, or `null`.
    #[schema(required = true)]
    pub all_day: Option<AllDayReminder>,
}

/// The all-day branch of a [`ReminderRule`].
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AllDayReminder {
    /// Days before the event's date (0 to 30).
    #[schema(minimum = 0, maximum = 30)]
    pub days_before: u32,
    /// Minutes after local midnight of that day (0 to 1439).
    #[schema(minimum = 0, maximum = 1439)]
    pub at_minute: u32,
}

/// The calendar view a client opens on.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DefaultCalendarView {
    /// A week.
    Week,
    /// A month.
    Month,
    /// A day.
    Day,
    /// The agenda list.
    Schedule,
}

/// The first day of the week.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WeekStart {
    /// Monday.
    Monday,
    /// Sunday.
    Sunday,
}

/// How times are shown.
#[derive(Debug, Serialize, ToSchema)]
pub enum TimeFormat {
    /// `3:00 PM`.
    #[serde(rename = "12h")]
    TwelveHour,
    /// `15:00`.
    #[serde(rename = "24h")]
    TwentyFourHour,
}

/// How dates are shown.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DateFormat {
    /// Day, month, year.
    Dmy,
    /// Month, day, year.
    Mdy,
    /// Year, month, day.
    Ymd,
}

/// The colour theme.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    /// Follow the device.
    System,
    /// Dark.
    Dark,
    /// Light.
    Light,
}

/// Which emails the user gets (both keys required, no others).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NotificationEmails {
    /// Mail when an event of a shared calendar changes.
    pub event_changed: bool,
    /// Mail when a poll is decided.
    pub poll_decided: bool,
}

/// The settings as read: every known field, defaults filled in (a stored value never has
/// others).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    /// Whether new events remind by default (kept in step with `defaultReminder`).
    pub notifications_on_by_default: bool,
    /// The view a client opens on.
    pub default_calendar_view: DefaultCalendarView,
    /// The first day of the week.
    pub week_starts_on: WeekStart,
    /// How times are shown.
    pub time_format: TimeFormat,
    /// How dates are shown.
    pub date_format: DateFormat,
    /// The colour theme.
    pub theme: Theme,
    /// Whether the user finished onboarding (false on creation).
    pub onboarded: bool,
    /// Whether the tab bar shows labels.
    pub tab_bar_labels: bool,
    /// The user's order of calendars: at most 500 calendar ids of 1 to 128 characters.
    #[schema(max_items = 500)]
    pub calendar_order: Vec<String>,
    /// An IANA time zone name (1 to 64 characters), e.g. `Europe/Paris`.
    #[schema(min_length = 1, max_length = 64)]
    pub timezone: String,
    /// The rule for events without one of their own.
    pub default_reminder: ReminderRule,
    /// Which emails the user gets.
    pub notification_emails: NotificationEmails,
}

/// `PUT /api/v1/users/settings` body: complete settings. The first five fields are
/// required; an optional field left out keeps its stored value; unknown fields are ignored
/// (never stored); a known field with an invalid value refuses the whole body (400).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteSettings {
    /// Whether new events remind by default (kept in step with `defaultReminder`).
    pub notifications_on_by_default: bool,
    /// The view a client opens on.
    pub default_calendar_view: DefaultCalendarView,
    /// The first day of the week.
    pub week_starts_on: WeekStart,
    /// How times are shown.
    pub time_format: TimeFormat,
    /// How dates are shown.
    pub date_format: DateFormat,
    /// The colour theme.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub theme: Option<Theme>,
    /// Whether the user finished onboarding.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub onboarded: Option<bool>,
    /// Whether the tab bar shows labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tab_bar_labels: Option<bool>,
    /// The user's order of calendars: at most 500 calendar ids of 1 to 128 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, max_items = 500)]
    pub calendar_order: Option<Vec<String>>,
    /// An IANA time zone name (1 to 64 characters), e.g. `Europe/Paris`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, min_length = 1, max_length = 64)]
    pub timezone: Option<String>,
    /// The rule for events without one of their own (sets `notificationsOnByDefault`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub default_reminder: Option<ReminderRule>,
    /// Which emails the user gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub notification_emails: Option<NotificationEmails>,
}

/// The `patch` of `PATCH /api/v1/users/me/settings`: the fields to change (at least one
/// known field). Unknown fields are ignored (never stored); a known field with an invalid
/// value refuses the whole patch (400).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(min_properties = 1)]
pub struct SettingsPatch {
    /// Whether new events remind by default (`false` silences `defaultReminder`, `true`
    /// over a silent rule restores the default rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub notifications_on_by_default: Option<bool>,
    /// The view a client opens on.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub default_calendar_view: Option<DefaultCalendarView>,
    /// The first day of the week.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub week_starts_on: Option<WeekStart>,
    /// How times are shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub time_format: Option<TimeFormat>,
    /// How dates are shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date_format: Option<DateFormat>,
    /// The colour theme.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub theme: Option<Theme>,
    /// Whether the user finished onboarding.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub onboarded: Option<bool>,
    /// Whether the tab bar shows labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub tab_bar_labels: Option<bool>,
    /// The user's order of calendars: at most 500 calendar ids of 1 to 128 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, max_items = 500)]
    pub calendar_order: Option<Vec<String>>,
    /// An IANA time zone name (1 to 64 characters), e.g. `Europe/Paris`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, min_length = 1, max_length = 64)]
    pub timezone: Option<String>,
    /// The rule for events without one of their own (sets `notificationsOnByDefault`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub default_reminder: Option<ReminderRule>,
    /// Which emails the user gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub notification_emails: Option<NotificationEmails>,
}
