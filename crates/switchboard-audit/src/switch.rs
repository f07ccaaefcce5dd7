//! What the audit record of a switch of tools says: tools disabled or enabled at run time
//! (`ToolRegistry::disable` / `enable`) change what every caller can do, so each switch leaves
//! a record in the same store as the calls.
//!
//! Such a record is an [`AuditRecord`](crate::AuditRecord) whose `tool` is
//! [`SWITCH_RECORD_TOOL`] (no tool has a dot in its name, so it never mixes with a call's) and
//! whose [`switch`](crate::AuditRecord::switch) holds what was switched; who switched is the
//! record's context (org, user, session, correlation id, initiator), as for a call.

use serde::{Deserialize, Serialize};

/// The `tool` of a switch's record: `switchboard audit --tool registry.switch` lists them.
pub const SWITCH_RECORD_TOOL: &str = "registry.switch";

/// Whether a switch turned tools off or on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchAction {
    /// Tools were disabled.
    Disable,
    /// Tools were enabled.
    Enable,
}

impl SwitchAction {
    /// `disable` or `enable`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SwitchAction::Disable => "disable",
            SwitchAction::Enable => "enable",
        }
    }
}

/// What one switch did.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SwitchRecord {
    /// Off or on.
    pub action: SwitchAction,
    /// The selector, as written: `tool:NAME`, `domain:NAME` or `tag:NAME`.
    pub selector: String,
    /// The tools whose state it changed, sorted (none when they all were already so, or when
    /// the switch was refused).
    pub changed: Vec<String>,
}
