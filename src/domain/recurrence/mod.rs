//! Recurrence rules: what a stored rule may be ([`check`], on every path that stores an
//! event), and expanding one into occurrences with bounded work ([`expansion`]).
//!
//! The stored form is a bare RRULE (`FREQ=WEEKLY;BYDAY=MO`) or iCalendar lines (`RRULE:…`,
//! `EXDATE:…`, `RDATE:…`), read by the `rrule` crate from the event's start in UTC. Rules
//! are ASCII, and every call into the crate is guarded: a panic of it (the fuzz target
//! `tests/fuzz` looks for them) ends in a refusal.
//!
//! A rule is refused when it cannot be read, holds more than [`MAX_RULES`] RRULEs, selects
//! nothing in any period ([`candidates`]), repeats every 0 periods, counts more than
//! [`MAX_COUNT`] instances, lists more than [`MAX_DATES`] RDATE and EXDATE values, repeats
//! more than [`MAX_PER_DAY`] times a day, when the event lasts longer than the rule takes
//! to repeat (a 2-hour event every hour), as Google Calendar refuses it, or when an instance
//! it bounds (by COUNT, UNTIL or RDATE) would end after the year 9999, like any time
//! outside the years 1 to 9999. An open-ended rule goes on past any year; readers stop at
//! the end of 9999.

mod candidates;
pub mod expansion;

use expansion::Budget;

use chrono::{DateTime, Duration, TimeZone, Utc};
use rrule::{Frequency, RRule, RRuleSet};

/// The most instances a rule's COUNT may ask for.
pub const MAX_COUNT: u32 = 10_000;
/// The most RRULEs a recurrence may hold (RFC 5545 asks for one; files carry up to three).
/// Each is walked on its own, and a walk of the `rrule` crate cannot be stopped midway.
pub const MAX_RULES: usize = 4;
/// The most RDATE and EXDATE values a recurrence may list.
pub const MAX_DATES: usize = 1_000;
/// The most instances a rule may have in one day (one a minute on average).
pub const MAX_PER_DAY: u64 = 1_440;

/// Why a recurrence rule is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleProblem {
    /// Not a rule the `rrule` crate reads.
    Unreadable,
    /// More than [`MAX_RULES`] RRULEs.
    TooManyRules,
    /// An RRULE whose periods can hold no instance.
    SelectsNothing,
    /// `INTERVAL=0`.
    ZeroInterval,
    /// COUNT over [`MAX_COUNT`].
    CountTooLarge,
    /// More than [`MAX_DATES`] RDATE and EXDATE values.
    TooManyDates,
    /// More than [`MAX_PER_DAY`] instances a day.
    TooFrequent,
    /// The event lasts longer than the rule takes to repeat.
    LongerThanInterval,
    /// An instance would end after the year 9999.
    PastYear9999,
    /// Walking the rule to its last instance took more than its budget.
    TooCostly,
}

impl RuleProblem {
    /// What the client is told.
    pub fn message(self) -> String {
        match self {
            Self::Unreadable => "recurrence is not a recurrence rule Bowline can read.".into(),
            Self::TooManyRules => format!("recurrence may hold at most {MAX_RULES} RRULEs."),
            Self::SelectsNothing => {
                "recurrence has an RRULE that selects no instance in any period.".into()
            }
            Self::ZeroInterval => "recurrence INTERVAL must be at least 1.".into(),
            Self::CountTooLarge => format!("recurrence COUNT must be at most {MAX_COUNT}."),
            Self::TooManyDates => {
                format!("recurrence may list at most {MAX_DATES} RDATE and EXDATE values.")
            }
            Self::TooFrequent => {
                format!("recurrence may repeat at most {MAX_PER_DAY} times a day.")
            }
            Self::LongerThanInterval => {
                "The event must not last longer than it takes to repeat.".into()
            }
            Self::PastYear9999 => "recurrence instances must lie in the years 1 to 9999.".into(),
            Self::TooCostly => {
                "recurrence needs more work to check than one request may do.".into()
            }
        }
    }
}

