//! A domain at run time: its state cell, its bulkhead, and the actor that owns its writes.
//!
//! Calls do not go through the domain actor: they run in the caller's task, reading the
//! published state directly and waiting only for a bulkhead permit. The actor is the domain's
//! only writer: a tool's write is a message in its mailbox, applied one at a time, and each
//! applied write publishes the next snapshot. It also logs the panics of its tools, and its
//! presence is what "the domain is running" means: when it stops, calls fail fast with
//! `domain_unavailable`. The state lives in the cell rather than in the actor, so an actor
//! restarted by its supervisor (the registry actor) carries on with the last published state.
//!
//! A write is a closure over the cell, so it runs where the state is. A domain on another node
//! would be reached one level up, at the registry's seam, with whole calls (tool, params,
//! caller) as the messages; its actor and its writes would stay on that node.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use arc_swap::ArcSwapOption;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use switchboard_core::{DomainWriter, ErasedCell, WriteOp};
use tokio::sync::Semaphore;

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
}

impl DomainMsg {
    /// The message's name, for spans and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            DomainMsg::Write(_) => "write",
            DomainMsg::ToolPanicked { .. } => "tool_panicked",
        }
    }
}

/// What the registry knows of one running domain.
pub(crate) struct DomainRuntime {
    pub(crate) name: Arc<str>,
    /// The domain's `DomainCell`, whose state type only its tools know.
    pub(crate) cell: ErasedCell,
    /// The domain's configured concurrency: how many of its calls may run at once.
    concurrency: usize,
    /// Holds `concurrency` permits, one per running call; waiting calls get them in order.
    pub(crate) bulkhead: Semaphore,
    actor: Arc<ArcSwapOption<ActorRef<DomainMsg>>>,
    panics: AtomicU64,
    restarts: AtomicU64,
}

impl DomainRuntime {
    /// The runtime of the domain `name`, whose cell `make_cell` builds around the writer that
    /// hands writes to the domain's actor.
    pub(crate) fn new(
        name: &str,
        make_cell: impl FnOnce(Box<dyn DomainWriter>) -> ErasedCell,
        concurrency: usize,
    ) -> Arc<Self> {
        let actor = Arc::new(ArcSwapOption::empty());
        let writer = ActorWriter {
            actor: Arc::clone(&actor),
        };
        let concurrency = concurrency.min(Semaphore::MAX_PERMITS);
        Arc::new(Self {
            name: name.into(),
            cell: make_cell(Box::new(writer)),
            concurrency,
            bulkhead: Semaphore::new(concurrency),
            actor,
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
        })
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

    pub(crate) fn is_running(&self) -> bool {
        self.actor.load().is_some()
    }

    /// Tells the domain's actor that one of its tools panicked (it logs and counts it).
    pub(crate) fn report_panic(&self, tool: &Arc<str>, message: &str) {
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

    pub(crate) fn status(&self) -> DomainStatus {
        DomainStatus {
            name: self.name.to_string(),
            running: self.is_running(),
            concurrency: self.concurrency,
            in_flight: self
                .concurrency
                .saturating_sub(self.bulkhead.available_permits()),
            panics: self.panics.load(Ordering::Relaxed),
            restarts: self.restarts.load(Ordering::Relaxed),
        }
    }
}

/// A snapshot of one domain's health.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DomainStatus {
    /// The domain.
    pub name: String,
    /// Whether its actor is running.
    pub running: bool,
    /// Its bulkhead size.
    pub concurrency: usize,
    /// Calls running now.
    pub in_flight: usize,
    /// Tool panics since start.
    pub panics: u64,
    /// Actor restarts since start.
    pub restarts: u64,
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

impl Actor for DomainActor {
    type Msg = DomainMsg;
    type State = Arc<DomainRuntime>;
    type Arguments = Arc<DomainRuntime>;

    async fn pre_start(
        &self,
        myself: ActorRef<DomainMsg>,
        runtime: Arc<DomainRuntime>,
    ) -> Result<Arc<DomainRuntime>, ActorProcessingErr> {
        runtime.actor.store(Some(Arc::new(myself)));
        tracing::debug!(domain = %runtime.name, "domain actor started");
        Ok(runtime)
    }

    async fn post_stop(
        &self,
        myself: ActorRef<DomainMsg>,
        runtime: &mut Arc<DomainRuntime>,
    ) -> Result<(), ActorProcessingErr> {
        runtime.clear_actor(myself.get_id());
        tracing::debug!(domain = %runtime.name, "domain actor stopped");
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<DomainMsg>,
        message: DomainMsg,
        runtime: &mut Arc<DomainRuntime>,
    ) -> Result<(), ActorProcessingErr> {
        let _span = tracing::debug_span!("domain_message", domain = %runtime.name, message = message.kind())
            .entered();
        match message {
            DomainMsg::Write(op) => op.apply(),
            DomainMsg::ToolPanicked { tool, message } => {
                tracing::error!(domain = %runtime.name, %tool, %message, "tool panicked; the domain keeps serving");
            }
        }
        Ok(())
    }
}
