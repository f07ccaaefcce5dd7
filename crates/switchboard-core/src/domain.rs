//! Domains: the state a group of tools shares, and the context a tool body runs with.
//!
//! A domain declares its state with [`domain!`](crate::domain). The runtime gives each domain
//! a [`DomainCell`]: the current state, published as an immutable snapshot that any number of
//! calls read at once, and a [`DomainWriter`] through which every change goes, one at a time,
//! in the domain's actor. Reads never wait behind writes; writes never race each other.
//!
//! Only `execute` and `restricted` tools get to write: [`ToolContext::write`] refuses the
//! others, so a `read` or `propose` tool cannot change state even by mistake.

use std::{
    any::{Any, type_name},
    fmt,
    ops::Deref,
    sync::Arc,
};

use arc_swap::ArcSwap;

use crate::{category::Category, context::Caller, error::ToolError};

/// A domain's state, type-erased. Domain state must be `Clone`: a write applies to a copy,
/// which is then published whole.
pub type DomainState = Box<dyn Any + Send + Sync>;

/// A domain declared by a crate with [`domain!`](crate::domain).
#[derive(Debug)]
pub struct DomainEntry {
    /// Unique domain name; tools name it in `#[tool(domain = "…")]`.
    pub name: &'static str,
    /// What the domain is about.
    pub description: &'static str,
    /// Builds the initial state when the registry starts. The state lives in the domain's cell,
    /// not in its actor, so a restarted actor carries on with the last published state.
    pub init: fn() -> DomainState,
    /// The state's type name, for error messages.
    pub state_type: &'static str,
}

inventory::collect!(DomainEntry);

/// Every domain linked into this binary, in unspecified order.
pub fn linked_domains() -> impl Iterator<Item = &'static DomainEntry> {
    inventory::iter::<DomainEntry>.into_iter()
}

/// Declares a domain and its state. The state type must be `Clone + Send + Sync + 'static`.
///
/// ```
/// #[derive(Clone, Default)]
/// pub struct Counter { pub value: u64 }
///
/// switchboard_core::domain! {
///     /// Counts things.
///     name: "counter",
///     state: Counter = Counter::default,
/// }
/// ```
#[macro_export]
macro_rules! domain {
    (
        #[doc = $description:literal]
        $(#[doc = $more:literal])*
        name: $name:literal,
        state: $state:ty = $init:path $(,)?
    ) => {
        $crate::__private::inventory::submit! {
            $crate::DomainEntry {
                name: $name,
                description: $crate::__private::concat!($description $(, "\n", $more)*),
                init: || -> $crate::DomainState {
                    let state: $state = $init();
                    $crate::__private::Box::new(state)
                },
                state_type: $crate::__private::stringify!($state),
            }
        }
    };
}

/// Runs a domain's writes one at a time. The runtime implements it with the domain's actor.
pub trait DomainWriter: Send + Sync + 'static {
    /// Queues `op`; gives it back if the domain cannot take it (its actor is gone).
    fn submit(&self, op: WriteOp) -> Result<(), WriteOp>;
}

/// A queued change to a domain's state.
pub struct WriteOp(Box<dyn FnOnce(&DomainCell) + Send>);

impl WriteOp {
    /// Applies the change to `cell`. Called by the domain's actor, one op at a time.
    pub fn apply(self, cell: &DomainCell) {
        (self.0)(cell);
    }
}

impl fmt::Debug for WriteOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WriteOp")
    }
}

/// A domain's published state and the way to change it.
pub struct DomainCell {
    name: Arc<str>,
    /// The last published snapshot, read by every call of the domain's tools.
    state: ArcSwap<DomainState>,
    writer: Box<dyn DomainWriter>,
}

impl DomainCell {
    /// Makes a cell holding `state`, changed only through `writer`.
    pub fn new(
        name: impl Into<Arc<str>>,
        state: DomainState,
        writer: Box<dyn DomainWriter>,
    ) -> Self {
        Self {
            name: name.into(),
            state: ArcSwap::from_pointee(state),
            writer,
        }
    }

    /// A cell with no actor behind it: writes apply at once, in the writing task, one at a
    /// time. For unit tests of tool bodies, benchmarks, and tools run outside a registry; the
    /// registry gives every domain an actor instead.
    pub fn standalone(name: impl Into<Arc<str>>, state: DomainState) -> Arc<DomainCell> {
        Arc::new_cyclic(|cell| {
            DomainCell::new(
                name,
                state,
                Box::new(InlineWriter {
                    cell: cell.clone(),
                    serial: std::sync::Mutex::new(()),
                }),
            )
        })
    }

