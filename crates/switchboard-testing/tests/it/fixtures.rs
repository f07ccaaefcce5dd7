//! The kit catches the bugs it is for: each domain here breaks one promise on purpose, and
//! the kit, run on a registry of that domain alone, names that promise.
//!
//! Every domain of this file is linked into the test binary; [`registry_of`] excludes all but
//! one, so that each test sees only the bug it is about.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use switchboard_audit::{AuditError, AuditQuery, AuditRecord, AuditStats, AuditStore};
use switchboard_core::{NoInput, ToolContext, ToolError, ToolInput, linked_domains, tool};
use switchboard_registry::{RegistryBuilder, ToolRegistry};
use switchboard_testing::{Invariant, Report, ToolChecks};
use validator::Validate;

/// The domains of this file, which every other test's registry leaves out.
pub(crate) const FIXTURE_DOMAINS: [&str; 6] =
    ["sneaky", "books", "leaky", "shares", "mute", "tidy"];

/// A registry of the domain `name` and no other.
async fn registry_of(name: &str) -> ToolRegistry {
    registry_of_with(name, ToolRegistry::builder()).await
}

/// [`registry_of`] from `builder`.
async fn registry_of_with(name: &str, mut builder: RegistryBuilder) -> ToolRegistry {
    for domain in linked_domains().filter(|domain| domain.name != name) {
        builder = builder.exclude_domain(domain.name);
    }
    builder.start().await.expect("the fixture registry starts")
}

