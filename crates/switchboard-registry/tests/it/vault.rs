//! The `vault` test domain shared by the mutation tests: a running total that execute tools
//! add to, counting how many times a tool body actually ran, plus a context builder and audit
//! helpers.
//!
//! `vault_add` can be slowed down (`delay_ms`) so that racing calls overlap; `vault_scoped_add`
//! declares that it needs a thread and a project; `vault_guarded_add` has a gate that refuses
//! the amount 13.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_audit::{AuditQuery, AuditRecord};
use switchboard_core::{
    CallContext, CallContextBuilder, Initiator, NoInput, ToolContext, ToolError, ToolInput, tool,
};
use switchboard_registry::{RegistryBuilder, ToolRegistry};
use validator::Validate;

/// The vault's state.
#[derive(Debug, Clone, Default)]
pub(crate) struct VaultState {
    total: i64,
    runs: u64,
}

switchboard_core::domain! {
    /// A running total, for the mutation tests.
    pub(crate) Vault { name: "vault", state: VaultState = VaultState::default }
}

/// What a vault tool returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Tally {
    /// The total after the call.
    pub(crate) total: i64,
    /// How many tool bodies have written so far.
    pub(crate) runs: u64,
}

/// An amount to add.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddInput {
    /// How much.
    pub(crate) amount: i64,
    /// Sleep this long before writing, so racing calls overlap.
    #[serde(default)]
    pub(crate) delay_ms: u64,
}

async fn add_to_vault(ctx: &ToolContext<VaultState>, input: AddInput) -> Result<Tally, ToolError> {
    if input.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(input.delay_ms)).await;
    }
    ctx.write(move |vault: &mut VaultState| {
        vault.total += input.amount;
        vault.runs += 1;
        Tally {
            total: vault.total,
            runs: vault.runs,
        }
    })
    .await
}

/// Reads the total.
#[tool(domain = Vault, category = read, permission = "vault.read")]
async fn peek(ctx: &ToolContext<VaultState>, _input: NoInput) -> Result<Tally, ToolError> {
    let vault = ctx.state();
    Ok(Tally {
        total: vault.total,
        runs: vault.runs,
    })
}

/// Adds an amount to the total.
#[tool(domain = Vault, category = execute, permission = "vault.add")]
pub(crate) async fn add(
    ctx: &ToolContext<VaultState>,
    input: AddInput,
) -> Result<Tally, ToolError> {
    add_to_vault(ctx, input).await
}

/// Adds an amount to the total; needs a thread and a project.
#[tool(domain = Vault, category = execute, permission = "vault.add")]
async fn scoped_add(ctx: &ToolContext<VaultState>, input: AddInput) -> Result<Tally, ToolError> {
    add_to_vault(ctx, input).await
}

/// Adds an amount to the total, unless the gate refuses it.
#[tool(domain = Vault, category = execute, permission = "vault.add")]
async fn guarded_add(ctx: &ToolContext<VaultState>, input: AddInput) -> Result<Tally, ToolError> {
    add_to_vault(ctx, input).await
}

/// Sets the total to zero.
#[tool(domain = Vault, category = restricted, permission = "vault.wipe")]
async fn wipe(ctx: &ToolContext<VaultState>, _input: NoInput) -> Result<Tally, ToolError> {
    ctx.write(|vault: &mut VaultState| {
        vault.total = 0;
        vault.runs += 1;
        Tally {
            total: 0,
            runs: vault.runs,
        }
    })
    .await
}

async fn not_unlucky(ctx: &ToolContext<VaultState>, input: &AddInput) -> Result<(), ToolError> {
    let vault = ctx.state();
    if input.amount == 13 {
        return Err(ToolError::new(
            "unlucky",
            format!("13 is never added (the total is {})", vault.total),
        ));
    }
    Ok(())
}

switchboard_core::tool_policy! {
    tool: ScopedAdd,
    requires: [ThreadId, ProjectId],
}

switchboard_core::tool_policy! {
    tool: GuardedAdd,
    gate: not_unlucky,
}

/// A context of `user` at `acme` with `role`, started by `initiator`, with this correlation id.
pub(crate) fn context(
    user: &str,
    role: &str,
    initiator: Initiator,
    correlation: &str,
) -> CallContextBuilder {
    CallContext::builder()
        .org("acme")
        .user(user)
        .session(format!("session-{user}"))
        .correlation(correlation)
        .role(role)
        .initiator(initiator)
}

/// A human admin of acme (holds every permission).
pub(crate) fn admin(correlation: &str) -> CallContext {
    context("alice", "admin", Initiator::Human, correlation).build()
}

/// An agent acting for the admin.
pub(crate) fn agent(correlation: &str) -> CallContext {
    context("alice", "admin", Initiator::Agent, correlation).build()
}

/// Boots a registry over the tools linked into this test binary.
pub(crate) async fn start(builder: RegistryBuilder) -> ToolRegistry {
    builder
        .start()
        .await
        .expect("the vault tools are well formed")
}

/// The vault as it is now.
pub(crate) async fn tally(registry: &ToolRegistry) -> Tally {
    let value = registry
        .invoke("vault_peek", serde_json::json!({}), &admin("peek"))
        .await
        .expect("peek is a read");
    serde_json::from_value(value).expect("peek answers a tally")
}

/// Every audit record, oldest first.
pub(crate) async fn all_records(registry: &ToolRegistry) -> Vec<AuditRecord> {
    let mut records = registry
        .audit()
        .query(&AuditQuery::all())
        .await
        .expect("the in-memory store answers");
    records.sort_by_key(|record| record.id);
    records
}

/// The audit records of one correlation id, oldest first.
pub(crate) async fn records_of(registry: &ToolRegistry, correlation: &str) -> Vec<AuditRecord> {
    let mut records = registry
        .audit()
        .query(&AuditQuery::correlation(correlation))
        .await
        .expect("the in-memory store answers");
    records.sort_by_key(|record| record.id);
    records
}
