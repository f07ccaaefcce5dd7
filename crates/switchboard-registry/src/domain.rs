//! A domain at run time: its name, its bulkhead, and its [`Placement`]: where its calls run.
//!
//! A domain runs in this process ([`LocalDomain`]: its state cell, the actor that owns its
//! writes, and the counts of its tools' panics and of its actor's restarts), or in another
//! registry reached through a [`DomainLink`], with whole calls (tool, JSON params, caller) as
//! the messages. The placement is the seam where a call enters its domain: the call path's
//! last step, `invoke::run_in_domain`, hands every call to [`LocalDomain::run`] or to the
//! link, and no earlier step knows how the domain runs. What a domain has however it runs (its
//! name, its bulkhead, its status) stays on [`DomainRuntime`]. The local domain is an enum arm
//! rather than one more link because a typed call must not turn into JSON, and a generic job
//! cannot pass through a trait object.
//!
//! Calls do not go through the domain actor: they run in the caller's task, reading the
//! published state directly and waiting only for a bulkhead permit. The actor is the domain's
//! only writer: a tool's write is a message in its mailbox, applied one at a time, and each
//! applied write publishes the next snapshot. It also logs the panics of its tools, and its
//! presence is what "the domain is running" means: when it stops, calls fail fast with
//! `domain_unavailable`. The state lives in the cell rather than in the actor, so an actor
//! restarted by its supervisor (the registry actor) carries on with the last published state.
//!
//! A write is a closure over the cell, so it runs where the state is: a linked domain's actor
//! and writes stay with the registry that serves it, and this registry starts no actor for it.
//! The one message that can come from elsewhere is a whole call as bytes ([`DomainMsg::Call`],
//! sent by another node over a cluster link): the actor spawns a task that serves it
//! ([`crate::remote`]), so no tool runs in its mailbox. With the `cluster` feature, that is
//! also the one message that serializes.

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use arc_swap::ArcSwapOption;
use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use switchboard_core::{
    ActionKey, CallScope, Caller, Category, DomainWriter, ErasedCell, InvokeError, ToolError,
    WriteOp,
};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::{
    invoke::{domain_unavailable, panic_message, timed_out},
    job::Job,
    link::{DomainLink, LinkHealth},
    registry::WeakToolRegistry,
    table::RegisteredTool,
};

/// Messages a domain actor handles.
#[derive(Debug)]
pub enum DomainMsg {
    /// Apply a write to the domain's state.
    Write(WriteOp),
    /// A tool of this domain panicked in a caller's task.
    ToolPanicked {
        /// The tool.
        tool: Arc<str>,
        /// The panic message.
        message: String,
    },
    /// Serve one whole call of a tool of this domain, and answer on the port: a
    /// [`RemoteCall`](crate::RemoteCall) as JSON bytes, answered with a
    /// [`RemoteAnswer`](crate::RemoteAnswer) as JSON bytes. Sent by another node through a
    /// cluster link, or by [`call_domain_actor`](crate::call_domain_actor).
    Call(Vec<u8>, RpcReplyPort<Vec<u8>>),
}

impl DomainMsg {
    /// The message's name, for spans and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            DomainMsg::Write(_) => "write",
            DomainMsg::ToolPanicked { .. } => "tool_panicked",
            DomainMsg::Call(..) => CALL_VARIANT,
        }
    }
}

/// The variant name [`DomainMsg::Call`] travels under.
const CALL_VARIANT: &str = "call";

/// Only [`DomainMsg::Call`] crosses nodes: its call and answer are bytes already. A write is a
/// closure over the domain's state and a panic report stays with the node it happened on;
/// both refuse to serialize, so sending one to an actor on another node fails.
#[cfg(feature = "cluster")]
impl ractor::Message for DomainMsg {
    fn serializable() -> bool {
        true
    }

    fn serialize(
        self,
    ) -> Result<ractor::message::SerializedMessage, ractor::message::BoxedDowncastErr> {
        match self {
            DomainMsg::Call(args, reply) => Ok(ractor::message::SerializedMessage::Call {
                variant: CALL_VARIANT.to_owned(),
                args,
                reply,
                metadata: None,
            }),
            DomainMsg::Write(_) | DomainMsg::ToolPanicked { .. } => {
                Err(ractor::message::BoxedDowncastErr)
            }
        }
    }

    fn deserialize(
        message: ractor::message::SerializedMessage,
    ) -> Result<Self, ractor::message::BoxedDowncastErr> {
        match message {
            ractor::message::SerializedMessage::Call {
                variant,
                args,
                reply,
                ..
            } if variant == CALL_VARIANT => Ok(DomainMsg::Call(args, reply)),
            _ => Err(ractor::message::BoxedDowncastErr),
        }
    }
}

