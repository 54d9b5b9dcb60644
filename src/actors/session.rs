//! [`SessionActor`]: one per user with an open `/api/stream`, owning that user's live
//! connections. A frame goes to every connection of the user; a connection whose bounded
//! queue is full (a slow client) or closed is dropped at once, never awaited, and reported
//! to the registry, which stops the actor when its last connection is gone.
//!
//! Each connection remembers the credential it was opened with (a session, or a federation
//! member token). When the user's credentials change (sign-out, revocation, a password
//! change or reset, deletion, a member token revoked) and when the earliest of them expires,
//! the actor checks them again and drops the connections whose credential is gone: a stream
//! ends with its session.
//!
//! The actor also holds the user's upstream streams to the servers they connected to
//! (federation fan-in, [`crate::federation::upstream`]): one per connection, started with the
//! actor and whenever the user's connections change, stopped with it (when the user's last
//! stream closes). Their frames reach every connection as `federated_sync`.

use super::Shared;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use chrono::{DateTime, Utc};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc;

use super::sessions::RegistryMsg;
use super::{ActorKind, MessageTimer};
use crate::domain::ids::{ConnectionId, UserId};
use crate::federation::upstream::{self, Upstream, UpstreamContext};
use crate::store::{federation_connections, member_tokens, sessions};

/// What a stream was opened with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamCredential {
    /// A session, by id.
    Session(String),
    /// A federation member token, by the SHA-256 of it.
    MemberToken(String),
}

impl StreamCredential {
    /// The session id or token hash.
    fn key(&self) -> &str {
        match self {
            Self::Session(id) | Self::MemberToken(id) => id,
        }
    }
}

/// A user's session actor.
#[derive(Debug)]
pub struct SessionActor;

/// What a session actor starts with.
pub struct SessionArgs {
    /// What the server's actors share.
    pub shared: Arc<Shared>,
    /// The user.
    pub user_id: UserId,
    /// The registry, told about connections this actor drops.
    pub registry: ActorRef<RegistryMsg>,
}

/// One open connection.
struct Connection {
    id: u64,
    queue: mpsc::Sender<Bytes>,
    credential: StreamCredential,
    expires_at: DateTime<Utc>,
}

/// The actor's state.
pub struct SessionState {
    shared: Arc<Shared>,
    user_id: UserId,
    registry: ActorRef<RegistryMsg>,
    connections: Vec<Connection>,
    /// When a check is already scheduled for.
    next_check: Option<DateTime<Utc>>,
    /// The user's upstream streams, by connection.
    upstreams: HashMap<ConnectionId, Upstream>,
    /// Reads of the user's connections started, and the latest one applied.
    connection_reads: (u64, u64),
}

/// Messages to a session actor.
#[derive(Debug)]
pub enum SessionMsg {
    /// A new connection's queue.
    Attach {
        /// Connection id.
        connection: u64,
        /// Its queue.
        frames: mpsc::Sender<Bytes>,
        /// What it was opened with.
        credential: StreamCredential,
        /// When that credential expires.
        expires_at: DateTime<Utc>,
        /// The count of credential changes before the credential was resolved.
        credentials_seen: u64,
    },
    /// A connection closed.
    Detach {
        /// Connection id.
        connection: u64,
    },
    /// Frames for every connection.
    Deliver {
        /// One frame, or one change's frames, as the stream writes them.
        frames: Bytes,
        /// When it was sent (`svc_actor_mailbox_wait_seconds`).
        sent: Instant,
    },
    /// The user's credentials changed, or one expired: drop the connections whose
    /// credential is gone.
    CheckCredentials,
    /// Close every connection (frames may have been missed: their clients re-read).
    CloseAll,
    /// The user's federated connections changed (or the actor started): hold one upstream
    /// stream per connection.
    RefreshUpstreams,
    /// The user's federated connections, as read for [`SessionMsg::RefreshUpstreams`].
    HoldUpstreams {
        /// Which read this is (a later read's answer may arrive first).
        read: u64,
        /// Their ids.
        connections: Vec<ConnectionId>,
    },
    /// Panic inside the handler, to exercise supervision (test builds only).
    #[cfg(feature = "fault-injection")]
    InjectPanic,
}

impl Actor for SessionActor {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let _ = myself.send_message(SessionMsg::RefreshUpstreams);
        Ok(SessionState {
            shared: args.shared,
            user_id: args.user_id,
            registry: args.registry,
            connections: Vec::new(),
            next_check: None,
            upstreams: HashMap::new(),
            connection_reads: (0, 0),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let shared = state.shared.clone();
        let _timer = MessageTimer::start(&shared.metrics, ActorKind::Session);
        match message {
            SessionMsg::Attach {
                connection,
                frames,
                credential,
                expires_at,
                credentials_seen,
            } => {
                state.connections.push(Connection {
                    id: connection,
                    queue: frames,
                    credential,
                    expires_at,
                });
                if shared.db.credential_changes().count() != credentials_seen {
                    // A change was committed after the credential was read: look again.
                    let _ = myself.send_message(SessionMsg::CheckCredentials);
                } else {
                    state.schedule_check(&myself);
                }
            }
            SessionMsg::Detach { connection } => {
                state.connections.retain(|c| c.id != connection);
            }
            SessionMsg::Deliver { frames, sent } => {
                shared
                    .metrics
                    .actor_mailbox_wait(ActorKind::Session.label(), sent);
                let mut slow = 0;
                state.drop_where(|c| match c.queue.try_send(frames.clone()) {
                    Ok(()) => false,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        slow += 1;
                        true
                    }
                    // The client went away; its stream is ending already.
                    Err(mpsc::error::TrySendError::Closed(_)) => true,
                });
                shared.metrics.sse_dropped("slow", slow);
            }
            SessionMsg::CheckCredentials => {
                state.next_check = None;
                state.check_credentials().await;
                state.schedule_check(&myself);
            }
            SessionMsg::CloseAll => {
                let open = state.connections.len() as u64;
                state.drop_where(|_| true);
                shared.metrics.sse_dropped("closed", open);
            }
            SessionMsg::RefreshUpstreams => state.read_connections(&myself),
            SessionMsg::HoldUpstreams { read, connections } => {
                // An older read answering after a newer one is out of date.
                if read > state.connection_reads.1 {
                    state.connection_reads.1 = read;
                    state.hold_upstreams(&myself, connections);
                }
            }
            #[cfg(feature = "fault-injection")]
            SessionMsg::InjectPanic => panic!("fault injected into a session"),
        }
        Ok(())
    }
}

