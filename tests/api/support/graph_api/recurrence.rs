//! Graph's `patternedRecurrence` (a structured pattern and range, not RRULE text): checking
//! one and listing the dates it produces up to a day.
//!
//! Patterns: `daily`, `weekly` (`daysOfWeek`, `firstDayOfWeek`), `absoluteMonthly`
//! (`dayOfMonth`), `relativeMonthly` (`daysOfWeek` + `index`), `absoluteYearly` (`month` +
//! `dayOfMonth`) and `relativeYearly`; every one with `interval`. Ranges: `endDate`
//! (inclusive), `numbered` (`numberOfOccurrences`) and `noEnd`, all from `startDate`.

use chrono::{Datelike, NaiveDate, Weekday};
use serde_json::Value;

const WEEKDAYS: [(&str, Weekday); 7] = [
    ("sunday", Weekday::Sun),
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
];

/// A recurrence read from its JSON.
#[derive(Clone, Debug)]
pub(super) struct Recurrence {
    kind: String,
    interval: i64,
    days: Vec<Weekday>,
    first_day: Weekday,
    day_of_month: u32,
    month: u32,
    index: String,
    start: NaiveDate,
    end: RangeEnd,
    /// `range.recurrenceTimeZone`, when set.
    pub(super) zone: Option<String>,
}

#[derive(Clone, Debug)]
enum RangeEnd {
    Date(NaiveDate),
    Count(usize),
    Never,
}

fn weekday(name: &str) -> Option<Weekday> {
    WEEKDAYS
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, d)| *d)
}

fn date(value: &Value, field: &str) -> Result<NaiveDate, String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .and_then(|text| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok())
        .ok_or_else(|| format!("recurrence.range.{field} must be a date (yyyy-MM-dd)"))
}

