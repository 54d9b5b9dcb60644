//! In-memory, per-process rate limits (not a distributed boundary, as the spec says).
//!
//! Two window kinds: the spec's fixed window (starts at the first hit of a key; the
//! `max + 1`-th hit inside it is refused) and better-auth's, whose window restarts at every
//! allowed request. A refused request is not counted. Keys are `(rule, key)`: the key is the
//! client (an address or an account), and for better-auth's limits `<ip>|<path>`, as
//! better-auth keys them. Ended windows are forgotten by [`RateLimiter::prune`], which the
//! scheduler's `rate_limits` task runs every minute (and `check` itself if the map grows past
//! 100,000 keys).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::AppError;

/// One limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Name, part of the key.
    pub name: &'static str,
    /// Allowed hits per window.
    pub max: u32,
    /// Window length.
    pub window: Duration,
    /// `true`: better-auth's window, moving with every allowed hit.
    pub sliding: bool,
}

const fn minutes(n: u64) -> Duration {
    Duration::from_secs(n * 60)
}

/// `GET /api/v1/calendars/tokens/:token`: 30 per 15 minutes per address.
pub const INVITE_PREVIEW: Rule = Rule {
    name: "invite_preview",
    max: 30,
    window: minutes(15),
    sliding: false,
};
/// `POST /api/v1/federation/accept`: 10 per 15 minutes per address.
pub const FEDERATION_ACCEPT: Rule = Rule {
    name: "federation_accept",
    max: 10,
    window: minutes(15),
    sliding: false,
};
/// `GET /api/v1/federation/preview`: 30 per 15 minutes per address.
pub const FEDERATION_PREVIEW: Rule = Rule {
    name: "federation_preview",
    max: 30,
    window: minutes(15),
    sliding: false,
};
/// `POST /api/v1/federation/connect`: 10 per 15 minutes per address.
pub const FEDERATION_CONNECT: Rule = Rule {
    name: "federation_connect",
    max: 10,
    window: minutes(15),
    sliding: false,
};
/// `POST /api/v1/federation/token/rotate`: 30 per 15 minutes per address (a token is
/// rotated once in its last 14 days; more is a client looping or guessing).
pub const FEDERATION_ROTATE: Rule = Rule {
    name: "federation_rotate",
    max: 30,
    window: minutes(15),
    sliding: false,
};
/// `ANY /api/v1/federation/s/…` (the gateway): 300 per minute per address.
pub const FEDERATION_GATEWAY: Rule = Rule {
    name: "federation_gateway",
    max: 300,
    window: minutes(1),
    sliding: false,
};
/// `POST /api/v1/users/delete/confirm`: 10 per 15 minutes per address.
pub const DELETE_CONFIRM: Rule = Rule {
    name: "delete_confirm",
    max: 10,
    window: minutes(15),
    sliding: false,
};
/// `POST /api/v1/calendars/invites/:id/send`: 20 per hour per account.
pub const INVITE_SEND: Rule = Rule {
    name: "invite_send",
    max: 20,
    window: minutes(60),
    sliding: false,
};
/// `POST /api/v1/scheduling/polls`: 30 new polls per 15 minutes per address (signed in or
/// not).
pub const POLL_CREATE: Rule = Rule {
    name: "poll_create",
    max: 30,
    window: minutes(15),
    sliding: false,
};
/// `GET /api/v1/public/polls/:token`: 60 per 15 minutes per address (the token space is
/// not walked).
pub const POLL_READ: Rule = Rule {
    name: "poll_read",
    max: 60,
    window: minutes(15),
    sliding: false,
};
/// `PUT /api/v1/public/polls/:token/votes`: 60 per 15 minutes per address, counted apart
/// from the reads.
pub const POLL_VOTE: Rule = Rule {
    name: "poll_vote",
    max: 60,
    window: minutes(15),
    sliding: false,
};
/// `POST /api/auth/email-otp/send-verification-otp`: 5 codes per 15 minutes per email
/// address (beside better-auth's limit per client address), so that nobody fills a mailbox.
pub const SIGN_IN_CODES_PER_EMAIL: Rule = Rule {
    name: "sign_in_codes_per_email",
    max: 5,
    window: minutes(15),
    sliding: false,
};
/// `GET /api/v1/public/events/:token`: 60 per 15 minutes per address.
pub const PUBLIC_EVENT_READ: Rule = Rule {
    name: "public_event_read",
    max: 60,
    window: minutes(15),
    sliding: false,
};
/// `GET /api/v1/public/events/:token/rsvp`: 60 per 15 minutes per address.
pub const PUBLIC_EVENT_ANSWERS: Rule = Rule {
    name: "public_event_answers",
    max: 60,
    window: minutes(15),
    sliding: false,
};
/// `PUT /api/v1/public/events/:token/rsvp`: 30 per 15 minutes per address.
pub const PUBLIC_EVENT_ANSWER: Rule = Rule {
    name: "public_event_answer",
    max: 30,
    window: minutes(15),
    sliding: false,
};
/// better-auth: sign-in, sign-up, change-password, change-email: 3 per 10 s.
pub const AUTH_CREDENTIALS: Rule = Rule {
    name: "auth_credentials",
    max: 3,
    window: Duration::from_secs(10),
    sliding: true,
};
/// better-auth: password reset, verification mails and emailed codes: 3 per 60 s.
pub const AUTH_MAIL: Rule = Rule {
    name: "auth_mail",
    max: 3,
    window: Duration::from_secs(60),
    sliding: true,
};
/// better-auth: any other auth path: 100 per 10 s.
pub const AUTH_DEFAULT: Rule = Rule {
    name: "auth_default",
    max: 100,
    window: Duration::from_secs(10),
    sliding: true,
};

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    count: u32,
}

