//! Expanding a recurrence rule into occurrences with bounded work.
//!
//! Expansion never starts at the event's start when the window is far from it: an
//! open-ended rule (no COUNT) is moved forward by whole periods to just before the window
//! (the `rrule` crate fills in every BYxxx part the start implied when it reads the rule, so
//! starting a later period changes nothing else). Every instance looked at costs a step of
//! a [`Budget`], which also has a deadline; what a spent budget did not reach is left out and
//! the expansion says it is incomplete. Rows stored before the rules of [`super::check`]
//! existed are expanded the same way, so no stored rule can make a read run long.

use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Datelike, Duration, NaiveDate, SubsecRound, TimeZone, Utc};
use rrule::{Frequency, RRule, RRuleSet, Tz};

use super::{guarded, read};

/// How much an expansion may do: steps (instances looked at) and a deadline.
#[derive(Debug)]
pub struct Budget {
    steps_left: u64,
    deadline: Instant,
    spent: bool,
}

impl Budget {
    /// At most `steps` instances, until `time` from now.
    pub fn new(steps: u64, time: StdDuration) -> Self {
        Self {
            steps_left: steps,
            deadline: Instant::now() + time,
            spent: false,
        }
    }

    /// Whether it ran out.
    pub fn is_spent(&self) -> bool {
        self.spent
    }

    /// Whether the deadline has not passed, by the clock now: asked before each walk of the
    /// `rrule` crate, which may pass 100,000 empty periods before it yields an instance
    /// (a step), so that a budget shared by many rules ends between their walks.
    pub(super) fn has_time(&mut self) -> bool {
        if !self.spent && Instant::now() >= self.deadline {
            self.spent = true;
        }
        !self.spent
    }

    /// Takes one step; `false` once the budget is spent.
    pub(super) fn step(&mut self) -> bool {
        if self.spent {
            return false;
        }
        if self.steps_left == 0
            || (self.steps_left.is_multiple_of(256) && Instant::now() >= self.deadline)
        {
            self.spent = true;
            return false;
        }
        self.steps_left -= 1;
        true
    }
}

/// The occurrences an expansion found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// (start, end) of each occurrence, in order.
    pub occurrences: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// `false` when the budget ran out before the window was covered.
    pub complete: bool,
}

/// Occurrences (start, end) of an event starting at `start` and lasting until `end`,
/// overlapping `[from, to)`, at most `limit` of them, within `budget`. `None` if the rule
/// cannot be read.
pub fn occurrences(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    recurrence: &str,
    window: (DateTime<Utc>, DateTime<Utc>),
    limit: usize,
    budget: &mut Budget,
) -> Option<Expansion> {
    guarded(|| expand(start, end, recurrence, window, limit, budget)).flatten()
}

fn expand(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    recurrence: &str,
    (from, to): (DateTime<Utc>, DateTime<Utc>),
    limit: usize,
    budget: &mut Budget,
) -> Option<Expansion> {
    let set = read(recurrence, start)?;
    let duration = end - start;
    // iCalendar times have whole seconds; the fraction is carried over to every occurrence.
    let fraction = start - start.trunc_subsecs(0);
    // An occurrence that started before `from` may still be running at `from`.
    let earliest = from.checked_sub_signed(duration).unwrap_or(from);
    let overlaps = |at: DateTime<Utc>| {
        let until = at + duration;
        at < to && (until > from || (at >= from && at == until))
    };
    let dt_start = *set.get_dt_start();
    let exdates = set.get_exdate().clone();
    let mut found: Vec<DateTime<Utc>> = Vec::new();
    let mut complete = true;
    // Each RRULE (moved forward on its own) and the RDATEs, merged.
    let mut parts: Vec<RRuleSet> = set
        .get_rrule()
        .iter()
        .map(|rule| {
            let moved = moved_start(rule, dt_start.with_timezone(&Utc), earliest);
            RRuleSet::new(moved.with_timezone(&Tz::UTC))
                .rrule(rule.clone())
                .set_exdates(exdates.clone())
                .limit()
        })
        .collect();
    if !set.get_rdate().is_empty() {
        parts.push(
            RRuleSet::new(dt_start)
                .set_rdates(set.get_rdate().clone())
                .set_exdates(exdates.clone())
                .limit(),
        );
    }
    for part in &parts {
        if !budget.has_time() {
            complete = false;
            break;
        }
        let mut taken = 0;
        for at in part {
            if !budget.step() {
                complete = false;
                break;
            }
            let at = at.with_timezone(&Utc);
            if at >= to {
                break;
            }
            if overlaps(at + fraction) {
                found.push(at + fraction);
                taken += 1;
                if taken >= limit {
                    break;
                }
            }
        }
        if !complete {
            break;
        }
    }
    found.sort();
    found.dedup();
    found.truncate(limit);
    Some(Expansion {
        occurrences: found.into_iter().map(|at| (at, at + duration)).collect(),
        complete,
    })
}

