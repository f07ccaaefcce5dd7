//! Records for a store's own tests beside the suite (durability, two nodes, outages): a
//! running run, a step's completion and a resume, at instants with nanoseconds, so that a
//! store that rounds them shows it there too.

use std::sync::Arc;

use jiff::Timestamp;
use serde_json::json;
use switchboard_core::{CallContext, Initiator};

use crate::{
    definition::NodePath,
    node::{NodeEvent, NodeState},
    run::{RunEvent, RunState},
    store::{Checkpoint, RunId, RunRecord, StepKey, StepRecord, WorkflowEvent},
};

/// An instant `second` seconds into the tests' day (late 2026), with nanoseconds.
pub fn instant(second: i64) -> Timestamp {
    Timestamp::constant(1_795_000_000 + second, 987_654_321)
}

/// A new running run of `org`, created at `instant(0)` and due to wake at `instant(60)`.
pub fn running_run(org: &str) -> RunRecord {
    RunRecord {
        id: RunId::new(),
        org_id: org.into(),
        workflow: "assign_week".to_owned(),
        definition: Arc::new(json!({ "name": "assign_week", "nodes": [{ "id": "assign" }] })),
        input: json!({ "week": "2026-W48", "users": ["sam", "ünï"] }),
        caller: CallContext::builder()
            .org(org)
            .user("sam")
            .session("session-1")
            .correlation("correlation-1")
            .roles(["planner"])
            .initiator(Initiator::Agent)
            .agent_type("planner")
            .build(),
        parent: None,
        state: RunState::Running,
        output: None,
        wake_at: Some(instant(60)),
        steps_taken: 0,
        created_at: instant(0),
        updated_at: instant(0),
    }
}

/// A checkpoint of `run` that records iteration `iteration` of node `path` completed, at
/// `instant(iteration)`, without a run change.
pub fn step_completed(run: RunId, path: &str, iteration: u32) -> Checkpoint {
    let step = StepRecord {
        key: StepKey {
            run,
            path: NodePath::new(path),
            iteration,
        },
        state: NodeState::Completed,
        params: Some(json!({ "shift": iteration })),
        output: Some(json!(null)),
        error: None,
        completed_seq: Some(u64::from(iteration) + 1),
        questions: Vec::new(),
        started_at: instant(i64::from(iteration)),
        updated_at: instant(i64::from(iteration) + 1),
    };
    Checkpoint {
        run,
        at: instant(i64::from(iteration)),
        run_change: None,
        event: WorkflowEvent::Node {
            path: step.key.path.clone(),
            iteration,
            event: NodeEvent::Complete,
            state: NodeState::Completed,
            retry_at: None,
        },
        step: Some(step),
        fence: None,
    }
}

/// A checkpoint of `run` with only an event, a resume, at `instant(second)`.
pub fn resumed(run: RunId, second: i64) -> Checkpoint {
    Checkpoint {
        run,
        at: instant(second),
        run_change: None,
        step: None,
        event: WorkflowEvent::Run {
            event: RunEvent::Resume,
            state: RunState::Running,
        },
        fence: None,
    }
}