/// How long after a failed check the actor tries again.
const RETRY_CHECK: Duration = Duration::from_secs(5);

impl SessionState {
    /// Drops the connections `gone` picks (their streams end) and tells the registry.
    fn drop_where(&mut self, mut gone: impl FnMut(&Connection) -> bool) {
        let mut dropped = Vec::new();
        self.connections.retain(|c| {
            let keep = !gone(c);
            if !keep {
                dropped.push(c.id);
            }
            keep
        });
        for connection in dropped {
            tracing::debug!(connection, "stream.connection_dropped");
            let _ = self.registry.send_message(RegistryMsg::Detach {
                user_id: self.user_id.clone(),
                connection,
            });
        }
    }

    /// Reads which credentials are still live and drops the connections of the others.
    async fn check_credentials(&mut self) {
        let now = Utc::now();
        let mut session_ids = Vec::new();
        let mut token_hashes = Vec::new();
        for connection in &self.connections {
            match &connection.credential {
                StreamCredential::Session(id) => session_ids.push(id.clone()),
                StreamCredential::MemberToken(hash) => token_hashes.push(hash.clone()),
            }
        }
        let db = &self.shared.db;
        let live = match sessions::live(db, &session_ids, now).await {
            Ok(mut live) => match member_tokens::live(db, &token_hashes, now).await {
                Ok(tokens) => {
                    live.extend(tokens);
                    live
                }
                Err(err) => return self.retry_later(&err),
            },
            Err(err) => return self.retry_later(&err),
        };
        for connection in &mut self.connections {
            let key = connection.credential.key();
            if let Some((_, expires_at)) = live.iter().find(|(id, _)| id == key) {
                connection.expires_at = *expires_at;
            }
        }
        let before = self.connections.len();
        self.drop_where(|c| !live.iter().any(|(id, _)| id == c.credential.key()));
        let ended = (before - self.connections.len()) as u64;
        self.shared.metrics.sse_dropped("credentials", ended);
    }

    /// Reads the user's federated connections off the actor (a stop is never held up by
    /// the query) and has them held ([`SessionMsg::HoldUpstreams`]).
    fn read_connections(&mut self, myself: &ActorRef<SessionMsg>) {
        self.connection_reads.0 += 1;
        let read = self.connection_reads.0;
        let db = self.shared.db.clone();
        let user_id = self.user_id.clone();
        let actor = myself.clone();
        tokio::spawn(async move {
            match federation_connections::of_user(&db, &user_id).await {
                Ok(rows) => {
                    let connections = rows.into_iter().map(|row| row.id).collect();
                    let _ = actor.send_message(SessionMsg::HoldUpstreams { read, connections });
                }
                Err(err) => {
                    tracing::warn!(error = %err, "stream.upstreams_unreadable");
                    actor.send_after(RETRY_CHECK, || SessionMsg::RefreshUpstreams);
                }
            }
        });
    }

    /// Holds one upstream stream per federated connection of the user: starts the missing,
    /// drops those of removed connections. A shadow user (a member from another server)
    /// has none.
    fn hold_upstreams(&mut self, myself: &ActorRef<SessionMsg>, wanted: Vec<ConnectionId>) {
        self.upstreams.retain(|id, _| wanted.contains(id));
        for connection in wanted {
            if self.upstreams.contains_key(&connection) {
                continue;
            }
            let actor = myself.clone();
            let sink: upstream::Sink = Arc::new(move |frames: Bytes| {
                let _ = actor.send_message(SessionMsg::Deliver {
                    frames,
                    sent: Instant::now(),
                });
            });
            let context = UpstreamContext {
                federation: self.shared.federation.clone(),
                db: self.shared.db.clone(),
                metrics: self.shared.metrics.clone(),
            };
            let held = upstream::spawn(context, self.user_id.clone(), connection, sink);
            self.upstreams.insert(connection, held);
        }
    }

    fn retry_later(&mut self, err: &crate::store::DbErr) {
        tracing::warn!(error = %err, "stream.credential_check_failed");
        let at = Utc::now() + RETRY_CHECK;
        for connection in &mut self.connections {
            connection.expires_at = connection.expires_at.min(at);
        }
    }

    /// Schedules a check for when the earliest credential expires, unless one is due sooner.
    fn schedule_check(&mut self, myself: &ActorRef<SessionMsg>) {
        let Some(earliest) = self.connections.iter().map(|c| c.expires_at).min() else {
            return;
        };
        if self.next_check.is_some_and(|at| at <= earliest) {
            return;
        }
        self.next_check = Some(earliest);
        let wait = (earliest - Utc::now()).to_std().unwrap_or_default();
        myself.send_after(wait, || SessionMsg::CheckCredentials);
    }
}
