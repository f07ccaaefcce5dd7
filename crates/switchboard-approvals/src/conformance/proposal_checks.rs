//! The checks of the proposal store suite: round trips, listing order, decisions as a
//! compare-and-set (also under races), expiry, tenant scoping and outcomes.
//!
//! Every status change is checked against what the in-memory store answers, field for field:
//! the proposal a decision returns, the error of a refused one, and what `get` says afterwards.

use std::{
    sync::{Arc, Barrier},
    thread,
};

use jiff::Timestamp;
use switchboard_core::{OrgId, ProposalId, UserId};

use super::{Failure, ORGS, ProposalStoreFactory, at, sample_proposal, shifted};
use crate::proposals::{
    Decision, Proposal, ProposalStatus, ProposalStore, StoreError, TransitionError,
};

fn approve(by: &str) -> Decision {
    Decision::Approve { by: by.into() }
}

fn reject(by: &str, feedback: &str) -> Decision {
    Decision::Reject {
        by: by.into(),
        feedback: feedback.to_owned(),
    }
}

fn get(store: &dyn ProposalStore, proposal: &Proposal) -> Result<Proposal, Failure> {
    store
        .get(&proposal.org_id, &proposal.id)?
        .ok_or_else(|| Failure::new(format!("proposal {} was not found", proposal.id)))
}

fn ids(proposals: &[Proposal]) -> Vec<&str> {
    proposals
        .iter()
        .map(|proposal| proposal.id.as_str())
        .collect()
}

/// A stored proposal reads back exactly as inserted: every field, timestamps to the
/// nanosecond, params as JSON values; inserting the same id again replaces it.
pub fn proposals_round_trip_unchanged(make: &ProposalStoreFactory) -> Result<(), Failure> {
    let store = make();
    let inserted: Vec<Proposal> = (0..20).map(|n| sample_proposal(n, ORGS[n % 2])).collect();
    for proposal in &inserted {
        store.insert(proposal.clone())?;
    }
    for proposal in &inserted {
        let got = get(&*store, proposal)?;
        ensure!(
            got == *proposal,
            "proposal {} changed on the way through the store: got {got:?}, inserted {proposal:?}",
            proposal.id
        );
    }
    let mut replaced = inserted[3].clone();
    replaced.summary = "a new summary".to_owned();
    store.insert(replaced.clone())?;
    let got = get(&*store, &replaced)?;
    ensure!(
        got == replaced,
        "inserting an existing id should replace it: got {got:?}"
    );
    Ok(())
}

/// `list` returns the org's proposals only, newest first (by creation time, then by id), in
/// every status.
pub fn proposals_list_newest_first_within_their_org(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let mut inserted = Vec::new();
    // Inserted out of order; two pairs share a creation time, so the id decides.
    for n in [5, 1, 9, 3, 7, 2, 8, 0, 6, 4] {
        for org in ORGS {
            let mut proposal = sample_proposal(n, org);
            if n == 8 || n == 6 {
                proposal.created_at = at(100);
            }
            store.insert(proposal.clone())?;
            inserted.push(proposal);
        }
    }
    let decided = &inserted[0];
    store
        .decide(&decided.org_id, &decided.id, approve("mark"), at(1))
        .map_err(|error| Failure::new(format!("approving {} failed: {error}", decided.id)))?;
    for org in ORGS {
        let listed = store.list(&OrgId::from(org))?;
        let mut expected: Vec<&Proposal> = inserted
            .iter()
            .filter(|proposal| proposal.org_id == *org)
            .collect();
        expected.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        let expected_ids: Vec<&str> = expected
            .iter()
            .map(|proposal| proposal.id.as_str())
            .collect();
        ensure!(
            ids(&listed) == expected_ids,
            "list({org}) returned {:?}, expected newest first {expected_ids:?}",
            ids(&listed)
        );
    }
    ensure!(
        store.list(&OrgId::from("umbrella"))?.is_empty(),
        "an org without proposals lists some"
    );
    Ok(())
}

