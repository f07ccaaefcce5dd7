//! One run's calls: the context each call is made with, the audit records it left, the state
//! around it, and the promises every call keeps whatever it is (one audit record, no panic,
//! documented errors, nothing of another organisation in the answer).

use std::sync::atomic::{AtomicU64, Ordering};

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;
use switchboard_audit::{AuditQuery, AuditRecord, Outcome};
use switchboard_core::{CallContext, ErrorKind, Initiator, InvokeError, Role, ToolDescriptor};
use switchboard_registry::ToolRegistry;

use crate::{
    checks::{Org, ToolChecks},
    generate::pointer_segment,
    report::{Invariant, Violation},
};

/// Who a call is made as: one of the run's organisations, as a person or an agent.
#[derive(Debug, Clone)]
pub(crate) struct Who {
    /// The index of the organisation in the run's two.
    pub(crate) org: usize,
    pub(crate) initiator: Initiator,
    /// The idempotency key to send, if any.
    pub(crate) key: Option<String>,
}

impl Who {
    /// A confirmed person of organisation `org`.
    pub(crate) fn person(org: usize) -> Self {
        Self {
            org,
            initiator: Initiator::Human,
            key: None,
        }
    }

    /// An agent of organisation `org`, acting alone.
    pub(crate) fn agent(org: usize) -> Self {
        Self {
            org,
            initiator: Initiator::Agent,
            key: None,
        }
    }

    #[must_use]
    pub(crate) fn with_key(mut self, key: String) -> Self {
        self.key = Some(key);
        self
    }
}

/// A call made, and what it left.
#[derive(Debug)]
pub(crate) struct Observed {
    pub(crate) params: Value,
    pub(crate) result: Result<Value, InvokeError>,
    pub(crate) records: Vec<AuditRecord>,
    /// Why the audit records could not be read back, if they could not.
    pub(crate) audit_error: Option<String>,
    pub(crate) caller: String,
}

impl Observed {
    /// A violation of `invariant` by this call.
    pub(crate) fn violation(
        &self,
        invariant: Invariant,
        tool: &str,
        problem: impl Into<String>,
    ) -> Violation {
        Violation {
            invariant,
            tool: tool.to_owned(),
            input: self.params.clone(),
            caller: self.caller.clone(),
            problem: problem.into(),
            records: self.records.clone(),
        }
    }

    /// The error's kind, or `None` when the call succeeded.
    pub(crate) fn kind(&self) -> Option<ErrorKind> {
        self.result.as_ref().err().map(InvokeError::kind)
    }

    /// The one record's action event, if it has one.
    pub(crate) fn event(&self) -> Option<switchboard_audit::ActionEvent> {
        match self.records.as_slice() {
            [record] => record.action.as_ref().map(|action| action.event),
            _ => None,
        }
    }
}

/// The state of everything a call could change: each probe's value and the registry's count
/// of writes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    writes: u64,
    probes: Vec<(String, Value)>,
}

impl Snapshot {
    /// What differs from `before`, in words, or `None`.
    pub(crate) fn changes_since(&self, before: &Snapshot) -> Option<String> {
        let mut changes = Vec::new();
        if self.writes != before.writes {
            changes.push(format!(
                "the registry counted {} write(s)",
                self.writes.wrapping_sub(before.writes)
            ));
        }
        changes.extend(self.probe_changes(before));
        (!changes.is_empty()).then(|| changes.join("; "))
    }

    /// What differs from `before` in the probes' state, or `None`: for calls the registry
    /// counts as writes without changing a domain (a proposal stored, a replay answered).
    pub(crate) fn probes_changed_since(&self, before: &Snapshot) -> Option<String> {
        let changes = self.probe_changes(before);
        (!changes.is_empty()).then(|| changes.join("; "))
    }

    fn probe_changes(&self, before: &Snapshot) -> Vec<String> {
        self.probes
            .iter()
            .zip(&before.probes)
            .filter(|((_, after), (_, earlier))| after != earlier)
            .map(|((name, after), (_, earlier))| {
                format!(
                    "the state of `{name}` changed {}",
                    first_difference(earlier, after, String::new())
                )
            })
            .collect()
    }
}

/// A run in progress.
pub(crate) struct Session<'c, 'r> {
    pub(crate) checks: &'c ToolChecks<'r>,
    pub(crate) runner: TestRunner,
    pub(crate) violations: Vec<Violation>,
    /// The calls made.
    pub(crate) calls: u64,
    /// The ids handed out by [`fresh`](Self::fresh).
    ids: u64,
    /// The current tool's valid calls that were answered.
    pub(crate) answered: u64,
    /// The current tool's last refusal of a valid call, in words.
    pub(crate) last_refusal: Option<String>,
    /// What the run could not reach, and what would reach it.
    pub(crate) unreached: Vec<String>,
    run_id: String,
}

