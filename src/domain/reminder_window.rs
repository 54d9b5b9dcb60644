//! The window of due times a pass of the reminder dispatcher sends: from the durable
//! cursor (everything due up to it was dispatched) to now or the write horizon, reaching
//! back no further than the catch-up. A pure rule; the pass that runs it is
//! [`crate::push::dispatch`].

use std::time::Duration;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// The precision of due times and of the cursor: both databases keep timestamps to the
/// microsecond, so a window starting one microsecond after the cursor leaves no due time
/// between it and the window before.
pub const PRECISION: TimeDelta = TimeDelta::microseconds(1);

/// The due times one pass dispatches (both bounds included), and the older ones it skips.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The first due time sent.
    pub from: DateTime<Utc>,
    /// The last due time sent (now, or the write horizon if that is earlier).
    pub to: DateTime<Utc>,
    /// Due times after this and before `from` are skipped (too old to be worth sending).
    pub skipped_after: Option<DateTime<Utc>>,
}

/// The window after `cursor` (everything due up to it was dispatched; `None`: nothing
/// ever was) up to `now`, or to `settled` (the write horizon: every write that began before
/// it has committed) if that is earlier, to the microsecond (so the cursor stored is the
/// window's end exactly), reaching back `max_catchup` at most. A first pass,
/// or a cursor after `now` (a clock that went back), looks back `max_catchup` and skips
/// nothing. `None` when the cursor is at or after `settled` but not after `now`: a write
/// that began before the cursor is still in flight, and nothing is dispatched until it ends.
pub fn dispatch_window(
    cursor: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    settled: DateTime<Utc>,
    max_catchup: Duration,
) -> Option<Window> {
    let reach = TimeDelta::from_std(max_catchup).unwrap_or(TimeDelta::MAX);
    let to = now.min(settled);
    let to = to.duration_trunc(PRECISION).unwrap_or(to);
    let earliest = to
        .checked_sub_signed(reach)
        .unwrap_or(DateTime::<Utc>::MIN_UTC);
    let whole_reach = Window {
        from: earliest,
        to,
        skipped_after: None,
    };
    let Some(cursor) = cursor.filter(|cursor| *cursor <= now) else {
        return Some(whole_reach);
    };
    if cursor >= to {
        return None;
    }
    let next = cursor + PRECISION;
    Some(if next < earliest {
        Window {
            skipped_after: Some(cursor),
            ..whole_reach
        }
    } else {
        Window {
            from: next,
            ..whole_reach
        }
    })
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap_or_default()
    }

    #[test]
    fn the_window_runs_from_the_cursor_and_never_reaches_back_further_than_the_catch_up() {
        let now = at("2026-11-28T12:00:00Z");
        let fifteen = Duration::from_secs(15 * 60);
        let window = |cursor: Option<&str>| {
            dispatch_window(cursor.map(at), now, now, fifteen).expect("a window")
        };
        let first = window(None);
        assert_eq!(first.from, at("2026-11-28T11:45:00Z"));
        assert_eq!(first.skipped_after, None);
        let recent = window(Some("2026-11-28T11:59:30Z"));
        assert_eq!(recent.from, at("2026-11-28T11:59:30.000001Z"));
        assert_eq!(recent.to, now);
        let outage = window(Some("2026-11-28T09:00:00Z"));
        assert_eq!(outage.from, at("2026-11-28T11:45:00Z"));
        assert_eq!(outage.skipped_after, Some(at("2026-11-28T09:00:00Z")));
        let future = window(Some("2026-11-28T13:00:00Z"));
        assert_eq!(future.from, at("2026-11-28T11:45:00Z"));
        assert_eq!(future.skipped_after, None);
    }

    #[test]
    fn the_window_ends_where_writes_in_flight_began_and_waits_for_one_older_than_the_cursor() {
        let now = at("2026-11-28T12:00:00Z");
        let fifteen = Duration::from_secs(15 * 60);
        let settled = at("2026-11-28T11:59:58Z");
        let cursor = Some(at("2026-11-28T11:59:50Z"));
        let window = dispatch_window(cursor, now, settled, fifteen).expect("a window");
        assert_eq!(window.from, at("2026-11-28T11:59:50.000001Z"));
        assert_eq!(window.to, settled, "not past a write still in flight");
        let behind = Some(at("2026-11-28T11:59:59Z"));
        assert_eq!(dispatch_window(behind, now, settled, fifteen), None);
        assert_eq!(dispatch_window(Some(settled), now, settled, fifteen), None);
        let first = dispatch_window(None, now, settled, fifteen).expect("a window");
        assert_eq!(first.from, at("2026-11-28T11:44:58Z"));
        assert_eq!(first.to, settled);
    }

    #[test]
    fn consecutive_windows_leave_no_due_time_between_them() {
        let fifteen = Duration::from_secs(15 * 60);
        // A pass at a moment between two milliseconds (clocks give nanoseconds).
        let first_now = at("2026-11-28T12:00:00.000500300Z");
        let first = dispatch_window(None, first_now, first_now, fifteen).expect("a window");
        assert_eq!(
            first.to,
            at("2026-11-28T12:00:00.000500Z"),
            "kept to the microsecond"
        );
        let second_now = at("2026-11-28T12:00:00.100Z");
        let second =
            dispatch_window(Some(first.to), second_now, second_now, fifteen).expect("a window");
        assert_eq!(second.from, first.to + TimeDelta::microseconds(1));
        // A reminder due on the next millisecond falls in the second window.
        let due = at("2026-11-28T12:00:00.001Z");
        assert!(first.to < due && second.from <= due && due <= second.to);
    }
}
