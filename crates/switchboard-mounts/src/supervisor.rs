//! The supervisor of the server actors ([`crate::actor`]): it spawns each one linked to it,
//! restarts one that fails (the new actor connects as after a loss), answers for all of them
//! (status, which actor serves a server), and stops them all on close.

use std::collections::BTreeMap;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::watch;

use crate::{
    actor::{RestartPolicy, ServerActor, ServerArgs, ServerMsg},
    config::ServerConfig,
    health::Health,
    mounts::MountStatus,
    progress::CallRoutes,
    sink::ListingSink,
};

/// What the supervisor is told.
pub(crate) enum SupervisorMsg {
    /// Spawn a server actor for a started server.
    Adopt(Box<ServerArgs>, RpcReplyPort<Result<(), String>>),
    /// Every server's status, sorted by id.
    Status(RpcReplyPort<Vec<MountStatus>>),
    /// The actor of a server, or the ids of those there are.
    Actor(
        String,
        RpcReplyPort<Result<ActorRef<ServerMsg>, Vec<String>>>,
    ),
    /// Stop every server actor, and answer once they have stopped.
    StopAll(RpcReplyPort<()>),
}

// Local only: with `ractor/cluster`, every message type names its `Message` impl.
#[cfg(feature = "cluster")]
impl ractor::Message for SupervisorMsg {}

/// What the supervisor keeps of a server actor, to restart it if it fails.
pub(crate) struct Supervised {
    actor: ActorRef<ServerMsg>,
    server: ServerConfig,
    health: watch::Sender<Health>,
    policy: RestartPolicy,
    progress: CallRoutes,
    /// The sink the actor started with, from which a new actor's is made.
    sink: ListingSink,
}

/// The supervisor of the server actors.
pub(crate) struct Supervisor;

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = BTreeMap<String, Supervised>;
    type Arguments = ();

    async fn pre_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        (): (),
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(BTreeMap::new())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        supervised: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Adopt(args, reply) => {
                let server = args.server.clone();
                let health = args.health.clone();
                let policy = args.policy;
                let progress = args.progress.clone();
                let sink = args.sink.clone();
                let spawned = Actor::spawn_linked(None, ServerActor, *args, myself.get_cell())
                    .await
                    .map(|(actor, _)| actor)
                    .map_err(|error| error.to_string());
                let answer = match spawned {
                    Ok(actor) => {
                        supervised.insert(
                            server.id.clone(),
                            Supervised {
                                actor,
                                server,
                                health,
                                policy,
                                progress,
                                sink,
                            },
                        );
                        Ok(())
                    }
                    Err(error) => Err(error),
                };
                let _ = reply.send(answer);
            }
            SupervisorMsg::Status(reply) => {
                let mut statuses = Vec::with_capacity(supervised.len());
                for entry in supervised.values() {
                    if let Ok(status) = ractor::call!(entry.actor, ServerMsg::Status) {
                        statuses.push(status);
                    }
                }
                let _ = reply.send(statuses);
            }
            SupervisorMsg::Actor(id, reply) => {
                let found = supervised
                    .get(&id)
                    .map(|entry| entry.actor.clone())
                    .ok_or_else(|| supervised.keys().cloned().collect());
                let _ = reply.send(found);
            }
            SupervisorMsg::StopAll(reply) => {
                for (_, entry) in std::mem::take(supervised) {
                    entry.actor.unlink(myself.get_cell());
                    let _ = entry.actor.stop_and_wait(None, None).await;
                }
                let _ = reply.send(());
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        supervised: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(failed, error) = event {
            let id = supervised
                .iter()
                .find(|(_, entry)| entry.actor.get_id() == failed.get_id())
                .map(|(id, _)| id.clone());
            if let Some(entry) = id.and_then(|id| supervised.get_mut(&id)) {
                tracing::error!(server = %entry.server.id, %error, "a mounted server's actor failed; starting a new one");
                let args = ServerArgs {
                    server: entry.server.clone(),
                    first: None,
                    health: entry.health.clone(),
                    policy: entry.policy,
                    progress: entry.progress.clone(),
                    sink: entry.sink.restarted(&entry.server),
                };
                match Actor::spawn_linked(None, ServerActor, args, myself.get_cell())
                    .await
                    .map(|(actor, _)| actor)
                {
                    Ok(actor) => entry.actor = actor,
                    Err(error) => {
                        tracing::error!(server = %entry.server.id, %error, "a mounted server's actor could not be started again");
                    }
                }
            }
        }
        Ok(())
    }
}
