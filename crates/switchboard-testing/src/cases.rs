//! The checks of one tool, each derived from its schema and category: smuggled `org_id`s,
//! each way of breaking its input, valid inputs (generated and the test's examples) as each
//! organisation, and for a mutating tool an agent's call and a retried key.
//!
//! A generated input that breaks a promise is shrunk with proptest's value tree (simplify
//! while the same promise still breaks, complicate when it stops), so the report shows the
//! smallest input found. The calls are async, which `TestRunner::run` cannot drive, so the
//! shrinking loop is written here over `ValueTree` directly.

use proptest::strategy::{BoxedStrategy, Strategy as _, ValueTree as _};
use serde_json::Value;
use switchboard_audit::ActionEvent;
use switchboard_core::{Category, ErrorKind, ToolDescriptor};
use switchboard_registry::AgentMutations;

use crate::{
    generate::{InputSpace, Invalid, pointer_segment},
    report::{Invariant, Violation},
    session::{Observed, Session, Who},
};

/// The most shrinking steps spent on one failing input.
const MAX_SHRINK_STEPS: u32 = 256;

/// What a generated input is checked as.
#[derive(Debug, Clone)]
enum Case {
    /// A valid input, called by a person of the organisation.
    Valid { org: usize },
    /// An input broken in one place, which must be refused there.
    Invalid { kind: Invalid, path: String },
}

/// Runs every check of `tool`.
pub(crate) async fn check_tool(session: &mut Session<'_, '_>, tool: &ToolDescriptor) {
    let space = InputSpace::new(&tool.input_schema);
    org_id_from_context(session, tool, &space).await;
    let valid = space.valid();
    org_from_renamed_fields(session, tool, &valid).await;
    let per_invalid = (session.checks.cases / 8).max(1);
    for case in space.invalid() {
        explore(
            session,
            tool,
            &Case::Invalid {
                kind: case.kind,
                path: case.path.clone(),
            },
            &case.strategy,
            per_invalid,
        )
        .await;
    }
    session.answered = 0;
    session.last_refusal = None;
    for org in 0..session.checks.orgs.len() {
        let cases = session.checks.cases.div_ceil(2);
        explore(session, tool, &Case::Valid { org }, &valid, cases).await;
        for example in examples(session, tool) {
            let found = check(session, tool, &Case::Valid { org }, example).await;
            session.violations.extend(found);
        }
    }
    if session.answered == 0 {
        let refusal = session.last_refusal.take().unwrap_or_default();
        session.unreached.push(format!(
            "no valid input of `{}` was answered (the last refusal: {refusal}), so no answer of \
             it was looked at for another organisation's data: give an example that reaches it",
            tool.name
        ));
    }
    if tool.category.mutates() {
        let inputs = mutation_inputs(session, tool, &valid);
        agent_mutations_gated(session, tool, &inputs).await;
        once_per_idempotency_key(session, tool, &inputs).await;
    }
}

fn examples(session: &Session<'_, '_>, tool: &ToolDescriptor) -> Vec<Value> {
    session
        .checks
        .examples
        .get(tool.name.as_ref())
        .cloned()
        .unwrap_or_default()
}

/// The inputs the mutation checks use: the examples, else two generated ones.
fn mutation_inputs(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    valid: &BoxedStrategy<Value>,
) -> Vec<Value> {
    let examples = examples(session, tool);
    if !examples.is_empty() {
        return examples;
    }
    (0..2)
        .filter_map(|_| valid.new_tree(&mut session.runner).ok())
        .map(|tree| tree.current())
        .collect()
}

