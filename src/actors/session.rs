//! [`SessionActor`]: one per user with an open `/api/stream`, owning that user's live
//! connections. A frame goes to every connection of the user; a connection whose bounded
//! queue is full (a slow client) or closed is dropped at once, never awaited, and reported
//! to the registry, which stops the actor when its last connection is gone.

use bytes::Bytes;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::mpsc;

use super::sessions::RegistryMsg;
use super::{ActorKind, MessageTimer};
use crate::context::Ctx;

/// A user's session actor.
#[derive(Debug)]
pub struct SessionActor;

/// What a session actor starts with.
pub struct SessionArgs {
    /// The server's context.
    pub ctx: Ctx,
    /// The user.
    pub user_id: String,
    /// The registry, told about connections this actor drops.
    pub registry: ActorRef<RegistryMsg>,
}

/// The actor's state.
pub struct SessionState {
    ctx: Ctx,
    user_id: String,
    registry: ActorRef<RegistryMsg>,
    connections: Vec<(u64, mpsc::Sender<Bytes>)>,
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
    },
}

impl Actor for SessionActor {
    type Msg = SessionMsg;
    type State = SessionState;
    type Arguments = SessionArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(SessionState {
            ctx: args.ctx,
            user_id: args.user_id,
            registry: args.registry,
            connections: Vec::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let ctx = state.ctx.clone();
        let _timer = MessageTimer::start(&ctx.metrics, ActorKind::Session);
        match message {
            SessionMsg::Attach { connection, frames } => {
                state.connections.push((connection, frames));
            }
            SessionMsg::Detach { connection } => {
                state.connections.retain(|(id, _)| *id != connection);
            }
            SessionMsg::Deliver { frames } => {
                let mut dropped = Vec::new();
                state.connections.retain(|(id, queue)| {
                    let kept = queue.try_send(frames.clone()).is_ok();
                    if !kept {
                        dropped.push(*id);
                    }
                    kept
                });
                for connection in dropped {
                    tracing::debug!(connection, "stream.connection_dropped");
                    let _ = state.registry.send_message(RegistryMsg::Detach {
                        user_id: state.user_id.clone(),
                        connection,
                    });
                }
            }
        }
        Ok(())
    }
}