    /// The domain's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current snapshot of the state, if it is an `S`.
    pub fn read<S: Any + Send + Sync>(&self) -> Result<StateRef<S>, ToolError> {
        // A guard, not a clone of the `Arc`: every call of every tool of the domain reads the
        // state, and a clone is a write to the one reference count they all share.
        let snapshot = self.state.load();
        if snapshot.is::<S>() {
            Ok(StateRef {
                snapshot,
                _type: std::marker::PhantomData,
            })
        } else {
            Err(self.state_mismatch::<S>())
        }
    }

    /// Replaces the whole state. Only the domain's actor calls this, from a [`WriteOp`].
    pub fn publish(&self, state: DomainState) {
        self.state.store(Arc::new(state));
    }

    /// Changes the state through the domain's actor and returns what `update` returned.
    async fn write<S, R>(
        &self,
        update: impl FnOnce(&mut S) -> R + Send + 'static,
    ) -> Result<R, ToolError>
    where
        S: Clone + Send + Sync + 'static,
        R: Send + 'static,
    {
        let (reply, outcome) = futures_channel::oneshot::channel::<Result<R, ToolError>>();
        let op = WriteOp(Box::new(move |cell: &DomainCell| {
            let current = cell.state.load();
            let Some(current) = current.downcast_ref::<S>() else {
                let _ = reply.send(Err(cell.state_mismatch::<S>()));
                return;
            };
            // A panicking update (or a panicking `Clone` of the state) leaves the published
            // state untouched: the update only ever saw a copy.
            let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut next = current.clone();
                let result = update(&mut next);
                (next, result)
            }));
            let outcome = match applied {
                Ok((next, result)) => {
                    cell.publish(Box::new(next));
                    Ok(result)
                }
                Err(_) => Err(ToolError::new(
                    "write_panicked",
                    format!(
                        "a write to the `{}` domain panicked; its state is unchanged",
                        cell.name
                    ),
                )),
            };
            // The caller may have timed out and gone; the write stands either way.
            let _ = reply.send(outcome);
        }));
        if self.writer.submit(op).is_err() {
            return Err(self.gone());
        }
        outcome.await.map_err(|_| self.gone())?
    }

    fn gone(&self) -> ToolError {
        ToolError::new(
            "domain_unavailable",
            format!(
                "the `{}` domain stopped before applying the write",
                self.name
            ),
        )
    }

    fn state_mismatch<S>(&self) -> ToolError {
        ToolError::new(
            "domain_state_mismatch",
            format!(
                "the `{}` domain's state is not a `{}`: the tool names the wrong domain or type",
                self.name,
                type_name::<S>()
            ),
        )
    }
}

impl fmt::Debug for DomainCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DomainCell")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Applies writes in the writing task, one at a time: the writer of [`DomainCell::standalone`].
struct InlineWriter {
    cell: std::sync::Weak<DomainCell>,
    serial: std::sync::Mutex<()>,
}

impl DomainWriter for InlineWriter {
    fn submit(&self, op: WriteOp) -> Result<(), WriteOp> {
        let Some(cell) = self.cell.upgrade() else {
            return Err(op);
        };
        // A poisoned lock only means an earlier write panicked; the state it guards was
        // never touched (writes apply to a copy), so carrying on is safe.
        let _serial = self
            .serial
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        op.apply(&cell);
        Ok(())
    }
}

/// A snapshot of a domain's state. It stays valid, unchanged, for as long as it is held.
pub struct StateRef<S> {
    snapshot: arc_swap::Guard<Arc<DomainState>>,
    _type: std::marker::PhantomData<fn() -> S>,
}

impl<S: Any> Deref for StateRef<S> {
    type Target = S;

    fn deref(&self) -> &S {
        match self.snapshot.downcast_ref::<S>() {
            Some(state) => state,
            // `DomainCell::read` checked the type before making this reference.
            None => unreachable!("StateRef created for a state of another type"),
        }
    }
}

