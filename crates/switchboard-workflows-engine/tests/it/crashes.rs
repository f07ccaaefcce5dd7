//! Crashes in the windows between a registry call and the checkpoint recording it.
//!
//! - Between `propose` and the checkpoint of the proposal: the resumed step proposes again
//!   under the same attempt key and gets the proposal it made, not a second one.
//! - In the middle of a mutating call, with a persistent (SQLite) idempotency store: the key
//!   was claimed by a process that stopped before recording how the call ended. The engine
//!   neither runs it again under that key (the store refuses: `outcome_unknown`) nor fails it:
//!   the run pauses for a person, and a resume runs the step under a new key.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use switchboard_approvals::{Claim, Fingerprint, IdempotencyScope, IdempotencyStore};
use switchboard_approvals_sqlite::ApprovalsDatabase;
use switchboard_core::digest_json;
use switchboard_registry::{RegistryConfig, ToolRegistry};
use switchboard_workflows::{
    MemoryRunStore, NodeEvent, NodeKind, NodeState, RunState, RunStore, RunStoreError, WaitFor,
    WorkflowEvent,
};

use crate::probe;
use crate::support::*;

const RETENTION: Duration = Duration::from_secs(3_600);

async fn registry_on(database: &ApprovalsDatabase) -> ToolRegistry {
    ToolRegistry::builder()
        .config(RegistryConfig {
            idempotency_retention: RETENTION,
            ..RegistryConfig::default()
        })
        .proposal_store(Arc::new(database.proposal_store()))
        .idempotency_store(Arc::new(database.idempotency_store(RETENTION)))
        .start()
        .await
        .expect("the registry starts")
}

#[tokio::test]
async fn a_step_in_doubt_after_a_crash_pauses_the_run_and_a_resume_runs_it_under_a_new_key() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("approvals.db");
    let database = ApprovalsDatabase::open(&path).expect("the approvals database opens");
    let registry = registry_on(&database).await;
    let store = Arc::new(MemoryRunStore::new());
    let params = json!({ "key": "in-doubt-touch" });
    let definition = definition(
        "in_doubt",
        vec![
            node(
                "pause",
                NodeKind::Wait(WaitFor::Duration(jiff::SignedDuration::from_secs(2))),
            ),
            tool("touch", "probe_touch", lit(params.clone())),
        ],
    );
    let caller = human("in-doubt");
    let first = engine_with(&registry, &store, &definition);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&first, run, &caller).await;
    first.shutdown();

    // Another process claimed the step's first key, as the registry does before running the
    // tool, and stopped before recording how the call ended.
    let crashed = ApprovalsDatabase::open(&path)
        .expect("opens")
        .idempotency_store(RETENTION);
    let fingerprint = Fingerprint::new(
        "probe_touch",
        digest_json(&params).expect("JSON has a digest"),
    );
    let scope = IdempotencyScope::new("acme".into(), format!("wf:{run}:touch:0:1").into());
    assert!(matches!(
        crashed.claim(&scope, &fingerprint, jiff::Timestamp::now()),
        Claim::Run
    ));

    let second = engine_with(&registry, &store, &definition);
    assert_eq!(second.recover().await.expect("recovers"), 1);
    // The timer fires, the step's first attempt is refused as in doubt: the run pauses.
    let mut record = second.run(run, &caller).expect("readable");
    for _ in 0..1000 {
        if matches!(&record.state, RunState::Paused { reason } if reason.contains("unknown")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        record = second.run(run, &caller).expect("readable");
    }
    let RunState::Paused { reason } = &record.state else {
        panic!("the run pauses for a person, and it is {:?}", record.state);
    };
    assert!(
        reason.contains("the outcome of node `touch` is unknown")
            && reason.contains(&format!("wf:{run}:touch:0:1"))
            && reason.contains("resume"),
        "the reason says what to check and what to do: {reason}"
    );
    assert_eq!(record.wake_at, None, "only a person wakes it");
    assert!(probe::calls("in-doubt-touch").is_empty(), "nothing ran");
    let steps = second.steps(run, &caller).expect("readable");
    let touch = step(&steps, "touch", 0);
    assert!(
        matches!(touch.state, NodeState::Retrying { attempt: 2, .. }),
        "{touch:?}"
    );
    assert_eq!(
        touch.error.expect("the refusal is stored")["code"],
        "outcome_unknown",
    );

    // The person checked the target system; resuming runs the step under its next key.
    second.resume(run, &caller).await.expect("resumes");
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(
        probe::calls("in-doubt-touch").len(),
        1,
        "ran once, on resume"
    );
    let steps = second.steps(run, &caller).expect("readable");
    assert_eq!(step(&steps, "touch", 0).state, NodeState::Completed);
    let retried = registry
        .invoke("probe_touch", params.clone(), &{
            let mut context = human("in-doubt-replay");
            context.idempotency_key = Some(format!("wf:{run}:touch:0:2").into());
            context
        })
        .await
        .expect("the second key holds the result");
    assert_eq!(retried["calls"], 1, "replayed, not run again");
}