/// Generates `cases` inputs from `strategy`, checks each as `case`, and shrinks the first that
/// breaks a promise to the smallest input that still breaks it.
async fn explore(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    case: &Case,
    strategy: &BoxedStrategy<Value>,
    cases: u32,
) {
    for _ in 0..cases {
        let Ok(mut tree) = strategy.new_tree(&mut session.runner) else {
            return;
        };
        let mut found = check(session, tool, case, tree.current()).await;
        let Some(target) = found.first().map(|violation| violation.invariant) else {
            continue;
        };
        let mut steps = 0;
        if tree.simplify() {
            while steps < MAX_SHRINK_STEPS {
                steps += 1;
                let again = check(session, tool, case, tree.current()).await;
                let progressed = if again.iter().any(|violation| violation.invariant == target) {
                    found = again;
                    tree.simplify()
                } else {
                    tree.complicate()
                };
                if !progressed {
                    break;
                }
            }
        }
        session.violations.extend(found);
        // One shrunk counterexample per case says what is wrong; more repeat it.
        return;
    }
}

/// Calls `tool` with `params` as `case` says, and returns the promises it broke.
async fn check(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    case: &Case,
    params: Value,
) -> Vec<Violation> {
    let name = tool.name.as_ref();
    match case {
        Case::Valid { org } => {
            let who = Who::person(*org);
            let reads = tool.category == Category::Read
                && !session.checks.skipped(name, Invariant::ReadChangesNothing);
            let before = if reads {
                Some(session.snapshot().await)
            } else {
                None
            };
            let observed = session.call(tool, params, &who).await;
            match &observed.result {
                Ok(_) => session.answered += 1,
                Err(error) => {
                    session.last_refusal = Some(format!("`{}`: {error}", error.kind()));
                }
            }
            let mut found = session.every_call(tool, &who, &observed);
            if let Some(before) = before {
                let after = session.snapshot().await;
                if let Some(changes) = after.changes_since(&before) {
                    found.push(observed.violation(
                        Invariant::ReadChangesNothing,
                        name,
                        format!("a read call changed state: {changes}"),
                    ));
                }
                if let Some(event) = observed.event() {
                    found.push(observed.violation(
                        Invariant::ReadChangesNothing,
                        name,
                        format!(
                            "a read call was recorded as a mutation ({})",
                            event.as_str()
                        ),
                    ));
                }
            }
            found
        }
        Case::Invalid { kind, path } => {
            let who = Who::person(0);
            let observed = session.call(tool, params, &who).await;
            let mut found = session.every_call(tool, &who, &observed);
            if !session
                .checks
                .skipped(name, Invariant::InputRefusedWithPath)
                && let Some(problem) = refused_at(&observed, path)
            {
                found.push(observed.violation(
                    Invariant::InputRefusedWithPath,
                    name,
                    format!("an input with a {} at `{path}`: {problem}", kind.as_str()),
                ));
            }
            found
        }
    }
}

