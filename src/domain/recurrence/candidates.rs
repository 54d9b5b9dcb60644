//! How many instances one period of a rule can hold at most, read from its BYxxx parts.
//!
//! A rule whose periods can hold none (`FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30`), or fewer
//! than every BYSETPOS position it asks for (`FREQ=MONTHLY;BYSETPOS=3`, which keeps the one
//! day the start implies), selects nothing. The `rrule` crate finds that out only by walking
//! 100,000 empty periods, without a way to stop it, so such rules are told apart from their
//! text first: [`super::check`] refuses them and expansions leave them out.
//!
//! The count is an upper bound: each BYxxx part bounds the days a period can hold, the
//! smallest bound is taken, and the times of day multiply it. Parts the rule leaves out are
//! filled from the start as the crate fills them: the start's day of the month (and, for a
//! yearly rule without BYMONTH, its month) or weekday, and one time of day.

use chrono::{DateTime, Datelike, Utc};

/// Whether the RRULE value `rule` (`FREQ=…;…`) of a series starting at `start` can select
/// no instance in any period.
pub(super) fn selects_nothing(rule: &str, start: DateTime<Utc>) -> bool {
    let Some(parts) = Parts::read(rule).map(|parts| parts.filled_from(start)) else {
        return false;
    };
    let Some(most) = parts.most_per_period() else {
        return false;
    };
    most == 0
        || (!parts.set_positions.is_empty()
            && parts
                .set_positions
                .iter()
                .all(|position| position.unsigned_abs() > most))
}

/// The parts of a rule the bound reads.
#[derive(Default)]
struct Parts {
    freq: String,
    set_positions: Vec<i64>,
    months: Vec<i64>,
    month_days: Vec<i64>,
    year_days: usize,
    week_numbers: usize,
    /// BYDAY entries without an ordinal (every Monday of the period).
    weekdays: usize,
    /// The ordinals of BYDAY entries with one (1 for the first Monday, -1 for the last).
    nth_weekdays: Vec<i64>,
    hours: usize,
    minutes: usize,
    seconds: usize,
}

impl Parts {
    /// The parts of `rule`; `None` when a value is not a number or weekday the bound reads,
    /// or lies outside RFC 5545's range (so that nothing the crate reads differently is
    /// bounded too tightly: it refuses such a rule itself).
    fn read(rule: &str) -> Option<Self> {
        let mut parts = Self::default();
        let numbers = |list: &str| -> Option<Vec<i64>> {
            let mut values = list
                .split(',')
                .map(|v| {
                    v.trim()
                        .parse()
                        .ok()
                        .filter(|n: &i64| n.unsigned_abs() <= 366)
                })
                .collect::<Option<Vec<i64>>>()?;
            values.sort_unstable();
            values.dedup();
            Some(values)
        };
        for (name, value) in rule.split(';').filter_map(|part| part.split_once('=')) {
            match name.trim().to_ascii_uppercase().as_str() {
                "FREQ" => parts.freq = value.trim().to_ascii_uppercase(),
                "BYSETPOS" => parts.set_positions = numbers(value)?,
                "BYMONTH" => parts.months = numbers(value)?,
                "BYMONTHDAY" => parts.month_days = numbers(value)?,
                "BYYEARDAY" => parts.year_days = numbers(value)?.len(),
                "BYWEEKNO" => parts.week_numbers = numbers(value)?.len(),
                "BYHOUR" => parts.hours = numbers(value)?.len(),
                "BYMINUTE" => parts.minutes = numbers(value)?.len(),
                "BYSECOND" => parts.seconds = numbers(value)?.len(),
                "BYDAY" => {
                    let mut days: Vec<String> = value
                        .split(',')
                        .map(|d| d.trim().to_ascii_uppercase())
                        .collect();
                    days.sort_unstable();
                    days.dedup();
                    for day in &days {
                        let ordinal = day.get(..day.len().saturating_sub(2))?;
                        if ordinal.is_empty() {
                            parts.weekdays += 1;
                        } else {
                            let ordinal: i64 = ordinal.parse().ok()?;
                            parts
                                .nth_weekdays
                                .push(Some(ordinal).filter(|n| n.unsigned_abs() <= 53)?);
                        }
                    }
                }
                _ => {}
            }
        }
        Some(parts)
    }

