//! The conformance kit on the sample domains, as the architecture test and the kit's
//! benchmark run it: a registry of every sample domain (not the MCP conformance suite's
//! reference tools, which are protocol fixtures: one sleeps as long as its input asks, one
//! always panics), the roster's store and the directory's state as probes, each
//! organisation's people and positions as markers, and examples that reach existing shifts.
//!
//! Nothing here links a domain: the calling binary references `switchboard_domains`.

use std::sync::Arc;

use serde_json::{Value, json};
use switchboard::{RegistryConfig, ToolRegistry};
use switchboard_domain_directory::Directory;
use switchboard_domain_roster::{MemoryRosterStore, Roster, RosterState};
use switchboard_testing::{Org, ToolChecks};

use crate::calls::{HOME_ADMIN, HOME_ORG, OTHER_ORG};

/// The admin of [`OTHER_ORG`] in the sample data.
pub const OTHER_ADMIN: &str = "gina";

/// A registry of every sample domain with `config`, and the roster's store.
pub async fn sample_registry(
    config: RegistryConfig,
) -> anyhow::Result<(ToolRegistry, Arc<MemoryRosterStore>)> {
    let store = Arc::new(MemoryRosterStore::seeded());
    let registry = ToolRegistry::builder()
        .config(config)
        .domain_state::<Roster>(RosterState::new(Arc::clone(&store) as _))
        .exclude_domain("conformance")
        .start()
        .await?;
    Ok((registry, store))
}

/// The kit's checks of `registry`, whose roster is kept in `store`.
pub fn sample_checks(registry: &ToolRegistry, store: Arc<MemoryRosterStore>) -> ToolChecks<'_> {
    ToolChecks::new(registry)
        .orgs(
            Org::new(HOME_ORG).user(HOME_ADMIN),
            Org::new(OTHER_ORG).user(OTHER_ADMIN),
        )
        .state("roster", move || std::future::ready(roster_book(&store)))
        .domain::<Directory>()
        .marker(HOME_ORG, "Alice Archer")
        .marker(HOME_ORG, "front desk")
        .marker(OTHER_ORG, "Gina Gold")
        .marker(OTHER_ORG, "dispatch")
        .example(
            "roster_get_shift",
            json!({ "shift_id": "acme-2026-11-23-am" }),
        )
        .example(
            "roster_get_shift",
            json!({ "shift_id": "globex-2026-11-23-am" }),
        )
        .example(
            "roster_list_shifts",
            json!({ "from": "2026-11-23", "to": "2026-11-29" }),
        )
        .example(
            "roster_assign_shift",
            json!({ "shift_id": "acme-2026-11-24-pm", "user_id": "sam" }),
        )
        .example(
            "roster_claim_shift",
            json!({ "shift_id": "acme-2026-11-28-am" }),
        )
        .example(
            "roster_unassign_shift",
            json!({ "shift_id": "acme-2026-11-23-am" }),
        )
        .example(
            "roster_propose_shift_swap",
            json!({ "shift_id": "acme-2026-11-25-am", "with_user": "mark" }),
        )
}

/// The roster's whole book, by organisation, as a value to compare.
fn roster_book(store: &MemoryRosterStore) -> Value {
    let parts = store
        .snapshot()
        .into_parts()
        .map(|(org, part)| {
            let part =
                serde_json::to_value(&*part).unwrap_or_else(|error| json!(error.to_string()));
            (org.to_string(), part)
        })
        .collect();
    Value::Object(parts)
}
