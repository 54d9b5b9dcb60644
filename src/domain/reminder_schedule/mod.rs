//! Which reminders fall due in a time window, and when: the resolver a server-side push
//! dispatcher walks (a port of the rules of the original Node `resolveReminders`).
//!
//! The rule of an event is its owner's override, else the rule of the first of its calendars
//! in the user's `calendarOrder` that has one (calendars missing from the order come after,
//! sorted by id), else the user's default. A rule of `null` (absent) inherits; a rule with
//! both branches `null` ("never") is an answer like any other and silences the event.
//! Cancelled and declined events are silent.
//!
//! A timed occurrence is announced `minutesBefore` minutes before its start. An all-day
//! event is stored as UTC midnight of its date, so its reminder is built from that date:
//! `daysBefore` days earlier, at `atMinute` past midnight on the user's wall clock (a time
//! skipped by a daylight-saving change moves forward by the gap, an ambiguous one is its
//! first instant). Recurring timed events repeat on the user's wall clock, as Bowline's
//! clients show them (09:00 stays 09:00 across a DST change); recurring all-day events
//! repeat in UTC. Occurrence ids are `<eventId>_<startMillis>`, the ids the clients mint,
//! so a push tagged with one replaces the banner a client raised for the same occurrence.
//!
//! The window is the window of *due* times, both bounds included: a reminder due exactly at
//! `from` or exactly at `to` is returned (so a dispatcher whose next window starts at the
//! last `to` may see such a reminder twice; the occurrence id as push tag makes that a
//! replaced banner, not a second one).
//!
//! Only the due time decides. Unlike the original, an occurrence that ended before `from`
//! still counts when its reminder falls in the window (an all-day event's same-day evening
//! reminder west of UTC lies after its stored UTC-midnight end). A caller reading events
//! from its database therefore reads those starting from two days before `from` (all-day)
//! up to `to` plus the longest lead (28 days for timed events, `daysBefore` + 2 days for
//! all-day ones).
//!
//! Expansion uses [`super::recurrence::expansion`] with bounded work: at most
//! [`ScheduleLimits::occurrences_per_event`] occurrences per event, and one
//! [`Budget`] of steps and time shared by all the events of a call. What a cap or the
//! budget cut off is left out and named in [`DueReminders::cut_short`]. The work is CPU
//! only; an async caller runs it off the runtime (a blocking task).

use std::collections::{HashMap, HashSet};
use std::time::Duration as StdDuration;

use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Timelike, Utc,
};
use chrono_tz::Tz;
use serde_json::Value;

use super::ids::{CalendarId, EventId};
use super::recurrence::expansion::{self, Budget};
use super::reminders;

/// An event as the resolver needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReminderEvent {
    /// The event's id (the master id of a series).
    pub id: EventId,
    /// Title, copied into each reminder.
    pub title: String,
    /// Start instant (UTC midnight of the day for all-day events).
    pub start: DateTime<Utc>,
    /// End instant.
    pub end: DateTime<Utc>,
    /// All-day event.
    pub is_all_day: bool,
    /// Cancelled (never reminds).
    pub is_canceled: bool,
    /// The stored recurrence rule (RRULE, or iCalendar lines with EXDATE / RDATE).
    pub recurrence: Option<String>,
    /// Every calendar of the user's that this event appears in.
    pub calendars: Vec<CalendarId>,
}

/// The user's side of the question: their zone and rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ReminderContext {
    /// The user's time zone (`timezone` of their settings): where an all-day reminder lands
    /// on the clock, and the wall clock timed series repeat on.
    pub timezone: Tz,
    /// The user's default rule (`{minutesBefore, allDay}` as stored); an invalid one counts
    /// as [`reminders::default_rule`].
    pub default_rule: Value,
    /// Calendar → the user's rule for it; missing, `null` or invalid inherits.
    pub calendar_rules: HashMap<CalendarId, Value>,
    /// Event → the user's override; missing, `null` or invalid inherits.
    pub event_rules: HashMap<EventId, Value>,
    /// Events the user declined (silent).
    pub declined: HashSet<EventId>,
    /// The user's `calendarOrder`: which calendar's rule wins for an event in several.
    pub calendar_order: Vec<CalendarId>,
}