/// Why `observed` is not a refusal with a field path at or above `path`, if it is not.
fn refused_at(observed: &Observed, path: &str) -> Option<String> {
    match &observed.result {
        Err(switchboard_core::InvokeError::InvalidInput { errors, .. }) => {
            let at_or_above = |reported: &str| {
                reported == path
                    || (path.starts_with(reported)
                        && path.as_bytes().get(reported.len()) == Some(&b'/'))
            };
            if errors.iter().any(|error| at_or_above(&error.path)) {
                None
            } else {
                Some(format!(
                    "refused, but at {} instead",
                    errors
                        .iter()
                        .map(|error| format!("`{}` ({})", error.path, error.reason))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
        Err(error) => Some(format!(
            "refused with `{}` instead of `invalid_input`: {error}",
            error.kind()
        )),
        Ok(answer) => Some(format!("the tool ran and answered {answer}")),
    }
}

/// Params with an `org_id` anywhere are refused with `org_id_not_allowed`, and nothing runs.
async fn org_id_from_context(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    space: &InputSpace,
) {
    let name = tool.name.as_ref();
    if session.checks.skipped(name, Invariant::OrgIdFromContext) {
        return;
    }
    if let Some(pointer) = switchboard_core::schema::find_org_id_property(&tool.input_schema) {
        session.violations.push(Violation {
            invariant: Invariant::OrgIdFromContext,
            tool: name.to_owned(),
            input: tool
                .input_schema
                .pointer(&pointer)
                .cloned()
                .unwrap_or(Value::Null),
            caller: "(no call: the tool's input schema)".to_owned(),
            problem: format!(
                "its input schema asks callers for an organisation at `{pointer}`: remove the \
                 field, and read the organisation from `ctx.caller().org_id`"
            ),
            records: Vec::new(),
        });
    }
    let other = session.org(1).id.clone();
    for smuggled in space.org_id_smuggled(&other) {
        let who = Who::person(0);
        let before = session.snapshot().await;
        let observed = session.call(tool, smuggled.params, &who).await;
        let after = session.snapshot().await;
        let mut found = session.every_call(tool, &who, &observed);
        let problem = match &observed.result {
            Err(error) if error.kind() == ErrorKind::OrgIdNotAllowed => None,
            Err(error) => Some(format!(
                "an org_id {} was refused with `{}`, not `org_id_not_allowed`: {error}",
                smuggled.label,
                error.kind()
            )),
            Ok(answer) => Some(format!(
                "an org_id {} was let through: the tool ran and answered {answer}",
                smuggled.label
            )),
        };
        let problem = problem.or_else(|| {
            after
                .changes_since(&before)
                .map(|changes| format!("an org_id {} was refused, but {changes}", smuggled.label))
        });
        if let Some(problem) = problem {
            found.push(observed.violation(Invariant::OrgIdFromContext, name, problem));
        }
        session.violations.extend(found);
    }
}

/// How many generated inputs the renamed-field check puts the other organisation's id into.
const RENAMED_FIELD_INPUTS: usize = 4;

/// The other organisation's id in each string of a read tool's input (a field the tool may
/// read the organisation from, whatever its name) must not get the caller that organisation's
/// data.
async fn org_from_renamed_fields(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    valid: &BoxedStrategy<Value>,
) {
    let name = tool.name.as_ref();
    // A mutation would store the other organisation's id as data of the caller's, and the
    // caller's later reads would then carry it: only read tools are called so.
    if tool.category != Category::Read || session.checks.skipped(name, Invariant::OrgIdFromContext)
    {
        return;
    }
    let mut inputs = examples(session, tool);
    inputs.extend(
        (0..RENAMED_FIELD_INPUTS)
            .filter_map(|_| valid.new_tree(&mut session.runner).ok())
            .map(|tree| tree.current()),
    );
    let other = session.org(1).id.clone();
    let mut tried = std::collections::BTreeSet::new();
    for input in inputs {
        for pointer in string_leaves(&input) {
            if !tried.insert(pointer.clone()) {
                continue;
            }
            let mut params = input.clone();
            if let Some(leaf) = params.pointer_mut(&pointer) {
                *leaf = Value::String(other.clone());
            }
            let who = Who::person(0);
            let observed = session.call(tool, params, &who).await;
            let mut found = session.every_call(tool, &who, &observed);
            for violation in &mut found {
                if violation.invariant == Invariant::TenantIsolation {
                    violation.invariant = Invariant::OrgIdFromContext;
                    violation.problem = format!(
                        "with `{other}` at `{pointer}`, the tool acted for that organisation: {}",
                        violation.problem
                    );
                }
            }
            session.violations.extend(found);
        }
    }
}

/// The JSON Pointers of every string in `value`.
fn string_leaves(value: &Value) -> Vec<String> {
    fn walk(value: &Value, at: &mut String, out: &mut Vec<String>) {
        match value {
            Value::String(_) => out.push(at.clone()),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let len = at.len();
                    at.push_str(&format!("/{index}"));
                    walk(item, at, out);
                    at.truncate(len);
                }
            }
            Value::Object(fields) => {
                for (key, field) in fields {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&pointer_segment(key));
                    walk(field, at, out);
                    at.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out);
    out
}

/// An agent acting alone never runs a mutating tool: refused, or stored as a proposal.
async fn agent_mutations_gated(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    inputs: &[Value],
) {
    let name = tool.name.as_ref();
    if session.checks.skipped(name, Invariant::AgentMutationsGated) {
        return;
    }
    let proposes = session.registry().config().agent_mutations == AgentMutations::Propose;
    for params in inputs {
        let who = Who::agent(0);
        let before = session.snapshot().await;
        let observed = session.call(tool, params.clone(), &who).await;
        let after = session.snapshot().await;
        let mut found = session.every_call(tool, &who, &observed);
        let ran = matches!(
            observed.kind(),
            None | Some(ErrorKind::ToolFailed | ErrorKind::ToolPanicked | ErrorKind::Timeout)
        ) || observed.event() == Some(ActionEvent::Executed);
        let problem = if ran {
            Some(format!(
                "the {} tool ran for an agent acting alone ({})",
                tool.category,
                observed.kind().map_or("ok", ErrorKind::as_str)
            ))
        } else if !proposes && observed.kind() != Some(ErrorKind::CategoryDenied) {
            Some(format!(
                "an agent's call was refused with `{}`, not `category_denied`",
                observed.kind().map_or("ok", ErrorKind::as_str)
            ))
        } else if proposes {
            // A proposal is a write the registry counts; the domains' state stays as it was.
            after
                .probes_changed_since(&before)
                .map(|changes| format!("an agent's proposal changed state: {changes}"))
        } else {
            after
                .changes_since(&before)
                .map(|changes| format!("an agent's refused call changed state: {changes}"))
        };
        if let Some(problem) = problem {
            found.push(observed.violation(Invariant::AgentMutationsGated, name, problem));
        }
        session.violations.extend(found);
    }
}

/// The same key twice runs the tool once: the second call is a replay with the same answer.
async fn once_per_idempotency_key(
    session: &mut Session<'_, '_>,
    tool: &ToolDescriptor,
    inputs: &[Value],
) {
    let name = tool.name.as_ref();
    if session
        .checks
        .skipped(name, Invariant::OncePerIdempotencyKey)
    {
        return;
    }
    let mut ran = false;
    let mut refusal = String::new();
    for params in inputs {
        let key = session.fresh("key");
        let who = Who::person(0).with_key(key);
        let first = session.call(tool, params.clone(), &who).await;
        let mut found = session.every_call(tool, &who, &first);
        if first.event() != Some(ActionEvent::Executed) {
            // Refused before the key was claimed: nothing ran, so there is nothing to replay.
            if let Err(error) = &first.result {
                refusal = format!("`{}`: {error}", error.kind());
            }
            session.violations.extend(found);
            continue;
        }
        ran = true;
        let between = session.snapshot().await;
        let second = session.call(tool, params.clone(), &who).await;
        let after = session.snapshot().await;
        found.extend(session.every_call(tool, &who, &second));
        let same_answer = match (&first.result, &second.result) {
            (Ok(a), Ok(b)) => a == b,
            (Err(a), Err(b)) => a.kind() == b.kind(),
            _ => false,
        };
        let problem = if second.event() != Some(ActionEvent::Replayed) {
            Some(format!(
                "the same key again was recorded as {}, not a replay",
                second.event().map_or("no action", ActionEvent::as_str)
            ))
        } else if !same_answer {
            Some(format!(
                "the replay answered {:?}, the first call {:?}",
                second.result, first.result
            ))
        } else {
            after
                .probes_changed_since(&between)
                .map(|changes| format!("the replay changed state: {changes}"))
        };
        if let Some(problem) = problem {
            found.push(second.violation(Invariant::OncePerIdempotencyKey, name, problem));
        }
        session.violations.extend(found);
    }
    if !ran {
        session.unreached.push(format!(
            "no input of `{name}` ran (the last refusal: {refusal}), so running once per \
             idempotency key was not checked: give an example that runs"
        ));
    }
}