/// What the registry knows of one running domain.
pub(crate) struct DomainRuntime {
    pub(crate) name: Arc<str>,
    /// The domain's configured concurrency: how many of its calls may run at once.
    concurrency: usize,
    /// Holds `concurrency` permits, one per running call; waiting calls get them in order.
    pub(crate) bulkhead: Semaphore,
    /// Where the domain's calls run.
    pub(crate) placement: Placement,
}

/// Where a domain's calls run.
pub(crate) enum Placement {
    /// In this process, in the domain's state cell, with the typed fast path (no JSON).
    InProcess(LocalDomain),
    /// In another registry (in this process or on another node), reached through a link with
    /// whole calls as JSON. This registry holds no state for it and runs no actor.
    Linked(Arc<dyn DomainLink>),
}

impl DomainRuntime {
    /// The runtime of the domain `name`, whose cell `make_cell` builds around the writer that
    /// hands writes to the domain's actor.
    pub(crate) fn new(
        name: &str,
        make_cell: impl FnOnce(Box<dyn DomainWriter>) -> ErasedCell,
        concurrency: usize,
    ) -> Arc<Self> {
        let concurrency = concurrency.min(Semaphore::MAX_PERMITS);
        Arc::new(Self {
            name: name.into(),
            concurrency,
            bulkhead: Semaphore::new(concurrency),
            placement: Placement::InProcess(LocalDomain::new(make_cell)),
        })
    }

    /// The runtime of the domain `name`, served by another registry through `link`.
    pub(crate) fn linked(name: &str, link: Arc<dyn DomainLink>, concurrency: usize) -> Arc<Self> {
        let concurrency = concurrency.min(Semaphore::MAX_PERMITS);
        Arc::new(Self {
            name: name.into(),
            concurrency,
            bulkhead: Semaphore::new(concurrency),
            placement: Placement::Linked(link),
        })
    }

    /// The domain as this process runs it; `None` for a domain served through a link.
    pub(crate) fn local(&self) -> Option<&LocalDomain> {
        match &self.placement {
            Placement::InProcess(local) => Some(local),
            Placement::Linked(_) => None,
        }
    }

    /// The domain's health. A linked domain counts as running while its link is not open,
    /// and its panics and restarts are counted where it runs.
    pub(crate) fn status(&self) -> DomainStatus {
        let (running, panics, restarts, placement, link) = match &self.placement {
            Placement::InProcess(local) => (
                local.is_running(),
                local.panics.load(Ordering::Relaxed),
                local.restarts.load(Ordering::Relaxed),
                IN_PROCESS.to_owned(),
                None,
            ),
            Placement::Linked(link) => {
                let health = link.health();
                let status = LinkStatus {
                    location: link.location(),
                    health: health.clone(),
                };
                let running = !matches!(health, LinkHealth::Open { .. });
                (running, 0, 0, link.kind().to_owned(), Some(status))
            }
        };
        DomainStatus {
            name: self.name.to_string(),
            placement,
            link,
            running,
            concurrency: self.concurrency,
            in_flight: self
                .concurrency
                .saturating_sub(self.bulkhead.available_permits()),
            panics,
            restarts,
        }
    }
}

/// A domain run by this process: its state cell, its actor while it runs, and the counts of
/// its tools' panics and of its actor's restarts.
pub(crate) struct LocalDomain {
    /// The domain's `DomainCell`, whose state type only its tools know.
    pub(crate) cell: ErasedCell,
    actor: Arc<ArcSwapOption<ActorRef<DomainMsg>>>,
    panics: AtomicU64,
    restarts: AtomicU64,
}

impl LocalDomain {
    /// A domain whose cell `make_cell` builds around the writer that hands writes to the
    /// domain's actor.
    fn new(make_cell: impl FnOnce(Box<dyn DomainWriter>) -> ErasedCell) -> Self {
        let actor = Arc::new(ArcSwapOption::empty());
        let writer = ActorWriter {
            actor: Arc::clone(&actor),
        };
        Self {
            cell: make_cell(Box::new(writer)),
            actor,
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
        }
    }

    /// The domain's actor, while it runs.
    pub(crate) fn actor(&self) -> Option<ActorRef<DomainMsg>> {
        self.actor.load_full().map(|actor| (*actor).clone())
    }