/// One reminder that falls due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueReminder {
    /// The event (the master id of a series).
    pub event_id: EventId,
    /// `<eventId>_<startMillis>`: the occurrence, as clients name it.
    pub occurrence_id: String,
    /// When the occurrence starts.
    pub occurrence_start: DateTime<Utc>,
    /// When the reminder is due.
    pub due_at: DateTime<Utc>,
    /// The event's title.
    pub title: String,
    /// All-day event.
    pub is_all_day: bool,
}

/// What one call found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DueReminders {
    /// The reminders due in the window, by due time, then occurrence start, then event id.
    pub reminders: Vec<DueReminder>,
    /// Recurring events whose expansion a cap or the budget cut short (their reminders
    /// past the cut are missing), in input order.
    pub cut_short: Vec<EventId>,
    /// Recurring events whose rule cannot be read: treated as single events at their
    /// stored start, as the original did.
    pub unreadable: Vec<EventId>,
}

impl DueReminders {
    /// Whether every event was resolved in full.
    pub fn is_complete(&self) -> bool {
        self.cut_short.is_empty()
    }
}

/// How much work one call may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleLimits {
    /// Most occurrences of one recurring event looked at (those that may fall due in the
    /// window: for an all-day series, those of two days more either side).
    pub occurrences_per_event: usize,
    /// Recurrence instances looked at, in all.
    pub steps: u64,
    /// Time the expansions may take, in all.
    pub time: StdDuration,
}

impl Default for ScheduleLimits {
    /// 1 000 occurrences an event, 200 000 steps, half a second.
    fn default() -> Self {
        Self {
            occurrences_per_event: 1_000,
            steps: 200_000,
            time: StdDuration::from_millis(500),
        }
    }
}

/// How far from a bound of the search window a clock change is looked for: the wall clock
/// within this of a bound may read up to the change's size (at most two hours) beyond it.
const CHANGE_REACH: Duration = Duration::hours(3);
/// Widening of an all-day event's search window each side: its reminder's wall-clock time
/// lies up to a day and a half from its UTC midnight (zones from −12 to +14 hours).
const ALL_DAY_SLACK: Duration = Duration::days(2);

/// A rule read from its canonical JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rule {
    /// Minutes before a timed start; `None` never reminds of timed events.
    minutes_before: Option<i64>,
    /// (days before, minute of the day) for all-day events; `None` never reminds of them.
    all_day: Option<(i64, u32)>,
}

impl Rule {
    /// The rule of a value [`reminders::parse_rule`] accepts (`None` otherwise).
    fn read(value: &Value) -> Option<Self> {
        let canonical = reminders::parse_rule(value)?;
        let all_day = canonical.get("allDay").and_then(|all_day| {
            let days = all_day.get("daysBefore")?.as_i64()?;
            let minute = u32::try_from(all_day.get("atMinute")?.as_u64()?).ok()?;
            Some((days, minute))
        });
        Some(Self {
            minutes_before: canonical.get("minutesBefore").and_then(Value::as_i64),
            all_day,
        })
    }

    /// When an occurrence starting at `start` is announced; `None` for silence.
    fn due_at(self, start: DateTime<Utc>, is_all_day: bool, zone: Tz) -> Option<DateTime<Utc>> {
        if !is_all_day {
            return start.checked_sub_signed(Duration::minutes(self.minutes_before?));
        }
        let (days, minute) = self.all_day?;
        let day = start.checked_sub_signed(Duration::days(days))?.date_naive();
        wall_clock_instant(day.and_hms_opt(minute / 60, minute % 60, 0)?, zone)
    }

    /// The occurrence starts whose reminders can fall due in `[from, to]` lie in the
    /// returned window (both bounds included); `None` when the rule is silent for this kind
    /// of event.
    fn start_window(
        self,
        is_all_day: bool,
        (from, to): (DateTime<Utc>, DateTime<Utc>),
    ) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        if is_all_day {
            let (days, _) = self.all_day?;
            let lead = Duration::days(days);
            Some((
                shift(from, lead - ALL_DAY_SLACK),
                shift(to, lead + ALL_DAY_SLACK),
            ))
        } else {
            let lead = Duration::minutes(self.minutes_before?);
            Some((shift(from, lead), shift(to, lead)))
        }
    }
}

