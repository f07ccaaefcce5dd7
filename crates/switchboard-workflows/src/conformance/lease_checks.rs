//! The checks of leases: one holder at a time until the lease expires, renewal and release by
//! the holder only, a takeover after expiry with a new fencing token, checkpoints under a lost
//! lease refused whole, the sweep's listing, and racing takers with exactly one winner.

use std::{
    sync::{Arc, Barrier},
    thread,
};

use super::{
    Failure, RunStoreFactory, all_events, at, change, event_only, ids, joined, run_event,
    sample_run, sample_step, step_event, stored_run,
};
use crate::{
    run::{RunEvent, RunState},
    store::{Checkpoint, Lease, RunStoreError},
};

/// The lease of `run`, taken at second `now` until second `until`, or a failure saying it was
/// refused.
fn take(
    store: &dyn crate::store::RunStore,
    run: crate::store::RunId,
    owner: &str,
    now: i64,
    until: i64,
) -> Result<Lease, Failure> {
    store
        .acquire_lease(run, owner, at(now), at(until))?
        .ok_or_else(|| {
            Failure::new(format!(
                "{owner} was refused the lease of run {run} at {now}"
            ))
        })
}

/// A lease is one owner's until it expires: another owner is refused while it is live; its
/// holder takes it again (extended, same token); once expired another owner takes it with a
/// greater token, and the old holder can neither renew it nor release it. A lease of a run
/// that does not exist is refused with `RunNotFound`.
pub fn a_lease_is_one_owners_until_it_expires(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let run = sample_run(60, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;
    let first = take(&*store, run.id, "node-a", 0, 10)?;
    ensure!(
        first.run == run.id && first.owner == "node-a" && first.expires_at == at(10),
        "the lease reads back as {first:?}"
    );
    ensure!(
        store
            .acquire_lease(run.id, "node-b", at(5), at(15))?
            .is_none(),
        "node-b took a lease node-a holds until 10, at 5"
    );
    ensure!(
        store
            .acquire_lease(run.id, "node-b", at(9), at(19))?
            .is_none(),
        "node-b took a lease node-a holds until 10, at 9"
    );
    let again = take(&*store, run.id, "node-a", 6, 20)?;
    ensure!(
        again.token == first.token && again.expires_at == at(20),
        "its holder taking it again should extend it with the same token: {first:?}, then {again:?}"
    );
    ensure!(
        store
            .acquire_lease(run.id, "node-b", at(15), at(25))?
            .is_none(),
        "node-b took node-a's extended lease (until 20) at 15"
    );
    let renewed = store.renew_lease(&again, at(30))?;
    ensure!(
        renewed.expires_at == at(30) && renewed.token == first.token,
        "a renewal reads back as {renewed:?}"
    );
    ensure!(
        store
            .acquire_lease(run.id, "node-b", at(25), at(35))?
            .is_none(),
        "node-b took node-a's renewed lease (until 30) at 25"
    );

    // Expired: node-b takes it over, with a greater token.
    let taken = take(&*store, run.id, "node-b", 30, 40)?;
    ensure!(
        taken.token > first.token,
        "a takeover must get a greater fencing token: {first:?}, then {taken:?}"
    );
    match store.renew_lease(&renewed, at(45)) {
        Err(RunStoreError::LeaseLost { run: lost, owner })
            if lost == run.id && owner == "node-a" => {}
        other => {
            return Err(Failure::new(format!(
                "renewing a lease taken over answered {other:?}, not LeaseLost"
            )));
        }
    }
    store.release_lease(&renewed)?;
    ensure!(
        store
            .acquire_lease(run.id, "node-c", at(31), at(41))?
            .is_none(),
        "the old holder's release freed node-b's lease"
    );
    ensure!(
        store
            .acquire_lease(run.id, "node-a", at(31), at(41))?
            .is_none(),
        "node-a took its lease back while node-b held it"
    );
    match store.acquire_lease(super::run_id(999_999), "node-a", at(0), at(10)) {
        Err(RunStoreError::RunNotFound(_)) => Ok(()),
        other => Err(Failure::new(format!(
            "the lease of a missing run answered {other:?}, not RunNotFound"
        ))),
    }
}

/// A released lease is free at once, for any owner, and the next holder gets a greater token;
/// a lease that expired but was not taken still renews for its holder, with its token.
pub fn a_released_lease_is_free_and_an_untaken_one_still_renews(
    make: &RunStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let run = sample_run(61, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;
    let first = take(&*store, run.id, "node-a", 0, 100)?;
    store.release_lease(&first)?;
    let second = take(&*store, run.id, "node-b", 1, 10)?;
    ensure!(
        second.token > first.token,
        "the lease after a release must have a greater token: {first:?}, then {second:?}"
    );
    // Expired at 10, and nobody took it: still node-b's.
    let renewed = store.renew_lease(&second, at(50))?;
    ensure!(
        renewed.token == second.token && renewed.expires_at == at(50),
        "an expired lease nobody took should renew with its token: {renewed:?}"
    );
    ensure!(
        store
            .acquire_lease(run.id, "node-a", at(20), at(30))?
            .is_none(),
        "node-a took a lease renewed until 50, at 20"
    );
    Ok(())
}

/// A checkpoint carrying a fence is written only while the run's lease is that holder's with
/// that token: after a takeover the old holder's checkpoints (one, or a batch) are refused
/// with `LeaseLost` and write nothing, even with a run change from the right state, and the
/// new holder's are written. A checkpoint without a fence is written whoever holds the lease.
pub fn checkpoints_under_a_lost_lease_are_refused(make: &RunStoreFactory) -> Result<(), Failure> {
    let store = make();
    let run = sample_run(62, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;
    let old = take(&*store, run.id, "node-a", 0, 10)?;
    let fenced = |lease: &Lease, second: i64| Checkpoint {
        fence: Some(lease.fence()),
        ..event_only(
            run.id,
            second,
            run_event(RunEvent::Initialized, RunState::Running),
        )
    };
    ensure!(
        store.checkpoint(&fenced(&old, 1))? == 1,
        "the holder's checkpoint was not written first"
    );
    let new = take(&*store, run.id, "node-b", 10, 20)?;
    let step = sample_step(run.id, "assign", 0, 4);
    let stale = Checkpoint {
        run: run.id,
        at: at(11),
        run_change: Some(change(RunState::Running, RunState::Completed, 4)),
        event: step_event(&step, 4),
        step: Some(step),
        fence: Some(old.fence()),
    };
    match store.checkpoint(&stale) {
        Err(RunStoreError::LeaseLost { run: lost, owner })
            if lost == run.id && owner == "node-a" => {}
        other => {
            return Err(Failure::new(format!(
                "a checkpoint under a lease taken over answered {other:?}, not LeaseLost"
            )));
        }
    }
    match store.checkpoint_all(&[fenced(&old, 12), fenced(&old, 13)]) {
        Err(RunStoreError::LeaseLost { .. }) => {}
        other => {
            return Err(Failure::new(format!(
                "a batch under a lease taken over answered {other:?}, not LeaseLost"
            )));
        }
    }
    let after = stored_run(&*store, run.id)?;
    ensure!(
        after.state == RunState::Running && after.updated_at == at(1),
        "a refused checkpoint changed the run: {after:?}"
    );
    ensure!(
        store.steps(run.id)?.is_empty(),
        "a refused checkpoint wrote its step"
    );
    ensure!(
        all_events(&*store, run.id)?.len() == 1,
        "a refused checkpoint wrote its event"
    );
    let seqs = store.checkpoint_all(&[fenced(&new, 14), fenced(&new, 15)])?;
    ensure!(
        seqs == [2, 3],
        "the new holder's batch was numbered {seqs:?}, not [2, 3]"
    );
    let unfenced = store.checkpoint(&event_only(
        run.id,
        16,
        run_event(RunEvent::Initialized, RunState::Running),
    ))?;
    ensure!(
        unfenced == 4,
        "a checkpoint without a fence was numbered {unfenced}"
    );
    // Released, the lease fences nobody's checkpoints in: the holder's own are refused too.
    store.release_lease(&new)?;
    match store.checkpoint(&fenced(&new, 17)) {
        Err(RunStoreError::LeaseLost { .. }) => Ok(()),
        other => Err(Failure::new(format!(
            "a checkpoint under a released lease answered {other:?}, not LeaseLost"
        ))),
    }
}

/// `unleased_runs` lists the unfinished runs whose lease is free (never taken, or released) or
/// expired, of every organisation, oldest first, at most the limit, page by page after a given
/// id; a run with a live lease and a finished run are not listed.
pub fn unleased_runs_are_the_unfinished_ones_free_or_expired(
    make: &RunStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let never = sample_run(70, "acme", "assign_week", RunState::Running);
    let live = sample_run(71, "globex", "assign_week", RunState::Running);
    let expired = sample_run(
        72,
        "initech",
        "notify",
        RunState::Paused {
            reason: "waiting".to_owned(),
        },
    );
    let released = sample_run(73, "acme", "notify", RunState::Pending);
    let finished = sample_run(74, "acme", "assign_week", RunState::Completed);
    let finished_expired = sample_run(75, "acme", "assign_week", RunState::Cancelled);
    // Created newest first, so that the store's insertion order is not the answer.
    for run in [
        &finished_expired,
        &finished,
        &released,
        &expired,
        &live,
        &never,
    ] {
        store.create_run(run)?;
    }
    take(&*store, live.id, "node-a", 0, 100)?;
    take(&*store, expired.id, "node-a", 0, 10)?;
    let lease = take(&*store, released.id, "node-a", 0, 100)?;
    store.release_lease(&lease)?;
    take(&*store, finished_expired.id, "node-a", 0, 10)?;
    let listed = ids(&store.unleased_runs(at(50), None, usize::MAX)?);
    let expected = [never.id, expired.id, released.id];
    ensure!(
        listed == expected,
        "unleased runs at 50 were {listed:?}, expected {expected:?} (free, expired, released; \
         oldest first)"
    );
    let first_two = ids(&store.unleased_runs(at(50), None, 2)?);
    ensure!(
        first_two == expected[..2],
        "with a limit of 2 the unleased runs were {first_two:?}"
    );
    let next_page = ids(&store.unleased_runs(at(50), Some(first_two[1]), 2)?);
    ensure!(
        next_page == expected[2..],
        "the page after {} was {next_page:?}, not {:?}",
        first_two[1],
        &expected[2..]
    );
    // At 5, the lease until 10 is live.
    let early = ids(&store.unleased_runs(at(5), None, usize::MAX)?);
    ensure!(
        early == [never.id, released.id],
        "unleased runs at 5 were {early:?}"
    );
    ensure!(
        store.unleased_runs(at(50), None, 0)?.is_empty(),
        "a limit of 0 listed runs"
    );
    Ok(())
}

/// Owners racing for the free lease of one run, from several threads at once: exactly one gets
/// it, and the others are refused (`None`).
pub fn racing_takers_have_exactly_one_winner(make: &RunStoreFactory) -> Result<(), Failure> {
    const TAKERS: usize = 8;
    const ROUNDS: i64 = 5;
    let store = make();
    let run = sample_run(80, "acme", "assign_week", RunState::Running);
    store.create_run(&run)?;
    for round in 0..ROUNDS {
        // Each round starts after the last round's lease expired.
        let now = round * 100;
        let barrier = Arc::new(Barrier::new(TAKERS));
        let results: Vec<Result<Option<Lease>, RunStoreError>> = thread::scope(|scope| {
            let handles: Vec<_> = (0..TAKERS)
                .map(|taker| {
                    let store = Arc::clone(&store);
                    let barrier = Arc::clone(&barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        store.acquire_lease(
                            run.id,
                            &format!("node-{round}-{taker}"),
                            at(now),
                            at(now + 50),
                        )
                    })
                })
                .collect();
            joined(handles, "taking a lease", "taker")
        });
        let mut winners = Vec::new();
        for result in results {
            if let Some(lease) = result? {
                winners.push(lease);
            }
        }
        ensure!(
            winners.len() == 1,
            "round {round}: {} takers got the lease: {winners:?}",
            winners.len()
        );
    }
    Ok(())
}