/// Instances one rule's check may walk (COUNT rules are walked to their last instance).
const CHECK_STEPS: u64 = 2 * MAX_COUNT as u64;
/// How long one rule's check may take: a backstop behind [`CHECK_STEPS`], which is what
/// bounds the work (a release build walks them in milliseconds). Generous, so that a rule
/// within the steps is never refused because the server is busy (a debug build under a
/// loaded test run took over a second for a valid `COUNT=10000` rule).
const CHECK_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Checks a rule for an event from `start` to `end` (see the module doc).
pub fn check(
    recurrence: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<(), RuleProblem> {
    check_within(
        recurrence,
        start,
        end,
        &mut Budget::new(CHECK_STEPS, CHECK_TIME),
    )
}

/// [`check`], walking COUNT rules within `budget` (one an import shares among its
/// events): a spent budget refuses the rule ([`RuleProblem::TooCostly`]).
pub fn check_within(
    recurrence: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    budget: &mut Budget,
) -> Result<(), RuleProblem> {
    if listed_dates(recurrence) > MAX_DATES {
        return Err(RuleProblem::TooManyDates);
    }
    if rule_values(recurrence).count() > MAX_RULES {
        return Err(RuleProblem::TooManyRules);
    }
    if rule_values(recurrence).any(|rule| candidates::selects_nothing(rule, start)) {
        return Err(RuleProblem::SelectsNothing);
    }
    let set = read(recurrence, start).ok_or(RuleProblem::Unreadable)?;
    for rule in set.get_rrule() {
        if rule.get_interval() == 0 {
            return Err(RuleProblem::ZeroInterval);
        }
        if rule.get_count().is_some_and(|count| count > MAX_COUNT) {
            return Err(RuleProblem::CountTooLarge);
        }
        if per_day(rule) > MAX_PER_DAY {
            return Err(RuleProblem::TooFrequent);
        }
        if end - start > shortest_period(rule) {
            return Err(RuleProblem::LongerThanInterval);
        }
    }
    ends_by_year_9999(&set, end - start, budget)
}

/// Whether every instance the rule set bounds — each RDATE, an RRULE's last instance by
/// COUNT, its UNTIL — ends by the end of the year 9999 (instances last `duration`). A COUNT
/// rule is walked to its last instance, a step of `budget` each; one the `rrule` crate
/// cannot walk to its end (it gives up after many periods without an instance) is taken as
/// passing the year 9999.
fn ends_by_year_9999(
    set: &RRuleSet,
    duration: Duration,
    budget: &mut Budget,
) -> Result<(), RuleProblem> {
    let last_moment = Utc
        .with_ymd_and_hms(9999, 12, 31, 23, 59, 59)
        .single()
        .and_then(|at| at.checked_add_signed(Duration::milliseconds(999)))
        .ok_or(RuleProblem::PastYear9999)?;
    let fits = |at: DateTime<Utc>| {
        at.checked_add_signed(duration)
            .is_some_and(|until| until <= last_moment)
    };
    let past = || Err(RuleProblem::PastYear9999);
    if !set
        .get_rdate()
        .iter()
        .all(|at| fits(at.with_timezone(&Utc)))
    {
        return past();
    }
    let start = *set.get_dt_start();
    for rule in set.get_rrule() {
        if let Some(until) = rule.get_until() {
            if !fits(until.with_timezone(&Utc)) {
                return past();
            }
            continue;
        }
        let Some(count) = rule.get_count() else {
            continue;
        };
        if !budget.has_time() {
            return Err(RuleProblem::TooCostly);
        }
        let walked = guarded(|| {
            let mut instances = RRuleSet::new(start).rrule(rule.clone()).limit().into_iter();
            let mut seen = 0_u32;
            let mut last = None;
            for at in instances.by_ref() {
                if !budget.step() {
                    return Err(RuleProblem::TooCostly);
                }
                seen += 1;
                last = Some(at);
            }
            Ok((seen, last))
        })
        .ok_or(RuleProblem::Unreadable)??;
        match walked {
            (seen, Some(last)) if seen == count && fits(last.with_timezone(&Utc)) => {}
            _ => return past(),
        }
    }
    Ok(())
}

/// Runs `work`, which calls into the `rrule` crate; `None` if that panicked. Rules are read
/// from clients and files, and a panic there (the fuzz target finds them: its panic hook
/// aborts before this catches anything) must end in a refusal, not a dropped connection.
fn guarded<T>(work: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).ok()
}

