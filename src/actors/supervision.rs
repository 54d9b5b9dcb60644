//! The supervision scheme every supervisor uses: a restart budget per child (at most
//! `restart_limit` restarts within `restart_window`), exponential backoff between restarts,
//! and the counts behind `svc_actor_restarts_total` / `svc_actor_failures_total`.
//!
//! When a child exhausts its budget its supervisor escalates instead of restarting it again,
//! as in OTP: a crash loop is a state the process cannot repair by itself.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::ActorKind;
use crate::config::ActorSettings;

/// Restart policy, from `[actors]` in the configuration.
#[derive(Debug, Clone, Copy)]
pub struct RestartPolicy {
    /// Restarts allowed within `window`.
    pub limit: u32,
    /// The sliding window of the limit.
    pub window: Duration,
    /// Delay before the first restart in a window.
    pub backoff: Duration,
    /// Upper bound of the delay.
    pub backoff_max: Duration,
}

impl RestartPolicy {
    /// The policy configured in `settings`.
    pub fn from_settings(settings: &ActorSettings) -> Self {
        Self {
            limit: settings.restart_limit,
            window: Duration::from_millis(settings.restart_window_ms),
            backoff: Duration::from_millis(settings.restart_backoff_ms),
            backoff_max: Duration::from_millis(settings.restart_backoff_max_ms),
        }
    }
}

/// One child's recent restarts.
#[derive(Debug)]
pub struct RestartBudget {
    policy: RestartPolicy,
    recent: VecDeque<Instant>,
}

impl RestartBudget {
    /// A full budget.
    pub fn new(policy: RestartPolicy) -> Self {
        Self {
            policy,
            recent: VecDeque::new(),
        }
    }

    /// Spends one restart at `now`: the delay to wait before it, or `None` when the budget
    /// is exhausted and the supervisor must escalate.
    pub fn next_delay(&mut self, now: Instant) -> Option<Duration> {
        self.forget_before(now);
        if self.recent.len() >= self.policy.limit as usize {
            return None;
        }
        let doublings = u32::try_from(self.recent.len()).unwrap_or(u32::MAX).min(16);
        self.recent.push_back(now);
        let delay = self.policy.backoff.saturating_mul(1 << doublings);
        Some(delay.min(self.policy.backoff_max))
    }

    /// Whether every restart spent has left the window by `now`: the budget is as good as
    /// new, and a supervisor keeping one per key can drop it.
    pub fn is_full(&self, now: Instant) -> bool {
        self.recent
            .back()
            .is_none_or(|last| now.duration_since(*last) > self.policy.window)
    }

    /// Forgets the restarts that left the window by `now`.
    fn forget_before(&mut self, now: Instant) {
        while let Some(first) = self.recent.front() {
            if now.duration_since(*first) > self.policy.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
    }
}

/// Restart and failure counts per actor kind, as a watch channel so that tests and
/// diagnostics can wait for a restart instead of polling.
#[derive(Debug)]
pub struct SupervisionStats(watch::Sender<StatsSnapshot>);

impl Default for SupervisionStats {
    fn default() -> Self {
        Self(watch::Sender::new(StatsSnapshot::default()))
    }
}

/// Counts at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Failures per actor label.
    pub failures: HashMap<&'static str, u64>,
    /// Completed restarts per actor label.
    pub restarts: HashMap<&'static str, u64>,
}

impl StatsSnapshot {
    /// Restarts of `kind` so far.
    pub fn restarts_of(&self, kind: ActorKind) -> u64 {
        self.restarts.get(kind.label()).copied().unwrap_or(0)
    }

    /// Failures of `kind` so far.
    pub fn failures_of(&self, kind: ActorKind) -> u64 {
        self.failures.get(kind.label()).copied().unwrap_or(0)
    }
}

impl SupervisionStats {
    /// Counts a failure of `kind`.
    pub fn failed(&self, kind: ActorKind) {
        self.0
            .send_modify(|s| *s.failures.entry(kind.label()).or_default() += 1);
    }

    /// Counts a completed restart of `kind`.
    pub fn restarted(&self, kind: ActorKind) {
        self.0
            .send_modify(|s| *s.restarts.entry(kind.label()).or_default() += 1);
    }

    /// The counts now.
    pub fn snapshot(&self) -> StatsSnapshot {
        self.0.borrow().clone()
    }

    /// A receiver to wait on (`wait_for`).
    pub fn subscribe(&self) -> watch::Receiver<StatsSnapshot> {
        self.0.subscribe()
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn policy() -> RestartPolicy {
        RestartPolicy {
            limit: 3,
            window: Duration::from_secs(60),
            backoff: Duration::from_millis(10),
            backoff_max: Duration::from_millis(25),
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_then_the_budget_runs_out() {
        let mut budget = RestartBudget::new(policy());
        let now = Instant::now();
        assert_eq!(budget.next_delay(now), Some(Duration::from_millis(10)));
        assert_eq!(budget.next_delay(now), Some(Duration::from_millis(20)));
        assert_eq!(budget.next_delay(now), Some(Duration::from_millis(25)));
        assert_eq!(budget.next_delay(now), None);
    }

    #[test]
    fn a_budget_is_full_again_once_its_last_restart_left_the_window() {
        let mut budget = RestartBudget::new(policy());
        let start = Instant::now();
        assert!(budget.is_full(start));
        assert!(budget.next_delay(start).is_some());
        assert!(!budget.is_full(start + Duration::from_secs(60)));
        assert!(budget.is_full(start + Duration::from_secs(61)));
    }

    #[test]
    fn restarts_outside_the_window_are_forgotten() {
        let mut budget = RestartBudget::new(policy());
        let start = Instant::now();
        for _ in 0..3 {
            assert!(budget.next_delay(start).is_some());
        }
        let later = start + Duration::from_secs(61);
        assert_eq!(budget.next_delay(later), Some(Duration::from_millis(10)));
    }
}
