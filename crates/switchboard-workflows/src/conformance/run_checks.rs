//! The checks about runs as records: round trips (every field, timestamps to the nanosecond),
//! ids created once, and the two listings (an organisation's runs, newest first, filtered; every
//! organisation's unfinished runs, oldest first).

use switchboard_core::OrgId;

use super::{
    Failure, ORGS, RunStoreFactory, at, change, every_node_state, every_run_state, ids, run_event,
    run_id, sample_run, sample_step, step_event, stored_run,
};
use crate::{
    run::{RunEvent, RunState},
    store::{Checkpoint, RunFilter, RunRecord, RunStoreError},
};

/// A created run reads back exactly as created, in every state, with every optional field set
/// and unset: the caller's roles, agent type and trace parent, the parent, the wake time, JSON values
/// (`null` output distinct from none). An unknown id is `None`, not an error.
pub fn runs_round_trip_unchanged(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let states = every_run_state();
    let created: Vec<RunRecord> = (0..30)
        .map(|n| {
            sample_run(
                n,
                ORGS[n as usize % ORGS.len()],
                "assign_week",
                states[n as usize % states.len()].clone(),
            )
        })
        .collect();
    for run in &created {
        store.create_run(run)?;
    }
    for run in &created {
        let got = stored_run(&*store, run.id)?;
        ensure!(
            got == *run,
            "run {} changed on the way through the store: got {got:?}, created {run:?}",
            run.id
        );
    }
    let unknown = store.run(run_id(999))?;
    ensure!(
        unknown.is_none(),
        "a run that was never created is found: {unknown:?}"
    );
    Ok(())
}

/// Creating a run whose id exists is refused with `DuplicateRun`, and the first run stays as
/// it was.
pub fn a_run_id_is_created_once(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let first = sample_run(1, "acme", "assign_week", RunState::Pending);
    store.create_run(&first)?;
    let mut second = sample_run(2, "globex", "close_month", RunState::Running);
    second.id = first.id;
    let refused = store.create_run(&second);
    ensure!(
        refused == Err(RunStoreError::DuplicateRun(first.id)),
        "creating run {} twice should be refused with DuplicateRun, got {refused:?}",
        first.id
    );
    let got = stored_run(&*store, first.id)?;
    ensure!(
        got == first,
        "a refused duplicate changed the first run: {got:?}"
    );
    Ok(())
}

/// `list_runs` returns the asking organisation's runs only (a tenant never sees another's),
/// newest first (by id), those of one workflow if asked, unfinished ones only if asked, at most
/// `limit`. A checkpoint that finishes a run takes it out of the unfinished listing.
pub fn list_runs_filters_by_org_workflow_and_state_newest_first(
    make: &RunStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let states = every_run_state();
    let workflows = ["assign_week", "close_month"];
    let mut created: Vec<RunRecord> = Vec::new();
    // Created out of id order, so a store that lists in insertion order fails.
    for n in [
        7_u64, 2, 11, 0, 5, 9, 1, 12, 4, 8, 3, 10, 6, 14, 13, 15, 17, 16,
    ] {
        for (org_index, org) in ORGS.iter().enumerate() {
            let number = n * 10 + org_index as u64;
            let run = sample_run(
                number,
                org,
                workflows[(n as usize / 2) % workflows.len()],
                states[(n as usize + org_index) % states.len()].clone(),
            );
            store.create_run(&run)?;
            created.push(run);
        }
    }
    // Finish one running run, so the listing reads the state a checkpoint wrote.
    let finished = created
        .iter_mut()
        .find(|run| run.org_id == *"acme" && run.state == RunState::Running)
        .ok_or_else(|| Failure::new("the fixture has a running acme run"))?;
    store.checkpoint(&Checkpoint {
        run: finished.id,
        at: at(90_000),
        run_change: Some(change(RunState::Running, RunState::Completed, 4)),
        step: None,
        event: run_event(RunEvent::Complete, RunState::Completed),
        fence: None,
    })?;
    let applied = change(RunState::Running, RunState::Completed, 4);
    finished.state = applied.to;
    finished.output = applied.output;
    finished.wake_at = applied.wake_at;
    finished.steps_taken = applied.steps_taken;
    finished.updated_at = at(90_000);

    let mut asked = 0;
    for org in ORGS.iter().chain(["umbrella"].iter()) {
        for workflow in [None, Some("assign_week"), Some("close_month"), Some("none")] {
            for unfinished_only in [false, true] {
                for limit in [usize::MAX, 1_000, 5, 1, 0] {
                    let filter = RunFilter {
                        org_id: OrgId::from(*org),
                        workflow: workflow.map(str::to_owned),
                        unfinished_only,
                        limit,
                    };
                    let mut expected: Vec<&RunRecord> = created
                        .iter()
                        .filter(|run| run.org_id == **org)
                        .filter(|run| workflow.is_none_or(|name| run.workflow == name))
                        .filter(|run| !unfinished_only || !run.state.is_terminal())
                        .collect();
                    expected.sort_by_key(|run| std::cmp::Reverse(run.id));
                    expected.truncate(limit);
                    let listed = store.list_runs(&filter)?;
                    let expected_ids: Vec<_> = expected.iter().map(|run| run.id).collect();
                    ensure!(
                        ids(&listed) == expected_ids,
                        "list_runs({filter:?}) returned {:?}, expected newest first {expected_ids:?}",
                        ids(&listed)
                    );
                    for (got, want) in listed.iter().zip(expected) {
                        ensure!(
                            got == want,
                            "list_runs({filter:?}) returned run {} as {got:?}, stored as {want:?}",
                            got.id
                        );
                    }
                    asked += 1;
                }
            }
        }
    }
    ensure!(asked == 160, "the check asked {asked} filters");
    Ok(())
}

