//! The shape of `PageConfigV1` for the OpenAPI document: the rules
//! [`crate::domain::pages::parse_config`] applies, written as types. Requests carry it as
//! JSON and the domain validates it; these types only describe it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A Page's configuration (version 1). Unknown keys are refused.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageConfigV1 {
    /// Always 1.
    #[schema(minimum = 1, maximum = 1)]
    pub schema_version: u8,
    /// The Page's icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<PageIcon>,
    /// How the Page shows time.
    pub view: PageView,
    /// Which calendars the Page shows.
    pub calendar_visibility: CalendarVisibility,
    /// At most 20 filters (absent: none).
    #[serde(default)]
    #[schema(max_items = 20)]
    pub filters: Vec<PageFilter>,
    /// Whether polls show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show_polls: Option<bool>,
}

/// A Page's icon.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PageIcon {
    /// `house`.
    House,
    /// `calendar-days`.
    CalendarDays,
    /// `star`.
    Star,
    /// `sparkles`.
    Sparkles,
    /// `circle`.
    Circle,
    /// `diamond`.
    Diamond,
    /// `heart`.
    Heart,
    /// `plane`.
    Plane,
    /// `coffee`.
    Coffee,
    /// `flag`.
    Flag,
    /// `music`.
    Music,
    /// `briefcase`.
    Briefcase,
}

/// Row spacing of the day and week views.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Density {
    /// `compact`.
    Compact,
    /// `comfortable` (the default).
    Comfortable,
    /// `spacious`.
    Spacious,
}

/// The view, by `id`; each carries `configVersion: 1`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "id", rename_all = "kebab-case")]
pub enum PageView {
    /// One day.
    #[serde(rename_all = "camelCase")]
    Day {
        /// Always 1.
        #[schema(minimum = 1, maximum = 1)]
        config_version: u8,
        /// Row spacing (default `comfortable`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        density: Option<Density>,
    },
    /// One week.
    #[serde(rename_all = "camelCase")]
    Week {
        /// Always 1.
        #[schema(minimum = 1, maximum = 1)]
        config_version: u8,
        /// Whether the weekend shows (default true).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        weekend: Option<bool>,
        /// Row spacing (default `comfortable`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        density: Option<Density>,
    },
    /// One month.
    #[serde(rename_all = "camelCase")]
    Month {
        /// Always 1.
        #[schema(minimum = 1, maximum = 1)]
        config_version: u8,
        /// Whether the days of the months around show (default true).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        show_adjacent_days: Option<bool>,
    },
    /// A list of what comes.
    #[serde(rename_all = "camelCase")]
    Agenda {
        /// Always 1.
        #[schema(minimum = 1, maximum = 1)]
        config_version: u8,
        /// Grouping (only `day`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group_by: Option<AgendaGrouping>,
    },
    /// Several weeks.
    #[serde(rename_all = "camelCase")]
    MultiWeek {
        /// Always 1.
        #[schema(minimum = 1, maximum = 1)]
        config_version: u8,
        /// 1 to 20 weeks (default 4).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 1, maximum = 20)]
        weeks: Option<u8>,
    },
}

/// How the agenda groups.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgendaGrouping {
    /// By day.
    Day,
}

/// Which calendars a Page shows, by `mode`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum CalendarVisibility {
    /// Every calendar but the hidden ones.
    #[serde(rename_all = "camelCase")]
    All {
        /// At most 500 ids of 1 to 128 characters (absent: none).
        #[serde(default)]
        #[schema(max_items = 500)]
        hidden_calendar_ids: Vec<String>,
    },
    /// Only the listed calendars.
    #[serde(rename_all = "camelCase")]
    Include {
        /// At most 500 ids of 1 to 128 characters.
        #[schema(max_items = 500)]
        calendar_ids: Vec<String>,
    },
}

/// A filter, by `type`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum PageFilter {
    /// By the reader's attendance.
    Attendance(AttendanceFilter),
    /// By timed or all-day.
    Time(TimeFilter),
}

/// Values of the attendance filter.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AttendanceFilter {
    /// `all`.
    All,
    /// `attending`.
    Attending,
    /// `not-attending`.
    NotAttending,
}

/// Values of the time filter.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TimeFilter {
    /// `all`.
    All,
    /// `timed`.
    Timed,
    /// `all-day`.
    AllDay,
}
