//! The checks of checkpoints, one thread at a time: a checkpoint is written whole or not at
//! all, its run change is a compare-and-set on the exact stored state, steps are upserted by
//! their key and listed in key order, and events are numbered per run from 1 without gaps and
//! read back in pages.

use super::{
    Failure, RunStoreFactory, all_events, at, change, event_only, every_run_state, run_event,
    run_id, sample_run, sample_step, step_event, stored_run,
};
use crate::{
    run::{RunEvent, RunState},
    store::{Checkpoint, EventRecord, RunStoreError, StepKey, StepRecord},
};

/// A checkpoint for a run that does not exist is refused with `RunNotFound`, and writes
/// nothing: no step, no event.
pub fn a_checkpoint_on_a_missing_run_is_refused(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    store.create_run(&sample_run(1, "acme", "assign_week", RunState::Running))?;
    let missing = run_id(2);
    let step = sample_step(missing, "fetch", 0, 1);
    for run_change in [
        None,
        Some(change(RunState::Running, RunState::Completed, 1)),
    ] {
        let refused = store.checkpoint(&Checkpoint {
            run: missing,
            at: at(10),
            run_change,
            step: Some(step.clone()),
            event: step_event(&step, 1),
            fence: None,
        });
        ensure!(
            refused == Err(RunStoreError::RunNotFound(missing)),
            "a checkpoint on run {missing}, never created, should be RunNotFound, got {refused:?}"
        );
    }
    let steps = store.steps(missing)?;
    let events = all_events(&*store, missing)?;
    ensure!(
        steps.is_empty() && events.is_empty(),
        "a refused checkpoint wrote steps {steps:?} and events {events:?}"
    );
    ensure!(
        store.run(missing)?.is_none(),
        "a checkpoint on a missing run created it"
    );
    Ok(())
}

/// A run change applies only if the stored state is exactly `from`, payload included (a run
/// paused for one reason is not paused for another). Otherwise the checkpoint is refused with
/// `StateChanged` carrying the expected and the actual state, and nothing of it is written:
/// the run, its steps and its events stay as they were.
pub fn a_run_change_applies_only_from_the_expected_state(
    make: &RunStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let states = every_run_state();
    for (index, stored) in states.iter().enumerate() {
        let run = sample_run(index as u64, "acme", "assign_week", stored.clone());
        store.create_run(&run)?;
        // One step and one event already there, which a refused checkpoint must not touch.
        let first_step = sample_step(run.id, "fetch", 0, 2);
        store.checkpoint(&Checkpoint {
            run: run.id,
            at: at(500),
            run_change: None,
            step: Some(first_step.clone()),
            event: step_event(&first_step, 2),
            fence: None,
        })?;
        let before_run = stored_run(&*store, run.id)?;
        let before_events = all_events(&*store, run.id)?;
        let mut wrong_states: Vec<RunState> = states
            .iter()
            .filter(|state| *state != stored)
            .cloned()
            .collect();
        // The same state's name with another payload is another state.
        wrong_states.extend(match stored {
            RunState::Paused { reason } => vec![RunState::Paused {
                reason: format!("{reason} "),
            }],
            RunState::Failed {
                error,
                compensation_failure,
            } => vec![RunState::Failed {
                error: error.to_uppercase(),
                compensation_failure: compensation_failure.clone(),
            }],
            _ => Vec::new(),
        });
        for (attempt, expected) in wrong_states.into_iter().enumerate() {
            let step = sample_step(run.id, "fetch", 0, 5 + attempt as u64);
            let other_step = sample_step(run.id, "notify", attempt as u32, 3);
            for step in [step, other_step] {
                let refused = store.checkpoint(&Checkpoint {
                    run: run.id,
                    at: at(1_000 + attempt as i64),
                    run_change: Some(change(expected.clone(), RunState::Cancelled, 9)),
                    step: Some(step.clone()),
                    event: run_event(RunEvent::Cancel, RunState::Cancelled),
                    fence: None,
                });
                let want = RunStoreError::StateChanged {
                    run: run.id,
                    expected: Box::new(expected.clone()),
                    actual: Box::new(stored.clone()),
                };
                ensure!(
                    refused == Err(want.clone()),
                    "a change from {expected:?} on a run that is {stored:?} should be refused \
                     with {want:?}, got {refused:?}"
                );
            }
        }
        let after_run = stored_run(&*store, run.id)?;
        ensure!(
            after_run == before_run,
            "refused checkpoints changed run {}: {before_run:?} became {after_run:?}",
            run.id
        );
        let steps = store.steps(run.id)?;
        ensure!(
            steps == vec![first_step.clone()],
            "refused checkpoints wrote steps: {steps:?}"
        );
        let after_events = all_events(&*store, run.id)?;
        ensure!(
            after_events == before_events,
            "refused checkpoints wrote events: {after_events:?}"
        );
        // From the exact stored state, the change applies.
        let seq = store.checkpoint(&Checkpoint {
            run: run.id,
            at: at(2_000),
            run_change: Some(change(stored.clone(), RunState::Cancelled, 9)),
            step: None,
            event: run_event(RunEvent::Cancel, RunState::Cancelled),
            fence: None,
        })?;
        ensure!(
            seq == 2,
            "the change from the stored state got event number {seq}, expected 2"
        );
        let moved = stored_run(&*store, run.id)?;
        ensure!(
            moved.state == RunState::Cancelled,
            "a change from the stored state {stored:?} left the run {:?}",
            moved.state
        );
    }
    Ok(())
}