    /// Forgets the actor `id` if it is still the domain's actor (a newer one may have started).
    pub(crate) fn clear_actor(&self, id: ractor::ActorId) {
        let current = self.actor.load();
        if current.as_ref().is_some_and(|actor| actor.get_id() == id) {
            self.actor.compare_and_swap(&current, None);
        }
    }

    fn is_running(&self) -> bool {
        self.actor.load().is_some()
    }

    /// Tells the domain's actor that one of its tools panicked (it logs and counts it).
    fn report_panic(&self, tool: &Arc<str>, message: &str) {
        self.panics.fetch_add(1, Ordering::Relaxed);
        if let Some(actor) = self.actor.load().as_ref() {
            let _ = actor.cast(DomainMsg::ToolPanicked {
                tool: Arc::clone(tool),
                message: message.to_owned(),
            });
        }
    }

    pub(crate) fn note_restart(&self) {
        self.restarts.fetch_add(1, Ordering::Relaxed);
    }

    /// The scope `caller` runs `tool`'s code in, as a tool of `category`: the tool's own for
    /// its body, `read` for its gate (which cannot write).
    pub(crate) fn scope(
        &self,
        tool: &RegisteredTool,
        caller: Caller,
        category: Category,
    ) -> CallScope {
        CallScope::new(
            caller,
            Arc::clone(&tool.name),
            category,
            Arc::clone(&self.cell),
        )
    }

    /// Runs `tool`'s job as `caller` (and as `action`, for a mutation holding its key): fails
    /// fast if the domain's actor has stopped, then waits for a permit of `bulkhead` and runs
    /// the tool body, catching a panic. The tool's timeout covers both the wait for a permit
    /// and the run.
    pub(crate) async fn run<J: Job>(
        &self,
        bulkhead: &Semaphore,
        tool: &RegisteredTool,
        caller: Caller,
        action: Option<ActionKey>,
        job: J,
    ) -> Result<J::Output, InvokeError> {
        if !self.is_running() {
            return Err(domain_unavailable(tool, "its actor has stopped"));
        }
        let scope = self
            .scope(tool, caller, tool.category())
            .with_action(action);
        let running = async {
            let _permit = bulkhead
                .acquire()
                .await
                .map_err(|_| domain_unavailable(tool, "its bulkhead is closed"))?;
            Ok(AssertUnwindSafe(job.run(scope)).catch_unwind().await)
        };
        match tokio::time::timeout(tool.timeout, running).await {
            Err(_) => Err(timed_out(tool)),
            Ok(Err(refused)) => Err(refused),
            Ok(Ok(ran)) => self.settle(tool, ran),
        }
    }

    /// The call's result from how the tool's run ended.
    fn settle<O>(
        &self,
        tool: &RegisteredTool,
        ran: std::thread::Result<Result<O, ToolError>>,
    ) -> Result<O, InvokeError> {
        match ran {
            Err(panic) => {
                let message = panic_message(&*panic);
                self.report_panic(&tool.name, &message);
                Err(InvokeError::ToolPanicked {
                    tool: tool.name.to_string(),
                    message,
                })
            }
            // The domain's actor went away while the tool was writing through it.
            Ok(Err(error)) if error.code() == ToolError::DOMAIN_UNAVAILABLE => Err(
                domain_unavailable(tool, "its actor stopped during the call"),
            ),
            Ok(Err(error)) => Err(InvokeError::ToolFailed {
                tool: tool.name.to_string(),
                error,
            }),
            Ok(Ok(output)) => Ok(output),
        }
    }
}

/// The placement of a domain run by this process, as [`DomainStatus::placement`] names it.
pub const IN_PROCESS: &str = "in-process";

/// A snapshot of one domain's health.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DomainStatus {
    /// The domain.
    pub name: String,
    /// Where its calls run: [`IN_PROCESS`], or the [`kind`](DomainLink::kind) of the link to
    /// the registry that serves it.
    pub placement: String,
    /// For a domain served by another registry: where, and the link's health.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkStatus>,
    /// Whether its actor is running; for a domain served by another registry, whether its
    /// link takes calls (it is not open).
    pub running: bool,
    /// Its bulkhead size.
    pub concurrency: usize,
    /// Calls running now.
    pub in_flight: usize,
    /// Tool panics since start (counted where the domain runs: 0 for a linked domain).
    pub panics: u64,
    /// Actor restarts since start (counted where the domain runs: 0 for a linked domain).
    pub restarts: u64,
}

/// Where a domain served by another registry lives, and its link's health.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LinkStatus {
    /// Where the domain lives ([`DomainLink::location`]).
    pub location: String,
    /// The link's health ([`DomainLink::health`]).
    pub health: LinkHealth,
}