/// A pending proposal is approved or rejected once: the decision returns it with the decider
/// and the time, a second decision (either kind) is `Closed` with the first decision, and an
/// early `Expire` changes nothing.
pub fn a_decision_leaves_pending_exactly_once(make: &ProposalStoreFactory) -> Result<(), Failure> {
    let store = make();
    let first = sample_proposal(1, "acme");
    let second = sample_proposal(2, "acme");
    store.insert(first.clone())?;
    store.insert(second.clone())?;
    let now = at(10);

    let early = store.decide(&first.org_id, &first.id, Decision::Expire, now);
    ensure!(
        matches!(&early, Err(TransitionError::Closed(current)) if current.status.is_pending()),
        "expiring a proposal before its expiry should be refused and leave it pending: {early:?}"
    );
    let approved = store
        .decide(&first.org_id, &first.id, approve("mark"), now)
        .map_err(|error| Failure::new(format!("approving a pending proposal failed: {error}")))?;
    let want = ProposalStatus::Approved {
        by: UserId::from("mark"),
        at: now,
        outcome: None,
    };
    ensure!(
        approved.status == want && approved.id == first.id,
        "an approval returned {approved:?}, expected status {want:?}"
    );
    ensure!(
        get(&*store, &first)? == approved,
        "get disagrees with what the approval returned"
    );
    for decision in [approve("alice"), reject("alice", "no"), Decision::Expire] {
        let again = store.decide(&first.org_id, &first.id, decision.clone(), shifted(now, 1));
        ensure!(
            matches!(&again, Err(TransitionError::Closed(current)) if **current == approved),
            "{decision:?} on an approved proposal should be Closed with the approval: {again:?}"
        );
    }

    let rejected = store
        .decide(
            &second.org_id,
            &second.id,
            reject("alice", "not this week"),
            now,
        )
        .map_err(|error| Failure::new(format!("rejecting a pending proposal failed: {error}")))?;
    let want = ProposalStatus::Rejected {
        by: UserId::from("alice"),
        at: now,
        feedback: "not this week".to_owned(),
    };
    ensure!(
        rejected.status == want,
        "a rejection returned {rejected:?}, expected status {want:?}"
    );
    let late = store.decide(&second.org_id, &second.id, approve("mark"), now);
    ensure!(
        matches!(&late, Err(TransitionError::Closed(current)) if **current == rejected),
        "approving a rejected proposal should be Closed with the rejection: {late:?}"
    );
    Ok(())
}