/// `unfinished_runs` returns every organisation's runs that are not completed, failed or
/// cancelled, oldest first (by id), as stored; a checkpoint that finishes a run removes it and
/// one that moves a run on keeps it, with its new state.
pub fn unfinished_runs_are_every_orgs_oldest_first(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    ensure!(
        store.unfinished_runs()?.is_empty(),
        "a new store has unfinished runs"
    );
    let states = every_run_state();
    let mut created = Vec::new();
    for n in [
        9_u64, 3, 14, 0, 6, 11, 1, 13, 5, 8, 2, 12, 7, 4, 10, 19, 15, 18, 16, 17,
    ] {
        let run = sample_run(
            n,
            ORGS[n as usize % ORGS.len()],
            "assign_week",
            states[n as usize % states.len()].clone(),
        );
        store.create_run(&run)?;
        created.push(run);
    }
    for (id, from, to) in [
        (run_id(2), RunState::Running, RunState::Completed),
        (run_id(0), RunState::Pending, RunState::Initializing),
    ] {
        store.checkpoint(&Checkpoint {
            run: id,
            at: at(80_000),
            run_change: Some(change(from.clone(), to.clone(), 6)),
            step: None,
            event: run_event(RunEvent::Start, to.clone()),
            fence: None,
        })?;
        let run = created
            .iter_mut()
            .find(|run| run.id == id)
            .ok_or_else(|| Failure::new(format!("run {id} is in the fixture")))?;
        ensure!(
            run.state == from,
            "the fixture's run {id} should be {from:?}, is {:?}",
            run.state
        );
        let applied = change(from, to, 6);
        run.state = applied.to;
        run.output = applied.output;
        run.wake_at = applied.wake_at;
        run.steps_taken = applied.steps_taken;
        run.updated_at = at(80_000);
    }
    let mut expected: Vec<&RunRecord> = created
        .iter()
        .filter(|run| !run.state.is_terminal())
        .collect();
    expected.sort_by_key(|run| run.id);
    let listed = store.unfinished_runs()?;
    let expected_ids: Vec<_> = expected.iter().map(|run| run.id).collect();
    ensure!(
        ids(&listed) == expected_ids,
        "unfinished_runs returned {:?}, expected oldest first {expected_ids:?}",
        ids(&listed)
    );
    for (got, want) in listed.iter().zip(expected) {
        ensure!(
            got == want,
            "unfinished_runs returned run {} as {got:?}, stored as {want:?}",
            got.id
        );
    }
    Ok(())
}

/// Every timestamp a store keeps reads back to the nanosecond: a run's creation, update and
/// wake times, a step's start and update, an event's time, and the instants inside states and
/// events (a timer's due time, a retry's), from the epoch to 2262.
pub fn timestamps_round_trip_to_the_nanosecond(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let instants = [
        jiff::Timestamp::UNIX_EPOCH,
        jiff::Timestamp::constant(0, 1),
        at(0),
        jiff::Timestamp::constant(1_795_000_000, 999_999_999),
        jiff::Timestamp::constant(1_795_000_001, 1),
        jiff::Timestamp::constant(9_200_000_000, 854_775_807),
    ];
    for (n, instant) in instants.iter().enumerate() {
        let mut run = sample_run(n as u64, "acme", "assign_week", RunState::Running);
        run.created_at = *instant;
        run.updated_at = *instant;
        run.wake_at = Some(*instant);
        store.create_run(&run)?;
        ensure!(
            stored_run(&*store, run.id)? == run,
            "run {} with times {instant} read back as {:?}",
            run.id,
            store.run(run.id)?
        );
        let mut step = sample_step(run.id, "wait", 0, 4);
        step.state = crate::node::NodeState::WaitingTimer { until: *instant };
        step.started_at = *instant;
        step.updated_at = *instant;
        let mut event = step_event(&step, 3);
        if let crate::store::WorkflowEvent::Node { retry_at, .. } = &mut event {
            *retry_at = Some(*instant);
        }
        let mut checkpoint = super::event_only(run.id, 0, event.clone());
        checkpoint.at = *instant;
        checkpoint.step = Some(step.clone());
        let mut moved = change(RunState::Running, RunState::Running, 3);
        moved.wake_at = Some(*instant);
        checkpoint.run_change = Some(moved);
        store.checkpoint(&checkpoint)?;
        let steps = store.steps(run.id)?;
        ensure!(
            steps == vec![step.clone()],
            "the step with times {instant} read back as {steps:?}"
        );
        let events = super::all_events(&*store, run.id)?;
        ensure!(
            events.len() == 1 && events[0].at == *instant && events[0].event == event,
            "the event at {instant} read back as {events:?}"
        );
        let got = stored_run(&*store, run.id)?;
        ensure!(
            got.updated_at == *instant && got.wake_at == Some(*instant),
            "the checkpoint at {instant} stored update time {} and wake time {:?}",
            got.updated_at,
            got.wake_at
        );
    }
    // Every node state, as a step's state, round trips too.
    let run = sample_run(100, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;
    for (n, state) in every_node_state().into_iter().enumerate() {
        let mut step = sample_step(run.id, "every_state", n as u32, n as u64);
        step.state = state;
        let event = step_event(&step, n as u64);
        let mut checkpoint = super::event_only(run.id, n as i64, event);
        checkpoint.step = Some(step);
        store.checkpoint(&checkpoint)?;
    }
    let states: Vec<_> = store
        .steps(run.id)?
        .into_iter()
        .map(|step| step.state)
        .collect();
    ensure!(
        states == every_node_state(),
        "the node states read back as {states:?}"
    );
    Ok(())
}