/// A run store that fails the first commit recording a proposal, as a process stopping between
/// `propose` and that checkpoint leaves the run: the step running, the proposal stored. The
/// flag says whether it has.
fn loses_first_proposal() -> (Arc<HookedStore>, Arc<AtomicBool>) {
    let lost = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&lost);
    let store = HookedStore::new(move |checkpoints| {
        let records_proposal = checkpoints.iter().any(|checkpoint| {
            matches!(
                checkpoint.event,
                WorkflowEvent::Node {
                    event: NodeEvent::AwaitApproval { .. },
                    ..
                }
            )
        });
        if records_proposal && !flag.swap(true, Ordering::SeqCst) {
            return Err(RunStoreError::Backend {
                action: "recording a proposal".to_owned(),
                reason: "the process stopped".to_owned(),
            });
        }
        Ok(())
    });
    (Arc::new(store), lost)
}

#[tokio::test]
async fn a_step_resumed_after_proposing_finds_its_proposal_instead_of_proposing_again() {
    let registry = registry().await;
    let (store, lost) = loses_first_proposal();
    let definition = definition(
        "propose_once",
        vec![tool(
            "assign",
            "roster_assign_shift",
            object([
                ("shift_id", lit(json!("acme-2026-11-23-am"))),
                ("user_id", lit(json!("mark"))),
            ]),
        )],
    );
    let engine = |store: &Arc<HookedStore>| engine_with(&registry, store, &definition);
    let caller = agent("propose-once");
    let first = engine(&store);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    for _ in 0..1000 {
        if lost.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(lost.load(Ordering::SeqCst), "the run proposed");
    first.shutdown();
    let proposals = |proposals: Vec<switchboard_registry::Proposal>| -> Vec<_> {
        proposals
            .into_iter()
            .filter(|proposal| &*proposal.tool == "roster_assign_shift")
            .collect()
    };
    let made = proposals(registry.proposals(&human("look")).await.expect("lists"));
    assert_eq!(made.len(), 1);
    assert!(matches!(
        state(&store.steps(run).expect("readable"), "assign"),
        NodeState::Running { attempt: 1 }
    ));

    let second = engine(&store);
    assert_eq!(second.recover().await.expect("recovers"), 1);
    paused(&second, run, &caller).await;
    let after = proposals(registry.proposals(&human("look")).await.expect("lists"));
    assert_eq!(after.len(), 1, "no second proposal: {after:#?}");
    assert_eq!(after[0].id, made[0].id);
    assert_eq!(
        state(&second.steps(run, &caller).expect("readable"), "assign"),
        NodeState::WaitingApproval {
            proposal_id: made[0].id.to_string()
        }
    );

    registry
        .approve(&made[0].id, &human("approver"))
        .await
        .expect("a human admin approves");
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(
        assignee(&registry, "acme-2026-11-23-am").await.as_deref(),
        Some("mark")
    );
}