/// The rule set of `recurrence` from `start`, as the `rrule` crate reads it. Rules are
/// ASCII (RFC 5545's RRULE, RDATE and EXDATE values are); other text is unreadable before
/// the crate sees it (it slices some values by bytes, and panics inside a character), as
/// is one with more than [`MAX_RULES`] RRULEs. An RRULE that selects nothing is left out
/// (a row stored before [`check`] refused it expands without walking it).
fn read(recurrence: &str, start: DateTime<Utc>) -> Option<RRuleSet> {
    if !recurrence.is_ascii() || rule_values(recurrence).count() > MAX_RULES {
        return None;
    }
    let mut text = format!("DTSTART:{}\n", start.format("%Y%m%dT%H%M%SZ"));
    let (mut kept, mut left_out) = (0, 0);
    for line in recurrence.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if rule_value(line).is_some_and(|rule| candidates::selects_nothing(rule, start)) {
            left_out += 1;
            continue;
        }
        if line.to_ascii_uppercase().starts_with("FREQ=") {
            text.push_str("RRULE:");
        }
        text.push_str(line);
        text.push('\n');
        kept += 1;
    }
    if kept == 0 && left_out > 0 {
        return Some(RRuleSet::new(start.with_timezone(&rrule::Tz::UTC)));
    }
    text.trim_end().parse().ok()
}

/// The RRULE values (`FREQ=…`) of `recurrence`, bare or on `RRULE:` lines.
fn rule_values(recurrence: &str) -> impl Iterator<Item = &str> {
    recurrence.lines().map(str::trim).filter_map(rule_value)
}

/// The RRULE value of one line of a recurrence, if it holds one.
fn rule_value(line: &str) -> Option<&str> {
    let head = line.get(..5).unwrap_or_default();
    if head.eq_ignore_ascii_case("FREQ=") {
        Some(line)
    } else if head.eq_ignore_ascii_case("RRULE") {
        line.split_once(':').map(|(_, value)| value)
    } else {
        None
    }
}

/// How many RDATE and EXDATE values `recurrence` lists (counted before parsing).
fn listed_dates(recurrence: &str) -> usize {
    recurrence
        .lines()
        .map(str::trim)
        .filter(|line| {
            let upper = line.get(..6).unwrap_or_default().to_ascii_uppercase();
            upper.starts_with("RDATE") || upper.starts_with("EXDATE")
        })
        .map(|line| {
            line.split_once(':')
                .map_or(0, |(_, values)| values.split(',').count())
        })
        .sum()
}

/// Instances of `rule` in one day, at most (BYxxx parts it lacks were filled in from the
/// start when it was read).
fn per_day(rule: &RRule) -> u64 {
    let len = |n: usize| u64::try_from(n.max(1)).unwrap_or(u64::MAX);
    let interval = u64::from(rule.get_interval().max(1));
    let (hours, minutes, seconds) = (
        len(rule.get_by_hour().len()),
        len(rule.get_by_minute().len()),
        len(rule.get_by_second().len()),
    );
    match rule.get_freq() {
        Frequency::Secondly => 86_400_u64.div_ceil(interval),
        Frequency::Minutely => 1_440_u64.div_ceil(interval).saturating_mul(seconds),
        Frequency::Hourly => 24_u64
            .div_ceil(interval)
            .saturating_mul(minutes)
            .saturating_mul(seconds),
        _ => hours.saturating_mul(minutes).saturating_mul(seconds),
    }
}