    /// The parts with the day the crate fills in when the rule names no day.
    fn filled_from(mut self, start: DateTime<Utc>) -> Self {
        let names_a_day = !self.month_days.is_empty()
            || !self.nth_weekdays.is_empty()
            || self.year_days + self.week_numbers + self.weekdays > 0;
        if names_a_day {
            return self;
        }
        match self.freq.as_str() {
            "YEARLY" | "MONTHLY" => {
                self.month_days = vec![i64::from(start.day())];
                if self.freq == "YEARLY" && self.months.is_empty() {
                    self.months = vec![i64::from(start.month())];
                }
            }
            "WEEKLY" => self.weekdays = 1,
            _ => {}
        }
        self
    }

    /// The most instances one period can hold.
    fn most_per_period(&self) -> Option<u64> {
        let times = |n: usize| count(n.max(1));
        let (hours, minutes, seconds) =
            (times(self.hours), times(self.minutes), times(self.seconds));
        let (days, times) = match self.freq.as_str() {
            "YEARLY" => (self.most_days(366, 53, 12), hours * minutes * seconds),
            "MONTHLY" => (self.most_days(31, 5, 1), hours * minutes * seconds),
            "WEEKLY" => (self.most_days(7, 1, 1), hours * minutes * seconds),
            "DAILY" => (self.most_days(1, 1, 1), hours * minutes * seconds),
            "HOURLY" => (self.most_days(1, 1, 1), minutes * seconds),
            "MINUTELY" => (self.most_days(1, 1, 1), seconds),
            "SECONDLY" => (self.most_days(1, 1, 1), 1),
            _ => return None,
        };
        Some(days.saturating_mul(times))
    }

    /// The most days a period of `span` days can hold, where a weekday recurs at most
    /// `weeks` times and an ordinal weekday (the first Monday) names at most `months` days.
    fn most_days(&self, span: u64, weeks: u64, months: u64) -> u64 {
        let mut most = span;
        if !self.month_days.is_empty() {
            most = most.min(self.month_days_that_exist(span));
            if self.weekdays == 0 && !self.nth_weekdays.is_empty() && self.nth_in_month() {
                most = most.min(self.month_days_an_ordinal_reaches().saturating_mul(months));
            }
        }
        if self.weekdays > 0 || !self.nth_weekdays.is_empty() {
            let named = count(self.weekdays)
                .saturating_mul(weeks)
                .saturating_add(count(self.nth_weekdays.len()).saturating_mul(months));
            most = most.min(named.max(1));
        }
        if self.year_days > 0 {
            most = most.min(count(self.year_days));
        }
        if self.week_numbers > 0 {
            most = most.min(count(self.week_numbers).saturating_mul(7));
        }
        most
    }

    /// Whether an ordinal weekday counts within a month (a monthly rule, or a yearly one
    /// with BYMONTH), not within the year.
    fn nth_in_month(&self) -> bool {
        self.freq == "MONTHLY" || (self.freq == "YEARLY" && !self.months.is_empty())
    }

    /// How many BYMONTHDAY values some ordinal weekday can fall on: the third Monday is a
    /// day from the 15th to the 21st, the last one from the 22nd to the 31st (months last
    /// 28 to 31 days), so `BYMONTHDAY=1;BYDAY=-1MO` names no day.
    fn month_days_an_ordinal_reaches(&self) -> u64 {
        // The days (first, last) a day counted `n` from either end of a month may be.
        let days = |n: i64, width: i64| {
            if n > 0 {
                (width * (n - 1) + 1, width * n)
            } else {
                (29 + width * n, 31 + width * (n + 1))
            }
        };
        let reached = self.month_days.iter().filter(|&&day| {
            let (first, last) = days(day, 1);
            self.nth_weekdays.iter().any(|&ordinal| {
                let (from, to) = days(ordinal, 7);
                first <= to && from <= last
            })
        });
        count(reached.count())
    }

