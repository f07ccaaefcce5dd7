//! Guards the audit trail of every registered tool.
//!
//! Architecture Invariant: every invoke attempt produces exactly one audit record, success or
//! failure, whichever check refuses it (unknown tool, missing context, `org_id` in params,
//! category, permission, input) and whatever the tool does; the record's outcome is the
//! returned error's kind, or `ok`.
//!
//! The attempts that depend on the caller (a missing context, a role without permissions, an
//! agent, an unknown tool name) run against every tool, then a property test throws random
//! params and random contexts at every tool and checks the same thing. The conformance kit
//! (`kit.rs`) checks it for every input a tool's schema describes and every way of breaking it.

use architecture_tests::calls::{
    HOME_ORG, OTHER_ORG, ROLE_WITHOUT_PERMISSIONS, admin_human_confirmed, audit_records_of,
    expected_outcome, fresh_correlation_id, start_registry, tool_names,
};
use proptest::{
    prelude::*,
    test_runner::{Config, TestCaseError, TestRunner},
};
use serde_json::{Map, Number, Value, json};
use switchboard::{
    AuditQuery, AuditRecord, CallContext, Category, ErrorKind, Initiator, ToolRegistry,
};
use switchboard_audit::Outcome;

/// One call to make, and the error kind it must end with when that is certain.
struct Attempt {
    label: &'static str,
    tool: String,
    params: Value,
    context: CallContext,
    expected_kind: Option<ErrorKind>,
}

fn context_with_role(correlation_id: &str, role: &str, initiator: Initiator) -> CallContext {
    CallContext::builder()
        .org(HOME_ORG)
        .user("alice")
        .session("architecture-tests")
        .correlation(correlation_id)
        .role(role)
        .initiator(initiator)
        .confirmed(initiator == Initiator::Human)
        .build()
}

fn attempts_for(tool: &str, category: Category) -> Vec<Attempt> {
    let attempt = |label, tool: &str, params, context, expected_kind| Attempt {
        label,
        tool: tool.to_owned(),
        params,
        context,
        expected_kind,
    };
    let agent_refused = matches!(category, Category::Execute | Category::Restricted)
        .then_some(ErrorKind::CategoryDenied);
    vec![
        attempt(
            "missing context",
            tool,
            json!({}),
            // Only the correlation id, so that the record can be found again.
            CallContext::builder()
                .correlation(fresh_correlation_id("audit-missing-context"))
                .role("admin")
                .build(),
            Some(ErrorKind::MissingContext),
        ),
        attempt(
            "a role with no permissions",
            tool,
            json!({}),
            context_with_role(
                &fresh_correlation_id("audit-nobody"),
                ROLE_WITHOUT_PERMISSIONS,
                Initiator::Human,
            ),
            Some(ErrorKind::PermissionDenied),
        ),
        attempt(
            "an agent initiator",
            tool,
            json!({}),
            context_with_role(
                &fresh_correlation_id("audit-agent"),
                "admin",
                Initiator::Agent,
            ),
            agent_refused,
        ),
        attempt(
            "an unknown tool name",
            &format!("{tool}_does_not_exist"),
            json!({}),
            admin_human_confirmed(&fresh_correlation_id("audit-unknown")),
            Some(ErrorKind::ToolNotFound),
        ),
    ]
}

/// What is wrong with the records a call left, if anything.
fn check_records(
    records: &[AuditRecord],
    expected: Outcome,
    tool_asked_for: &str,
) -> Result<(), String> {
    let [record] = records else {
        return Err(format!(
            "expected exactly 1 audit record, found {}: {records:?}",
            records.len()
        ));
    };
    if record.outcome != expected {
        return Err(format!(
            "the record's outcome is `{}` but the call returned `{expected}`",
            record.outcome
        ));
    }
    if &*record.tool != tool_asked_for {
        return Err(format!(
            "the record names tool `{}` but the call asked for `{tool_asked_for}`",
            record.tool
        ));
    }
    Ok(())
}

#[tokio::test]
async fn every_attempt_on_every_tool_leaves_exactly_one_record() {
    let registry = start_registry().await.expect("the registry boots");
    let mut offenders = Vec::new();
    let mut attempts_made = 0_u64;
    let appended_before = registry.audit().settled_stats().await.store.appended;
    for descriptor in registry.list() {
        for attempt in attempts_for(&descriptor.name, descriptor.category) {
            attempts_made += 1;
            let correlation_id = attempt
                .context
                .correlation_id
                .as_ref()
                .map(ToString::to_string)
                .expect("every fixed attempt carries a correlation id");
            let result = registry
                .invoke(&attempt.tool, attempt.params.clone(), &attempt.context)
                .await;
            let what = format!(
                "`{}` with {} ({}, correlation `{correlation_id}`)",
                attempt.tool, attempt.label, attempt.params
            );
            if let Some(kind) = attempt.expected_kind {
                let got = result.as_ref().err().map(|error| error.kind());
                if got != Some(kind) {
                    offenders.push(format!("{what}: expected `{kind}`, got {result:?}"));
                }
            }
            let records = audit_records_of(&registry, &correlation_id)
                .await
                .expect("the audit store answers");
            if let Err(problem) = check_records(&records, expected_outcome(&result), &attempt.tool)
            {
                offenders.push(format!("{what}: {problem}"));
            }
        }
    }
    let appended = registry.audit().settled_stats().await.store.appended - appended_before;
    if appended != attempts_made {
        offenders.push(format!(
            "{attempts_made} attempts appended {appended} audit records in total"
        ));
    }
    assert!(
        offenders.is_empty(),
        "calls whose audit trail is wrong:\n  - {}",
        offenders.join("\n  - ")
    );
    registry.shutdown().await;
}

