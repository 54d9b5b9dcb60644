//! [`SessionRegistryActor`]: spawns a [`SessionActor`](super::session::SessionActor) per user
//! on their first stream connection, counts connections, and stops the user's actor when the
//! last one closes. Attach and detach both pass through here, so a stop and a new attach can
//! never race. Broadcasts do not: [`Sessions::broadcast`] and [`Sessions::deliver`] read the
//! shared user → actor map and send straight to the session actors, once per user. The
//! registry also follows the committed credential changes and has the session actor of each
//! user concerned check its streams' credentials.

use super::Shared;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use parking_lot::RwLock;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::task::AbortOnDropHandle;

use super::keyed::KeyedChildren;
use super::session::{SessionActor, SessionArgs, SessionMsg, StreamCredential};
use super::{ActorKind, ChildSlot, MessageTimer, reply};
use crate::domain::frames::{Frame, FrameBatch};
use crate::domain::ids::UserId;
use crate::error::AppError;
use crate::store::credentials::CredentialChange;

/// Handle for broadcasting and attaching, shared by the HTTP edge and the actors.
#[derive(Debug, Default)]
pub struct Sessions {
    /// The registry.
    pub registry: ChildSlot<RegistryMsg>,
    live: Arc<RwLock<HashMap<UserId, ActorRef<SessionMsg>>>>,
    counts: watch::Sender<StreamCounts>,
}

/// Open stream connections and connected users.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounts {
    /// Open connections.
    pub connections: usize,
    /// Users with at least one.
    pub users: usize,
}

impl Sessions {
    /// Sends `frame` to every connection of each user in `users`, once per user. Users
    /// without an open stream are skipped (no replay; clients recover with the delta read).
    pub fn broadcast<'a>(&self, users: impl IntoIterator<Item = &'a UserId>, frame: &Frame) {
        let block = frame.block();
        let live = self.live.read();
        let mut seen = HashSet::new();
        for user in users {
            if seen.insert(user)
                && let Some(actor) = live.get(user)
            {
                let _ = actor.send_message(SessionMsg::Deliver {
                    frames: block.clone(),
                    sent: Instant::now(),
                });
            }
        }
    }

    /// Sends each user with an open stream their frames of `batch`, together: one entry in
    /// each of their connections' queues, however many frames the change owes them.
    pub fn deliver(&self, batch: FrameBatch) {
        if batch.is_empty() {
            return;
        }
        let live = self.live.read();
        for (user, frames) in batch.into_blocks() {
            if let Some(actor) = live.get(&user) {
                let _ = actor.send_message(SessionMsg::Deliver {
                    frames,
                    sent: Instant::now(),
                });
            }
        }
    }

    /// Sends each user with an open stream here their block of frames (one entry in each
    /// of their connections' queues).
    pub fn deliver_blocks(&self, blocks: Vec<(UserId, Bytes)>) {
        let live = self.live.read();
        for (user, frames) in blocks {
            if let Some(actor) = live.get(&user) {
                let _ = actor.send_message(SessionMsg::Deliver {
                    frames,
                    sent: Instant::now(),
                });
            }
        }
    }

    /// Closes every open stream (their clients reconnect and re-read).
    pub fn close_all_streams(&self) {
        for actor in self.live.read().values() {
            let _ = actor.send_message(SessionMsg::CloseAll);
        }
    }

    /// The counts, to wait on (`wait_for`) without polling.
    pub fn counts(&self) -> watch::Receiver<StreamCounts> {
        self.counts.subscribe()
    }

    /// Has `user`'s session actor check the credentials of their open streams.
    pub fn check_credentials_of(&self, user: &UserId) {
        if let Some(actor) = self.live.read().get(user) {
            let _ = actor.send_message(SessionMsg::CheckCredentials);
        }
    }

    /// Has `user`'s session actor hold upstream streams for their current federated
    /// connections (after a connect or a disconnect).
    pub fn refresh_upstreams_of(&self, user: &UserId) {
        if let Some(actor) = self.live.read().get(user) {
            let _ = actor.send_message(SessionMsg::RefreshUpstreams);
        }
    }

    /// Has every session actor check its streams' credentials.
    pub fn check_all_credentials(&self) {
        for actor in self.live.read().values() {
            let _ = actor.send_message(SessionMsg::CheckCredentials);
        }
    }

    /// Makes `user`'s session actor panic, to exercise supervision (test builds only).
    #[cfg(feature = "fault-injection")]
    pub fn inject_panic(&self, user: &UserId) {
        if let Some(actor) = self.live.read().get(user) {
            let _ = actor.send_message(SessionMsg::InjectPanic);
        }
    }

    /// Whether `user` has an open stream.
    pub fn is_connected(&self, user: &UserId) -> bool {
        self.live.read().contains_key(user)
    }

    fn set(&self, user: &UserId, actor: Option<ActorRef<SessionMsg>>) {
        let mut live = self.live.write();
        match actor {
            Some(actor) => live.insert(user.to_owned(), actor),
            None => live.remove(user),
        };
    }
}

/// A new stream connection: its id and its queue of frames, as the stream writes them.
#[derive(Debug)]
pub struct Attached {
    /// Connection id (for `Detach`).
    pub connection: u64,
    /// Frames for this connection: each entry one frame's or one change's blocks.
    pub frames: mpsc::Receiver<Bytes>,
}

