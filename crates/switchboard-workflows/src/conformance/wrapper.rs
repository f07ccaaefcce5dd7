//! Run stores made of another run store, for tests: a [`WrappedStore`] answers every operation
//! as the store inside it does, except the few a test overrides (to count them, refuse them, or
//! give them a deliberate flaw), and [`Guarded`] keeps what a store under test needs (its
//! temporary directory, its test database) alive exactly as long as the store.
//!
//! Without them, every test that wraps a store writes out the whole trait to forward eleven
//! operations and change one. The trait and its forwarding are written by a macro from one
//! list of the store's methods, so that a method added to [`RunStore`] is added here once.

use jiff::Timestamp;

use crate::store::{
    Checkpoint, EventRecord, Lease, RunFilter, RunId, RunRecord, RunStore, RunStoreError,
    StepRecord,
};

/// Writes [`WrappedStore`] and the [`RunStore`] of every `WrappedStore` from one list of the
/// trait's methods: each method of `WrappedStore` forwards to the inner store unless a wrapper
/// overrides it, and each method of the `RunStore` calls the `WrappedStore`'s.
macro_rules! wrapped_store {
    ($(fn $method:ident(&self $(, $arg:ident: $type:ty)*) -> $answer:ty;)+) => {
        /// A run store that forwards every operation to [`inner`](Self::inner), except those
        /// its implementation overrides; every `WrappedStore` is a [`RunStore`].
        ///
        /// Implement it by path (`impl conformance::WrappedStore for MyStore`) rather than
        /// importing it where the wrapper is also used as a [`RunStore`]: with both traits in
        /// scope, a method call on the wrapper is ambiguous. `checkpoint_all` goes to the inner
        /// store's, not through the wrapper's `checkpoint`, unless overridden too.
        pub trait WrappedStore: Send + Sync + 'static {
            /// The store the operations not overridden go to.
            fn inner(&self) -> &dyn RunStore;

            $(
                #[doc = concat!(
                    "[`RunStore::", stringify!($method), "`], the inner store's unless overridden."
                )]
                fn $method(&self $(, $arg: $type)*) -> $answer {
                    self.inner().$method($($arg),*)
                }
            )+
        }

        impl<W: WrappedStore> RunStore for W {
            $(
                fn $method(&self $(, $arg: $type)*) -> $answer {
                    WrappedStore::$method(self $(, $arg)*)
                }
            )+
        }
    };
}

wrapped_store! {
    fn create_run(&self, run: &RunRecord) -> Result<(), RunStoreError>;
    fn run(&self, id: RunId) -> Result<Option<RunRecord>, RunStoreError>;
    fn checkpoint(&self, checkpoint: &Checkpoint) -> Result<u64, RunStoreError>;
    fn checkpoint_all(&self, checkpoints: &[Checkpoint]) -> Result<Vec<u64>, RunStoreError>;
    fn steps(&self, run: RunId) -> Result<Vec<StepRecord>, RunStoreError>;
    fn events(&self, run: RunId, after: u64, limit: usize)
        -> Result<Vec<EventRecord>, RunStoreError>;
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunRecord>, RunStoreError>;
    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, RunStoreError>;
    fn acquire_lease(&self, run: RunId, owner: &str, now: Timestamp, until: Timestamp)
        -> Result<Option<Lease>, RunStoreError>;
    fn renew_lease(&self, lease: &Lease, until: Timestamp) -> Result<Lease, RunStoreError>;
    fn release_lease(&self, lease: &Lease) -> Result<(), RunStoreError>;
    fn unleased_runs(&self, now: Timestamp, after: Option<RunId>, limit: usize)
        -> Result<Vec<RunRecord>, RunStoreError>;
}

/// A store under test and what it needs kept alive (a temporary directory, a test database):
/// the guard is dropped after the store, so the store closes before its file or database goes.
#[derive(Debug)]
pub struct Guarded<S, G> {
    store: S,
    _guard: G,
}

impl<S: RunStore, G: Send + Sync + 'static> Guarded<S, G> {
    /// `store`, keeping `guard` alive as long as it.
    pub fn new(store: S, guard: G) -> Self {
        Self {
            store,
            _guard: guard,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }
}

impl<S: RunStore, G: Send + Sync + 'static> WrappedStore for Guarded<S, G> {
    fn inner(&self) -> &dyn RunStore {
        &self.store
    }
}
