//! Calls as the sample roster's people make them, for the tests that run the real registry on
//! the roster (the roster stores' tests, and the approvals stores'): in `acme`, by mark, its
//! manager, and by an agent acting for sam, its staff member (both seeded).

use switchboard_core::{CallContext, Initiator};

/// A call in `acme` by `user` with `role`, started by `initiator`, tied to `correlation`.
fn acme_call(user: &str, role: &str, initiator: Initiator, correlation: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user(user)
        .role(role)
        .session("registry-tests")
        .correlation(correlation)
        .initiator(initiator)
        .build()
}

/// A call by mark, acme's manager, himself: his mutations run (or need his approval).
pub fn mark(correlation: &str) -> CallContext {
    acme_call("mark", "manager", Initiator::Human, correlation)
}

/// A call by an agent acting for sam, acme's staff member: under `AgentMutations::Propose`, its
/// mutations are stored as proposals.
pub fn sam_agent(correlation: &str) -> CallContext {
    acme_call("sam", "staff", Initiator::Agent, correlation)
}
