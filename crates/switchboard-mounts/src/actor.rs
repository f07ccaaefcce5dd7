//! One actor per mounted server: it owns the server's connection, notices when it ends, and
//! makes a new one.
//!
//! The actor is never on the call path: it publishes the server's [`Health`] (with the
//! connection to call through) on a `watch` channel that the server's tools read. When the
//! connection ends (a stdio child exits or is killed, an HTTP stream closes) or the server
//! fails a ping, the actor ends what is left of it, publishes `Restarting`, and tries a new
//! connection after a backoff with full jitter: a random delay between zero and
//! `min(cap, base × 2^attempt)`. More than `intensity` losses within `period` (OTP's restart
//! intensity) mark the server `Down` until a cool-down has passed, like a circuit breaker;
//! then it is tried again. A ping with a deadline, every `ping_every`, tells a wedged server
//! from a busy one: a server that does not answer one is restarted.
//!
//! The actor lists the server's tools at each new connection and each `tools/list_changed`,
//! and hands each listing to its [`ListingSink`], which says what the listing means. A mounted
//! server's tools are kept in line with what a person accepted of it ([`crate::pins`]): every
//! listing passes the gate, an accept is done here (it lists, pins and admits again in one
//! step), and a lock file rewritten by another process (`switchboard mounts accept`) is noticed
//! at the next ping, when the server's tools are listed and admitted again.
//!
//! The actors run under one supervisor ([`crate::mounts::Mounts`] spawns them linked to it),
//! which restarts an actor that fails and stops them all on close.

use std::{collections::VecDeque, time::Duration};

use jiff::Timestamp;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rmcp::model::{ClientRequest, PingRequest};
use tokio::{sync::watch, time::Instant};
use tracing::Instrument as _;

use crate::{
    accept::AcceptError,
    config::ServerConfig,
    connection::{Connection, Live, connect},
    gate::Listing,
    health::Health,
    mounts::{MountState, MountStatus},
    pins::PinChanges,
    progress::CallRoutes,
    sink::ListingSink,
};

/// When and how often a mounted server is restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// The backoff's base: the first restart waits up to this long.
    pub base: Duration,
    /// The longest backoff.
    pub cap: Duration,
    /// How many losses within `period` are tolerated; one more marks the server down.
    pub intensity: usize,
    /// The window `intensity` counts in.
    pub period: Duration,
    /// How long a server marked down is left alone.
    pub cool_down: Duration,
    /// How often a server is pinged.
    pub ping_every: Duration,
    /// How long a ping may take before the server counts as wedged.
    pub ping_deadline: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(10),
            intensity: 5,
            period: Duration::from_secs(60),
            cool_down: Duration::from_secs(60),
            ping_every: Duration::from_secs(15),
            ping_deadline: Duration::from_secs(5),
        }
    }
}

