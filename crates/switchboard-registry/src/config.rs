//! Runtime settings of the registry: timeouts, bulkheads, restart budgets, and how mutations
//! are made exactly once (idempotency retention, required keys, proposals).

use std::{collections::BTreeMap, time::Duration};

/// How the registry runs tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryConfig {
    /// Timeout of a call whose tool declares none.
    pub default_timeout: Duration,
    /// How many calls one domain runs at once, unless overridden per domain.
    pub default_concurrency: usize,
    /// Per-domain concurrency limits (the bulkheads).
    pub domain_concurrency: BTreeMap<String, usize>,
    /// How many times a failed domain actor is restarted within `restart_window` before the
    /// domain is left unavailable.
    pub max_restarts: u32,
    /// The window `max_restarts` counts within.
    pub restart_window: Duration,
    /// How long a mutation's first result is kept for retries with its idempotency key.
    pub idempotency_retention: Duration,
    /// Refuse mutating calls without a caller-given idempotency key
    /// (`idempotency_key_required`) instead of deriving one.
    pub require_idempotency_key: bool,
    /// How long a proposal waits for a decision before it expires.
    pub proposal_ttl: Duration,
    /// What an agent's direct call of an execute or restricted tool does.
    pub agent_mutations: AgentMutations,
}

/// What an agent's direct call of a mutating tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentMutations {
    /// Refuse it with `category_denied` (the agent may call `ToolRegistry::propose`).
    #[default]
    Refuse,
    /// Store it as a proposal and answer `approval_required` with the proposal's id.
    Propose,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            default_concurrency: 256,
            domain_concurrency: BTreeMap::new(),
            max_restarts: 5,
            restart_window: Duration::from_secs(60),
            idempotency_retention: Duration::from_secs(24 * 60 * 60),
            require_idempotency_key: false,
            proposal_ttl: Duration::from_secs(24 * 60 * 60),
            agent_mutations: AgentMutations::Refuse,
        }
    }
}

impl RegistryConfig {
    /// The concurrency limit of `domain`.
    pub fn concurrency_of(&self, domain: &str) -> usize {
        self.domain_concurrency
            .get(domain)
            .copied()
            .unwrap_or(self.default_concurrency)
            .max(1)
    }
}
