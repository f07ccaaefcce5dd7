//! The config file's `[limits]`: the rate-limit layer every command's registry gets when the
//! table sets a limit, and the check, once every tool is registered (linked tools, exported
//! workflows, the mounted servers' tools), that each tool `[limits.tools]` names exists.

use switchboard::ToolRegistry;
use switchboard_limits::{Limits, RateLimitLayer};

use crate::app::UsageError;

/// The layer of `limits`, or `None` if they set no limit.
pub(crate) fn layer(limits: &Limits) -> Option<RateLimitLayer> {
    (!limits.is_empty()).then(|| RateLimitLayer::new(limits))
}

/// A usage error naming the first tool of `[limits.tools]` that `registry` does not have.
pub(crate) fn check_tools(limits: &Limits, registry: &ToolRegistry) -> Result<(), UsageError> {
    match limits
        .tools
        .keys()
        .find(|tool| registry.find(tool).is_none())
    {
        None => Ok(()),
        Some(tool) => Err(UsageError::new(format!(
            "`tools.{tool}` in [limits] of the config file names no tool: `switchboard tools` \
             lists them"
        ))),
    }
}