/// Runs the kit on `registry` as acme and globex, with `configure`'s options.
async fn checked(
    registry: &ToolRegistry,
    configure: impl FnOnce(ToolChecks<'_>) -> ToolChecks<'_>,
) -> Report {
    configure(ToolChecks::new(registry).orgs("acme", "globex"))
        .run()
        .await
}

/// Asserts that `report` failed on `invariant` for `tool`, and on nothing else.
fn fails_only_on(report: &Report, invariant: Invariant, tool: &str) {
    assert!(!report.passed(), "the kit passed a broken tool:\n{report}");
    assert!(report.setup.is_empty(), "{report}");
    for violation in &report.violations {
        assert_eq!(
            (violation.invariant, violation.tool.as_str()),
            (invariant, tool),
            "another promise was reported broken:\n{report}"
        );
    }
    let text = report.to_string();
    assert!(text.contains(invariant.as_str()), "{text}");
    assert!(text.contains(tool), "{text}");
}

// ---------------------------------------------------------------------------------------
// A read tool that writes.

/// How many times the counter was read, kept where `ctx.write` does not see it.
#[derive(Debug, Clone, Default)]
struct Reads(Arc<AtomicU64>);

switchboard_core::domain! {
    /// A counter whose read tool counts its own reads.
    Sneaky { name: "sneaky", state: Reads = Reads::default }
}

/// Reads the counter, and (the bug) counts the read in the state.
#[tool(domain = Sneaky, category = read, permission = "sneaky.read")]
async fn read(ctx: &ToolContext<Reads>, _input: NoInput) -> Result<u64, ToolError> {
    Ok(ctx.state().0.fetch_add(1, Ordering::SeqCst))
}

#[tokio::test]
async fn a_read_tool_that_writes_breaks_read_changes_nothing() {
    let registry = registry_of("sneaky").await;
    let report = checked(&registry, |checks| checks.domain::<Sneaky>()).await;
    fails_only_on(&report, Invariant::ReadChangesNothing, "sneaky_read");
    assert!(
        report.to_string().contains("the state of `sneaky` changed"),
        "{report}"
    );
}

// ---------------------------------------------------------------------------------------
// A tool that reads the organisation from its input, through a field not named org_id.

/// One text per organisation: its ledger, or its note.
#[derive(Debug, Clone)]
struct PerOrg(BTreeMap<&'static str, &'static str>);

impl PerOrg {
    fn notes() -> Self {
        Self(BTreeMap::from([
            ("acme", "acme: buy paper"),
            ("globex", "globex: fix door"),
        ]))
    }

    fn ledgers() -> Self {
        Self(BTreeMap::from([
            ("acme", "acme ledger: 12 widgets"),
            ("globex", "globex ledger: 7 secret gadgets"),
        ]))
    }
}

switchboard_core::domain! {
    /// PerOrg, one per organisation.
    Books { name: "books", state: PerOrg = PerOrg::ledgers }
}

/// Which ledger to read (the bug: the organisation is a field of the input).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
struct LedgerInput {
    /// The ledger's owner.
    tenant: String,
}

/// Reads the ledger the input names, whatever the caller's organisation.
#[tool(domain = Books, category = read, permission = "books.read")]
async fn ledger(ctx: &ToolContext<PerOrg>, input: LedgerInput) -> Result<String, ToolError> {
    ctx.state()
        .0
        .get(input.tenant.as_str())
        .map(|ledger| (*ledger).to_owned())
        .ok_or_else(|| ToolError::new("ledger_not_found", "no ledger of that name"))
}

#[tokio::test]
async fn a_tool_that_takes_the_organisation_from_a_renamed_field_breaks_org_id_from_context() {
    let registry = registry_of("books").await;
    let report = checked(&registry, |checks| {
        checks.marker("globex", "secret gadgets")
    })
    .await;
    fails_only_on(&report, Invariant::OrgIdFromContext, "books_ledger");
    assert!(report.to_string().contains("/tenant"), "{report}");
}

// ---------------------------------------------------------------------------------------
// A tool that returns another organisation's row.

switchboard_core::domain! {
    /// The same ledgers, listed by a query that forgot its organisation.
    Leaky { name: "leaky", state: PerOrg = PerOrg::ledgers }
}

/// Lists the ledgers (the bug: every organisation's).
#[tool(domain = Leaky, category = read, permission = "leaky.read")]
async fn ledgers(ctx: &ToolContext<PerOrg>, _input: NoInput) -> Result<Vec<String>, ToolError> {
    Ok(ctx
        .state()
        .0
        .values()
        .map(|ledger| (*ledger).to_owned())
        .collect())
}

#[tokio::test]
async fn a_tool_that_returns_another_organisations_row_breaks_tenant_isolation() {
    let registry = registry_of("leaky").await;
    let report = checked(&registry, |checks| checks).await;
    fails_only_on(&report, Invariant::TenantIsolation, "leaky_ledgers");
    assert!(
        report
            .to_string()
            .contains("a caller of `acme` got back `globex`"),
        "{report}"
    );
}

// ---------------------------------------------------------------------------------------
// A tool that panics on an edge input.

switchboard_core::domain! {
    /// Arithmetic with an edge it does not handle.
    Shares { name: "shares" }
}

/// How to split a hundred.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
struct SplitInput {
    /// Into how many parts.
    parts: i64,
}

/// Splits a hundred into `parts` (the bug: zero parts divides by zero).
#[tool(domain = Shares, category = read, permission = "shares.read")]
async fn split(_ctx: &ToolContext, input: SplitInput) -> Result<i64, ToolError> {
    Ok(100 / input.parts)
}

#[tokio::test]
async fn a_tool_that_panics_on_an_edge_input_breaks_no_panic_with_the_shrunk_input() {
    let registry = registry_of("shares").await;
    let report = checked(&registry, |checks| checks).await;
    fails_only_on(&report, Invariant::NoPanic, "shares_split");
    let violation = report
        .of(Invariant::NoPanic)
        .next()
        .expect("a panic was reported");
    assert_eq!(violation.input, json!({ "parts": 0 }), "{report}");
}

// ---------------------------------------------------------------------------------------
// A tool whose error has no stable code and no message.

switchboard_core::domain! {
    /// A tool that fails without saying why.
    Mute { name: "mute" }
}

/// Always fails, with a code that is not snake_case and an empty message.
#[tool(domain = Mute, category = read, permission = "mute.read")]
async fn fail(_ctx: &ToolContext, _input: NoInput) -> Result<u64, ToolError> {
    Err(ToolError::new("Something Broke", ""))
}

#[tokio::test]
async fn a_tool_error_without_a_code_or_message_breaks_documented_errors() {
    let registry = registry_of("mute").await;
    let report = checked(&registry, |checks| checks).await;
    fails_only_on(&report, Invariant::DocumentedErrors, "mute_fail");
}

// ---------------------------------------------------------------------------------------
// The same domains, each with its one promise skipped for a written reason, pass.

#[tokio::test]
async fn a_skip_with_a_reason_leaves_the_promise_out_and_says_why() {
    let registry = registry_of("leaky").await;
    let report = checked(&registry, |checks| {
        checks.skip_for(
            "leaky_ledgers",
            Invariant::TenantIsolation,
            "an operator's report across organisations, by design",
        )
    })
    .await;
    report.assert_passed();
    assert!(
        report.to_string().contains("by design"),
        "the reason is shown: {report}"
    );
}

// ---------------------------------------------------------------------------------------
// A domain that keeps every promise, and an audit store that does not.

switchboard_core::domain! {
    /// Each organisation's note, read only by its own callers.
    Tidy { name: "tidy", state: PerOrg = PerOrg::notes }
}

/// Which part of the note to read.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
struct NoteInput {
    /// How many characters, at most.
    #[validate(range(min = 1, max = 100))]
    length: u32,
}

/// Reads the start of the caller's organisation's note.
#[tool(domain = Tidy, category = read, permission = "tidy.read")]
async fn note(ctx: &ToolContext<PerOrg>, input: NoteInput) -> Result<String, ToolError> {
    let org = ctx.caller().org_id.to_string();
    let note = ctx.state().0.get(org.as_str()).copied().unwrap_or_default();
    Ok(note.chars().take(input.length as usize).collect())
}

#[tokio::test]
async fn a_domain_that_keeps_every_promise_passes() {
    let registry = registry_of("tidy").await;
    let report = checked(&registry, |checks| {
        checks
            .domain::<Tidy>()
            .marker("acme", "buy paper")
            .marker("globex", "fix door")
    })
    .await;
    report.assert_passed();
    assert_eq!(report.tools, 1, "{report}");
    assert!(report.calls > 20, "the tool was called: {report}");
}

/// An audit store that acknowledges every record and keeps none.
#[derive(Debug, Default)]
struct Forgetful;

impl AuditStore for Forgetful {
    fn append_batch(&self, _records: &mut [AuditRecord]) -> Result<(), AuditError> {
        Ok(())
    }

    fn query(&self, _query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        Ok(Vec::new())
    }

    fn delete_before(&self, _cutoff: Timestamp, _limit: usize) -> Result<u64, AuditError> {
        Ok(0)
    }

    fn stats(&self) -> AuditStats {
        AuditStats::default()
    }
}

#[tokio::test]
async fn an_audit_trail_that_loses_records_breaks_one_audit_record() {
    let builder = ToolRegistry::builder().audit_store(Arc::new(Forgetful));
    let registry = registry_of_with("tidy", builder).await;
    let report = checked(&registry, |checks| checks.domain::<Tidy>()).await;
    fails_only_on(&report, Invariant::OneAuditRecord, "tidy_note");
    assert!(
        report
            .to_string()
            .contains("the call left 0 audit records, not one"),
        "{report}"
    );
}
