//! The iCalendar reader of imports: any bytes are read or refused, never a panic, within the
//! fuzzer's time limit per input, and every event it accepts follows the rules every stored
//! event follows.

#![no_main]

use bowline::ical::{ImportOptions, parse_calendar};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = ImportOptions {
        user_zone: chrono_tz::Tz::Europe__Prague,
    };
    if let Ok(parsed) = parse_calendar(data, &options) {
        for event in &parsed.events {
            if let Err(problem) = event.content().check() {
                panic!(
                    "an imported event breaks the event rules: {}",
                    problem.message
                );
            }
        }
    }
});
