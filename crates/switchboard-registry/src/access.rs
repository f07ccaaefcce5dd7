//! Who may reach a tool before its input is looked at, beyond roles: the agent scope table
//! (agent type → tools, from TOML) and thread ownership (a [`ThreadDirectory`]).
//!
//! Both are checked on the call path right after the context is verified (see `invoke.rs`):
//! thread ownership first (authentication: the user must own the thread the call names), then
//! the agent's scope (tool access). The built-in scope table lets every agent type reach every
//! tool, which is today's behaviour; categories and permissions still apply after it.

use std::{collections::BTreeMap, path::Path};

use serde::Deserialize;
use switchboard_core::{AgentType, Caller, Initiator, OrgId, ThreadId, UserId};

/// The built-in scope table.
pub const DEFAULT_AGENT_SCOPES_TOML: &str = include_str!("../default-agent-scopes.toml");

/// The fallback entry for agent types the table does not list.
const ANY_AGENT: &str = "*";

/// Why a scope file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentScopesError {
    /// The file could not be read.
    #[error("cannot read the agent scope file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error(
        "invalid agent scope table: {0}; expected `[agents]` with `agent_type = [\"tool pattern\", ...]`"
    )]
    Parse(String),
    /// A pattern is malformed.
    #[error(
        "invalid tool pattern `{pattern}` for agent type `{agent_type}`: use a tool name, `prefix*` or `*`"
    )]
    Pattern {
        /// The agent type.
        agent_type: String,
        /// The pattern.
        pattern: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopesFile {
    agents: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolPattern {
    Every,
    Prefix(String),
    Exact(String),
}

impl ToolPattern {
    fn parse(text: &str) -> Option<Self> {
        let valid = |name: &str| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        };
        if text == "*" {
            Some(ToolPattern::Every)
        } else if let Some(prefix) = text.strip_suffix('*') {
            valid(prefix).then(|| ToolPattern::Prefix(prefix.to_owned()))
        } else {
            valid(text).then(|| ToolPattern::Exact(text.to_owned()))
        }
    }

    fn matches(&self, tool: &str) -> bool {
        match self {
            ToolPattern::Every => true,
            ToolPattern::Prefix(prefix) => tool.starts_with(prefix.as_str()),
            ToolPattern::Exact(exact) => exact == tool,
        }
    }
}

/// Which tools each agent type may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScopes {
    agents: BTreeMap<String, Vec<ToolPattern>>,
}