/// The rules in order of precedence for an event: its override, its calendars' rules (in
/// the user's order, then the unordered ones sorted), the default.
fn chain<'a>(
    event_id: EventId,
    calendars: &'a [CalendarId],
    context: &'a ReminderContext,
) -> impl Iterator<Item = &'a Value> {
    let ordered = context
        .calendar_order
        .iter()
        .filter(|id| calendars.contains(id));
    let mut unordered: Vec<&CalendarId> = calendars
        .iter()
        .filter(|id| !context.calendar_order.contains(id))
        .collect();
    unordered.sort();
    context
        .event_rules
        .get(&event_id)
        .into_iter()
        .chain(
            ordered
                .chain(unordered)
                .filter_map(|id| context.calendar_rules.get(id)),
        )
        .chain(std::iter::once(&context.default_rule))
}

/// The rule that applies to an event in `calendars` (canonical JSON): its override, else
/// the first of its calendars in the user's `calendarOrder` with a rule (calendars not in
/// the order after, sorted by id), else the default. Missing, `null` and invalid rules
/// inherit; a "never" rule is an answer.
pub fn resolve_rule(
    event_id: EventId,
    calendars: &[CalendarId],
    context: &ReminderContext,
) -> Value {
    chain(event_id, calendars, context)
        .find_map(reminders::parse_rule)
        .unwrap_or_else(reminders::default_rule)
}

/// When an occurrence starting at `start` is announced under `rule` in `zone`, or `None`
/// for silence (a rule without the branch for this kind of event, or an invalid rule).
pub fn reminder_due_at(
    start: DateTime<Utc>,
    is_all_day: bool,
    rule: &Value,
    zone: Tz,
) -> Option<DateTime<Utc>> {
    Rule::read(rule)?.due_at(start, is_all_day, zone)
}

/// `<eventId>_<startMillis>`: how clients name an occurrence (a push's tag).
pub fn occurrence_id(event_id: EventId, start: DateTime<Utc>) -> String {
    format!("{event_id}_{}", start.timestamp_millis())
}

