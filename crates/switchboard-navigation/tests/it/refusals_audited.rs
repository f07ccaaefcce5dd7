//! Every refusal of `navigate` and `execute_action` leaves exactly one audit record, whoever
//! makes it: the navigator's own (a bad URL, no such page, a page not found or with invalid
//! parameters, a stale version, a context that does not verify), recorded under `navigate`
//! or the action's name, and the registry's (an action not offered there, a bound parameter
//! given), never recorded twice. A page that opens leaves only its reads.

use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_navigation::{NAVIGATE, NavError, Navigator};
use switchboard_registry::ToolRegistry;

/// Tuesday evening's shift, open.
const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";

/// One audit record, as these tests look at it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    tool: String,
    outcome: &'static str,
}

async fn navigator() -> Navigator {
    let registry = ToolRegistry::builder()
        .start()
        .await
        .expect("the registry starts");
    Navigator::new(registry).expect("the sample pages are valid")
}

/// acme's manager, a person, in a call of `correlation`.
fn mark(correlation: &str) -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("mark")
        .role("manager")
        .session("refusals")
        .correlation(correlation)
        .initiator(Initiator::Human)
        .build()
}

/// Every record of the registry's audit log, oldest first, as (id, what it says).
async fn all_records(registry: &ToolRegistry) -> Vec<(String, Seen)> {
    let mut records = registry
        .audit()
        .query(&Default::default())
        .await
        .expect("the audit log answers");
    records.reverse();
    records
        .into_iter()
        .map(|record| {
            (
                record.id.to_string(),
                Seen {
                    tool: record.tool.to_string(),
                    outcome: record.outcome.as_str(),
                },
            )
        })
        .collect()
}

/// Runs `call` and returns what it answered and the records it added.
async fn recorded<T>(
    registry: &ToolRegistry,
    call: impl std::future::Future<Output = T>,
) -> (T, Vec<Seen>) {
    let before: Vec<String> = all_records(registry)
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let answer = call.await;
    let added = all_records(registry)
        .await
        .into_iter()
        .filter(|(id, _)| !before.contains(id))
        .map(|(_, seen)| seen)
        .collect();
    (answer, added)
}

/// The one record among `added` under `tool` (the others are the page's reads, which ran
/// whatever they answered: a shift that does not exist is a read that failed, then a page not
/// found).
fn the_record(added: &[Seen], tool: &str, what: &str) -> &'static str {
    let under_tool: Vec<&Seen> = added.iter().filter(|seen| seen.tool == tool).collect();
    assert_eq!(
        under_tool.len(),
        1,
        "{what}: one record of `{tool}`, got {added:?}"
    );
    under_tool[0].outcome
}

#[tokio::test]
async fn every_refused_navigate_leaves_one_record_under_navigate() {
    let navigator = navigator().await;
    let registry = navigator.registry().clone();
    let gina = CallContext::builder()
        .org("globex")
        .user("gina")
        .role("admin")
        .session("refusals")
        .correlation("gina")
        .initiator(Initiator::Human)
        .build();
    let cases: Vec<(&str, CallContext, &str)> = vec![
        ("/roster/../me", mark("n1"), "bad_url"),
        ("me", mark("n2"), "bad_url"),
        (
            "/roster/shift/acme-2026-11-24-pm",
            mark("n3"),
            "no_such_page",
        ),
        ("/roster/weeks/soon", mark("n4"), "invalid_params"),
        (OPEN_SHIFT, gina, "not_found"),
        ("/proposals/no-such-proposal", mark("n5"), "not_found"),
    ];
    for (url, context, kind) in cases {
        let (answer, added) = recorded(&registry, navigator.navigate(url, &context)).await;
        let error = answer.expect_err(url);
        assert_eq!(error.kind(), kind, "{url}: {error}");
        assert_eq!(the_record(&added, NAVIGATE, url), "gate_refused");
    }

    // A context that does not verify is recorded as the registry's own refusal.
    let mut anonymous = mark("n6");
    anonymous.user_id = None;
    let (answer, added) = recorded(&registry, navigator.navigate("/me", &anonymous)).await;
    assert_eq!(answer.expect_err("no user").kind(), "missing_context");
    assert_eq!(
        added,
        vec![Seen {
            tool: NAVIGATE.to_owned(),
            outcome: "missing_context"
        }]
    );

    // A page that opens leaves its reads, and nothing under `navigate`.
    let (answer, added) = recorded(&registry, navigator.navigate(OPEN_SHIFT, &mark("n7"))).await;
    answer.expect("the shift opens");
    assert!(
        !added.is_empty() && added.iter().all(|seen| seen.outcome == "ok"),
        "{added:?}"
    );
    registry.shutdown().await;
}

#[tokio::test]
async fn every_refused_execute_action_leaves_one_record() {
    let navigator = navigator().await;
    let registry = navigator.registry().clone();
    let sue = json!({"user_id": "sue"});
    // Refused by the navigator before anything runs: one record under the action's name.
    for (url, kind) in [
        ("/roster/%2e%2e/me", "bad_url"),
        ("/no/such/page", "no_such_page"),
        ("/roster/shifts/globex-no-such-shift", "not_found"),
        ("/proposals/no-such-proposal", "not_found"),
    ] {
        let (answer, added) = recorded(
            &registry,
            navigator.execute_action(url, "assign", sue.clone(), None, &mark("e1")),
        )
        .await;
        assert_eq!(answer.expect_err(url).kind(), kind, "{url}");
        assert_eq!(the_record(&added, "assign", url), "gate_refused");
    }
    let (answer, added) = recorded(
        &registry,
        navigator.execute_action(
            OPEN_SHIFT,
            "assign",
            sue.clone(),
            Some("stale"),
            &mark("e2"),
        ),
    )
    .await;
    assert!(matches!(answer, Err(NavError::Stale { .. })), "{answer:?}");
    assert_eq!(
        the_record(&added, "assign", "a stale version"),
        "gate_refused"
    );

    // Refused through the registry's record_refusal: one record under the action's tool, none
    // under the action's name.
    let (answer, added) = recorded(
        &registry,
        navigator.execute_action(OPEN_SHIFT, "propose_swap", Value::Null, None, &mark("e3")),
    )
    .await;
    assert_eq!(answer.expect_err("not offered").kind(), "gate_refused");
    assert_eq!(
        the_record(&added, "roster_propose_shift_swap", "an action not offered"),
        "gate_refused"
    );
    assert!(
        added.iter().all(|seen| seen.tool != "propose_swap"),
        "{added:?}"
    );
    let (answer, added) = recorded(
        &registry,
        navigator.execute_action(
            OPEN_SHIFT,
            "assign",
            json!({"user_id": "sue", "shift_id": "acme-2026-11-23-am"}),
            None,
            &mark("e4"),
        ),
    )
    .await;
    assert_eq!(
        answer.expect_err("a bound parameter").kind(),
        "invalid_input"
    );
    assert_eq!(
        the_record(&added, "roster_assign_shift", "a bound parameter"),
        "invalid_input"
    );
    assert!(added.iter().all(|seen| seen.tool != "assign"), "{added:?}");
    registry.shutdown().await;
}
