//! VTIMEZONE components of an imported file, evaluated by their own rules: used only for
//! TZIDs that are neither IANA nor Windows names (see [`super::timezones`]).
//!
//! Each STANDARD / DAYLIGHT observance contributes onsets (its DTSTART, its RDATEs, and the
//! yearly RRULE real producers write: `FREQ=YEARLY;BYMONTH=m;BYDAY=nWD`, or `BYMONTHDAY`);
//! the offset at a local time is the TZOFFSETTO of the latest onset before it, or the first
//! observance's TZOFFSETFROM before any onset. Observances with unreadable offsets (the
//! `+5328` of a garbled LMT) are dropped; other rule forms count their DTSTART only.
//!
//! An observance keeps at most [`MAX_RDATES`] RDATEs (real zones list a few hundred at
//! most), sorted once, so finding the latest onset before a time is a binary search, and a
//! VTIMEZONE keeps at most [`MAX_OBSERVANCES`] observances: whatever the file, a lookup
//! costs a bounded amount, and a hostile VTIMEZONE cannot make every event of an import
//! scan it.

use std::collections::HashMap;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Weekday};

use super::lexer::Component;
use super::timezones::clean_tzid;
use super::values::{parse_date_value, parse_utc_offset, split_values};

/// The most RDATE values an observance keeps (the first ones of the file); the rest are
/// ignored, as recurrences past their limits are refused.
pub const MAX_RDATES: usize = 1_000;

/// The most observances a VTIMEZONE keeps (the first ones of the file; a zone written out
/// transition by transition since the 19th century has a few hundred).
pub const MAX_OBSERVANCES: usize = 500;