impl RestartPolicy {
    /// The delay before restart number `attempt` (0 for the first): full jitter over
    /// `min(cap, base × 2^attempt)`.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(2u32.saturating_pow(attempt.min(20)))
            .min(self.cap);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// What the server actor is told.
#[derive(Debug)]
pub(crate) enum ServerMsg {
    /// Connection `generation` ended, or failed a ping, for `reason`.
    Lost { generation: u64, reason: String },
    /// Time to try a new connection.
    Reconnect,
    /// Time to ping the server.
    Ping,
    /// Connection `generation` said the server's tools changed.
    ToolsChanged { generation: u64 },
    /// How the server is doing.
    Status(RpcReplyPort<MountStatus>),
    /// Accept what the server offers now as its accepted tools, and admit them again.
    Accept(RpcReplyPort<Result<PinChanges, AcceptError>>),
}

// Local only: with `ractor/cluster`, every message type names its `Message` impl.
#[cfg(feature = "cluster")]
impl ractor::Message for ServerMsg {}

/// What a server actor starts with: its configuration, its first connection, and the channel
/// its tools read.
pub(crate) struct ServerArgs {
    pub(crate) server: ServerConfig,
    pub(crate) first: Option<Connection>,
    pub(crate) health: watch::Sender<Health>,
    pub(crate) policy: RestartPolicy,
    /// Where its tools' calls want their progress, across restarts.
    pub(crate) progress: CallRoutes,
    /// What is done with each listing of its tools.
    pub(crate) sink: ListingSink,
}

pub(crate) struct ServerState {
    server: ServerConfig,
    health: watch::Sender<Health>,
    policy: RestartPolicy,
    live: Option<Live>,
    generation: u64,
    /// When each recent loss happened, oldest first, within `policy.period`.
    losses: VecDeque<Instant>,
    /// Consecutive failed attempts since the last good connection (the backoff's exponent).
    attempt: u32,
    restarts: u64,
    last_error: Option<String>,
    progress: CallRoutes,
    sink: ListingSink,
}

pub(crate) struct ServerActor;

impl Actor for ServerActor {
    type Msg = ServerMsg;
    type State = ServerState;
    type Arguments = ServerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ServerMsg>,
        args: ServerArgs,
    ) -> Result<ServerState, ActorProcessingErr> {
        myself.send_interval(args.policy.ping_every, || ServerMsg::Ping);
        let mut state = ServerState {
            server: args.server,
            health: args.health,
            policy: args.policy,
            live: None,
            generation: 0,
            losses: VecDeque::new(),
            attempt: 0,
            restarts: 0,
            last_error: None,
            progress: args.progress,
            sink: args.sink,
        };
        match args.first {
            Some(connection) => state.serve(&myself, connection),
            // A supervisor's restart of this actor: connect as after a loss.
            None => myself.send_message(ServerMsg::Reconnect)?,
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<ServerMsg>,
        message: ServerMsg,
        state: &mut ServerState,
    ) -> Result<(), ActorProcessingErr> {
        let span = tracing::info_span!("mounted_server", server = %state.server.id, ?message);
        async {
            match message {
                ServerMsg::Lost { generation, reason } if generation == state.generation => {
                    state.lost(&myself, reason).await;
                }
                ServerMsg::Lost { .. } => {}
                ServerMsg::Reconnect => state.reconnect(&myself).await,
                ServerMsg::Ping => {
                    state.ping(&myself);
                    state.readmit_if_pins_changed().await;
                }
                ServerMsg::ToolsChanged { generation } if generation == state.generation => {
                    state.refresh_tools().await;
                }
                ServerMsg::ToolsChanged { .. } => {}
                ServerMsg::Status(reply) => {
                    let _ = reply.send(state.status());
                }
                ServerMsg::Accept(reply) => {
                    let _ = reply.send(state.accept().await);
                }
            }
        }
        .instrument(span)
        .await;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ServerMsg>,
        state: &mut ServerState,
    ) -> Result<(), ActorProcessingErr> {
        state.health.send_replace(Health::Closed);
        if let Some(live) = state.live.take() {
            live.end().await;
        }
        Ok(())
    }
}

impl ServerState {
    /// Serves through `connection`, and watches it end and its tools change.
    fn serve(&mut self, myself: &ActorRef<ServerMsg>, mut connection: Connection) {
        self.generation += 1;
        let generation = self.generation;
        let (_, none) = tokio::sync::mpsc::unbounded_channel();
        let mut changes = std::mem::replace(&mut connection.tools_changed, none);
        let told = myself.clone();
        // Ends with the connection, which holds the sending side.
        tokio::spawn(async move {
            while changes.recv().await.is_some() {
                if told
                    .send_message(ServerMsg::ToolsChanged { generation })
                    .is_err()
                {
                    return;
                }
            }
        });
        let actor = myself.clone();
        let live = Live::watch(connection, move |reason| {
            let _ = actor.send_message(ServerMsg::Lost { generation, reason });
        });
        self.sink.connected();
        self.health.send_replace(Health::Up {
            peer: live.peer(),
            generation,
        });
        self.live = Some(live);
    }

    /// The connection ended: end what is left of it, and restart after a backoff, or mark
    /// the server down if it has been lost too often.
    async fn lost(&mut self, myself: &ActorRef<ServerMsg>, reason: String) {
        tracing::warn!(server = %self.server.id, %reason, "a mounted server's connection ended");
        let live = self.live.take();
        self.last_error = Some(reason.clone());
        // The loss is published before what is left of the connection is ended: ending it may
        // wait (an HTTP session's cleanup on a server that does not answer), and calls should
        // not be sent to it meanwhile. The next try comes after this handler.
        self.schedule_restart(myself, reason);
        if let Some(live) = live {
            live.end().await;
        }
    }

    /// Publishes `Restarting` (or `Down`) and schedules the next try.
    fn schedule_restart(&mut self, myself: &ActorRef<ServerMsg>, reason: String) {
        let now = Instant::now();
        self.losses.push_back(now);
        while self
            .losses
            .front()
            .is_some_and(|&lost| now.duration_since(lost) > self.policy.period)
        {
            self.losses.pop_front();
        }
        let delay = if self.losses.len() > self.policy.intensity {
            let until = Timestamp::now()
                .checked_add(self.policy.cool_down)
                .unwrap_or_else(|_| Timestamp::now());
            let reason = format!(
                "lost {} times within {:?}, last: {reason}",
                self.losses.len(),
                self.policy.period
            );
            tracing::error!(server = %self.server.id, %until, "{reason}; marked down");
            self.health.send_replace(Health::Down { reason, until });
            self.losses.clear();
            self.policy.cool_down
        } else {
            self.health.send_replace(Health::Restarting { reason });
            let delay = self.policy.backoff(self.attempt);
            self.attempt = self.attempt.saturating_add(1);
            delay
        };
        myself.send_after(delay, || ServerMsg::Reconnect);
    }

