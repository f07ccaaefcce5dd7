//! Domains: the state a group of tools shares.
//!
//! A domain is a type declared with [`domain!`](crate::domain), which names its state. A tool
//! names its domain (`#[tool(domain = Roster, ...)]`) and reads the state through a
//! [`ToolContext<RosterState>`](crate::ToolContext): the state's type is part of the tool's
//! signature, so a tool wired to the wrong state does not compile. A domain without state is
//! declared with no `state` line; its tools take a plain `&ToolContext`.
//!
//! The runtime gives each domain a [`DomainCell`]: the current state, published as an
//! immutable snapshot that any number of calls read at once, and a [`DomainWriter`] through
//! which every change goes, one at a time. In a registry the writer is the domain's actor:
//! a write is a message in its mailbox, applied in order. Reads never wait behind writes;
//! writes never race each other.

use std::{any::Any, fmt, ops::Deref, sync::Arc};

use arc_swap::ArcSwap;

use crate::error::ToolError;

/// A domain: a name and the type of the state its tools share. Declare one with
/// [`domain!`](crate::domain), which also registers it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a domain",
    label = "not a domain",
    note = "a tool's `domain` is a type declared with `switchboard_core::domain!`"
)]
pub trait Domain: Send + Sync + 'static {
    /// The domain's unique name: 1 to 32 characters from `[a-z0-9_]`. Tool names default to
    /// `<NAME>_<function>`.
    const NAME: &'static str;
    /// The state its tools share (`()` for a domain without state). `Clone`, because a write
    /// applies to a copy, which is then published whole.
    type State: Clone + Send + Sync + 'static;
}

/// A domain cell whose state type has been erased, as the registry stores it: an
/// `Arc<DomainCell<S>>` for the domain's state type `S`.
pub type ErasedCell = Arc<dyn Any + Send + Sync>;

/// A domain declared by a crate with [`domain!`](crate::domain).
#[derive(Debug)]
pub struct DomainEntry {
    /// Unique domain name.
    pub name: &'static str,
    /// What the domain is about.
    pub description: &'static str,
    /// Builds the domain's cell when the registry starts: the initial state, changed only
    /// through `writer`. The state lives in the cell, not in the domain's actor, so a
    /// restarted actor carries on with the last published state.
    pub cell: fn(writer: Box<dyn DomainWriter>) -> ErasedCell,
    /// The state's type name, for error messages.
    pub state_type: &'static str,
}

inventory::collect!(DomainEntry);

/// Every domain linked into this binary, in unspecified order.
pub fn linked_domains() -> impl Iterator<Item = &'static DomainEntry> {
    inventory::iter::<DomainEntry>.into_iter()
}

