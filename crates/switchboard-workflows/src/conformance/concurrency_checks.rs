//! The checks of checkpoints from several threads at once: event numbers are never used twice
//! or skipped, and of engines racing to move a run from the same state exactly one wins. The
//! suite runs them on one store; a store shared by several nodes runs them through two of its
//! values at once ([`nodes_number_events_once_and_let_one_racer_win`]).

use std::{
    collections::BTreeMap,
    sync::{Arc, Barrier},
    thread,
};

use super::{
    Failure, RunStoreFactory, all_events, at, change, joined, run_event, sample_run, sample_step,
    step_event, stored_run,
};
use crate::{
    run::{RunEvent, RunState},
    store::{Checkpoint, RunStore, RunStoreError},
};

/// Checkpoints written on one run by several threads at once (no run change) each get their
/// own number: together the numbers are 1 to the count, each once, and each event, step and
/// number read back as the checkpoint that got it wrote them.
pub fn concurrent_checkpoints_use_each_event_number_once(
    make: &RunStoreFactory,
) -> Result<(), Failure> {
    checkpoints_are_numbered_once(&[make()])
}

/// Of checkpoints racing to change a run from the same state, exactly one applies: the others
/// are refused with `StateChanged` naming the winner's state, and write nothing (one event and
/// one step per round, the winner's).
pub fn racing_run_changes_have_exactly_one_winner(make: &RunStoreFactory) -> Result<(), Failure> {
    run_changes_have_one_winner(&[make()])
}

/// The two checks above through several stores on one database (the nodes of a fleet, or two
/// processes' connections to one file), not part of the suite since a factory makes
/// independent stores: thread `n` writes through `nodes[n % nodes.len()]`, and what was
/// written is read back through the last node. Event numbers are used once each across the
/// nodes, and of run changes racing through them exactly one wins.
pub fn nodes_number_events_once_and_let_one_racer_win(
    nodes: &[Arc<dyn RunStore>],
) -> Result<(), Failure> {
    checkpoints_are_numbered_once(nodes)?;
    run_changes_have_one_winner(nodes)
}

/// [`concurrent_checkpoints_use_each_event_number_once`] through `nodes`.
fn checkpoints_are_numbered_once(nodes: &[Arc<dyn RunStore>]) -> Result<(), Failure> {
    const WRITERS: usize = 8;
    const EACH: usize = 25;
    let (first, store) = first_and_last(nodes)?;
    let run = sample_run(50, "acme", "assign_week", RunState::Running);
    first.create_run(&run)?;
    let barrier = Arc::new(Barrier::new(WRITERS));
    let results: Vec<Result<Vec<(u64, Checkpoint)>, RunStoreError>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let store = Arc::clone(&nodes[writer % nodes.len()]);
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || {
                    barrier.wait();
                    let mut written = Vec::with_capacity(EACH);
                    for n in 0..EACH {
                        let step = sample_step(
                            run.id,
                            &format!("writer_{writer}"),
                            n as u32,
                            (writer * EACH + n) as u64,
                        );
                        let checkpoint = Checkpoint {
                            run: run.id,
                            at: at((writer * EACH + n) as i64),
                            run_change: None,
                            event: step_event(&step, n as u64),
                            step: Some(step),
                            fence: None,
                        };
                        let seq = store.checkpoint(&checkpoint)?;
                        written.push((seq, checkpoint));
                    }
                    Ok(written)
                })
            })
            .collect();
        joined(handles, "writing checkpoints", "writer")
    });
    let mut by_seq: BTreeMap<u64, Checkpoint> = BTreeMap::new();
    for result in results {
        for (seq, checkpoint) in result? {
            if let Some(first) = by_seq.insert(seq, checkpoint.clone()) {
                return Err(Failure::new(format!(
                    "event number {seq} was returned twice: for {first:?} and for {checkpoint:?}"
                )));
            }
        }
    }
    let total = (WRITERS * EACH) as u64;
    let numbers: Vec<u64> = by_seq.keys().copied().collect();
    ensure!(
        numbers == (1..=total).collect::<Vec<_>>(),
        "{WRITERS} threads writing {EACH} checkpoints each got the numbers {numbers:?}, not 1 to \
         {total} once each"
    );
    let events = all_events(store, run.id)?;
    ensure!(
        events.len() == by_seq.len(),
        "{} checkpoints written, {} events read",
        by_seq.len(),
        events.len()
    );
    for event in &events {
        let Some(checkpoint) = by_seq.get(&event.seq) else {
            return Err(Failure::new(format!(
                "event {} was never returned by a checkpoint",
                event.seq
            )));
        };
        ensure!(
            event.event == checkpoint.event && event.at == checkpoint.at,
            "event {} reads {event:?}, but the checkpoint that got its number wrote {:?}",
            event.seq,
            checkpoint.event
        );
    }
    let steps = store.steps(run.id)?;
    ensure!(
        steps.len() == by_seq.len(),
        "{} checkpoints wrote one step each, {} read",
        by_seq.len(),
        steps.len()
    );
    for step in &steps {
        let written = by_seq
            .values()
            .find_map(|checkpoint| checkpoint.step.as_ref().filter(|s| s.key == step.key));
        ensure!(
            written == Some(step),
            "step {:?} reads {step:?}, written {written:?}",
            step.key
        );
    }
    Ok(())
}

