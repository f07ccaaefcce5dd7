//! Test support: tool contexts over one shared roster, and a minimal executor.
//!
//! The runtime normally applies writes in the domain's actor. Here the writer applies each
//! write at once, on the calling thread, so the tool bodies can be checked without the
//! registry or an async runtime, and a test can read back what an earlier call wrote.

use std::{
    future::Future,
    pin::pin,
    sync::{Arc, Weak},
    task::{Context, Poll, Waker},
};

use switchboard_core::{
    CallContext, DomainCell, DomainWriter, StateRef, Tool, ToolContext, WriteOp,
};

use crate::state::Roster;

/// Applies every write immediately to the cell it belongs to.
struct InlineWriter(Weak<DomainCell>);

impl DomainWriter for InlineWriter {
    fn submit(&self, op: WriteOp) -> Result<(), WriteOp> {
        match self.0.upgrade() {
            Some(cell) => {
                op.apply(&cell);
                Ok(())
            }
            None => Err(op),
        }
    }
}

/// A seeded `roster` domain that tools can be called against.
pub(crate) struct Harness {
    cell: Arc<DomainCell>,
}

impl Harness {
    pub(crate) fn seeded() -> Self {
        let cell = Arc::new_cyclic(|weak| {
            DomainCell::new(
                "roster",
                Box::new(Roster::seeded()),
                Box::new(InlineWriter(weak.clone())),
            )
        });
        Self { cell }
    }

    /// Runs tool `T` as `user_id` of `org_id`, as a confirmed human call.
    pub(crate) fn call<T: Tool>(
        &self,
        org_id: &str,
        user_id: &str,
        input: T::Input,
    ) -> Result<T::Output, switchboard_core::ToolError> {
        let caller = CallContext::builder()
            .org(org_id)
            .user(user_id)
            .session("test-session")
            .correlation("test-correlation")
            .confirmed(true)
            .build()
            .verify()
            .expect("the test context is complete");
        let ctx = ToolContext::new(
            caller,
            Arc::from(T::SPEC.name),
            T::SPEC.category,
            Arc::clone(&self.cell),
        );
        block_on(T::call(&ctx, input))
    }

    /// The roster as it is now.
    pub(crate) fn roster(&self) -> StateRef<Roster> {
        self.cell.read::<Roster>().expect("the cell holds a roster")
    }
}

/// Polls `future` to completion on this thread. Enough here: the inline writer finishes every
/// write before the tool body awaits it.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::yield_now();
    }
}