/// The shortest time `rule` takes to repeat (a month counts 28 days, a year 365).
fn shortest_period(rule: &RRule) -> Duration {
    let interval = i64::from(rule.get_interval().max(1));
    let seconds = match rule.get_freq() {
        Frequency::Secondly => 1,
        Frequency::Minutely => 60,
        Frequency::Hourly => 3_600,
        Frequency::Daily => 86_400,
        Frequency::Weekly => 7 * 86_400,
        Frequency::Monthly => 28 * 86_400,
        Frequency::Yearly => 365 * 86_400,
    };
    Duration::seconds(seconds * interval)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    /// 2026-07-`d` at `h`:00 UTC.
    pub(super) fn at(d: u32, h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, d, h, 0, 0)
            .single()
            .expect("t")
    }

    #[test]
    fn rules_that_are_refused() {
        let start = at(6, 9);
        let hour = at(6, 10);
        assert_eq!(check("FREQ=WEEKLY;BYDAY=MO", start, hour), Ok(()));
        assert_eq!(
            check(
                "RRULE:FREQ=DAILY;COUNT=10\nEXDATE:20260707T090000Z",
                start,
                hour
            ),
            Ok(())
        );
        assert_eq!(check("FREQ=MINUTELY;INTERVAL=30", start, start), Ok(()));
        let cases = [
            ("FREQ=SOMETIMES", RuleProblem::Unreadable),
            ("FREQ=DAILY;INTERVAL=0", RuleProblem::ZeroInterval),
            ("FREQ=DAILY;COUNT=10001", RuleProblem::CountTooLarge),
            ("FREQ=SECONDLY", RuleProblem::TooFrequent),
            (
                "FREQ=DAILY;BYHOUR=1,2,3,4,5,6,7,8,9;BYMINUTE=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59;BYSECOND=0,30,59",
                RuleProblem::TooFrequent,
            ),
            ("FREQ=MINUTELY;INTERVAL=30", RuleProblem::LongerThanInterval),
            (
                "FREQ=MONTHLY;BYSETPOS=3;COUNT=20",
                RuleProblem::SelectsNothing,
            ),
            (
                "RRULE:FREQ=WEEKLY\nRRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
                RuleProblem::SelectsNothing,
            ),
            (
                "FREQ=DAILY\nFREQ=DAILY\nFREQ=DAILY\nFREQ=DAILY\nRRULE:FREQ=DAILY",
                RuleProblem::TooManyRules,
            ),
        ];
        for (rule, problem) in cases {
            assert_eq!(check(rule, start, hour), Err(problem), "{rule}");
        }
        let dates: Vec<String> = (0..1_001)
            .map(|n| format!("2026{:02}{:02}T090000Z", 1 + n % 12, 1 + n % 28))
            .collect();
        let many = format!("RRULE:FREQ=DAILY\nEXDATE:{}", dates.join(","));
        assert_eq!(check(&many, start, hour), Err(RuleProblem::TooManyDates));
    }

    #[test]
    fn instances_past_the_year_9999_are_refused() {
        let day = |y: i32, m: u32, d: u32| Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).single().unwrap();
        let (start, end) = (day(9999, 12, 30), day(9999, 12, 31));
        assert_eq!(
            check("RRULE:FREQ=DAILY;COUNT=5", start, end),
            Err(RuleProblem::PastYear9999)
        );
        assert_eq!(
            check("FREQ=DAILY;COUNT=2", start, end),
            Err(RuleProblem::PastYear9999)
        );
        assert_eq!(check("FREQ=DAILY;COUNT=1", start, end), Ok(()));
        assert_eq!(
            check("FREQ=HOURLY;COUNT=23", start, start + Duration::minutes(30)),
            Ok(())
        );
        assert_eq!(
            check(
                "FREQ=DAILY;UNTIL=99991231T235959Z",
                start,
                start + Duration::hours(1)
            ),
            Err(RuleProblem::PastYear9999)
        );
        assert_eq!(
            check(
                "RRULE:FREQ=WEEKLY\nRDATE:99991231T230000Z",
                start,
                start + Duration::hours(2)
            ),
            Err(RuleProblem::PastYear9999)
        );
        // A yearly rule on 29 February, far from the end: walked to its last instance
        // (thousands of years: with more time than the check's own second, which a debug
        // build on a loaded machine may need; the steps are the check's).
        let leap = day(2024, 2, 29);
        let walk = |rule: &str| {
            let mut budget = Budget::new(CHECK_STEPS, std::time::Duration::from_secs(120));
            check_within(rule, leap, leap + Duration::hours(1), &mut budget)
        };
        assert_eq!(
            walk("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=1000"),
            Ok(())
        );
        assert_eq!(
            walk("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=2000"),
            Err(RuleProblem::PastYear9999)
        );
        // Open-ended rules go on past any year.
        assert_eq!(check("FREQ=DAILY", start, end), Ok(()));
    }

    /// Found by the fuzz target: the `rrule` crate sliced this BYDAY inside a character.
    #[test]
    fn a_rule_that_made_the_rrule_crate_panic_is_unreadable() {
        let sliced = "FREQ=WEEKLY;BYDAY=M\u{b1}\u{4e8}\u{b1},FR;INTERVAL=2";
        assert_eq!(
            check(sliced, at(1, 9), at(1, 10)),
            Err(RuleProblem::Unreadable)
        );
        let ascii = "FREQ=WEEKLY;BYDAY=M\u{e9},FR";
        assert_eq!(
            check(ascii, at(1, 9), at(1, 10)),
            Err(RuleProblem::Unreadable)
        );
    }
}