/// Many threads deciding the same proposal at once (approvals and rejections mixed): exactly
/// one wins, every other gets `Closed` with the winner's decision, and the store keeps it.
pub fn racing_decisions_have_exactly_one_winner(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    const DECIDERS: usize = 8;
    let store = make();
    for round in 0..20 {
        let proposal = sample_proposal(round, "acme");
        store.insert(proposal.clone())?;
        let barrier = Arc::new(Barrier::new(DECIDERS));
        let results: Vec<Result<Proposal, TransitionError>> = thread::scope(|scope| {
            let handles: Vec<_> = (0..DECIDERS)
                .map(|decider| {
                    let store = Arc::clone(&store);
                    let barrier = Arc::clone(&barrier);
                    let proposal = &proposal;
                    scope.spawn(move || {
                        let decision = if decider % 2 == 0 {
                            approve(&format!("approver-{decider}"))
                        } else {
                            reject(&format!("rejecter-{decider}"), "raced")
                        };
                        barrier.wait();
                        store.decide(&proposal.org_id, &proposal.id, decision, at(round as i64))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or(Err(TransitionError::NotFound)))
                .collect()
        });
        let winners: Vec<&Proposal> = results
            .iter()
            .filter_map(|result| result.as_ref().ok())
            .collect();
        ensure!(
            winners.len() == 1,
            "round {round}: {} of {DECIDERS} racing decisions won: {results:?}",
            winners.len()
        );
        let winner = winners[0];
        for result in &results {
            ensure!(
                match result {
                    Ok(_) => true,
                    Err(TransitionError::Closed(current)) => **current == *winner,
                    Err(_) => false,
                },
                "round {round}: a losing decision should be Closed with the winner {winner:?}, \
                 got {result:?}"
            );
        }
        ensure!(
            get(&*store, &proposal)? == *winner,
            "round {round}: the store does not hold the winning decision"
        );
    }
    Ok(())
}

/// At or past its expiry a pending proposal is not approved or rejected: the decision expires
/// it (`Expired`, with the time of the attempt) and later decisions are `Closed`; an `Expire`
/// decision on a due proposal succeeds.
pub fn overdue_proposals_expire_instead_of_being_decided(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let due = sample_proposal(1, "acme");
    let also_due = sample_proposal(2, "acme");
    store.insert(due.clone())?;
    store.insert(also_due.clone())?;
    // Exactly at the expiry counts as expired.
    let now = due.expires_at;
    let attempt = store.decide(&due.org_id, &due.id, approve("mark"), now);
    let mut want = due.clone();
    want.status = ProposalStatus::Expired { at: now };
    ensure!(
        matches!(&attempt, Err(TransitionError::Expired(expired)) if **expired == want),
        "approving at the expiry should expire the proposal: got {attempt:?}, expected {want:?}"
    );
    ensure!(get(&*store, &due)? == want, "get disagrees with the expiry");
    let again = store.decide(
        &due.org_id,
        &due.id,
        reject("alice", "late"),
        shifted(now, 5),
    );
    ensure!(
        matches!(&again, Err(TransitionError::Closed(current)) if **current == want),
        "deciding an expired proposal should be Closed with the expiry: {again:?}"
    );

    let later = shifted(also_due.expires_at, 60);
    let expired = store
        .decide(&also_due.org_id, &also_due.id, Decision::Expire, later)
        .map_err(|error| Failure::new(format!("expiring a due proposal failed: {error}")))?;
    ensure!(
        expired.status == (ProposalStatus::Expired { at: later }),
        "an Expire decision returned {expired:?}"
    );
    Ok(())
}

/// `expire_overdue` expires every pending proposal at or past its expiry, returns each exactly
/// once (also when racing other sweeps and decisions), and leaves the others alone.
pub fn expire_overdue_expires_each_proposal_once(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let proposals: Vec<Proposal> = (0..30).map(|n| sample_proposal(n, ORGS[n % 3])).collect();
    for proposal in &proposals {
        store.insert(proposal.clone())?;
    }
    // Decided before anything is due: never expired.
    let approved = &proposals[0];
    store
        .decide(&approved.org_id, &approved.id, approve("mark"), at(0))
        .map_err(|error| Failure::new(format!("approving failed: {error}")))?;
    // Samples expire an hour after `at(n)`: at this time, samples 0..=14 are due.
    let now = shifted(proposals[14].expires_at, 0);
    let mut expected: Vec<&str> = proposals[1..=14].iter().map(|p| p.id.as_str()).collect();
    expected.sort_unstable();

    const SWEEPERS: usize = 4;
    let barrier = Arc::new(Barrier::new(SWEEPERS + 1));
    let (swept, decided) = thread::scope(|scope| {
        let sweepers: Vec<_> = (0..SWEEPERS)
            .map(|_| {
                let store = Arc::clone(&store);
                let barrier = Arc::clone(&barrier);
                scope.spawn(move || {
                    barrier.wait();
                    store.expire_overdue(now)
                })
            })
            .collect();
        // A decider races the sweepers for one due proposal: it expires it itself, or finds it
        // expired; either way it is expired exactly once.
        let decider = {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            let target = &proposals[5];
            scope.spawn(move || {
                barrier.wait();
                store.decide(&target.org_id, &target.id, approve("mark"), now)
            })
        };
        let swept: Vec<Option<Result<Vec<Proposal>, StoreError>>> = sweepers
            .into_iter()
            .map(|handle| handle.join().ok())
            .collect();
        (swept, decider.join().ok())
    });
    let mut all_swept = Vec::new();
    for sweep in swept {
        let sweep = sweep.ok_or_else(|| Failure::new("a sweeping thread panicked"))?;
        all_swept.extend(sweep?);
    }
    let swept = all_swept;
    let mut swept_ids: Vec<&str> = ids(&swept);
    if let Some(Err(TransitionError::Expired(expired))) = &decided {
        swept_ids.push(expired.id.as_str());
    }
    swept_ids.sort_unstable();
    ensure!(
        swept_ids == expected,
        "every due pending proposal should be expired exactly once by the sweeps and the racing \
         decision: got {swept_ids:?}, expected {expected:?} (decision: {decided:?})"
    );
    ensure!(
        swept
            .iter()
            .all(|proposal| proposal.status == (ProposalStatus::Expired { at: now })),
        "an expired proposal should say when: {swept:?}"
    );
    ensure!(
        store.expire_overdue(now)?.is_empty(),
        "a second sweep at the same time expired something again"
    );
    for proposal in &proposals[15..] {
        ensure!(
            get(&*store, proposal)?.status.is_pending(),
            "{} is not due yet and should be pending",
            proposal.id
        );
    }
    ensure!(
        get(&*store, approved)?.status.as_str() == "approved",
        "an approved proposal must not expire"
    );
    Ok(())
}

/// Another org's caller never sees a proposal (`get`, `list`), never decides it (`NotFound`,
/// the proposal stays pending) and never records its outcome.
pub fn another_org_never_sees_or_decides_a_proposal(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let acme = sample_proposal(1, "acme");
    let approved = sample_proposal(2, "acme");
    store.insert(acme.clone())?;
    store.insert(approved.clone())?;
    let approved = store
        .decide(&approved.org_id, &approved.id, approve("mark"), at(5))
        .map_err(|error| Failure::new(format!("approving failed: {error}")))?;
    let globex = OrgId::from("globex");
    ensure!(
        store.get(&globex, &acme.id)?.is_none(),
        "globex can read acme's proposal"
    );
    ensure!(
        store.list(&globex)?.is_empty(),
        "globex lists acme's proposals"
    );
    for decision in [
        approve("gina"),
        reject("gina", "mine now"),
        Decision::Expire,
    ] {
        let attempt = store.decide(
            &globex,
            &acme.id,
            decision.clone(),
            shifted(acme.expires_at, 1),
        );
        ensure!(
            matches!(attempt, Err(TransitionError::NotFound)),
            "globex's {decision:?} on acme's proposal should be NotFound: {attempt:?}"
        );
    }
    ensure!(
        get(&*store, &acme)? == acme,
        "another org's decision attempts changed the proposal"
    );
    store.record_outcome(&globex, &approved.id, "tool_failed")?;
    ensure!(
        get(&*store, &approved)? == approved,
        "another org recorded an outcome on acme's proposal"
    );
    Ok(())
}

/// `record_outcome` sets the outcome of an approved proposal (and replaces it); on a pending,
/// rejected or unknown proposal it changes nothing.
pub fn record_outcome_marks_approved_proposals_only(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let pending = sample_proposal(1, "acme");
    let rejected = sample_proposal(2, "acme");
    let approved = sample_proposal(3, "acme");
    for proposal in [&pending, &rejected, &approved] {
        store.insert(proposal.clone())?;
    }
    let rejected = store
        .decide(&rejected.org_id, &rejected.id, reject("alice", "no"), at(4))
        .map_err(|error| Failure::new(format!("rejecting failed: {error}")))?;
    let mut approved = store
        .decide(&approved.org_id, &approved.id, approve("mark"), at(4))
        .map_err(|error| Failure::new(format!("approving failed: {error}")))?;
    for outcome in ["timeout", "ok"] {
        store.record_outcome(&approved.org_id, &approved.id, outcome)?;
        if let ProposalStatus::Approved { outcome: slot, .. } = &mut approved.status {
            *slot = Some(outcome.to_owned());
        }
        ensure!(
            get(&*store, &approved)? == approved,
            "after recording `{outcome}` the proposal should be {approved:?}"
        );
    }
    store.record_outcome(&pending.org_id, &pending.id, "ok")?;
    store.record_outcome(&rejected.org_id, &rejected.id, "ok")?;
    store.record_outcome(&pending.org_id, &ProposalId::from("prop-unknown"), "ok")?;
    ensure!(
        get(&*store, &pending)? == pending && get(&*store, &rejected)? == rejected,
        "recording an outcome changed a proposal that is not approved"
    );
    Ok(())
}

/// An unknown id is `None` and `NotFound`, whatever the decision; the sweep of an empty store
/// finds nothing.
pub fn unknown_proposals_are_not_found(make: &ProposalStoreFactory) -> Result<(), Failure> {
    let store = make();
    let acme = OrgId::from("acme");
    let unknown = ProposalId::from("prop-unknown");
    ensure!(
        store.get(&acme, &unknown)?.is_none(),
        "an unknown id was found"
    );
    ensure!(
        store.list(&acme)?.is_empty(),
        "a fresh store lists proposals"
    );
    for decision in [approve("mark"), reject("mark", "no"), Decision::Expire] {
        let attempt = store.decide(&acme, &unknown, decision.clone(), Timestamp::now());
        ensure!(
            matches!(attempt, Err(TransitionError::NotFound)),
            "{decision:?} on an unknown id should be NotFound: {attempt:?}"
        );
    }
    ensure!(
        store.expire_overdue(Timestamp::now())?.is_empty(),
        "a fresh store expired something"
    );
    Ok(())
}

/// `insert_new` stores a new proposal once: the same id again (a retry under the same
/// idempotency key) gets the proposal holding it back, decided or not, and changes nothing;
/// the id in another organisation is refused and shows nothing.
pub fn insert_new_keeps_the_proposal_holding_the_id(
    make: &ProposalStoreFactory,
) -> Result<(), Failure> {
    let store = make();
    let first = sample_proposal(1, ORGS[0]);
    let stored = store.insert_new(first.clone())?;
    ensure!(
        stored.is_none(),
        "a new id should be stored, and the store answered {stored:?}"
    );
    ensure!(
        get(&*store, &first)? == first,
        "the proposal should read back as stored"
    );
    let decided = store
        .decide(&first.org_id, &first.id, approve("mark"), at(10))
        .map_err(|error| Failure::new(format!("approving a pending proposal failed: {error}")))?;
    let mut again = first.clone();
    again.summary = "a retry".to_owned();
    let existing = store.insert_new(again)?;
    ensure!(
        existing.as_ref() == Some(&decided),
        "a taken id should give the proposal holding it, and the store answered {existing:?}"
    );
    ensure!(
        get(&*store, &first)? == decided,
        "a taken id must leave its proposal as it was"
    );
    let mut elsewhere = first.clone();
    elsewhere.org_id = OrgId::from(ORGS[1]);
    let answer = store.insert_new(elsewhere.clone());
    ensure!(
        answer.is_err(),
        "an id taken in another organisation should be refused, and the store answered \
         {answer:?}"
    );
    ensure!(
        store.get(&elsewhere.org_id, &elsewhere.id)?.is_none(),
        "the other organisation must not see the proposal"
    );
    ensure!(
        get(&*store, &first)? == decided,
        "another organisation's insert must leave the proposal as it was"
    );
    Ok(())
}

/// A withdrawal leaves pending like a decision (who, when and why read back), and closes the
/// proposal: approving, rejecting or withdrawing it again is refused with the withdrawn
/// proposal; a decided proposal cannot be withdrawn.
pub fn a_withdrawn_proposal_is_closed(make: &ProposalStoreFactory) -> Result<(), Failure> {
    let store = make();
    let proposal = sample_proposal(2, ORGS[0]);
    let decided = sample_proposal(4, ORGS[0]);
    store.insert(proposal.clone())?;
    store.insert(decided.clone())?;
    let withdraw = || Decision::Withdraw {
        by: UserId::from("sam"),
        reason: "the run was cancelled".to_owned(),
    };
    let withdrawn = store
        .decide(&proposal.org_id, &proposal.id, withdraw(), at(10))
        .map_err(|error| Failure::new(format!("withdrawing a pending proposal failed: {error}")))?;
    let expected = ProposalStatus::Withdrawn {
        by: UserId::from("sam"),
        at: at(10),
        reason: "the run was cancelled".to_owned(),
    };
    ensure!(
        withdrawn.status == expected,
        "a withdrawal should read {expected:?}, and it is {:?}",
        withdrawn.status
    );
    ensure!(
        get(&*store, &proposal)? == withdrawn,
        "the withdrawn proposal should read back as the withdrawal returned it"
    );
    for decision in [approve("mark"), reject("mark", "no"), withdraw()] {
        match store.decide(&proposal.org_id, &proposal.id, decision.clone(), at(11)) {
            Err(TransitionError::Closed(current)) if *current == withdrawn => {}
            other => {
                return Err(Failure::new(format!(
                    "{decision:?} on a withdrawn proposal should be refused as closed, and the \
                     store answered {other:?}"
                )));
            }
        }
    }
    let approved = store
        .decide(&decided.org_id, &decided.id, approve("mark"), at(12))
        .map_err(|error| Failure::new(format!("approving a pending proposal failed: {error}")))?;
    match store.decide(&decided.org_id, &decided.id, withdraw(), at(13)) {
        Err(TransitionError::Closed(current)) if *current == approved => Ok(()),
        other => Err(Failure::new(format!(
            "withdrawing an approved proposal should be refused as closed, and the store \
             answered {other:?}"
        ))),
    }
}