    /// The BYMONTHDAY values some month the rule allows has (day 30 of February does not
    /// exist): for a year, one per such month; for a shorter period, the most one month has.
    fn month_days_that_exist(&self, span: u64) -> u64 {
        const LONGEST: [i64; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let months: Vec<i64> = if self.months.is_empty() {
            (1..=12).collect()
        } else {
            self.months.clone()
        };
        let in_month = |month: &i64| {
            let length = usize::try_from(month - 1)
                .ok()
                .and_then(|index| LONGEST.get(index))
                .copied()
                .unwrap_or(0);
            let days = self
                .month_days
                .iter()
                .filter(|day| day.unsigned_abs() <= length.unsigned_abs())
                .count();
            count(days)
        };
        if span >= 366 {
            months.iter().map(in_month).sum()
        } else {
            months.iter().map(in_month).max().unwrap_or(0)
        }
    }
}

/// `n` as a count of instances.
fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    /// 2026-05-30 09:00 UTC.
    fn start() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 5, 30, 9, 0, 0)
            .single()
            .expect("a time")
    }

    #[test]
    fn rules_that_select_nothing() {
        for rule in [
            "FREQ=MONTHLY;BYSETPOS=3",
            "FREQ=MONTHLY;BYSETPOS=3;COUNT=20",
            "FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=30",
            "FREQ=YEARLY;BYMONTH=4,6;BYMONTHDAY=31,-31",
            "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
            "FREQ=MINUTELY;BYMONTH=11;BYMONTHDAY=31",
            "FREQ=YEARLY;BYSETPOS=366;BYDAY=MO",
            "FREQ=WEEKLY;BYDAY=MO,TU;BYSETPOS=3",
            "FREQ=DAILY;BYHOUR=3;BYSETPOS=2",
            "FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=28,29,30;BYSETPOS=-3",
            "FREQ=YEARLY;BYMONTH=2",
            "FREQ=MONTHLY;BYMONTH=2",
            "FREQ=MONTHLY;BYMONTHDAY=1;BYDAY=-1MO",
            "FREQ=MONTHLY;BYMONTHDAY=1,2,3;BYDAY=-1MO,2TU,+3WE;BYSETPOS=1",
            "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=-1;BYDAY=1SU",
        ] {
            assert!(selects_nothing(rule, start()), "{rule}");
        }
    }

    #[test]
    fn rules_that_select_something() {
        for rule in [
            "FREQ=WEEKLY;BYDAY=MO",
            "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
            "FREQ=MONTHLY;BYDAY=MO,TU;BYSETPOS=2",
            "FREQ=MONTHLY;BYMONTHDAY=31",
            "FREQ=MONTHLY;BYMONTHDAY=-31",
            "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
            "FREQ=YEARLY;BYDAY=MO;BYSETPOS=53",
            "FREQ=YEARLY;BYDAY=1MO,-1FR;BYMONTH=1,12;BYSETPOS=4",
            "FREQ=DAILY;BYHOUR=3,15;BYSETPOS=2",
            "FREQ=HOURLY;BYMINUTE=0,30;BYSETPOS=-2",
            "FREQ=YEARLY;BYWEEKNO=20;BYSETPOS=7",
            "freq=monthly;bymonth=2;bymonthday=29",
            "FREQ=YEARLY",
            "FREQ=YEARLY;BYMONTH=3,4",
            "FREQ=MONTHLY;BYMONTHDAY=13;BYDAY=FR",
            "FREQ=MONTHLY;BYMONTHDAY=13;BYDAY=2FR",
            "FREQ=MONTHLY;BYMONTHDAY=22;BYDAY=-1MO",
            "FREQ=MONTHLY;BYMONTHDAY=-7;BYDAY=-1MO",
            "FREQ=MONTHLY;BYMONTHDAY=29;BYDAY=5SU",
            "FREQ=YEARLY;BYMONTH=11;BYDAY=TU;BYMONTHDAY=2,3,4,5,6,7,8",
            "FREQ=MONTHLY;BYMONTH=2,3",
            "FREQ=WEEKLY;BYHOUR=9,10;BYSETPOS=2",
            // Not a rule: refused when it is read, not here.
            "FREQ=SOMETIMES",
            "FREQ=MONTHLY;BYMONTHDAY=1;BYDAY=9223372036854775807MO",
            "FREQ=MONTHLY;BYMONTHDAY=-9223372036854775808;BYSETPOS=9223372036854775807",
        ] {
            assert!(!selects_nothing(rule, start()), "{rule}");
        }
    }
}