impl AgentScopes {
    /// Parses a table from TOML.
    pub fn from_toml(text: &str) -> Result<Self, AgentScopesError> {
        let file: ScopesFile =
            toml::from_str(text).map_err(|error| AgentScopesError::Parse(error.to_string()))?;
        let mut agents = BTreeMap::new();
        for (agent_type, patterns) in file.agents {
            let parsed = patterns
                .iter()
                .map(|pattern| {
                    ToolPattern::parse(pattern).ok_or_else(|| AgentScopesError::Pattern {
                        agent_type: agent_type.clone(),
                        pattern: pattern.clone(),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            agents.insert(agent_type, parsed);
        }
        Ok(Self { agents })
    }

    /// Reads a table from a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, AgentScopesError> {
        let text = std::fs::read_to_string(path).map_err(|source| AgentScopesError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml(&text)
    }

    /// Whether an agent of `agent_type` (none: the fallback entry) may call `tool`.
    pub fn allows(&self, agent_type: Option<&AgentType>, tool: &str) -> bool {
        let entry = agent_type
            .and_then(|agent_type| self.agents.get(agent_type.as_str()))
            .or_else(|| self.agents.get(ANY_AGENT));
        entry.is_some_and(|patterns| patterns.iter().any(|pattern| pattern.matches(tool)))
    }

    /// Whether the table governs `caller`: an agent's call, or any call naming an agent type.
    pub fn applies_to(caller: &Caller) -> bool {
        caller.initiator == Initiator::Agent || caller.agent_type.is_some()
    }
}

impl Default for AgentScopes {
    fn default() -> Self {
        match Self::from_toml(DEFAULT_AGENT_SCOPES_TOML) {
            Ok(scopes) => scopes,
            // The built-in file is checked by a unit test; it cannot fail at run time.
            Err(error) => unreachable!("the built-in agent scope table is invalid: {error}"),
        }
    }
}

/// Who owns each conversation thread. The runtime asks it whenever a call names a thread.
pub trait ThreadDirectory: Send + Sync + 'static {
    /// The owner of `thread_id` in `org_id`, if the thread exists there.
    fn owner(&self, org_id: &OrgId, thread_id: &ThreadId) -> Option<UserId>;

    /// Opens `thread_id` in `org_id` for `user_id` if it has no owner yet, and returns its
    /// owner now (an existing owner is never replaced). Transports whose clients name their
    /// own threads (MCP) call it before a call. The default opens nothing: a directory that
    /// does not open threads on demand only reports the current owner.
    fn open_if_absent(
        &self,
        org_id: &OrgId,
        thread_id: &ThreadId,
        user_id: &UserId,
    ) -> Option<UserId> {
        let _ = user_id;
        self.owner(org_id, thread_id)
    }
}

/// Threads in memory: the default directory, empty until threads are opened. An unknown
/// thread has no owner, so a call naming one is refused (`thread_not_owned`).
#[derive(Debug, Default)]
pub struct MemoryThreads {
    owners: scc::HashMap<(OrgId, ThreadId), UserId>,
}

impl MemoryThreads {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `user_id` owns `thread_id` in `org_id` (replacing any previous owner).
    pub fn open(&self, org_id: OrgId, thread_id: ThreadId, user_id: UserId) {
        self.owners.upsert_sync((org_id, thread_id), user_id);
    }
}

impl ThreadDirectory for MemoryThreads {
    fn owner(&self, org_id: &OrgId, thread_id: &ThreadId) -> Option<UserId> {
        self.owners
            .read_sync(&(org_id.clone(), thread_id.clone()), |_, owner| {
                owner.clone()
            })
    }

    fn open_if_absent(
        &self,
        org_id: &OrgId,
        thread_id: &ThreadId,
        user_id: &UserId,
    ) -> Option<UserId> {
        match self
            .owners
            .insert_sync((org_id.clone(), thread_id.clone()), user_id.clone())
        {
            Ok(()) => Some(user_id.clone()),
            Err(_) => self.owner(org_id, thread_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_table_lets_every_agent_reach_every_tool() {
        let scopes = AgentScopes::from_toml(DEFAULT_AGENT_SCOPES_TOML).expect("valid");
        assert!(scopes.allows(None, "roster_assign_shift"));
        assert!(scopes.allows(Some(&"planner".into()), "core_get_current_user"));
    }

    #[test]
    fn listed_types_get_their_patterns_and_others_the_fallback() {
        let scopes = AgentScopes::from_toml(
            "[agents]\nscheduler = [\"roster_*\"]\nreader = [\"core_get_current_user\"]\n\"*\" = []",
        )
        .expect("valid");
        let scheduler = AgentType::from("scheduler");
        assert!(scopes.allows(Some(&scheduler), "roster_assign_shift"));
        assert!(!scopes.allows(Some(&scheduler), "core_get_current_user"));
        assert!(scopes.allows(Some(&"reader".into()), "core_get_current_user"));
        assert!(!scopes.allows(Some(&"reader".into()), "core_get_current_userx"));
        assert!(!scopes.allows(Some(&"stranger".into()), "roster_list_shifts"));
        assert!(!scopes.allows(None, "roster_list_shifts"));
    }

    #[test]
    #[allow(
        clippy::unwrap_used,
        reason = "a test asserting on the error it expects"
    )]
    fn rejects_bad_files_with_clear_errors() {
        let error = AgentScopes::from_toml("[agents]\na = [\"ros ter\"]").unwrap_err();
        assert!(error.to_string().contains("`ros ter`"), "{error}");
        assert!(matches!(
            AgentScopes::from_toml("[agentz]\n").unwrap_err(),
            AgentScopesError::Parse(_)
        ));
    }

    #[test]
    fn threads_belong_to_one_user_of_one_org() {
        let threads = MemoryThreads::new();
        threads.open("acme".into(), "t1".into(), "sam".into());
        assert_eq!(
            threads.owner(&"acme".into(), &"t1".into()),
            Some("sam".into())
        );
        assert_eq!(threads.owner(&"globex".into(), &"t1".into()), None);
        assert_eq!(threads.owner(&"acme".into(), &"t2".into()), None);
    }

    #[test]
    fn opening_if_absent_never_replaces_an_owner() {
        let threads = MemoryThreads::new();
        let (acme, t1) = (OrgId::from("acme"), ThreadId::from("t1"));
        assert_eq!(
            threads.open_if_absent(&acme, &t1, &"sam".into()),
            Some("sam".into())
        );
        assert_eq!(
            threads.open_if_absent(&acme, &t1, &"mark".into()),
            Some("sam".into()),
            "the first user keeps the thread"
        );
        assert_eq!(
            threads.open_if_absent(&"globex".into(), &t1, &"gina".into()),
            Some("gina".into()),
            "threads are per organisation"
        );
    }
}