/// Every reminder due in `[from, to]` (both included), with [`ScheduleLimits::default`].
pub fn due_reminders(
    events: &[ReminderEvent],
    context: &ReminderContext,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> DueReminders {
    due_reminders_within(events, context, from, to, &ScheduleLimits::default())
}

/// Every reminder due in `[from, to]` (both included), one per occurrence, doing at most
/// what `limits` allow. An event listed twice is resolved once, from its first entry.
pub fn due_reminders_within(
    events: &[ReminderEvent],
    context: &ReminderContext,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limits: &ScheduleLimits,
) -> DueReminders {
    let mut found = DueReminders::default();
    if to < from {
        return found;
    }
    let mut budget = Budget::new(limits.steps, limits.time);
    let mut seen = HashSet::new();
    for event in events {
        if !seen.insert(event.id) || event.is_canceled || context.declined.contains(&event.id) {
            continue;
        }
        let rule = Rule::read(&resolve_rule(event.id, &event.calendars, context));
        let Some(rule) = rule else { continue };
        let Some(window) = rule.start_window(event.is_all_day, (from, to)) else {
            continue;
        };
        let recurrence = event.recurrence.as_deref().map(str::trim);
        let starts = match recurrence.filter(|text| !text.is_empty()) {
            None => vec![event.start],
            Some(text) => {
                match starts_in(event, text, context.timezone, window, limits, &mut budget) {
                    Some((starts, complete)) => {
                        if !complete {
                            found.cut_short.push(event.id);
                        }
                        starts
                    }
                    None => {
                        found.unreadable.push(event.id);
                        vec![event.start]
                    }
                }
            }
        };
        for start in starts {
            let Some(due_at) = rule.due_at(start, event.is_all_day, context.timezone) else {
                continue;
            };
            if due_at < from || due_at > to {
                continue;
            }
            found.reminders.push(DueReminder {
                event_id: event.id,
                occurrence_id: occurrence_id(event.id, start),
                occurrence_start: start,
                due_at,
                title: event.title.clone(),
                is_all_day: event.is_all_day,
            });
        }
    }
    found.reminders.sort_by(|a, b| {
        (a.due_at, a.occurrence_start, a.event_id).cmp(&(b.due_at, b.occurrence_start, b.event_id))
    });
    found
}

/// Starts of the occurrences of `event` (recurring by `recurrence`) from `window.0` to
/// `window.1` (and, for a timed series near a clock change, those whose wall clock reads
/// like it), and whether nothing was cut off; `None` when the rule cannot be read.
fn starts_in(
    event: &ReminderEvent,
    recurrence: &str,
    zone: Tz,
    (earliest, latest): (DateTime<Utc>, DateTime<Utc>),
    limits: &ScheduleLimits,
    budget: &mut Budget,
) -> Option<(Vec<DateTime<Utc>>, bool)> {
    if budget.is_spent() || limits.occurrences_per_event == 0 {
        return Some((Vec::new(), false));
    }
    let duration = (event.end - event.start).max(Duration::zero());
    let limit = limits.occurrences_per_event.saturating_add(1);
    let millisecond = Duration::milliseconds(1);
    let mut expanded = if event.is_all_day {
        // All-day dates are the same everywhere: they repeat in the UTC frame they are
        // stored in.
        let window = (earliest, shift(latest, millisecond));
        expansion::occurrences(
            event.start,
            shift(event.start, duration),
            recurrence,
            window,
            limit,
            budget,
        )?
    } else {
        // Timed series repeat on the user's wall clock: expanded in a frame where that
        // clock reads as UTC, then each occurrence is read back as an instant.
        let anchor = to_floating(event.start, zone);
        let low = offset_of(earliest, zone).min(offset_of(shift(earliest, CHANGE_REACH), zone));
        let high = offset_of(latest, zone).max(offset_of(shift(latest, -CHANGE_REACH), zone));
        let window = (shift(earliest, low), shift(latest, high + millisecond));
        let mut expanded = expansion::occurrences(
            anchor,
            shift(anchor, duration),
            &floating_recurrence(recurrence, zone),
            window,
            limit,
            budget,
        )?;
        for (start, _) in &mut expanded.occurrences {
            *start = wall_clock_instant(start.naive_utc(), zone).unwrap_or(*start);
        }
        expanded
    };
    let mut complete = expanded.complete;
    if expanded.occurrences.len() > limits.occurrences_per_event {
        expanded.occurrences.truncate(limits.occurrences_per_event);
        complete = false;
    }
    let starts = expanded.occurrences.into_iter().map(|(start, _)| start);
    Some((starts.collect(), complete))
}

/// `at` moved by `delta`, held at the ends of the representable range.
fn shift(at: DateTime<Utc>, delta: Duration) -> DateTime<Utc> {
    at.checked_add_signed(delta)
        .unwrap_or(if delta < Duration::zero() {
            DateTime::<Utc>::MIN_UTC
        } else {
            DateTime::<Utc>::MAX_UTC
        })
}

/// The offset of `zone` from UTC at `at`.
fn offset_of(at: DateTime<Utc>, zone: Tz) -> Duration {
    let seconds = zone
        .offset_from_utc_datetime(&at.naive_utc())
        .fix()
        .local_minus_utc();
    Duration::seconds(seconds.into())
}

/// The wall clock of `zone` at `at`, read as UTC.
fn to_floating(at: DateTime<Utc>, zone: Tz) -> DateTime<Utc> {
    Utc.from_utc_datetime(&at.with_timezone(&zone).naive_local())
}

/// The instant `zone`'s wall clock shows `local`: the first of two when the clock went
/// back; when a daylight-saving change skipped it, `local` read with the offset from before
/// the change (02:30 on a spring-forward day is 03:30), as JavaScript's `Date` does.
fn wall_clock_instant(local: NaiveDateTime, zone: Tz) -> Option<DateTime<Utc>> {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(at) | LocalResult::Ambiguous(at, _) => Some(at.with_timezone(&Utc)),
        LocalResult::None => {
            let day_before = local.checked_sub_signed(Duration::days(1))?;
            let offset = zone.offset_from_utc_datetime(&day_before).fix();
            let utc =
                local.checked_sub_signed(Duration::seconds(offset.local_minus_utc().into()))?;
            Some(Utc.from_utc_datetime(&utc))
        }
    }
}

/// iCalendar UTC date-time format.
const UTC_STAMP: &str = "%Y%m%dT%H%M%SZ";

