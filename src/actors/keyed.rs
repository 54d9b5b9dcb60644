//! [`KeyedChildren`]: what a supervisor of one child per key keeps — the calendar
//! supervisor (a [`CalendarActor`](super::calendar::CalendarActor) per calendar), the
//! provider supervisor (a sync actor per account) and the session registry (a session actor
//! per user). Each child is found by its key and by its actor id, counted alive while it
//! runs, and, when it fails, counted and given its own restart budget
//! ([`super::supervision`]); the supervisor decides what a restart means for its kind.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Instant;

use ractor::{ActorId, ActorRef, SupervisionEvent};

use super::supervision::{RestartBudget, RestartPolicy};
use super::{ActorKind, Shared};

/// One running child and how many messages its supervisor forwarded to it.
#[derive(Debug)]
pub struct Child<M> {
    /// The child.
    pub actor: ActorRef<M>,
    /// Messages forwarded to it so far.
    pub forwarded: u64,
}

/// The children of one supervisor, one per key.
#[derive(Debug)]
pub struct KeyedChildren<K, M> {
    kind: ActorKind,
    shared: Arc<Shared>,
    running: HashMap<K, Child<M>>,
    by_actor: HashMap<ActorId, K>,
    budgets: HashMap<K, RestartBudget>,
    policy: RestartPolicy,
}

/// How a child ended, as its supervisor reads it.
#[derive(Debug)]
pub struct Ended<K> {
    /// Its key.
    pub key: K,
    /// Whether it was the key's current child (not one already replaced or stopped).
    pub current: bool,
    /// It failed (panicked or returned an error), rather than stopping.
    pub failed: bool,
    /// It failed, and its key's budget allows a restart now (not during shutdown).
    pub restart: bool,
}

impl<K, M> KeyedChildren<K, M>
where
    K: Eq + Hash + Clone + std::fmt::Debug,
    M: ractor::Message,
{
    /// No children yet, of `kind`, restarted by the policy configured in `shared`.
    pub fn new(kind: ActorKind, shared: Arc<Shared>) -> Self {
        let policy = RestartPolicy::from_settings(&shared.settings.actors);
        Self {
            kind,
            shared,
            running: HashMap::new(),
            by_actor: HashMap::new(),
            budgets: HashMap::new(),
            policy,
        }
    }

    /// The child of `key`, if it runs.
    pub fn get(&self, key: &K) -> Option<&Child<M>> {
        self.running.get(key)
    }

    /// The child of `key`, to count what is forwarded to it.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut Child<M>> {
        self.running.get_mut(key)
    }

    /// How many children run (replaced ones not yet ended included).
    pub fn live(&self) -> usize {
        self.by_actor.len()
    }

    /// The keys of the children that run.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.running.keys()
    }

    /// Records `actor`, just spawned linked to the supervisor, as `key`'s child.
    pub fn started(&mut self, key: K, actor: ActorRef<M>) {
        self.by_actor.insert(actor.get_id(), key.clone());
        self.running.insert(
            key,
            Child {
                actor,
                forwarded: 0,
            },
        );
        self.shared.metrics.actor_alive(self.kind.label(), 1.0);
    }

    /// Takes `key`'s child out (the caller stops it); it is counted gone once it ended.
    pub fn take(&mut self, key: &K) -> Option<Child<M>> {
        self.running.remove(key)
    }

    /// Reads a supervision event: `None` when it is not about one of these children's end.
    /// A failure is counted (metrics, stats, the log) and spends the key's restart budget.
    pub fn ended(&mut self, event: &SupervisionEvent) -> Option<Ended<K>> {
        let (id, failure) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell.get_id(), Some(err.to_string())),
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell.get_id(), None),
            _ => return None,
        };
        let key = self.by_actor.remove(&id)?;
        self.shared.metrics.actor_alive(self.kind.label(), -1.0);
        let current = self
            .running
            .get(&key)
            .is_some_and(|child| child.actor.get_id() == id);
        if current {
            self.running.remove(&key);
        }
        let Some(err) = failure else {
            return Some(Ended {
                key,
                current,
                failed: false,
                restart: false,
            });
        };
        let kind = self.kind;
        self.shared.metrics.actor_failed(kind.label());
        self.shared.actors.stats.failed(kind);
        tracing::error!(actor = kind.label(), key = ?key, error = %err, "actor.failed");
        let policy = self.policy;
        let now = Instant::now();
        // Budgets as good as new are dropped, so the map holds only keys that failed within
        // the window, not every key that ever failed.
        self.budgets.retain(|_, budget| !budget.is_full(now));
        let allowed = self
            .budgets
            .entry(key.clone())
            .or_insert_with(|| RestartBudget::new(policy))
            .next_delay(now)
            .is_some();
        if !allowed {
            tracing::error!(actor = kind.label(), key = ?key, "actor.restart_budget_exhausted");
        }
        let restart = allowed && current && !self.shared.shutdown.is_triggered();
        Some(Ended {
            key,
            current,
            failed: true,
            restart,
        })
    }

    /// Counts a restart of `kind` made after [`Self::ended`] allowed it.
    pub fn restarted(&self) {
        self.shared.metrics.actor_restarted(self.kind.label());
        self.shared.actors.stats.restarted(self.kind);
    }

    /// Forgets every child (the supervisor stopped and waited for them).
    pub fn clear(&mut self) {
        for _ in self.by_actor.drain() {
            self.shared.metrics.actor_alive(self.kind.label(), -1.0);
        }
        self.running.clear();
    }
}