/// Messages to the registry.
#[derive(Debug)]
pub enum RegistryMsg {
    /// Open a connection for `user_id`.
    Attach {
        /// The user.
        user_id: UserId,
        /// What the stream was opened with.
        credential: StreamCredential,
        /// When that credential expires.
        expires_at: DateTime<Utc>,
        /// The count of credential changes before the credential was resolved.
        credentials_seen: u64,
        /// Receives the connection.
        reply: RpcReplyPort<Result<Attached, AppError>>,
    },
    /// A connection closed (the stream ended, or the session actor dropped it).
    Detach {
        /// The user.
        user_id: UserId,
        /// The connection.
        connection: u64,
    },
}

/// The registry.
#[derive(Debug)]
pub struct SessionRegistryActor;

/// Tells the session actor of each user whose credentials changed to check its streams (all
/// of them, if this fell behind the changes).
async fn follow_credential_changes(shared: Arc<Shared>) {
    let mut changes = shared.db.credential_changes().subscribe();
    loop {
        match changes.recv().await {
            Ok(CredentialChange::User(user)) => shared.actors.sessions.check_credentials_of(&user),
            Ok(CredentialChange::Everyone) | Err(broadcast::error::RecvError::Lagged(_)) => {
                shared.actors.sessions.check_all_credentials();
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The registry's state.
pub struct RegistryState {
    shared: Arc<Shared>,
    /// Each connected user's session actor.
    sessions: KeyedChildren<UserId, SessionMsg>,
    /// Each connected user's open connections.
    connections: HashMap<UserId, HashSet<u64>>,
    next_connection: u64,
    /// Passes committed credential changes on to the users' session actors (stopped with
    /// the registry, however it ends).
    _follower: AbortOnDropHandle<()>,
}

impl RegistryState {
    fn update_gauges(&self) {
        let connections: usize = self.connections.values().map(HashSet::len).sum();
        let users = self.connections.len();
        self.shared.metrics.sse_gauges(connections, users);
        self.shared
            .actors
            .sessions
            .counts
            .send_replace(StreamCounts { connections, users });
    }

    /// Stops the user's actor; its end settles the gauge.
    fn forget(&mut self, user_id: &UserId) {
        self.connections.remove(user_id);
        if let Some(session) = self.sessions.take(&user_id.to_owned()) {
            self.shared.actors.sessions.set(user_id, None);
            session.actor.stop(None);
        }
    }
}

impl Actor for SessionRegistryActor {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = Arc<Shared>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        shared: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let follower =
            AbortOnDropHandle::new(tokio::spawn(follow_credential_changes(shared.clone())));
        let state = RegistryState {
            sessions: KeyedChildren::new(ActorKind::Session, shared.clone()),
            shared,
            connections: HashMap::new(),
            next_connection: 0,
            _follower: follower,
        };
        state.update_gauges();
        Ok(state)
    }

    async fn post_stop(
        &self,
        myself: ActorRef<Self::Msg>,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        myself
            .stop_children_and_wait(None, Some(std::time::Duration::from_secs(5)))
            .await;
        let users: Vec<UserId> = state.connections.keys().cloned().collect();
        for user in users {
            state.forget(&user);
        }
        state.sessions.clear();
        state.update_gauges();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let _timer = MessageTimer::start(&shared.metrics, ActorKind::SessionRegistry);
        match message {
            RegistryMsg::Attach {
                user_id,
                credential,
                expires_at,
                credentials_seen,
                reply: port,
            } => {
                if state.sessions.get(&user_id).is_none() {
                    let args = SessionArgs {
                        shared: shared.clone(),
                        user_id: user_id.clone(),
                        registry: myself.clone(),
                    };
                    match Actor::spawn_linked(None, SessionActor, args, myself.get_cell()).await {
                        Ok((actor, _)) => {
                            shared.actors.sessions.set(&user_id, Some(actor.clone()));
                            state.sessions.started(user_id.clone(), actor);
                        }
                        Err(err) => {
                            tracing::error!(error = %err, "stream.session_spawn_failed");
                            reply(port, Err(AppError::Unavailable("session actor".into())));
                            return Ok(());
                        }
                    }
                }
                let connection = state.next_connection;
                state.next_connection += 1;
                let capacity = usize::try_from(shared.settings.stream.buffer).unwrap_or(256);
                let (queue, frames) = mpsc::channel(capacity);
                if let Some(session) = state.sessions.get(&user_id) {
                    let _ = session.actor.send_message(SessionMsg::Attach {
                        connection,
                        frames: queue,
                        credential,
                        expires_at,
                        credentials_seen,
                    });
                    state
                        .connections
                        .entry(user_id)
                        .or_default()
                        .insert(connection);
                }
                state.update_gauges();
                reply(port, Ok(Attached { connection, frames }));
            }
            RegistryMsg::Detach {
                user_id,
                connection,
            } => {
                let mut now_empty = false;
                if let Some(open) = state.connections.get_mut(&user_id)
                    && open.remove(&connection)
                {
                    if let Some(session) = state.sessions.get(&user_id) {
                        let _ = session
                            .actor
                            .send_message(SessionMsg::Detach { connection });
                    }
                    now_empty = open.is_empty();
                }
                if now_empty {
                    state.forget(&user_id);
                }
                state.update_gauges();
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let Some(ended) = state.sessions.ended(&event) else {
            return Ok(());
        };
        // A failed actor's connections' queues died with it: their streams end and clients
        // reconnect, which spawns a fresh actor (a session is never restarted in place).
        if ended.failed && ended.current {
            state.connections.remove(&ended.key);
            state.shared.actors.sessions.set(&ended.key, None);
            state.update_gauges();
        }
        Ok(())
    }
}