impl<S> fmt::Debug for StateRef<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateRef")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallContext, Category};

    fn context(category: Category, cell: Arc<DomainCell>) -> ToolContext {
        let caller = CallContext::builder()
            .org("acme")
            .user("u")
            .session("s")
            .correlation("c")
            .build()
            .verify()
            .expect("complete context");
        ToolContext::new(caller, "test_tool".into(), category, cell)
    }

    #[test]
    fn standalone_cells_apply_writes_and_publish_snapshots() {
        let cell = DomainCell::standalone("counter", Box::new(0_u64));
        let ctx = context(Category::Execute, Arc::clone(&cell));
        let before = ctx.state::<u64>().expect("state is a u64");
        let written = futures::executor::block_on(ctx.write(|n: &mut u64| {
            *n += 1;
            *n
        }));
        assert_eq!(written, Ok(1));
        assert_eq!(*before, 0, "a snapshot never changes under its reader");
        assert_eq!(*ctx.state::<u64>().expect("u64"), 1);
    }

    #[test]
    fn many_snapshots_held_at_once_outlive_writes_and_move_between_threads() {
        // More snapshots than arc_swap keeps cheap slots for on one thread, each then written
        // over: every one still reads what it read, here or on another thread.
        let cell = DomainCell::standalone("counter", Box::new(0_u64));
        let ctx = context(Category::Execute, Arc::clone(&cell));
        let mut held = Vec::new();
        for expected in 0..20_u64 {
            held.push((expected, ctx.state::<u64>().expect("u64")));
            let written = futures::executor::block_on(ctx.write(|n: &mut u64| {
                *n += 1;
                *n
            }));
            assert_eq!(written, Ok(expected + 1));
        }
        std::thread::spawn(move || {
            for (expected, snapshot) in held {
                assert_eq!(*snapshot, expected);
            }
        })
        .join()
        .expect("the snapshots read on another thread");
        assert_eq!(*ctx.state::<u64>().expect("u64"), 20);
    }

    #[test]
    fn read_and_propose_tools_cannot_write() {
        for category in [Category::Read, Category::Propose] {
            let cell = DomainCell::standalone("counter", Box::new(0_u64));
            let ctx = context(category, cell);
            let refused = futures::executor::block_on(ctx.write(|n: &mut u64| *n += 1));
            assert_eq!(
                refused.map_err(|e| e.code().to_owned()),
                Err("write_not_allowed".to_owned())
            );
            assert_eq!(*ctx.state::<u64>().expect("u64"), 0);
        }
    }

    #[test]
    fn a_panicking_write_leaves_the_state_unchanged() {
        let cell = DomainCell::standalone("counter", Box::new(7_u64));
        let ctx = context(Category::Execute, cell);
        let outcome =
            futures::executor::block_on(ctx.write(|_: &mut u64| -> u64 { panic!("boom") }));
        assert_eq!(
            outcome.map_err(|e| e.code().to_owned()),
            Err("write_panicked".to_owned())
        );
        assert_eq!(*ctx.state::<u64>().expect("u64"), 7);
    }

    #[test]
    fn the_wrong_state_type_is_an_error_not_a_panic() {
        let cell = DomainCell::standalone("counter", Box::new(0_u64));
        let ctx = context(Category::Execute, cell);
        let error = ctx.state::<String>().expect_err("state is not a String");
        assert_eq!(error.code(), "domain_state_mismatch");
    }
}

/// What a tool body sees: the verified caller, its own category, and its domain.
#[derive(Debug, Clone)]
pub struct ToolContext {
    caller: Caller,
    tool: Arc<str>,
    category: Category,
    domain: Arc<DomainCell>,
}

impl ToolContext {
    /// Made by the runtime after every check has passed.
    pub fn new(
        caller: Caller,
        tool: Arc<str>,
        category: Category,
        domain: Arc<DomainCell>,
    ) -> Self {
        Self {
            caller,
            tool,
            category,
            domain,
        }
    }

    /// The verified caller: org, user, session, correlation id, roles, initiator.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Gives the caller back once the tool has run: the runtime moves its ids into the call's
    /// audit record instead of copying them again.
    pub fn into_caller(self) -> Caller {
        self.caller
    }

    /// The tool being run.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Its category.
    pub fn category(&self) -> Category {
        self.category
    }

    /// Reports progress to whoever started the call: `done` out of `total` (if known), with an
    /// optional message. MCP clients that asked for progress get `notifications/progress`;
    /// when nobody listens this does nothing and costs nothing, so report freely. `done`
    /// should increase with every report.
    ///
    /// ```
    /// # use switchboard_core::ToolContext;
    /// # fn work(ctx: &ToolContext, items: &[&str]) {
    /// let total = items.len() as f64;
    /// for (index, item) in items.iter().enumerate() {
    ///     // ... handle `item` ...
    ///     ctx.progress(index as f64 + 1.0, Some(total), None);
    /// }
    /// # }
    /// ```
    #[inline]
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        self.caller.progress.report(done, total, message);
    }

    /// Whether anyone receives [`ToolContext::progress`] reports: check it before building an
    /// expensive message.
    pub fn reports_progress(&self) -> bool {
        self.caller.progress.is_active()
    }

    /// A snapshot of the domain's state. Never waits for writes.
    pub fn state<S: Any + Send + Sync>(&self) -> Result<StateRef<S>, ToolError> {
        self.domain.read::<S>()
    }

    /// Changes the domain's state through its actor. Only `execute` and `restricted` tools may.
    pub async fn write<S, R>(
        &self,
        update: impl FnOnce(&mut S) -> R + Send + 'static,
    ) -> Result<R, ToolError>
    where
        S: Clone + Send + Sync + 'static,
        R: Send + 'static,
    {
        if !self.category.mutates() {
            return Err(ToolError::new(
                "write_not_allowed",
                format!(
                    "`{}` is a {} tool and may not change state; only execute and restricted tools write",
                    self.tool, self.category
                ),
            ));
        }
        self.domain.write(update).await
    }
}
