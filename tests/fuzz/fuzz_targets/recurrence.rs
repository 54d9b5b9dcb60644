//! Recurrence rules: any rule text, start, length and window is checked and expanded within
//! its budget (a step count and 250 ms), never a panic, and what an expansion returns is in
//! order, in the window and within its limit. Input: 12 bytes choosing the start (years 1 to
//! 9999), the event's length and the window, then the rule's text.

#![no_main]

use std::time::{Duration, Instant};

use bowline::domain::recurrence::{self, expansion, expansion::Budget};
use chrono::{DateTime, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;

/// An instant from `bits`, between the years 1 and 9999.
fn instant(bits: u32, scale: i64) -> DateTime<Utc> {
    let first = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap();
    let last = Utc.with_ymd_and_hms(9999, 12, 31, 0, 0, 0).unwrap();
    let span = (last - first).num_seconds();
    first + chrono::Duration::seconds((i64::from(bits) * scale).rem_euclid(span))
}

fuzz_target!(|data: &[u8]| {
    let Some((head, rule)) = data.split_first_chunk::<12>() else {
        return;
    };
    let word = |n: usize| u32::from_le_bytes([head[n], head[n + 1], head[n + 2], head[n + 3]]);
    let start = instant(word(0), 73_613);
    let end = start + chrono::Duration::seconds(i64::from(word(4) % (400 * 86_400)));
    let from = instant(word(8), 73_613);
    let to = from + chrono::Duration::days(30);
    let rule = String::from_utf8_lossy(rule);

    let started = Instant::now();
    let _ = recurrence::check(&rule, start, end);
    let mut budget = Budget::new(200_000, Duration::from_millis(250));
    if let Some(found) = expansion::occurrences(start, end, &rule, (from, to), 100, &mut budget) {
        assert!(found.occurrences.len() <= 100);
        assert!(
            found
                .occurrences
                .windows(2)
                .all(|pair| pair[0].0 < pair[1].0)
        );
        for (occurrence_start, occurrence_end) in &found.occurrences {
            assert!(*occurrence_start < to, "starts after the window");
            assert!(*occurrence_end >= from, "ends before the window");
        }
    }
    let mut budget = Budget::new(200_000, Duration::from_millis(250));
    let _ = expansion::count_before(start, &rule, from, &mut budget);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
});