/// The stored rule with its instants moved into the wall-clock frame of `zone`: `UNTIL`,
/// and RDATE / EXDATE values in UTC or with a TZID (which is dropped), so that they bound
/// and exclude the occurrences they name. Other values are left as written.
fn floating_recurrence(recurrence: &str, zone: Tz) -> String {
    let lines: Vec<String> = recurrence
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| floating_line(line, zone))
        .collect();
    lines.join("\n")
}

/// One line of [`floating_recurrence`].
fn floating_line(line: &str, zone: Tz) -> String {
    let upper = line.to_ascii_uppercase();
    if upper.starts_with("RRULE") || upper.starts_with("FREQ=") {
        let parts: Vec<String> = line
            .split(';')
            .map(|part| match part.split_once('=') {
                Some((key, stamp)) if key.eq_ignore_ascii_case("UNTIL") => {
                    floating_stamp(stamp, zone)
                        .map_or_else(|| part.to_owned(), |s| format!("{key}={s}"))
                }
                _ => part.to_owned(),
            })
            .collect();
        return parts.join(";");
    }
    if !(upper.starts_with("RDATE") || upper.starts_with("EXDATE")) {
        return line.to_owned();
    }
    let Some((head, values)) = line.split_once(':') else {
        return line.to_owned();
    };
    let mut params = head.split(';');
    let name = params.next().unwrap_or_default();
    let (tzids, others): (Vec<&str>, Vec<&str>) = params.partition(|param| {
        param
            .split_once('=')
            .is_some_and(|(key, _)| key.trim().eq_ignore_ascii_case("TZID"))
    });
    let Some(tzid) = tzids.first() else {
        let values: Vec<String> = values
            .split(',')
            .map(|value| floating_stamp(value.trim(), zone).unwrap_or_else(|| value.to_owned()))
            .collect();
        return format!("{head}:{}", values.join(","));
    };
    let own_zone = tzid
        .split_once('=')
        .and_then(|(_, name)| name.trim().trim_matches('"').parse::<Tz>().ok());
    let Some(own_zone) = own_zone else {
        return line.to_owned();
    };
    let converted: Option<Vec<String>> = values
        .split(',')
        .map(|value| {
            let local = NaiveDateTime::parse_from_str(value.trim(), "%Y%m%dT%H%M%S").ok()?;
            let at = wall_clock_instant(local, own_zone)?;
            Some(to_floating(at, zone).format(UTC_STAMP).to_string())
        })
        .collect();
    let Some(converted) = converted else {
        return line.to_owned();
    };
    let head: Vec<&str> = std::iter::once(name).chain(others).collect();
    format!("{}:{}", head.join(";"), converted.join(","))
}

/// A UTC date-time stamp moved into the wall-clock frame of `zone`; `None` for any other
/// value.
fn floating_stamp(stamp: &str, zone: Tz) -> Option<String> {
    let at = NaiveDateTime::parse_from_str(stamp, UTC_STAMP).ok()?;
    Some(
        to_floating(Utc.from_utc_datetime(&at), zone)
            .format(UTC_STAMP)
            .to_string(),
    )
}

/// Abbreviated month names of British English (`Sept`, as `Intl` writes it).
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sept", "Oct", "Nov", "Dec",
];

/// "When it is", the line under a reminder's title: like the original's `formatWhen`
/// (`Intl.DateTimeFormat("en-GB", {dateStyle: "medium", timeStyle: "short"})`), a timed
/// start on the user's clock (`20 Aug 2026, 09:00`), an all-day date in UTC, where it is
/// stored, without a time (`20 Aug 2026`). Written here rather than by `Intl`, for British
/// English only (best effort: the years 1 to 9999, 24-hour clock).
pub fn reminder_body(start: DateTime<Utc>, is_all_day: bool, zone: Tz) -> String {
    let date = |day: u32, month0: u32, year: i32| {
        let month = MONTHS.get(month0 as usize).copied().unwrap_or_default();
        format!("{day} {month} {year}")
    };
    if is_all_day {
        return date(start.day(), start.month0(), start.year());
    }
    let local = start.with_timezone(&zone);
    format!(
        "{}, {:02}:{:02}",
        date(local.day(), local.month0(), local.year()),
        local.hour(),
        local.minute()
    )
}

#[cfg(test)]
mod tests;
