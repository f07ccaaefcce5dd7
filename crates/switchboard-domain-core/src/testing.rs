//! Test support: a [`ToolContext`] over the seeded directory, and a minimal executor.
//!
//! The runtime normally builds contexts inside the domain's actor. Tests build them directly,
//! so the tool bodies can be checked without the registry or an async runtime.

use std::{
    future::Future,
    pin::pin,
    sync::Arc,
    task::{Context, Poll, Waker},
};

use switchboard_core::{CallContext, Category, DomainCell, DomainWriter, ToolContext, WriteOp};

use crate::directory::Directory;

/// The `core` domain has only read tools, so its test writer refuses every write.
struct NoWrites;

impl DomainWriter for NoWrites {
    fn submit(&self, op: WriteOp) -> Result<(), WriteOp> {
        Err(op)
    }
}

/// A read-tool context for `user_id` of `org_id` with `roles`, over the seeded directory.
pub(crate) fn context(org_id: &str, user_id: &str, roles: &[&str]) -> ToolContext {
    let mut call = CallContext::builder()
        .org(org_id)
        .user(user_id)
        .session("test-session")
        .correlation("test-correlation");
    for role in roles {
        call = call.role(*role);
    }
    let caller = call.build().verify().expect("the test context is complete");
    let cell = DomainCell::new("core", Box::new(Directory::seeded()), Box::new(NoWrites));
    ToolContext::new(
        caller,
        Arc::from("core_get_current_user"),
        Category::Read,
        Arc::new(cell),
    )
}

/// Polls `future` to completion on this thread. Enough for tool bodies, which never wait on
/// anything but state that is already there.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::yield_now();
    }
}
