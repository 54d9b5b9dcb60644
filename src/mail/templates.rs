//! The mails Bowline sends: a plain-text and an HTML part, the server's name and the link.

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
}