/// [`racing_run_changes_have_exactly_one_winner`] through `nodes`.
fn run_changes_have_one_winner(nodes: &[Arc<dyn RunStore>]) -> Result<(), Failure> {
    const RACERS: usize = 8;
    let (first, store) = first_and_last(nodes)?;
    let run = sample_run(60, "acme", "assign_week", RunState::Running);
    first.create_run(&run)?;
    let mut current = RunState::Running;
    for round in 0..20_usize {
        let barrier = Arc::new(Barrier::new(RACERS));
        let from = current.clone();
        let results: Vec<Result<u64, RunStoreError>> = thread::scope(|scope| {
            let handles: Vec<_> = (0..RACERS)
                .map(|racer| {
                    let store = Arc::clone(&nodes[racer % nodes.len()]);
                    let barrier = Arc::clone(&barrier);
                    let from = from.clone();
                    scope.spawn(move || {
                        let to = RunState::Paused {
                            reason: format!("round {round}, racer {racer}"),
                        };
                        let step = sample_step(run.id, &format!("racer_{racer}"), round as u32, 4);
                        let checkpoint = Checkpoint {
                            run: run.id,
                            at: at(round as i64),
                            run_change: Some(change(from, to.clone(), racer as u64)),
                            step: Some(step),
                            event: run_event(
                                RunEvent::Pause {
                                    reason: format!("racer {racer}"),
                                },
                                to,
                            ),
                            fence: None,
                        };
                        barrier.wait();
                        store.checkpoint(&checkpoint)
                    })
                })
                .collect();
            joined(handles, "racing", "racer")
        });
        let winners: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, result)| result.is_ok())
            .map(|(racer, _)| racer)
            .collect();
        ensure!(
            winners.len() == 1,
            "round {round}: {} of {RACERS} racing run changes from {from:?} applied: {results:?}",
            winners.len()
        );
        let winner = winners[0];
        let winner_state = RunState::Paused {
            reason: format!("round {round}, racer {winner}"),
        };
        let want_seq = round as u64 + 1;
        ensure!(
            results[winner] == Ok(want_seq),
            "round {round}: the winner's event got number {:?}, expected {want_seq}",
            results[winner]
        );
        for result in &results {
            let lost_to_winner = match result {
                Ok(_) => true,
                Err(RunStoreError::StateChanged {
                    run: id,
                    expected,
                    actual,
                }) => *id == run.id && **expected == from && **actual == winner_state,
                Err(_) => false,
            };
            ensure!(
                lost_to_winner,
                "round {round}: a losing change should be StateChanged from {from:?} to the \
                 winner's {winner_state:?}, got {result:?}"
            );
        }
        let stored = stored_run(store, run.id)?;
        ensure!(
            stored.state == winner_state && stored.steps_taken == winner as u32,
            "round {round}: the store holds {:?} with {} steps, not the winner's change",
            stored.state,
            stored.steps_taken
        );
        let events = all_events(store, run.id)?;
        ensure!(
            events.len() == round + 1,
            "round {round}: {} events stored, expected one per round",
            events.len()
        );
        let steps_this_round = store
            .steps(run.id)?
            .into_iter()
            .filter(|step| step.key.iteration == round as u32)
            .map(|step| step.key.path.as_str().to_owned())
            .collect::<Vec<_>>();
        ensure!(
            steps_this_round == [format!("racer_{winner}")],
            "round {round}: the steps written are {steps_this_round:?}, only the winner's should be"
        );
        current = winner_state;
    }
    Ok(())
}

/// The node that creates a check's run, and the one that reads back what was written.
fn first_and_last(nodes: &[Arc<dyn RunStore>]) -> Result<(&dyn RunStore, &dyn RunStore), Failure> {
    match (nodes.first(), nodes.last()) {
        (Some(first), Some(last)) => Ok((&**first, &**last)),
        _ => Err(Failure::new("no store was given")),
    }
}