/// A VTIMEZONE read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    observances: Vec<Observance>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Observance {
    start: NaiveDateTime,
    offset_from: i32,
    offset_to: i32,
    rule: Option<YearlyRule>,
    /// Sorted, without repeats.
    rdates: Vec<NaiveDateTime>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct YearlyRule {
    month: u32,
    day: DayRule,
    until: Option<NaiveDateTime>,
    /// COUNT: one onset a year from the observance's DTSTART.
    count: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DayRule {
    /// The nth (negative: from the end) weekday of the month.
    Weekday(i32, Weekday),
    /// A day of the month (negative: from the end).
    MonthDay(i32),
}

/// The VTIMEZONEs among `components` (recursively), by cleaned TZID, and their
/// `X-LIC-LOCATION`s. The first definition of a TZID wins.
pub fn collect(components: &[Component]) -> (HashMap<String, Definition>, HashMap<String, String>) {
    let mut definitions = HashMap::new();
    let mut locations = HashMap::new();
    let mut stack: Vec<&Component> = components.iter().collect();
    while let Some(component) = stack.pop() {
        if component.name != "VTIMEZONE" {
            stack.extend(component.children.iter());
            continue;
        }
        let Some(tzid) = component.first("TZID").map(|p| clean_tzid(&p.value)) else {
            continue;
        };
        if tzid.is_empty() {
            continue;
        }
        if let Some(location) = component.first("X-LIC-LOCATION") {
            locations
                .entry(tzid.clone())
                .or_insert_with(|| location.value.trim().to_owned());
        }
        definitions
            .entry(tzid)
            .or_insert_with(|| Definition::read(component));
    }
    (definitions, locations)
}

impl Definition {
    /// Reads a VTIMEZONE component.
    pub fn read(component: &Component) -> Self {
        let observances = component
            .children
            .iter()
            .filter(|c| c.name == "STANDARD" || c.name == "DAYLIGHT")
            .take(MAX_OBSERVANCES)
            .filter_map(Observance::read)
            .collect();
        Self { observances }
    }

    /// Whether it has at least one observance with readable offsets.
    pub fn is_usable(&self) -> bool {
        !self.observances.is_empty()
    }

    /// Seconds east of UTC at wall-clock time `local`.
    pub fn offset_at(&self, local: NaiveDateTime) -> i32 {
        let latest = self
            .observances
            .iter()
            .filter_map(|o| o.latest_onset(local).map(|at| (at, o.offset_to)))
            .max_by_key(|(at, _)| *at);
        match latest {
            Some((_, offset)) => offset,
            None => self
                .observances
                .iter()
                .min_by_key(|o| o.start)
                .map_or(0, |o| o.offset_from),
        }
    }
}

impl Observance {
    fn read(component: &Component) -> Option<Self> {
        let offset_to = parse_utc_offset(&component.first("TZOFFSETTO")?.value)?;
        let offset_from = component
            .first("TZOFFSETFROM")
            .and_then(|p| parse_utc_offset(&p.value))
            .unwrap_or(offset_to);
        let start = local_value(&component.first("DTSTART")?.value)?;
        let rule = component
            .first("RRULE")
            .and_then(|p| YearlyRule::read(&p.value));
        let mut rdates: Vec<NaiveDateTime> = component
            .all("RDATE")
            .flat_map(|p| split_values(&p.value))
            .take(MAX_RDATES)
            .filter_map(local_value)
            .collect();
        rdates.sort_unstable();
        rdates.dedup();
        Some(Self {
            start,
            offset_from,
            offset_to,
            rule,
            rdates,
        })
    }

    /// The latest onset at or before `local`.
    fn latest_onset(&self, local: NaiveDateTime) -> Option<NaiveDateTime> {
        let mut best = (self.start <= local).then_some(self.start);
        let mut consider = |at: NaiveDateTime| {
            if at <= local && at >= self.start && best.is_none_or(|b| at > b) {
                best = Some(at);
            }
        };
        // The latest RDATE at or before `local` (they are sorted).
        let before = self.rdates.partition_point(|rdate| *rdate <= local);
        if let Some(rdate) = before.checked_sub(1).and_then(|at| self.rdates.get(at)) {
            consider(*rdate);
        }
        if let Some(rule) = &self.rule {
            let upper = rule.until.map_or(local, |until| until.min(local));
            let last_year = rule.count.map_or(upper.year(), |count| {
                self.start
                    .year()
                    .saturating_add(count - 1)
                    .min(upper.year())
            });
            for year in [last_year, last_year - 1] {
                if let Some(at) = rule.onset(year, self.start)
                    && at <= upper
                {
                    consider(at);
                    break;
                }
            }
        }
        best
    }
}

impl YearlyRule {
    fn read(rule: &str) -> Option<Self> {
        let mut freq = None;
        let (mut month, mut by_day, mut by_month_day) = (None, None, None);
        let (mut until, mut count) = (None, None);
        for part in rule.split(';') {
            let (key, value) = part.split_once('=')?;
            match key.trim().to_ascii_uppercase().as_str() {
                "FREQ" => freq = Some(value.trim().to_ascii_uppercase()),
                "BYMONTH" => month = value.trim().parse::<u32>().ok(),
                "BYDAY" => by_day = Some(value.trim().to_ascii_uppercase()),
                "BYMONTHDAY" => by_month_day = Some(value.trim().to_owned()),
                "UNTIL" => until = local_value(value),
                "COUNT" => count = value.trim().parse::<i32>().ok(),
                _ => {}
            }
        }
        if freq.as_deref() != Some("YEARLY") {
            return None;
        }
        let month = month.filter(|m| (1..=12).contains(m))?;
        let day = match (by_day, by_month_day) {
            (Some(by_day), days) => {
                let (nth, weekday) = weekday_rule(&by_day)?;
                match (nth, days) {
                    (0, Some(days)) => {
                        // `BYDAY=SU;BYMONTHDAY=8,9,…,14`: the week those days span.
                        let first: i32 = days.split(',').next()?.trim().parse().ok()?;
                        DayRule::Weekday(if first > 0 { (first - 1) / 7 + 1 } else { -1 }, weekday)
                    }
                    (0, None) => return None,
                    (nth, _) => DayRule::Weekday(nth, weekday),
                }
            }
            (None, Some(days)) => DayRule::MonthDay(
                days.trim()
                    .parse()
                    .ok()
                    .filter(|d: &i32| (-31..=31).contains(d))?,
            ),
            (None, None) => return None,
        };
        Some(Self {
            month,
            day,
            until,
            count: count.map(|c| c.max(1)),
        })
    }

    /// The onset in `year`, at the time of day of `start`.
    fn onset(&self, year: i32, start: NaiveDateTime) -> Option<NaiveDateTime> {
        let date = match self.day {
            DayRule::Weekday(nth, weekday) => nth_weekday(year, self.month, nth, weekday)?,
            DayRule::MonthDay(day) if day > 0 => {
                NaiveDate::from_ymd_opt(year, self.month, u32::try_from(day).ok()?)?
            }
            DayRule::MonthDay(day) => {
                last_day_of_month(year, self.month)? + Duration::days(i64::from(day + 1))
            }
        };
        Some(date.and_time(start.time()))
    }
}

fn local_value(text: &str) -> Option<NaiveDateTime> {
    match parse_date_value(text)? {
        super::values::DateValue::Date(date) => Some(date.and_time(chrono::NaiveTime::MIN)),
        super::values::DateValue::Utc(at) | super::values::DateValue::Local(at) => Some(at),
    }
}

/// `-1SU` → (-1, Sunday); `SU` → (0, Sunday).
fn weekday_rule(text: &str) -> Option<(i32, Weekday)> {
    let text = text.split(',').next()?.trim();
    let split = text.len().checked_sub(2)?;
    let weekday = match text.get(split..)? {
        "MO" => Weekday::Mon,
        "TU" => Weekday::Tue,
        "WE" => Weekday::Wed,
        "TH" => Weekday::Thu,
        "FR" => Weekday::Fri,
        "SA" => Weekday::Sat,
        "SU" => Weekday::Sun,
        _ => return None,
    };
    let nth: i32 = match text.get(..split)?.trim_start_matches('+') {
        "" => 0,
        n => n.parse().ok()?,
    };
    (-5..=5).contains(&nth).then_some((nth, weekday))
}

fn last_day_of_month(year: i32, month: u32) -> Option<NaiveDate> {
    let (next_year, next_month) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(next_year, next_month, 1)?.pred_opt()
}

/// The `nth` `weekday` of a month (negative counts from the end).
pub fn nth_weekday(year: i32, month: u32, nth: i32, weekday: Weekday) -> Option<NaiveDate> {
    if nth > 0 {
        let first = NaiveDate::from_ymd_opt(year, month, 1)?;
        let shift =
            (7 + weekday.num_days_from_monday() - first.weekday().num_days_from_monday()) % 7;
        let date = first + Duration::days(i64::from(shift) + 7 * i64::from(nth - 1));
        (date.month() == month).then_some(date)
    } else if nth < 0 {
        let last = last_day_of_month(year, month)?;
        let shift =
            (7 + last.weekday().num_days_from_monday() - weekday.num_days_from_monday()) % 7;
        let date = last - Duration::days(i64::from(shift) + 7 * i64::from(-nth - 1));
        (date.month() == month).then_some(date)
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ical::lexer::read;

    fn at(y: i32, m: u32, d: u32, h: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, m, d)
            .unwrap()
            .and_hms_opt(h, 0, 0)
            .unwrap()
    }

    #[test]
    fn outlook_brasilia_rules() {
        let text = "BEGIN:VTIMEZONE\nTZID:(UTC-03:00) Brasília\nBEGIN:STANDARD\nDTSTART:16010101T235959\nTZOFFSETFROM:-0200\nTZOFFSETTO:-0300\nRRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=3SA;BYMONTH=2\nEND:STANDARD\nBEGIN:DAYLIGHT\nDTSTART:16010101T235959\nTZOFFSETFROM:-0300\nTZOFFSETTO:-0200\nRRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=2SA;BYMONTH=10\nEND:DAYLIGHT\nEND:VTIMEZONE\n";
        let top = read(text.as_bytes()).unwrap();
        let (definitions, _) = collect(&top);
        let brasilia = &definitions["(UTC-03:00) Brasília"];
        assert_eq!(brasilia.offset_at(at(2017, 5, 11, 13)), -3 * 3600);
        assert_eq!(brasilia.offset_at(at(2017, 12, 1, 13)), -2 * 3600);
        assert_eq!(brasilia.offset_at(at(2018, 1, 10, 13)), -2 * 3600);
    }

    #[test]
    fn rdates_are_found_whatever_their_order_and_kept_within_bounds() {
        let text = "BEGIN:VTIMEZONE\nTZID:Listed\nBEGIN:STANDARD\nDTSTART:19701025T030000\n\
                    TZOFFSETFROM:+0200\nTZOFFSETTO:+0100\nRDATE:20261025T030000,20251026T030000\n\
                    END:STANDARD\nBEGIN:DAYLIGHT\nDTSTART:19700329T020000\nTZOFFSETFROM:+0100\n\
                    TZOFFSETTO:+0200\nRDATE:20260329T020000\nRDATE:20250330T020000\n\
                    END:DAYLIGHT\nEND:VTIMEZONE\n";
        let top = read(text.as_bytes()).unwrap();
        let (definitions, _) = collect(&top);
        let listed = &definitions["Listed"];
        assert_eq!(listed.offset_at(at(2025, 1, 10, 12)), 3600);
        assert_eq!(listed.offset_at(at(2025, 7, 1, 12)), 7200);
        assert_eq!(listed.offset_at(at(2025, 12, 1, 12)), 3600);
        assert_eq!(listed.offset_at(at(2026, 7, 1, 12)), 7200);
        assert_eq!(listed.offset_at(at(2026, 11, 1, 12)), 3600);

        // 400,000 RDATEs: an observance keeps the first MAX_RDATES, sorted.
        let values: Vec<String> = (0..400_000)
            .map(|n| format!("{:04}0101T000000", 2400 - n % 400))
            .collect();
        let hostile = format!(
            "BEGIN:VTIMEZONE\nTZID:Hostile\nBEGIN:STANDARD\nDTSTART:19700101T000000\n\
             TZOFFSETTO:+0100\nRDATE:{}\nEND:STANDARD\nEND:VTIMEZONE\n",
            values.join(",")
        );
        let top = read(hostile.as_bytes()).unwrap();
        let (definitions, _) = collect(&top);
        let observance = &definitions["Hostile"].observances[0];
        assert_eq!(
            observance.rdates.len(),
            400,
            "the first 1,000 values, without repeats"
        );
        assert!(observance.rdates.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(definitions["Hostile"].offset_at(at(2026, 7, 1, 12)), 3600);
    }

    #[test]
    fn weekday_arithmetic() {
        assert_eq!(
            nth_weekday(2026, 3, -1, Weekday::Sun),
            NaiveDate::from_ymd_opt(2026, 3, 29)
        );
        assert_eq!(
            nth_weekday(2026, 11, 1, Weekday::Sun),
            NaiveDate::from_ymd_opt(2026, 11, 1)
        );
        assert_eq!(nth_weekday(2026, 2, 5, Weekday::Sun), None);
    }
}
