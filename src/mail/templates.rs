//! The mails Bowline sends: a plain-text and an HTML part, the server's name and the link.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use entities::pending_notifications;

use super::Mail;

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The server's name in mails: its host.
pub fn server_name(base_url: &str) -> String {
    url::Url::parse(base_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_else(|| base_url.to_owned())
}

fn with_link(
    kind: &'static str,
    to: &str,
    subject: String,
    intro: &str,
    action: &str,
    link: &str,
    outro: &str,
) -> Mail {
    let text = format!("{intro}\n\n{action}:\n{link}\n\n{outro}\n");
    let html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;line-height:1.5;color:#222\">\
         <p>{}</p><p><a href=\"{}\" style=\"display:inline-block;padding:10px 16px;background:#C8553D;\
         color:#fff;text-decoration:none;border-radius:6px\">{}</a></p>\
         <p style=\"font-size:13px;color:#555\">Or open this link: {}</p><p style=\"font-size:13px;color:#555\">{}</p>\
         </body></html>",
        escape(intro),
        escape(link),
        escape(action),
        escape(link),
        escape(outro)
    );
    Mail {
        to: to.to_owned(),
        subject,
        text,
        html,
        kind,
    }
}

/// The sign-in code mail: the code in the subject, so a phone's notification shows it.
pub fn sign_in_code(server: &str, to: &str, code: &str) -> Mail {
    let intro = format!("Your code to sign in on {server}:");
    let outro = "It works once and for ten minutes. If you did not ask for it, ignore this mail.";
    let text = format!("{intro}\n\n{code}\n\n{outro}\n");
    let html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;line-height:1.5;color:#222\">\
         <p>{}</p><p style=\"font-size:28px;font-weight:600;letter-spacing:4px\">{}</p>\
         <p style=\"font-size:13px;color:#555\">{}</p></body></html>",
        escape(&intro),
        escape(code),
        escape(outro)
    );
    Mail {
        to: to.to_owned(),
        subject: format!("{code} is your {server} code"),
        text,
        html,
        kind: "sign_in_code",
    }
}

/// The password-reset mail.
pub fn password_reset(server: &str, to: &str, link: &str) -> Mail {
    with_link(
        "password_reset",
        to,
        format!("Reset your password on {server}"),
        &format!("Someone asked to reset the password of your account on {server}."),
        "Choose a new password",
        link,
        "The link works once and for one hour. If you did not ask for this, ignore this mail.",
    )
}

/// The email-verification mail.
pub fn email_verification(server: &str, to: &str, link: &str) -> Mail {
    with_link(
        "email_verification",
        to,
        format!("Verify your email address on {server}"),
        &format!("Please confirm that this address belongs to your account on {server}."),
        "Verify my address",
        link,
        "The link works for one hour. If you did not ask for this, ignore this mail.",
    )
}

/// The account-deletion confirmation mail.
pub fn account_deletion(server: &str, to: &str, link: &str) -> Mail {
    with_link(
        "account_deletion",
        to,
        format!("Confirm the deletion of your account on {server}"),
        &format!(
            "Someone asked to delete your account on {server}, with all its calendars and events."
        ),
        "Delete my account",
        link,
        "Nothing is deleted until you confirm. The link works once and for one hour. If you did not ask for this, ignore this mail.",
    )
}

/// A calendar invitation sent by a member (not batched).
pub fn calendar_invitation(
    server: &str,
    to: &str,
    sender: &str,
    calendar: &str,
    link: &str,
) -> Mail {
    let sender = if sender.trim().is_empty() {
        "Someone"
    } else {
        sender.trim()
    };
    with_link(
        "calendar_invitation",
        to,
        format!("{sender} shared a calendar with you"),
        &format!("{sender} invited you to the calendar \"{calendar}\" on {server}."),
        "Open the invitation",
        link,
        "Open the link on your phone to join in the app.",
    )
}

/// One change in a notification batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeItem {
    /// `moved` or `cancelled`.
    pub kind: String,
    /// Event title.
    pub title: String,
    /// New start.
    pub start: DateTime<Utc>,
    /// All-day event (dates shown in UTC, so the day never shifts).
    pub is_all_day: bool,
}

