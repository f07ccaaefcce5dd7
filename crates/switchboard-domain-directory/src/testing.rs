//! Test support: [`ToolContext`]s over the seeded directory.
//!
//! The runtime normally builds contexts for the registry's calls. Tests build them directly
//! over a standalone cell, so the tool bodies can be checked without the registry or an async
//! runtime (`futures::executor::block_on` drives them).

use std::sync::Arc;

use switchboard_core::{CallContext, Category, DomainCell, ToolContext};

use crate::directory::DirectoryState;

/// A read-tool context for `user_id` of `org_id` with `roles`, over the seeded directory.
pub(crate) fn context(org_id: &str, user_id: &str, roles: &[&str]) -> ToolContext<DirectoryState> {
    scoped_context(
        org_id,
        user_id,
        roles,
        "core_get_current_user",
        Category::Read,
    )
}

/// An execute-tool context for `user_id` of `org_id` calling `tool`, as a confirmed manager,
/// over its own seeded directory: a write through it is applied at once, and later calls
/// through the same context see it.
pub(crate) fn execute_context(
    org_id: &str,
    user_id: &str,
    tool: &str,
) -> ToolContext<DirectoryState> {
    scoped_context(org_id, user_id, &["manager"], tool, Category::Execute)
}

fn scoped_context(
    org_id: &str,
    user_id: &str,
    roles: &[&str],
    tool: &str,
    category: Category,
) -> ToolContext<DirectoryState> {
    let caller = CallContext::builder()
        .org(org_id)
        .user(user_id)
        .session("test-session")
        .correlation("test-correlation")
        .roles(roles.iter().copied())
        .confirmed(true)
        .build()
        .verify()
        .expect("the test context is complete");
    ToolContext::new(
        caller,
        Arc::from(tool),
        category,
        DomainCell::standalone("core", DirectoryState::seeded()),
    )
}
