//! Test support: tool contexts over one shared in-memory roster, and a minimal executor.
//!
//! The tool bodies are checked without the registry or an async runtime (the in-memory store
//! answers at once), and a test can read back what an earlier call wrote.

use std::sync::Arc;

use futures::executor::block_on;
use switchboard_core::{CallContext, DomainCell, Tool, ToolContext};

use crate::{
    state::RosterBook,
    store::{MemoryRosterStore, RosterState},
};

/// A seeded `roster` domain that tools can be called against.
pub(crate) struct Harness {
    store: Arc<MemoryRosterStore>,
    cell: Arc<DomainCell<RosterState>>,
}

impl Harness {
    pub(crate) fn seeded() -> Self {
        let store = Arc::new(MemoryRosterStore::seeded());
        let state = RosterState::new(Arc::clone(&store) as _);
        Self {
            store,
            cell: DomainCell::standalone("roster", state),
        }
    }

    /// Runs tool `T` as `user_id` of `org_id`, as a confirmed human call.
    pub(crate) fn call<T: Tool<Domain = crate::Roster>>(
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
            T::SPEC.name,
            T::SPEC.category,
            Arc::clone(&self.cell),
        );
        block_on(T::call(&ctx, input))
    }

    /// A read context of `user_id` of `org_id`, as a prompt renders in.
    pub(crate) fn read_context(&self, org_id: &str, user_id: &str) -> ToolContext<RosterState> {
        let caller = CallContext::builder()
            .org(org_id)
            .user(user_id)
            .session("test-session")
            .correlation("test-correlation")
            .build()
            .verify()
            .expect("the test context is complete");
        ToolContext::new(
            caller,
            "roster_plan_next_week",
            switchboard_core::Category::Read,
            Arc::clone(&self.cell),
        )
    }

    /// The roster as it is now.
    pub(crate) fn roster(&self) -> RosterBook {
        self.store.snapshot()
    }
}