/// How many instances of `recurrence` (a series starting at `start`) fall before `before`;
/// `None` when the rule cannot be read or `budget` ran out first.
pub fn count_before(
    start: DateTime<Utc>,
    recurrence: &str,
    before: DateTime<Utc>,
    budget: &mut Budget,
) -> Option<u32> {
    guarded(|| count_instances(start, recurrence, before, budget)).flatten()
}

fn count_instances(
    start: DateTime<Utc>,
    recurrence: &str,
    before: DateTime<Utc>,
    budget: &mut Budget,
) -> Option<u32> {
    let set = read(recurrence, start)?.limit();
    if !set.get_rrule().is_empty() && !budget.has_time() {
        return None;
    }
    let mut count: u32 = 0;
    for at in &set {
        if at.with_timezone(&Utc) >= before {
            break;
        }
        if !budget.step() {
            return None;
        }
        count = count.saturating_add(1);
    }
    Some(count)
}

/// Where to start expanding `rule` (whose series starts at `start`) to see every instance
/// from `earliest` on: `start` itself, or, for a rule without COUNT, the start of the last
/// whole period of the rule's own rhythm (a multiple of its INTERVAL) before `earliest`.
fn moved_start(rule: &RRule, start: DateTime<Utc>, earliest: DateTime<Utc>) -> DateTime<Utc> {
    if rule.get_count().is_some() || earliest <= start {
        return start;
    }
    let interval = i64::from(rule.get_interval().max(1));
    let fixed = |unit: i64| {
        let period = unit * interval;
        let periods = (earliest - start).num_seconds() / period;
        start + Duration::seconds(periods * period)
    };
    let months = |step: i64| {
        let elapsed = i64::from(earliest.year() - start.year()) * 12 + i64::from(earliest.month())
            - i64::from(start.month());
        let periods = elapsed / step;
        if periods == 0 {
            return start;
        }
        let index = i64::from(start.year()) * 12 + i64::from(start.month0()) + periods * step;
        let first_day = i32::try_from(index.div_euclid(12))
            .ok()
            .zip(u32::try_from(index.rem_euclid(12) + 1).ok())
            .and_then(|(year, month)| NaiveDate::from_ymd_opt(year, month, 1));
        first_day
            .and_then(|day| day.and_hms_opt(0, 0, 0))
            .map_or(start, |at| Utc.from_utc_datetime(&at))
    };
    match rule.get_freq() {
        Frequency::Secondly => fixed(1),
        Frequency::Minutely => fixed(60),
        Frequency::Hourly => fixed(3_600),
        Frequency::Daily => fixed(86_400),
        Frequency::Weekly => fixed(7 * 86_400),
        Frequency::Monthly => months(interval),
        Frequency::Yearly => months(12 * interval),
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::super::tests::at;
    use super::*;

    fn budget() -> Budget {
        Budget::new(1_000_000, StdDuration::from_secs(10))
    }

    fn starts(
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        rule: &str,
        window: (DateTime<Utc>, DateTime<Utc>),
    ) -> Vec<DateTime<Utc>> {
        let found = occurrences(start, end, rule, window, 100, &mut budget()).expect("readable");
        assert!(found.complete);
        found.occurrences.iter().map(|(s, _)| *s).collect()
    }

    #[test]
    fn weekly_rule_with_an_exception() {
        let found = occurrences(
            at(6, 9),
            at(6, 10),
            "RRULE:FREQ=WEEKLY\nEXDATE:20260713T090000Z",
            (at(1, 0), at(31, 0)),
            100,
            &mut budget(),
        )
        .expect("readable");
        let starts: Vec<_> = found.occurrences.iter().map(|(s, _)| *s).collect();
        assert_eq!(starts, vec![at(6, 9), at(20, 9), at(27, 9)]);
        assert_eq!(found.occurrences[0].1, at(6, 10));
    }

    #[test]
    fn bare_rules_and_bad_rules() {
        assert_eq!(
            starts(
                at(1, 9),
                at(1, 10),
                "FREQ=DAILY;COUNT=3",
                (at(1, 0), at(31, 0))
            )
            .len(),
            3
        );
        assert!(
            occurrences(
                at(1, 9),
                at(1, 10),
                "FREQ=SOMETIMES",
                (at(1, 0), at(31, 0)),
                10,
                &mut budget()
            )
            .is_none()
        );
    }

    /// Moving the start forward by whole periods finds what expanding from the start finds.
    #[test]
    fn moved_starts_keep_every_instance() {
        let origin = Utc
            .with_ymd_and_hms(1990, 1, 31, 9, 30, 0)
            .single()
            .unwrap();
        let window = (at(1, 0), at(31, 0) + Duration::days(120));
        let rules = [
            "FREQ=DAILY;INTERVAL=3",
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR",
            "FREQ=MONTHLY",
            "FREQ=MONTHLY;INTERVAL=5;BYDAY=-1SU",
            "FREQ=MONTHLY;BYDAY=MO,TU;BYSETPOS=2",
            "FREQ=YEARLY;INTERVAL=3;BYMONTH=7,8,9;BYDAY=1WE",
            "FREQ=HOURLY;INTERVAL=7",
            "FREQ=MINUTELY;INTERVAL=97",
            "FREQ=YEARLY;BYWEEKNO=30;BYDAY=TH",
        ];
        for rule in rules {
            let text = format!("DTSTART:{}\nRRULE:{rule}", origin.format("%Y%m%dT%H%M%SZ"));
            let set: RRuleSet = text.parse().unwrap();
            let expected: Vec<DateTime<Utc>> = set
                .after(window.0.with_timezone(&Tz::UTC) - Duration::seconds(1))
                .before(window.1.with_timezone(&Tz::UTC))
                .all(u16::MAX)
                .dates
                .into_iter()
                .map(|d| d.with_timezone(&Utc))
                .filter(|d| *d < window.1)
                .take(100)
                .collect();
            assert_eq!(starts(origin, origin, rule, window), expected, "{rule}");
        }
    }

    #[test]
    fn an_expansion_far_from_its_start_is_cheap_and_bounded() {
        let year_one = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).single().unwrap();
        let window = (at(1, 0), at(31, 0));
        let mut small = Budget::new(5_000, StdDuration::from_secs(10));
        let found = occurrences(year_one, year_one, "FREQ=SECONDLY", window, 100, &mut small)
            .expect("readable");
        assert!(found.complete, "moved to the window");
        assert_eq!(found.occurrences.len(), 100);
        assert_eq!(found.occurrences[0].0, window.0);
        // A COUNT cannot move: the budget ends it.
        let mut small = Budget::new(5_000, StdDuration::from_secs(10));
        let found = occurrences(
            year_one,
            year_one,
            "FREQ=SECONDLY;COUNT=4000000000",
            window,
            100,
            &mut small,
        )
        .expect("readable");
        assert!(!found.complete);
        assert!(found.occurrences.is_empty());
        assert!(small.is_spent());
    }

    /// Found by the fuzz target: the `rrule` crate walked 100,000 months looking for a
    /// third instance in periods that hold one. Such a rule is left out, not walked: a
    /// budget without time (which stops any walk) still completes it.
    #[test]
    fn a_rule_that_selects_nothing_is_not_walked() {
        let start = Utc
            .with_ymd_and_hms(751, 5, 11, 2, 31, 16)
            .single()
            .unwrap();
        let window = (
            Utc.with_ymd_and_hms(9179, 9, 27, 19, 59, 30)
                .single()
                .unwrap(),
            Utc.with_ymd_and_hms(9179, 10, 27, 19, 59, 30)
                .single()
                .unwrap(),
        );
        let timeless = || Budget::new(1_000, StdDuration::ZERO);
        for rule in [
            "FREQ=MONTHLY;BYSETPOS=3;COUNT=20",
            "FREQ=MONTHLY;BYSETPOS=3",
            "RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
        ] {
            let found = occurrences(start, start, rule, window, 100, &mut timeless()).expect(rule);
            assert!(found.complete, "{rule}");
            assert!(found.occurrences.is_empty(), "{rule}");
            assert_eq!(
                count_before(start, rule, window.0, &mut timeless()),
                Some(0)
            );
        }
        // Beside an RDATE, which is still found.
        let rule = "RRULE:FREQ=MONTHLY;BYSETPOS=3\nRDATE:91791001T000000Z";
        let found = occurrences(start, start, rule, window, 100, &mut budget()).expect(rule);
        assert_eq!(found.occurrences.len(), 1);
        // A rule that selects something is walked, and a budget without time stops it.
        let found = occurrences(start, start, "FREQ=MONTHLY", window, 100, &mut timeless());
        assert!(!found.expect("readable").complete);
    }

    /// A budget's deadline ends it between walks, even when no walk yields an instance.
    #[test]
    fn a_spent_deadline_stops_before_the_next_walk() {
        let mut spent = Budget::new(1_000, StdDuration::ZERO);
        let found = occurrences(
            at(1, 9),
            at(1, 10),
            "FREQ=DAILY",
            (at(1, 0), at(31, 0)),
            100,
            &mut spent,
        )
        .expect("readable");
        assert!(!found.complete);
        assert!(found.occurrences.is_empty());
        assert!(spent.is_spent());
        let mut spent = Budget::new(1_000, StdDuration::ZERO);
        assert_eq!(
            count_before(at(1, 9), "FREQ=DAILY", at(31, 0), &mut spent),
            None
        );
    }

    #[test]
    fn a_rule_that_made_the_rrule_crate_panic_expands_to_nothing() {
        let sliced = "FREQ=WEEKLY;BYDAY=M\u{b1}\u{4e8}\u{b1},FR;INTERVAL=2";
        let window = (at(1, 0), at(31, 0));
        assert!(occurrences(at(1, 9), at(1, 10), sliced, window, 10, &mut budget()).is_none());
        assert_eq!(
            count_before(at(1, 9), sliced, at(31, 0), &mut budget()),
            None
        );
    }
}
