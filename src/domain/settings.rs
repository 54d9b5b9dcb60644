//! The settings document: the value a new user starts with.

use serde_json::{Value, json};

/// Settings of a new user (`onboarded: false`).
pub fn defaults() -> Value {
    json!({
        "notificationsOnByDefault": true,
        "defaultCalendarView": "month",
        "weekStartsOn": "monday",
        "timeFormat": "24h",
        "dateFormat": "dmy",
        "theme": "system",
        "onboarded": false,
        "tabBarLabels": true,
        "calendarOrder": [],
        "timezone": "UTC",
        "defaultReminder": { "minutesBefore": 10, "allDay": { "daysBefore": 1, "atMinute": 1080 } },
        "notificationEmails": { "eventChanged": true, "pollDecided": true }
    })
}
