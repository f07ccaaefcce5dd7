//! What a run of the kit found: every broken promise with the tool, the input (shrunk when it
//! was generated), the caller and the audit records of the call, written to be read as an
//! assertion message.

use std::{fmt, time::Duration};

use serde_json::Value;
use switchboard_audit::AuditRecord;

/// A promise the kit checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Invariant {
    /// The organisation comes from the call context only: params that carry an `org_id` (at
    /// any depth, in any spelling) are refused with `org_id_not_allowed` before the tool runs.
    OrgIdFromContext,
    /// Every call, whatever its input, leaves exactly one audit record, whose outcome is the
    /// call's.
    OneAuditRecord,
    /// Input the schema refuses is refused with `invalid_input` and a field path that points
    /// at (or above) the broken place.
    InputRefusedWithPath,
    /// No input makes a tool panic.
    NoPanic,
    /// A `read` tool changes nothing: the domains' state and the count of writes are the same
    /// after it as before, and its record is no mutation.
    ReadChangesNothing,
    /// An `execute` or `restricted` tool called by an agent is refused or stored as a
    /// proposal, as the registry is configured, and never runs.
    AgentMutationsGated,
    /// A mutating call runs once per idempotency key: the same key again is a replay with the
    /// same answer, and changes nothing.
    OncePerIdempotencyKey,
    /// What a caller of one organisation gets back (an answer or an error) never contains
    /// another organisation's data.
    TenantIsolation,
    /// Every error a call returns is one of the documented kinds with a message; a tool's own
    /// error has a snake_case code.
    DocumentedErrors,
}

impl Invariant {
    /// Every invariant, in the order a run checks them.
    pub const ALL: [Invariant; 9] = [
        Invariant::OrgIdFromContext,
        Invariant::OneAuditRecord,
        Invariant::InputRefusedWithPath,
        Invariant::NoPanic,
        Invariant::ReadChangesNothing,
        Invariant::AgentMutationsGated,
        Invariant::OncePerIdempotencyKey,
        Invariant::TenantIsolation,
        Invariant::DocumentedErrors,
    ];

    /// A stable snake_case name, as a skip names it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Invariant::OrgIdFromContext => "org_id_from_context",
            Invariant::OneAuditRecord => "one_audit_record",
            Invariant::InputRefusedWithPath => "input_refused_with_path",
            Invariant::NoPanic => "no_panic",
            Invariant::ReadChangesNothing => "read_changes_nothing",
            Invariant::AgentMutationsGated => "agent_mutations_gated",
            Invariant::OncePerIdempotencyKey => "once_per_idempotency_key",
            Invariant::TenantIsolation => "tenant_isolation",
            Invariant::DocumentedErrors => "documented_errors",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken promise.
#[derive(Debug, Clone)]
pub struct Violation {
    /// The promise.
    pub invariant: Invariant,
    /// The tool that broke it.
    pub tool: String,
    /// The params of the call (the smallest that still breaks it, when generated).
    pub input: Value,
    /// Who called: organisation, user, initiator.
    pub caller: String,
    /// What went wrong, in words.
    pub problem: String,
    /// The audit records the call left.
    pub records: Vec<AuditRecord>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} broken by `{}`", self.invariant, self.tool)?;
        writeln!(f, "    problem: {}", self.problem)?;
        writeln!(f, "    input:   {}", self.input)?;
        writeln!(f, "    caller:  {}", self.caller)?;
        if self.records.is_empty() {
            writeln!(f, "    audit:   no record")?;
        }
        for record in &self.records {
            let action = record
                .action
                .as_ref()
                .map(|action| format!(", {}", action.event.as_str()))
                .unwrap_or_default();
            writeln!(
                f,
                "    audit:   #{} {} {}{action}, correlation {}",
                record.id,
                record.tool,
                record.outcome.as_str(),
                record
                    .correlation_id
                    .as_ref()
                    .map_or("(none)", |id| id.as_str()),
            )?;
        }
        Ok(())
    }
}

/// A tool or an invariant left out of a run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The tool, or every tool when `None`.
    pub tool: Option<String>,
    /// The invariant, or every invariant when `None`.
    pub invariant: Option<Invariant>,
    /// Why, as the test wrote it.
    pub reason: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match (&self.tool, self.invariant) {
            (Some(tool), Some(invariant)) => format!("{invariant} for `{tool}`"),
            (Some(tool), None) => format!("`{tool}`"),
            (None, Some(invariant)) => invariant.to_string(),
            (None, None) => "everything".to_owned(),
        };
        write!(f, "{what}: {}", self.reason)
    }
}

/// What a run checked and found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every broken promise, in the order found.
    pub violations: Vec<Violation>,
    /// Problems that kept the run from checking what it was asked to (a seed call that
    /// failed, fewer than two organisations, a skip that names no tool).
    pub setup: Vec<String>,
    /// What was left out, and why.
    pub skipped: Vec<Skipped>,
    /// Checks the run could not reach with the inputs it had (every valid input of a tool was
    /// refused, say), and what would reach them. Not a failure: a hint for an example.
    pub unreached: Vec<String>,
    /// The tools checked.
    pub tools: usize,
    /// The calls made.
    pub calls: u64,
    /// How long the run took.
    pub elapsed: Duration,
    /// The input generator's seed: the same seed, tools and state give the same inputs
    /// ([`ToolChecks::rng_seed`](crate::ToolChecks::rng_seed)).
    pub rng_seed: u64,
}

impl Report {
    /// Whether every promise held and the run checked what it was asked to.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.setup.is_empty()
    }

    /// The calls made per second of the run.
    pub fn calls_per_second(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            self.calls as f64 / seconds
        } else {
            0.0
        }
    }

    /// The violations of `invariant`.
    pub fn of(&self, invariant: Invariant) -> impl Iterator<Item = &Violation> {
        self.violations
            .iter()
            .filter(move |violation| violation.invariant == invariant)
    }

    /// Panics with the report unless [`passed`](Self::passed): the assertion a test ends with.
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(self.passed(), "{self}");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "passed" } else { "FAILED" };
        writeln!(
            f,
            "switchboard conformance kit {verdict}: {} tools, {} calls in {:.2} s ({:.0} calls/s), \
             {} violations (rng seed {:#x})",
            self.tools,
            self.calls,
            self.elapsed.as_secs_f64(),
            self.calls_per_second(),
            self.violations.len(),
            self.rng_seed
        )?;
        for problem in &self.setup {
            writeln!(f, "\nsetup: {problem}")?;
        }
        for violation in &self.violations {
            write!(f, "\n{violation}")?;
        }
        if !self.unreached.is_empty() {
            writeln!(f, "\nnot reached:")?;
            for unreached in &self.unreached {
                writeln!(f, "  - {unreached}")?;
            }
        }
        if !self.skipped.is_empty() {
            writeln!(f, "\nskipped:")?;
            for skipped in &self.skipped {
                writeln!(f, "  - {skipped}")?;
            }
        }
        Ok(())
    }
}