    /// Tries a new connection.
    async fn reconnect(&mut self, myself: &ActorRef<ServerMsg>) {
        if self.live.is_some() {
            return;
        }
        match connect(&self.server, self.progress.clone()).await {
            Ok(connection) => {
                self.restarts += 1;
                self.attempt = 0;
                tracing::info!(server = %self.server.id, pid = ?connection.pid(), restarts = self.restarts, "a mounted server is serving again");
                self.serve(myself, connection);
                // A new process may have other tools than the one it replaces.
                self.refresh_tools().await;
            }
            Err(error) => {
                let reason = error.to_string();
                tracing::warn!(server = %self.server.id, %reason, "a mounted server did not restart");
                self.last_error = Some(reason.clone());
                self.schedule_restart(myself, reason);
            }
        }
    }

    /// Lists the server's tools again and hands the listing to the sink.
    async fn refresh_tools(&mut self) {
        let Some(live) = &self.live else {
            return;
        };
        let listing = match Listing::of(&live.peer()).await {
            Ok(listing) => listing,
            Err(error) => {
                tracing::warn!(server = %self.server.id, %error, "the mounted server's tools could not be listed again");
                return;
            }
        };
        self.take(&listing).await;
    }

    /// Lists and admits the server's tools again if the lock file was written since the last
    /// admission (an accept made by another process).
    async fn readmit_if_pins_changed(&mut self) {
        if !self.sink.pins_changed() {
            return;
        }
        if let Some(pins) = self.sink.pins() {
            tracing::info!(server = %self.server.id, lock = %pins.path().display(), "the lock file changed; admitting the mounted server's tools again");
        }
        self.refresh_tools().await;
    }

    /// Pins what the server offers now as accepted, and admits its tools again.
    async fn accept(&mut self) -> Result<PinChanges, AcceptError> {
        let id = self.server.id.clone();
        let Some(live) = &self.live else {
            let reason = self
                .last_error
                .clone()
                .unwrap_or_else(|| "it is restarting".to_owned());
            return Err(AcceptError::Unavailable { id, reason });
        };
        let listing = Listing::of(&live.peer())
            .await
            .map_err(|error| AcceptError::ListTools {
                id: id.clone(),
                reason: error.to_string(),
            })?;
        let changes = match self.sink.pins() {
            Some(pins) => pins.accept(&id, &listing)?,
            None => PinChanges::default(),
        };
        self.take(&listing).await;
        Ok(changes)
    }

    /// Hands `listing` to the sink; a listing it refuses is the server's last error.
    async fn take(&mut self, listing: &Listing) {
        let taken = self
            .sink
            .take(&self.server, listing, &self.health, &self.progress)
            .await;
        if let Err(reason) = taken {
            self.last_error = Some(reason);
        }
    }

    /// Pings the server in a task of its own; a ping past the deadline loses the connection.
    fn ping(&self, myself: &ActorRef<ServerMsg>) {
        let Some(live) = &self.live else {
            return;
        };
        let peer = live.peer();
        let generation = self.generation;
        let deadline = self.policy.ping_deadline;
        let actor = myself.clone();
        tokio::spawn(async move {
            let ping = peer.send_request(ClientRequest::PingRequest(PingRequest {
                method: Default::default(),
                extensions: Default::default(),
            }));
            let reason = match tokio::time::timeout(deadline, ping).await {
                Ok(Ok(_)) => return,
                Ok(Err(error)) => format!("a ping failed: {error}"),
                Err(_) => format!("it did not answer a ping within {deadline:?} (wedged)"),
            };
            let _ = actor.send_message(ServerMsg::Lost { generation, reason });
        });
    }

    fn status(&self) -> MountStatus {
        let state = match &*self.health.borrow() {
            Health::Up { .. } => MountState::Up,
            Health::Restarting { .. } => MountState::Restarting,
            Health::Down { until, .. } => MountState::Down { until: *until },
            Health::Closed => MountState::Closed,
        };
        let shown = self.sink.shown(&self.server.id);
        MountStatus {
            id: self.server.id.clone(),
            state,
            pid: self.live.as_ref().and_then(Live::pid),
            restarts: self.restarts,
            tools: shown.tools,
            quarantined: shown.quarantined,
            last_error: self.last_error.clone(),
            findings: shown.findings,
            stderr: self
                .live
                .as_ref()
                .map(Live::stderr_tail)
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_grows_to_its_cap_with_full_jitter() {
        let policy = RestartPolicy {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
            ..RestartPolicy::default()
        };
        for _ in 0..200 {
            assert!(policy.backoff(0) <= Duration::from_millis(100));
            assert!(policy.backoff(2) <= Duration::from_millis(400));
            assert!(policy.backoff(30) <= Duration::from_secs(1));
        }
        // Full jitter: some delays are well under the ceiling.
        let delays: Vec<Duration> = (0..200).map(|_| policy.backoff(3)).collect();
        assert!(
            delays
                .iter()
                .any(|delay| *delay < Duration::from_millis(400))
        );
        assert!(
            delays
                .iter()
                .any(|delay| *delay > Duration::from_millis(400))
        );
    }
}