impl ChangeItem {
    /// The change a pending row describes.
    pub fn from_row(row: &pending_notifications::Model) -> Option<Self> {
        let start = row
            .payload
            .get("start")
            .and_then(|v| v.as_str())
            .and_then(crate::domain::time::parse_timestamp)?;
        Some(Self {
            kind: row.kind.clone(),
            title: row
                .payload
                .get("title")
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned(),
            start,
            is_all_day: row
                .payload
                .get("isAllDay")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        })
    }

    fn line(&self, zone: Tz) -> String {
        match self.kind.as_str() {
            "cancelled" => format!("\u{201c}{}\u{201d} was cancelled.", self.title),
            _ => {
                let when = if self.is_all_day {
                    self.start.format("%A %-d %B %Y").to_string()
                } else {
                    self.start
                        .with_timezone(&zone)
                        .format("%A %-d %B %Y, %H:%M")
                        .to_string()
                };
                format!("\u{201c}{}\u{201d} moved to {when}.", self.title)
            }
        }
    }
}

/// One mail with every change of a batch, times on the reader's clock.
pub fn event_changes(server: &str, to: &str, items: &[ChangeItem], zone: Tz) -> Mail {
    let subject = match items {
        [only] if only.kind == "cancelled" => "An event was cancelled".to_owned(),
        [_] => "An event moved".to_owned(),
        many => format!("{} events changed", many.len()),
    };
    let lines: Vec<String> = items.iter().map(|item| item.line(zone)).collect();
    let text = format!(
        "Changes on {server}:\n\n{}\n\nYou can turn these mails off in the app's settings.\n",
        lines.join("\n")
    );
    let html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;line-height:1.5;color:#222\">\
         <p>Changes on {}:</p><ul>{}</ul><p style=\"font-size:13px;color:#555\">You can turn these mails off in the app's settings.</p>\
         </body></html>",
        escape(server),
        lines
            .iter()
            .map(|line| format!("<li>{}</li>", escape(line)))
            .collect::<String>()
    );
    Mail {
        to: to.to_owned(),
        subject,
        text,
        html,
        kind: "event_changes",
    }
}

/// The mail telling a participant of a scheduling poll which day was picked (not batched:
/// a poll is decided once). `when` is the day as the mail names it, `link` the poll's
/// public page, which works without an account.
pub fn poll_decided(
    server: &str,
    to: &str,
    name: &str,
    title: &str,
    when: &str,
    link: &str,
) -> Mail {
    let name = if name.trim().is_empty() {
        "there"
    } else {
        name.trim()
    };
    with_link(
        "poll_decided",
        to,
        format!("{title} has a time"),
        &format!("Hi {name}, the answers to \"{title}\" are in: {when}."),
        "See the poll",
        link,
        &format!("You are getting this because you answered this poll on {server}."),
    )
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn links_are_escaped_in_html_and_plain_in_text() {
        let mail = password_reset("cal.example", "a@b.example", "https://x/r?token=a&b=<c>");
        assert!(mail.text.contains("https://x/r?token=a&b=<c>"));
        assert!(mail.html.contains("https://x/r?token=a&amp;b=&lt;c&gt;"));
        assert_eq!(server_name("https://cal.example.com"), "cal.example.com");
    }

    #[test]
    fn change_mails_speak_the_reader_s_time() {
        let start = chrono::TimeZone::with_ymd_and_hms(&Utc, 2026, 8, 20, 9, 0, 0)
            .single()
            .expect("t");
        let moved = ChangeItem {
            kind: "moved".into(),
            title: "Standup".into(),
            start,
            is_all_day: false,
        };
        let mail = event_changes(
            "cal.example",
            "a@b.example",
            std::slice::from_ref(&moved),
            chrono_tz::Europe::Prague,
        );
        assert_eq!(mail.subject, "An event moved");
        assert!(
            mail.text.contains("Thursday 20 August 2026, 11:00"),
            "{}",
            mail.text
        );
        let all_day = ChangeItem {
            is_all_day: true,
            ..moved.clone()
        };
        let mail = event_changes(
            "cal.example",
            "a@b.example",
            &[all_day],
            chrono_tz::Pacific::Auckland,
        );
        assert!(
            mail.text.contains("Thursday 20 August 2026."),
            "{}",
            mail.text
        );
        let cancelled = ChangeItem {
            kind: "cancelled".into(),
            ..moved.clone()
        };
        let mail = event_changes(
            "cal.example",
            "a@b.example",
            &[moved, cancelled],
            chrono_tz::UTC,
        );
        assert_eq!(mail.subject, "2 events changed");
        assert!(mail.text.contains("was cancelled"));
    }
}