impl<'c, 'r> Session<'c, 'r> {
    pub(crate) fn new(checks: &'c ToolChecks<'r>) -> Self {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&checks.rng_seed.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
        Self {
            checks,
            runner: TestRunner::new_with_rng(Config::default(), rng),
            violations: Vec::new(),
            calls: 0,
            ids: 0,
            answered: 0,
            last_refusal: None,
            unreached: Vec::new(),
            run_id: format!(
                "kit-{}-{}",
                std::process::id(),
                RUNS.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    pub(crate) fn registry(&self) -> &'r ToolRegistry {
        self.checks.registry
    }

    pub(crate) fn org(&self, index: usize) -> &'c Org {
        &self.checks.orgs[index]
    }

    /// A correlation id (or idempotency key) no other call of any run has used.
    pub(crate) fn fresh(&mut self, label: &str) -> String {
        self.ids += 1;
        format!("{}-{label}-{}", self.run_id, self.ids)
    }

    /// The roles `org` calls `tool` with.
    fn roles(&self, org: &Org, tool: &ToolDescriptor) -> Vec<Role> {
        match &org.roles {
            Some(roles) => roles.clone(),
            None => self
                .registry()
                .permissions()
                .roles_granting(&tool.permission),
        }
    }

    /// Calls `tool` with `params` as `who`, and reads back the audit records it left.
    pub(crate) async fn call(
        &mut self,
        tool: &ToolDescriptor,
        params: Value,
        who: &Who,
    ) -> Observed {
        self.calls += 1;
        let correlation = self.fresh("call");
        let org = self.org(who.org);
        let roles = self.roles(org, tool);
        let mut context = CallContext::builder()
            .org(org.id.as_str())
            .user(org.user.as_str())
            .session(self.run_id.as_str())
            .correlation(correlation.as_str())
            .roles(roles.iter().cloned())
            .initiator(who.initiator)
            .confirmed(true);
        if let Some(key) = &who.key {
            context = context.idempotency_key(key.as_str());
        }
        let context = context.build();
        let caller = format!(
            "{} of `{}` (roles {}), {}{}",
            org.user,
            org.id,
            roles
                .iter()
                .map(Role::as_str)
                .collect::<Vec<_>>()
                .join(", "),
            match who.initiator {
                Initiator::Human => "a person",
                _ => "an agent",
            },
            who.key
                .as_ref()
                .map(|key| format!(", idempotency key `{key}`"))
                .unwrap_or_default()
        );
        let result = self
            .registry()
            .invoke(&tool.name, params.clone(), &context)
            .await;
        let read_back = self
            .registry()
            .audit()
            .query(&AuditQuery::correlation(correlation))
            .await;
        let (records, audit_error) = match read_back {
            Ok(records) => (records, None),
            Err(error) => (Vec::new(), Some(error.to_string())),
        };
        Observed {
            params,
            result,
            records,
            audit_error,
            caller,
        }
    }

    /// The state now.
    pub(crate) async fn snapshot(&self) -> Snapshot {
        let writes = *self.registry().watch_writes().borrow();
        let mut probes = Vec::with_capacity(self.checks.probes.len());
        for (name, probe) in &self.checks.probes {
            probes.push((name.clone(), probe().await));
        }
        Snapshot { writes, probes }
    }

    /// The promises every call keeps, whatever it is: one audit record with the call's
    /// outcome, no panic, a documented error, and nothing of another organisation's data.
    pub(crate) fn every_call(
        &self,
        tool: &ToolDescriptor,
        who: &Who,
        observed: &Observed,
    ) -> Vec<Violation> {
        let name = tool.name.as_ref();
        let mut found = Vec::new();
        let expected = match &observed.result {
            Ok(_) => Outcome::Ok,
            Err(error) => Outcome::Error(error.kind()),
        };
        match observed.records.as_slice() {
            _ if observed.audit_error.is_some() => found.push(observed.violation(
                Invariant::OneAuditRecord,
                name,
                format!(
                    "the call's audit records could not be read back: {}",
                    observed.audit_error.as_deref().unwrap_or_default()
                ),
            )),
            [record] if record.outcome == expected => {}
            [record] => found.push(observed.violation(
                Invariant::OneAuditRecord,
                name,
                format!(
                    "the record's outcome is `{}`, the call's `{}`",
                    record.outcome.as_str(),
                    expected.as_str()
                ),
            )),
            records => found.push(observed.violation(
                Invariant::OneAuditRecord,
                name,
                format!("the call left {} audit records, not one", records.len()),
            )),
        }
        if let Err(error) = &observed.result
            && let Some(problem) = undocumented(error)
        {
            let invariant = if error.kind() == ErrorKind::ToolPanicked {
                Invariant::NoPanic
            } else {
                Invariant::DocumentedErrors
            };
            found.push(observed.violation(invariant, name, problem));
        }
        if let Some(problem) = self.leak(who.org, observed) {
            found.push(observed.violation(Invariant::TenantIsolation, name, problem));
        }
        found
            .into_iter()
            .filter(|violation| !self.checks.skipped(name, violation.invariant))
            .collect()
    }

    /// Another organisation's marker in what `org`'s caller got back (an answer or an error
    /// message), unless the params carried it.
    fn leak(&self, org: usize, observed: &Observed) -> Option<String> {
        let answer = match &observed.result {
            Ok(value) => value.to_string(),
            Err(error) => error.to_string(),
        };
        let params = observed.params.to_string();
        for (index, other) in self.checks.orgs.iter().enumerate() {
            if index == org {
                continue;
            }
            let markers = std::iter::once(&other.id)
                .chain(self.checks.markers.get(&other.id).into_iter().flatten());
            for marker in markers {
                if answer.contains(marker.as_str()) && !params.contains(marker.as_str()) {
                    return Some(format!(
                        "a caller of `{}` got back `{marker}`, data of `{}`: {}",
                        self.org(org).id,
                        other.id,
                        excerpt(&answer, marker)
                    ));
                }
            }
        }
        None
    }
}

/// Why `error` is not a documented error with a message, if it is not.
fn undocumented(error: &InvokeError) -> Option<String> {
    let kind = error.kind();
    if kind == ErrorKind::ToolPanicked {
        return Some(format!("the tool panicked: {error}"));
    }
    if error.to_string().trim().is_empty() {
        return Some(format!("a `{kind}` error without a message"));
    }
    match error {
        InvokeError::ToolFailed { error, .. } => {
            let code = error.code();
            let snake = !code.is_empty()
                && code
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
                && code.as_bytes()[0].is_ascii_lowercase();
            if !snake {
                return Some(format!(
                    "the tool's error code `{code}` is not a stable snake_case name"
                ));
            }
            if error.message().trim().is_empty() || error.message() == code {
                return Some(format!(
                    "the tool's `{code}` error has no message of its own"
                ));
            }
            None
        }
        InvokeError::InvalidInput { errors, .. } => {
            if errors.is_empty() {
                return Some("an `invalid_input` error that names no field".to_owned());
            }
            errors
                .iter()
                .find(|field| field.reason.trim().is_empty())
                .map(|field| format!("the invalid field `{}` has no reason", field.path))
        }
        _ => None,
    }
}

/// Up to 60 characters around `marker` in `text`.
fn excerpt(text: &str, marker: &str) -> String {
    let Some(at) = text.find(marker) else {
        return String::new();
    };
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(30)
        .map_or(0, |(index, _)| index);
    let end = text[at + marker.len()..]
        .char_indices()
        .nth(30)
        .map_or(text.len(), |(index, _)| at + marker.len() + index);
    format!("…{}…", &text[start..end])
}

/// Where `before` and `after` first differ, as a JSON Pointer with both values there.
fn first_difference(before: &Value, after: &Value, at: String) -> String {
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let child = format!("{at}/{}", pointer_segment(key));
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) if x == y => {}
                    (Some(x), Some(y)) => return first_difference(x, y, child),
                    (x, y) => return shown(&child, x, y),
                }
            }
            shown(&at, Some(before), Some(after))
        }
        (Value::Array(a), Value::Array(b)) => {
            match (0..a.len().max(b.len())).find(|&index| a.get(index) != b.get(index)) {
                Some(index) => match (a.get(index), b.get(index)) {
                    (Some(x), Some(y)) => first_difference(x, y, format!("{at}/{index}")),
                    (x, y) => shown(&format!("{at}/{index}"), x, y),
                },
                None => shown(&at, Some(before), Some(after)),
            }
        }
        _ => shown(&at, Some(before), Some(after)),
    }
}

fn shown(at: &str, before: Option<&Value>, after: Option<&Value>) -> String {
    let show = |value: Option<&Value>| {
        let text = value.map_or_else(|| "(absent)".to_owned(), Value::to_string);
        if text.chars().count() > 120 {
            format!("{}…", text.chars().take(120).collect::<String>())
        } else {
            text
        }
    };
    let at = if at.is_empty() {
        "(the whole state)"
    } else {
        at
    };
    format!("at `{at}`: {} → {}", show(before), show(after))
}