impl Recurrence {
    /// Reads `recurrence`, saying what is wrong with it.
    pub(super) fn parse(value: &Value) -> Result<Self, String> {
        let pattern = value
            .get("pattern")
            .filter(|p| p.is_object())
            .ok_or("recurrence.pattern is required")?;
        let range = value
            .get("range")
            .filter(|r| r.is_object())
            .ok_or("recurrence.range is required")?;
        let kind = pattern
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let known = [
            "daily",
            "weekly",
            "absoluteMonthly",
            "relativeMonthly",
            "absoluteYearly",
            "relativeYearly",
        ];
        if !known.contains(&kind.as_str()) {
            return Err(format!("recurrence.pattern.type '{kind}' is not supported"));
        }
        let interval = pattern.get("interval").and_then(Value::as_i64).unwrap_or(1);
        if interval < 1 {
            return Err("recurrence.pattern.interval must be at least 1".into());
        }
        let days = pattern
            .get("daysOfWeek")
            .and_then(Value::as_array)
            .map(|days| {
                days.iter()
                    .map(|d| d.as_str().and_then(weekday).ok_or("daysOfWeek"))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()
            .map_err(|_| "recurrence.pattern.daysOfWeek holds an unknown day".to_owned())?
            .unwrap_or_default();
        let first_day = pattern
            .get("firstDayOfWeek")
            .and_then(Value::as_str)
            .and_then(weekday)
            .unwrap_or(Weekday::Sun);
        let day_of_month = pattern
            .get("dayOfMonth")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32;
        let month = pattern.get("month").and_then(Value::as_u64).unwrap_or(0) as u32;
        let index = pattern
            .get("index")
            .and_then(Value::as_str)
            .unwrap_or("first")
            .to_owned();
        match kind.as_str() {
            "weekly" | "relativeMonthly" | "relativeYearly" if days.is_empty() => {
                return Err(format!(
                    "recurrence.pattern.daysOfWeek is required for {kind}"
                ));
            }
            "absoluteMonthly" | "absoluteYearly" if !(1..=31).contains(&day_of_month) => {
                return Err(format!(
                    "recurrence.pattern.dayOfMonth is required for {kind}"
                ));
            }
            _ => {}
        }
        if kind.ends_with("Yearly") && !(1..=12).contains(&month) {
            return Err(format!("recurrence.pattern.month is required for {kind}"));
        }
        let start = date(range, "startDate")?;
        let end = match range.get("type").and_then(Value::as_str) {
            Some("endDate") => RangeEnd::Date(date(range, "endDate")?),
            Some("numbered") => match range.get("numberOfOccurrences").and_then(Value::as_u64) {
                Some(n) if n > 0 => RangeEnd::Count(n as usize),
                _ => return Err("recurrence.range.numberOfOccurrences must be positive".into()),
            },
            Some("noEnd") => RangeEnd::Never,
            other => return Err(format!("recurrence.range.type {other:?} is not supported")),
        };
        if let RangeEnd::Date(end) = end
            && end < start
        {
            return Err("recurrence.range.endDate is before its startDate".into());
        }
        let zone = range
            .get("recurrenceTimeZone")
            .and_then(Value::as_str)
            .filter(|z| !z.is_empty())
            .map(str::to_owned);
        Ok(Self {
            kind,
            interval,
            days,
            first_day,
            day_of_month,
            month,
            index,
            start,
            end,
            zone,
        })
    }

    /// Every date of the series from its start through `until` (inclusive), in order.
    pub(super) fn dates_until(&self, until: NaiveDate) -> Vec<NaiveDate> {
        let last = match self.end {
            RangeEnd::Date(end) => end.min(until),
            _ => until,
        };
        let limit = match self.end {
            RangeEnd::Count(n) => n,
            _ => usize::MAX,
        };
        let mut dates = Vec::new();
        let mut day = self.start;
        while day <= last && dates.len() < limit {
            if self.matches(day) {
                dates.push(day);
            }
            match day.succ_opt() {
                Some(next) => day = next,
                None => break,
            }
        }
        dates
    }

    fn months_from_start(&self, day: NaiveDate) -> i64 {
        i64::from(day.year() - self.start.year()) * 12 + i64::from(day.month())
            - i64::from(self.start.month())
    }

    fn relative_index_matches(&self, day: NaiveDate) -> bool {
        let next_month_same_weekday = day + chrono::Duration::days(7);
        match self.index.as_str() {
            "first" => day.day() <= 7,
            "second" => (8..=14).contains(&day.day()),
            "third" => (15..=21).contains(&day.day()),
            "fourth" => (22..=28).contains(&day.day()),
            "last" => next_month_same_weekday.month() != day.month(),
            _ => false,
        }
    }

    fn matches(&self, day: NaiveDate) -> bool {
        match self.kind.as_str() {
            "daily" => (day - self.start).num_days() % self.interval == 0,
            "weekly" => {
                let week_start = |d: NaiveDate| {
                    let back = (7 + d.weekday().num_days_from_sunday()
                        - self.first_day.num_days_from_sunday())
                        % 7;
                    d - chrono::Duration::days(i64::from(back))
                };
                let weeks = (week_start(day) - week_start(self.start)).num_days() / 7;
                self.days.contains(&day.weekday()) && weeks % self.interval == 0
            }
            "absoluteMonthly" => {
                day.day() == self.day_of_month && self.months_from_start(day) % self.interval == 0
            }
            "relativeMonthly" => {
                self.days.contains(&day.weekday())
                    && self.relative_index_matches(day)
                    && self.months_from_start(day) % self.interval == 0
            }
            "absoluteYearly" => {
                day.month() == self.month
                    && day.day() == self.day_of_month
                    && i64::from(day.year() - self.start.year()) % self.interval == 0
            }
            "relativeYearly" => {
                day.month() == self.month
                    && self.days.contains(&day.weekday())
                    && self.relative_index_matches(day)
                    && i64::from(day.year() - self.start.year()) % self.interval == 0
            }
            _ => false,
        }
    }
}