/// A checkpoint writes its run change (state, output, wake time, step count, and its time as
/// the run's update time), its step and its event together; the run's other fields stay. A
/// checkpoint without a run change still moves the update time and leaves the rest.
pub fn a_checkpoint_writes_run_step_and_event_together(
    make: &RunStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let mut run = sample_run(3, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;

    let step = sample_step(run.id, "assign", 0, 4);
    let changed = change(RunState::Running, RunState::Completed, 8);
    let event = run_event(RunEvent::Complete, RunState::Completed);
    let seq = store.checkpoint(&Checkpoint {
        run: run.id,
        at: at(3_000),
        run_change: Some(changed.clone()),
        step: Some(step.clone()),
        event: event.clone(),
        fence: None,
    })?;
    ensure!(seq == 1, "the run's first event got number {seq}");
    run.state = changed.to;
    run.output = changed.output;
    run.wake_at = changed.wake_at;
    run.steps_taken = changed.steps_taken;
    run.updated_at = at(3_000);
    let got = stored_run(&*store, run.id)?;
    ensure!(
        got == run,
        "after a checkpoint the run is {got:?}, expected {run:?}"
    );
    let steps = store.steps(run.id)?;
    ensure!(
        steps == vec![step.clone()],
        "after a checkpoint the steps are {steps:?}"
    );
    let events = all_events(&*store, run.id)?;
    let want = vec![EventRecord {
        run: run.id,
        seq: 1,
        at: at(3_000),
        event,
    }];
    ensure!(
        events == want,
        "after a checkpoint the events are {events:?}, expected {want:?}"
    );

    // A change that sets output and wake time to none clears them.
    let mut cleared = change(RunState::Completed, RunState::Completed, 2);
    cleared.output = None;
    cleared.wake_at = None;
    store.checkpoint(&Checkpoint {
        run: run.id,
        at: at(3_100),
        run_change: Some(cleared),
        step: None,
        event: run_event(RunEvent::Complete, RunState::Completed),
        fence: None,
    })?;
    let got = stored_run(&*store, run.id)?;
    ensure!(
        got.output.is_none() && got.wake_at.is_none() && got.steps_taken == 2,
        "a change to no output and no wake time stored output {:?}, wake {:?}, steps {}",
        got.output,
        got.wake_at,
        got.steps_taken
    );
    run = got;

    // Without a run change: the step and the event, and the update time, nothing else.
    let later_step = sample_step(run.id, "notify", 0, 7);
    let seq = store.checkpoint(&Checkpoint {
        run: run.id,
        at: at(3_500),
        run_change: None,
        step: Some(later_step.clone()),
        event: step_event(&later_step, 7),
        fence: None,
    })?;
    ensure!(seq == 3, "the run's third event got number {seq}");
    run.updated_at = at(3_500);
    let got = stored_run(&*store, run.id)?;
    ensure!(
        got == run,
        "a checkpoint without a run change should move the update time only: got {got:?}, \
         expected {run:?}"
    );
    let steps = store.steps(run.id)?;
    ensure!(
        steps == vec![step, later_step],
        "after two steps the steps are {steps:?}"
    );
    Ok(())
}

/// A step is inserted or replaced by its key (run, path, iteration), one record per key;
/// `steps` lists a run's steps in key order (path by its bytes, then iteration as a number),
/// never another run's.
pub fn steps_upsert_by_key_and_list_in_key_order(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let runs = [run_id(20), run_id(21), run_id(22)];
    for (n, id) in runs.iter().enumerate() {
        let mut run = sample_run(20 + n as u64, "acme", "assign_week", RunState::Running);
        run.id = *id;
        store.create_run(&run)?;
    }
    // Paths whose byte order differs from a naive split on `/`, iterations whose numeric order
    // differs from their text's.
    let paths = ["ab", "a/b", "a_b", "a", "fan_out/notify/send", "Z", "é"];
    let iterations = [10_u32, 2, 0, 4_000_000_000];
    let mut expected: Vec<StepRecord> = Vec::new();
    let mut n = 0_u64;
    for path in paths {
        for iteration in iterations {
            for run in runs {
                let step = sample_step(run, path, iteration, n);
                store.checkpoint(&Checkpoint {
                    run,
                    at: at(n as i64),
                    run_change: None,
                    step: Some(step.clone()),
                    event: step_event(&step, n),
                    fence: None,
                })?;
                if run == runs[0] {
                    expected.push(step);
                }
                n += 1;
            }
        }
    }
    // Replace some steps of the first run: the key stays, the record is the new one.
    for (index, step) in expected.iter_mut().enumerate().filter(|(i, _)| i % 3 == 0) {
        let replacement = StepRecord {
            key: step.key.clone(),
            ..sample_step(runs[0], "ignored", 0, 1_000 + index as u64)
        };
        store.checkpoint(&event_only(runs[0], 5_000, step_event(&replacement, 1)))?;
        store.checkpoint(&Checkpoint {
            step: Some(replacement.clone()),
            ..event_only(runs[0], 5_001, step_event(&replacement, 2))
        })?;
        *step = replacement;
    }
    expected.sort_by(|a, b| a.key.cmp(&b.key));
    let listed = store.steps(runs[0])?;
    let listed_keys: Vec<&StepKey> = listed.iter().map(|step| &step.key).collect();
    let expected_keys: Vec<&StepKey> = expected.iter().map(|step| &step.key).collect();
    ensure!(
        listed_keys == expected_keys,
        "steps returned the keys {:?}, expected in key order {:?}",
        listed_keys
            .iter()
            .map(|key| (key.path.as_str(), key.iteration))
            .collect::<Vec<_>>(),
        expected_keys
            .iter()
            .map(|key| (key.path.as_str(), key.iteration))
            .collect::<Vec<_>>()
    );
    for (got, want) in listed.iter().zip(&expected) {
        ensure!(
            got == want,
            "step {:?} read back as {got:?}, expected {want:?}",
            want.key
        );
    }
    for run in &runs[1..] {
        let others = store.steps(*run)?;
        ensure!(
            others.len() == paths.len() * iterations.len()
                && others.iter().all(|step| step.key.run == *run),
            "steps({run}) returned {} steps, some of other runs: {:?}",
            others.len(),
            others
                .iter()
                .map(|step| step.key.run)
                .filter(|other| other != run)
                .collect::<Vec<_>>()
        );
    }
    ensure!(
        store.steps(run_id(99))?.is_empty(),
        "an unknown run has steps"
    );
    Ok(())
}

/// Each run numbers its events from 1, without gaps, in the order they were written, however
/// the writes to several runs interleave; `checkpoint` returns the number it used, and the
/// events read back as written.
pub fn events_are_numbered_from_one_without_gaps(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let runs = [run_id(30), run_id(31), run_id(32)];
    for (n, id) in runs.iter().enumerate() {
        let mut run = sample_run(30 + n as u64, "globex", "close_month", RunState::Running);
        run.id = *id;
        store.create_run(&run)?;
    }
    let mut written: Vec<Vec<EventRecord>> = vec![Vec::new(); runs.len()];
    for n in 0..60_u64 {
        // An uneven interleaving: run 0 every time, run 1 every other, run 2 every fifth.
        for (index, run) in runs.iter().enumerate() {
            if n % [1, 2, 5][index] != 0 {
                continue;
            }
            let step = sample_step(*run, "loop", n as u32, n);
            let event = if n % 4 == 0 {
                run_event(
                    RunEvent::Pause {
                        reason: format!("pause {n}"),
                    },
                    RunState::Running,
                )
            } else {
                step_event(&step, n)
            };
            let seq = store.checkpoint(&Checkpoint {
                run: *run,
                at: at(10_000 - n as i64),
                run_change: None,
                step: (n % 3 == 0).then_some(step),
                event: event.clone(),
                fence: None,
            })?;
            let want = written[index].len() as u64 + 1;
            ensure!(seq == want, "run {run}'s event {want} was numbered {seq}");
            written[index].push(EventRecord {
                run: *run,
                seq,
                at: at(10_000 - n as i64),
                event,
            });
        }
    }
    for (run, want) in runs.iter().zip(&written) {
        let events = all_events(&*store, *run)?;
        ensure!(
            events == *want,
            "run {run}'s events read back as {events:?}, written as {want:?}"
        );
    }
    ensure!(
        all_events(&*store, run_id(99))?.is_empty(),
        "an unknown run has events"
    );
    Ok(())
}

/// `events(run, after, limit)` returns the events numbered after `after`, oldest first, at most
/// `limit`: reading page after page returns each event once; a page past the end, or of
/// limit 0, is empty.
pub fn events_page_after_a_number(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let run = sample_run(40, "initech", "assign_week", RunState::Running);
    store.create_run(&run)?;
    let other = sample_run(41, "initech", "assign_week", RunState::Running);
    store.create_run(&other)?;
    for n in 0..23_u64 {
        let step = sample_step(run.id, "page", n as u32, n);
        store.checkpoint(&event_only(run.id, n as i64, step_event(&step, n)))?;
        store.checkpoint(&event_only(other.id, n as i64, step_event(&step, n + 1)))?;
    }
    let all = all_events(&*store, run.id)?;
    ensure!(all.len() == 23, "23 events written, {} read", all.len());
    for limit in [1_usize, 4, 7, 23, 100] {
        let mut after = 0;
        let mut read = Vec::new();
        loop {
            let page = store.events(run.id, after, limit)?;
            ensure!(
                page.len() <= limit,
                "events(after {after}, limit {limit}) returned {} events",
                page.len()
            );
            let want: Vec<&EventRecord> = all
                .iter()
                .filter(|event| event.seq > after)
                .take(limit)
                .collect();
            ensure!(
                page.iter().collect::<Vec<_>>() == want,
                "events(after {after}, limit {limit}) returned {:?}, expected numbers {:?}",
                page.iter().map(|event| event.seq).collect::<Vec<_>>(),
                want.iter().map(|event| event.seq).collect::<Vec<_>>()
            );
            let Some(last) = page.last() else { break };
            after = last.seq;
            read.extend(page);
        }
        ensure!(
            read == all,
            "reading pages of {limit} returned {} events, not the 23 once each",
            read.len()
        );
    }
    for (after, limit) in [(23, 10), (500, 10), (0, 0), (5, 0)] {
        let page = store.events(run.id, after, limit)?;
        ensure!(
            page.is_empty(),
            "events(after {after}, limit {limit}) should be empty, returned {page:?}"
        );
    }
    let middle = store.events(run.id, 20, 10)?;
    ensure!(
        middle.iter().map(|event| event.seq).collect::<Vec<_>>() == [21, 22, 23],
        "events(after 20, limit 10) returned {middle:?}"
    );
    Ok(())
}

/// `checkpoint_all` writes its checkpoints in order, as that many `checkpoint` calls would:
/// their events numbered on from the run's last, each step upserted, each run change applied
/// from the state the one before it left; it returns the numbers. A batch whose second
/// checkpoint is refused returns the refusal, and the store is left as if the batch stopped
/// there or never ran (a store with transactions writes all or none).
pub fn checkpoint_all_writes_in_order(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let run = sample_run(40, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;
    let first = store.checkpoint(&event_only(
        run.id,
        1,
        run_event(RunEvent::Initialized, RunState::Running),
    ))?;
    let done = sample_step(run.id, "fetch", 0, 1);
    let next = sample_step(run.id, "assign", 0, 2);
    let batch = [
        Checkpoint {
            run: run.id,
            at: at(2),
            run_change: None,
            step: Some(done.clone()),
            event: step_event(&done, 1),
            fence: None,
        },
        Checkpoint {
            run: run.id,
            at: at(3),
            run_change: Some(change(RunState::Running, RunState::Running, 7)),
            step: Some(next.clone()),
            event: step_event(&next, 2),
            fence: None,
        },
    ];
    let seqs = store.checkpoint_all(&batch)?;
    ensure!(
        seqs == [first + 1, first + 2],
        "the batch's events were numbered {seqs:?} after {first}"
    );
    let steps = store.steps(run.id)?;
    ensure!(
        steps.contains(&done) && steps.contains(&next),
        "the batch's steps read back as {steps:?}"
    );
    ensure!(
        stored_run(&*store, run.id)?.steps_taken == 7,
        "the batch's run change was not applied"
    );
    ensure!(
        all_events(&*store, run.id)?.len() == 3,
        "the batch did not write its two events"
    );

    // The second checkpoint expects a state the run is not in.
    let later = sample_step(run.id, "notify", 0, 3);
    let refused = [
        Checkpoint {
            run: run.id,
            at: at(4),
            run_change: None,
            step: Some(later.clone()),
            event: step_event(&later, 3),
            fence: None,
        },
        Checkpoint {
            run: run.id,
            at: at(5),
            run_change: Some(change(RunState::Initializing, RunState::Running, 8)),
            step: None,
            event: run_event(RunEvent::Initialized, RunState::Running),
            fence: None,
        },
    ];
    match store.checkpoint_all(&refused) {
        Err(RunStoreError::StateChanged { .. }) => {}
        other => {
            return Err(Failure::new(format!(
                "a batch with a stale run change answered {other:?}, not StateChanged"
            )));
        }
    }
    let events = all_events(&*store, run.id)?;
    ensure!(
        events.len() == 3 || events.len() == 4,
        "a refused batch left {} events (3 before it, 4 if its first checkpoint stands)",
        events.len()
    );
    ensure!(
        stored_run(&*store, run.id)?.steps_taken == 7,
        "the refused checkpoint's run change was applied"
    );
    Ok(())
}