/// Declares a domain: a unit type implementing [`Domain`], registered at link time.
///
/// With state, the state type must be `Clone + Send + Sync + 'static`, and `= path` names the
/// function that builds the initial state:
///
/// ```
/// #[derive(Clone, Default)]
/// pub struct CounterState { pub value: u64 }
///
/// switchboard_core::domain! {
///     /// Counts things.
///     pub Counter { name: "counter", state: CounterState = CounterState::default }
/// }
/// ```
///
/// Without state, its tools take a plain `&ToolContext`:
///
/// ```
/// switchboard_core::domain! {
///     /// Says hello.
///     pub Greetings { name: "greetings" }
/// }
/// ```
#[macro_export]
macro_rules! domain {
    (
        #[doc = $description:literal]
        $(#[doc = $more:literal])*
        $vis:vis $domain:ident { name: $name:literal, state: $state:ty = $init:path $(,)? }
    ) => {
        $crate::__domain!([$description $(, $more)*] $vis $domain, $name, $state, $init);
    };
    (
        #[doc = $description:literal]
        $(#[doc = $more:literal])*
        $vis:vis $domain:ident { name: $name:literal $(,)? }
    ) => {
        $crate::__domain!([$description $(, $more)*] $vis $domain, $name, (), $crate::__private::no_state);
    };
}

/// The expansion of [`domain!`](crate::domain). Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __domain {
    ([$description:literal $(, $more:literal)*] $vis:vis $domain:ident, $name:literal, $state:ty, $init:path) => {
        #[doc = $description]
        $(#[doc = $more])*
        #[derive(Debug, Clone, Copy, Default)]
        $vis struct $domain;

        impl $crate::Domain for $domain {
            const NAME: &'static str = $crate::__private::domain_name($name);
            type State = $state;
        }

        $crate::__private::inventory::submit! {
            $crate::DomainEntry {
                name: <$domain as $crate::Domain>::NAME,
                description: $crate::__private::concat!($description $(, "\n", $more)*),
                cell: |writer| -> $crate::ErasedCell {
                    let state: $state = $init();
                    $crate::DomainCell::new(<$domain as $crate::Domain>::NAME, state, writer)
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

/// A queued change to a domain's state: applying it publishes the next snapshot and answers
/// the tool that asked for it.
///
/// It is a closure over the cell, so it only runs where the cell is. A domain reached on
/// another node is handed whole calls (tool, params, caller) at the registry's seam, and its
/// writes stay local to that node.
pub struct WriteOp(Box<dyn FnOnce() + Send>);

impl WriteOp {
    /// Applies the change. Called by the domain's writer, one op at a time.
    pub fn apply(self) {
        (self.0)();
    }
}

impl fmt::Debug for WriteOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WriteOp")
    }
}

/// A domain's published state of type `S`, and the way to change it.
pub struct DomainCell<S> {
    pub(crate) name: Arc<str>,
    /// The last published snapshot, read by every call of the domain's tools.
    state: ArcSwap<S>,
    writer: Box<dyn DomainWriter>,
}

impl<S: Clone + Send + Sync + 'static> DomainCell<S> {
    /// Makes a cell holding `state`, changed only through `writer`.
    pub fn new(name: impl Into<Arc<str>>, state: S, writer: Box<dyn DomainWriter>) -> Arc<Self> {
        Arc::new(Self {
            name: name.into(),
            state: ArcSwap::from_pointee(state),
            writer,
        })
    }

    /// A cell with no actor behind it, for unit tests of tool bodies, benchmarks and tools run
    /// outside a registry: a write applies at once, in the writing task. Writes from several
    /// tasks at once take turns on a lock; in a registry the domain's actor orders them
    /// instead.
    pub fn standalone(name: impl Into<Arc<str>>, state: S) -> Arc<Self> {
        Self::new(
            name,
            state,
            Box::new(InlineWriter(std::sync::Mutex::new(()))),
        )
    }

    /// The domain's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current snapshot of the state.
    pub fn read(&self) -> StateRef<S> {
        // A guard, not a clone of the `Arc`: every call of every tool of the domain reads the
        // state, and a clone is a write to the one reference count they all share.
        StateRef(self.state.load())
    }

    /// Changes the state through the domain's writer and returns what `update` returned.
    ///
    /// `update` runs on a copy of the current state, which is then published whole; if it
    /// panics, the published state is unchanged and the call gets `write_panicked`.
    pub(crate) async fn write<R: Send + 'static>(
        self: &Arc<Self>,
        update: impl FnOnce(&mut S) -> R + Send + 'static,
    ) -> Result<R, ToolError> {
        let (reply, outcome) = futures_channel::oneshot::channel::<Result<R, ToolError>>();
        let cell = Arc::clone(self);
        let op = WriteOp(Box::new(move || {
            let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut next = S::clone(&cell.state.load());
                let result = update(&mut next);
                (next, result)
            }));
            let mut previous = None;
            let outcome = match applied {
                Ok((next, result)) => {
                    previous = Some(cell.state.swap(Arc::new(next)));
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
            // Only now may the previous snapshot go: the write is answered even if dropping
            // the old state panics (which fails the actor, and its supervisor restarts it).
            drop(previous);
        }));
        if self.writer.submit(op).is_err() {
            return Err(self.gone());
        }
        outcome.await.map_err(|_| self.gone())?
    }

    fn gone(&self) -> ToolError {
        ToolError::new(
            ToolError::DOMAIN_UNAVAILABLE,
            format!(
                "the `{}` domain stopped before applying the write",
                self.name
            ),
        )
    }
}

impl<S> fmt::Debug for DomainCell<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DomainCell")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Applies writes in the writing task, one at a time: the writer of
/// [`DomainCell::standalone`].
struct InlineWriter(std::sync::Mutex<()>);

impl DomainWriter for InlineWriter {
    fn submit(&self, op: WriteOp) -> Result<(), WriteOp> {
        // A poisoned lock only means an earlier write panicked; the state it guards was
        // never touched (writes apply to a copy), so carrying on is safe.
        let _turn = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        op.apply();
        Ok(())
    }
}

/// A snapshot of a domain's state. It stays valid, unchanged, for as long as it is held.
pub struct StateRef<S>(arc_swap::Guard<Arc<S>>);

impl<S> Deref for StateRef<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S: fmt::Debug> fmt::Debug for StateRef<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        S::fmt(self, f)
    }
}