/// Routes a domain's writes to whichever actor currently runs it.
struct ActorWriter {
    actor: Arc<ArcSwapOption<ActorRef<DomainMsg>>>,
}

impl DomainWriter for ActorWriter {
    fn submit(&self, op: WriteOp) -> Result<(), WriteOp> {
        let Some(actor) = self.actor.load_full() else {
            return Err(op);
        };
        match actor.cast(DomainMsg::Write(op)) {
            Ok(()) => Ok(()),
            Err(ractor::MessagingErr::SendErr(DomainMsg::Write(op))) => Err(op),
            // Otherwise the op was dropped undelivered; dropping it drops its reply channel,
            // so the waiting tool learns that the domain is gone.
            Err(_) => Ok(()),
        }
    }
}

/// The actor that owns one domain's writes.
pub(crate) struct DomainActor;

/// What a domain actor starts with and keeps: its domain, and the registry it serves calls of
/// other nodes on (weak: the registry actor supervises this one).
pub(crate) struct DomainArgs {
    pub(crate) runtime: Arc<DomainRuntime>,
    pub(crate) registry: WeakToolRegistry,
    /// The process group the actor joins, where other nodes find it ([`crate::cluster`]).
    #[cfg(feature = "cluster")]
    pub(crate) group: Option<String>,
}

impl Actor for DomainActor {
    type Msg = DomainMsg;
    type State = DomainArgs;
    type Arguments = DomainArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<DomainMsg>,
        args: DomainArgs,
    ) -> Result<DomainArgs, ActorProcessingErr> {
        #[cfg(feature = "cluster")]
        if let Some(group) = &args.group {
            // Left when the actor stops; a restarted actor joins again.
            ractor::pg::join(group.clone(), vec![myself.get_cell()]);
        }
        if let Some(local) = args.runtime.local() {
            local.actor.store(Some(Arc::new(myself)));
        }
        tracing::debug!(domain = %args.runtime.name, "domain actor started");
        Ok(args)
    }

    async fn post_stop(
        &self,
        myself: ActorRef<DomainMsg>,
        state: &mut DomainArgs,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(local) = state.runtime.local() {
            local.clear_actor(myself.get_id());
        }
        tracing::debug!(domain = %state.runtime.name, "domain actor stopped");
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<DomainMsg>,
        message: DomainMsg,
        state: &mut DomainArgs,
    ) -> Result<(), ActorProcessingErr> {
        let domain = &state.runtime.name;
        let _span =
            tracing::debug_span!("domain_message", %domain, message = message.kind()).entered();
        match message {
            DomainMsg::Write(op) => op.apply(),
            DomainMsg::ToolPanicked { tool, message } => {
                tracing::error!(%domain, %tool, %message, "tool panicked; the domain keeps serving");
            }
            // Served in a task of its own: the mailbox never waits for a tool.
            DomainMsg::Call(call, reply) => {
                let serving =
                    crate::remote::serve_call(state.registry.clone(), Arc::clone(domain), call);
                tokio::spawn(
                    async move {
                        // The sender may have stopped waiting; the call's records say how it ended.
                        let _ = reply.send(serving.await);
                    }
                    .in_current_span(),
                );
            }
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "cluster"))]
mod cluster_tests {
    use ractor::{
        Message,
        message::{BoxedDowncastErr, SerializedMessage},
    };

    use super::*;

    #[test]
    fn a_call_crosses_nodes_and_its_answer_reaches_the_sender() {
        let (sender, mut answered) = ractor::concurrency::oneshot();

        let serialized = DomainMsg::Call(b"the call".to_vec(), sender.into())
            .serialize()
            .expect("a call serializes");
        let Ok(DomainMsg::Call(call, reply)) = DomainMsg::deserialize(serialized) else {
            panic!("a serialized call reads back as a call");
        };
        reply
            .send(b"the answer".to_vec())
            .expect("the sender waits");

        assert!(DomainMsg::serializable());
        assert_eq!(call, b"the call");
        assert_eq!(answered.try_recv().as_deref(), Ok(&b"the answer"[..]));
    }

    #[test]
    fn a_panic_report_stays_on_its_node_and_only_a_call_reads_back() {
        let report = DomainMsg::ToolPanicked {
            tool: Arc::from("relay_stamp"),
            message: "boom".to_owned(),
        };
        let cast = SerializedMessage::Cast {
            variant: CALL_VARIANT.to_owned(),
            args: b"the call".to_vec(),
            metadata: None,
        };

        assert_eq!(report.serialize().err(), Some(BoxedDowncastErr));
        assert!(DomainMsg::deserialize(cast).is_err());
    }
}