// Random calls.

const ROLES: [&str; 4] = ["admin", "manager", "staff", ROLE_WITHOUT_PERMISSIONS];

/// Keys the sample tools know, keys that smuggle an organisation, and noise.
fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "from", "to", "assignee", "shift_id", "with_user", "reason", "user_id", "week_start",
        ])
        .prop_map(str::to_owned),
        1 => prop::sample::select(vec!["org_id", "orgId", "ORG-ID", "org_Id"])
            .prop_map(str::to_owned),
        2 => "\\PC{0,12}",
    ]
}

/// Strings that are sometimes meaningful to the sample tools.
fn json_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "2026-11-2[0-9]",
        "(acme|globex)-2026-11-2[3-9]-(am|pm)",
        prop::sample::select(vec!["alice", "mark", "sam", "gina", "hank", "sue", "acme"])
            .prop_map(str::to_owned),
        "\\PC{0,24}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("JSON numbers are finite", |float| {
            Number::from_f64(float).map(Value::Number)
        }),
        json_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(json_key(), inner, 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Params: mostly objects (what tools take), sometimes anything at all.
fn json_params() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::collection::btree_map(json_key(), json_value(), 0..5)
            .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        1 => json_value(),
    ]
}

/// A context with any field present or absent. The correlation id is a flag: each call gets a
/// fresh one when it is set.
#[derive(Debug, Clone)]
struct ContextCase {
    org_id: Option<&'static str>,
    user_id: Option<&'static str>,
    session_id: Option<String>,
    with_correlation_id: bool,
    roles: Vec<&'static str>,
    initiator: Initiator,
    confirmed: bool,
}

impl ContextCase {
    fn build(&self, correlation_id: &str) -> CallContext {
        let mut builder = CallContext::builder()
            .initiator(self.initiator)
            .confirmed(self.confirmed);
        if let Some(org_id) = self.org_id {
            builder = builder.org(org_id);
        }
        if let Some(user_id) = self.user_id {
            builder = builder.user(user_id);
        }
        if let Some(session_id) = &self.session_id {
            builder = builder.session(session_id.as_str());
        }
        if self.with_correlation_id {
            builder = builder.correlation(correlation_id);
        }
        for role in &self.roles {
            builder = builder.role(*role);
        }
        builder.build()
    }
}

fn context_case() -> impl Strategy<Value = ContextCase> {
    (
        prop::option::weighted(
            0.9,
            prop::sample::select(vec![HOME_ORG, OTHER_ORG, "initech"]),
        ),
        prop::option::weighted(
            0.9,
            prop::sample::select(vec!["alice", "sam", "gina", "mallory"]),
        ),
        prop::option::weighted(0.9, "[a-z0-9]{1,8}"),
        prop::bool::weighted(0.9),
        prop::sample::subsequence(ROLES.to_vec(), 0..=ROLES.len()),
        prop_oneof![Just(Initiator::Human), Just(Initiator::Agent)],
        any::<bool>(),
    )
        .prop_map(
            |(org_id, user_id, session_id, with_correlation_id, roles, initiator, confirmed)| {
                ContextCase {
                    org_id,
                    user_id,
                    session_id,
                    with_correlation_id,
                    roles,
                    initiator,
                    confirmed,
                }
            },
        )
}

/// Makes one call and checks it left exactly one record with the returned outcome.
async fn call_and_check(
    registry: &ToolRegistry,
    tool: &str,
    params: &Value,
    case: &ContextCase,
) -> Result<(), String> {
    let correlation_id = fresh_correlation_id("audit-prop");
    let context = case.build(&correlation_id);
    let appended_before = registry.audit().settled_stats().await.store.appended;
    let result = registry.invoke(tool, params.clone(), &context).await;
    let appended = registry.audit().settled_stats().await.store.appended - appended_before;
    let what = format!("`{tool}` with params {params} and context {context:?}");
    if appended != 1 {
        return Err(format!("{what}: appended {appended} audit records, not 1"));
    }
    let expected = expected_outcome(&result);
    // Calls in this test run one at a time on a registry of its own, so the newest record is
    // this call's, whether or not the context has a correlation id to find it by.
    let newest = registry
        .audit()
        .query(&AuditQuery::all().limit(1))
        .await
        .map_err(|error| format!("{what}: the audit store failed: {error}"))?;
    let asked_for = switchboard_audit::clamp_tool_name(tool);
    check_records(&newest, expected, asked_for).map_err(|problem| format!("{what}: {problem}"))?;
    if case.with_correlation_id {
        let by_correlation = audit_records_of(registry, &correlation_id)
            .await
            .map_err(|error| format!("{what}: {error}"))?;
        check_records(&by_correlation, expected, asked_for)
            .map_err(|problem| format!("{what} (by correlation id): {problem}"))?;
    }
    Ok(())
}

#[test]
fn random_calls_on_every_tool_each_leave_exactly_one_record() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    let registry = runtime
        .block_on(start_registry())
        .expect("the registry boots");
    let tools = tool_names(&registry);
    let config = Config {
        cases: 64,
        // Cases are printed on failure; nothing is written next to the sources.
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = (json_params(), context_case(), "\\PC{0,200}");
    let outcome = runner.run(&strategy, |(params, case, garbage_name)| {
        runtime
            .block_on(async {
                for tool in tools.iter().chain([&garbage_name]) {
                    call_and_check(&registry, tool, &params, &case).await?;
                }
                Ok::<(), String>(())
            })
            .map_err(TestCaseError::fail)
    });
    runtime.block_on(registry.shutdown());
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