/// The limiter of one server.
#[derive(Debug, Default)]
pub struct RateLimiter {
    windows: Mutex<HashMap<(&'static str, String), Window>>,
}

impl RateLimiter {
    /// Counts a hit of `key` under `rule`: `Ok` if allowed, else the seconds to wait.
    pub fn check(&self, rule: Rule, key: &str, now: Instant) -> Result<(), u64> {
        let mut windows = self.windows.lock();
        if windows.len() > 100_000 {
            windows.retain(|(name, _), w| {
                now.duration_since(w.start) < rule_window(name).unwrap_or(Duration::ZERO)
            });
        }
        let window = windows
            .entry((rule.name, key.to_owned()))
            .or_insert(Window {
                start: now,
                count: 0,
            });
        if now.duration_since(window.start) >= rule.window {
            *window = Window {
                start: now,
                count: 0,
            };
        }
        if window.count >= rule.max {
            let left = rule.window.saturating_sub(now.duration_since(window.start));
            return Err(left.as_secs().max(1));
        }
        window.count += 1;
        if rule.sliding {
            window.start = now;
        }
        Ok(())
    }

    /// [`Self::check`] now, as the answer a client gets: 429 with the seconds to wait.
    pub fn admit(&self, rule: Rule, key: &str) -> Result<(), AppError> {
        self.check(rule, key, Instant::now())
            .map_err(|retry_after_secs| AppError::TooManyRequests { retry_after_secs })
    }

    /// Forgets windows that have ended (the scheduler's `rate_limits` task runs it).
    pub fn prune(&self, now: Instant) {
        self.windows.lock().retain(|(name, _), w| {
            now.duration_since(w.start) < rule_window(name).unwrap_or(Duration::ZERO)
        });
    }

    /// How many keys have an open window (what [`Self::prune`] keeps).
    pub fn tracked(&self) -> usize {
        self.windows.lock().len()
    }
}

fn rule_window(name: &str) -> Option<Duration> {
    [
        INVITE_PREVIEW,
        FEDERATION_ACCEPT,
        FEDERATION_PREVIEW,
        FEDERATION_CONNECT,
        FEDERATION_ROTATE,
        FEDERATION_GATEWAY,
        DELETE_CONFIRM,
        INVITE_SEND,
        POLL_CREATE,
        POLL_READ,
        POLL_VOTE,
        SIGN_IN_CODES_PER_EMAIL,
        PUBLIC_EVENT_READ,
        PUBLIC_EVENT_ANSWERS,
        PUBLIC_EVENT_ANSWER,
        AUTH_CREDENTIALS,
        AUTH_MAIL,
        AUTH_DEFAULT,
    ]
    .iter()
    .find(|rule| rule.name == name)
    .map(|rule| rule.window)
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    const RULE: Rule = Rule {
        name: "t",
        max: 2,
        window: Duration::from_secs(10),
        sliding: false,
    };

    #[test]
    fn fixed_window_refuses_the_extra_hit_and_reopens() {
        let limiter = RateLimiter::default();
        let start = Instant::now();
        assert!(limiter.check(RULE, "ip", start).is_ok());
        assert!(
            limiter
                .check(RULE, "ip", start + Duration::from_secs(1))
                .is_ok()
        );
        assert_eq!(
            limiter.check(RULE, "ip", start + Duration::from_secs(2)),
            Err(8)
        );
        assert!(limiter.check(RULE, "other", start).is_ok());
        assert!(
            limiter
                .check(RULE, "ip", start + Duration::from_secs(10))
                .is_ok()
        );
    }

    #[test]
    fn sliding_window_moves_with_allowed_hits() {
        let rule = Rule {
            sliding: true,
            ..RULE
        };
        let limiter = RateLimiter::default();
        let start = Instant::now();
        assert!(limiter.check(rule, "ip", start).is_ok());
        assert!(
            limiter
                .check(rule, "ip", start + Duration::from_secs(9))
                .is_ok()
        );
        // The window now runs from the last allowed hit (9 s).
        assert_eq!(
            limiter.check(rule, "ip", start + Duration::from_secs(12)),
            Err(7)
        );
        assert!(
            limiter
                .check(rule, "ip", start + Duration::from_secs(19))
                .is_ok()
        );
    }

    #[test]
    fn prune_forgets_ended_windows_and_keeps_open_ones() {
        let limiter = RateLimiter::default();
        let start = Instant::now();
        let sign_in = "203.0.113.7|/api/auth/sign-in/email";
        assert!(limiter.check(AUTH_CREDENTIALS, sign_in, start).is_ok());
        assert!(limiter.check(DELETE_CONFIRM, "203.0.113.7", start).is_ok());
        assert_eq!(limiter.tracked(), 2);
        limiter.prune(start + Duration::from_secs(9));
        assert_eq!(limiter.tracked(), 2, "both windows are still open");
        limiter.prune(start + Duration::from_secs(10));
        assert_eq!(
            limiter.tracked(),
            1,
            "the 10 s window ended, the 15 min one did not"
        );
        limiter.prune(start + minutes(15));
        assert_eq!(limiter.tracked(), 0);
        // A forgotten key starts with a full budget.
        for _ in 0..AUTH_CREDENTIALS.max {
            assert!(
                limiter
                    .check(AUTH_CREDENTIALS, sign_in, start + minutes(16))
                    .is_ok()
            );
        }
        assert!(
            limiter
                .check(AUTH_CREDENTIALS, sign_in, start + minutes(16))
                .is_err()
        );
    }
}
