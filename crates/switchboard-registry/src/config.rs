//! Runtime settings of the registry: timeouts, bulkheads and restart budgets.

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
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(30),
            default_concurrency: 256,
            domain_concurrency: BTreeMap::new(),
            max_restarts: 5,
            restart_window: Duration::from_secs(60),
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
