//! The checks of the idempotency store suite: claims, replays of the first result (successes
//! and every kind of failure), conflicts, tenants, waiting racers, releases, concurrent claims,
//! retention and sweeps.
//!
//! The promise under test is the registry's: per `(org, key)` exactly one caller runs the
//! tool, every racer gets its result, every later retry gets the same result, and a key used
//! for something else is refused.

use std::{
    sync::{Arc, Barrier},
    thread,
    time::Duration,
};

use jiff::Timestamp;
use serde_json::{Value, json};
use switchboard_core::{ActionId, FieldError, InvokeError, ToolError};

use super::{Failure, IdempotencyStoreFactory, fingerprint, scope, shifted, wait_for};
use crate::idempotency::{Claim, Fingerprint, IdempotencyScope, StoredOutcome, Waiter};

/// A retention long enough that nothing expires during a check.
const LONG: Duration = Duration::from_secs(3_600);

fn kind(claim: &Claim) -> &'static str {
    match claim {
        Claim::Run => "Run",
        Claim::Done(_) => "Done",
        Claim::Running(_) => "Running",
        Claim::Conflict => "Conflict",
    }
}

fn expect_run(claim: Claim, what: &str) -> Result<(), Failure> {
    ensure!(
        matches!(claim, Claim::Run),
        "{what}: expected Run, got {}",
        kind(&claim)
    );
    Ok(())
}

fn expect_done(claim: Claim, what: &str) -> Result<Arc<StoredOutcome>, Failure> {
    match claim {
        Claim::Done(outcome) => Ok(outcome),
        other => Err(Failure::new(format!(
            "{what}: expected Done, got {}",
            kind(&other)
        ))),
    }
}

fn expect_running(claim: Claim, what: &str) -> Result<Waiter, Failure> {
    match claim {
        Claim::Running(waiter) => Ok(waiter),
        other => Err(Failure::new(format!(
            "{what}: expected Running, got {}",
            kind(&other)
        ))),
    }
}

fn ok_outcome(action: &str, output: Value) -> Arc<StoredOutcome> {
    Arc::new(StoredOutcome::ok(ActionId::from(action), output))
}

fn failed_outcome(action: &str, error: InvokeError) -> Arc<StoredOutcome> {
    Arc::new(StoredOutcome {
        action_id: ActionId::from(action),
        result: Err(error),
        typed: None,
    })
}

/// Checks that `got` is the outcome that was stored: same action, same result.
fn ensure_same(got: &StoredOutcome, stored: &StoredOutcome, what: &str) -> Result<(), Failure> {
    ensure!(
        got.action_id == stored.action_id && got.result == stored.result,
        "{what}: replayed {got:?}, but the first result was {stored:?}"
    );
    Ok(())
}

/// A new key runs; once completed, every retry gets the first result (action id and output)
/// back, without running; `len` counts the key.
pub fn a_new_key_runs_and_retries_replay_the_first_result(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    let store = make(LONG);
    ensure!(store.is_empty(), "a fresh store holds {} keys", store.len());
    let key = scope("acme", "assign-42");
    let print = fingerprint("roster_assign_shift", 1);
    let now = Timestamp::now();
    expect_run(store.claim(&key, &print, now), "the first claim of a key")?;
    ensure!(
        store.len() == 1,
        "a claimed key is held: len {}",
        store.len()
    );
    let first = ok_outcome("act-1", json!({ "assigned": true, "shift": "s1" }));
    store.complete(&key, Arc::clone(&first));
    ensure!(
        store.len() == 1,
        "a completed key is held once: len {}",
        store.len()
    );
    for retry in 0..3 {
        let replayed = expect_done(store.claim(&key, &print, now), "a retry")?;
        ensure_same(&replayed, &first, &format!("retry {retry}"))?;
    }
    // The same tool name in another allocation is the same fingerprint.
    let same = Fingerprint::new(String::from("roster_assign_shift"), print.params);
    let replayed = expect_done(
        store.claim(&key, &same, now),
        "a retry with an equal tool name",
    )?;
    ensure_same(&replayed, &first, "a retry with an equal tool name")
}

/// A first result that is an error (each kind a run can end with, and any other) is replayed
/// as the same error, field for field; outputs of every JSON shape replay unchanged.
pub fn failed_first_results_replay_unchanged(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    let store = make(LONG);
    let tool = || "roster_assign_shift".to_owned();
    let errors = [
        InvokeError::ToolFailed {
            tool: tool(),
            error: ToolError::new("shift_not_found", "no shift `s9` in your organisation"),
        },
        InvokeError::Timeout {
            tool: tool(),
            after: Duration::from_micros(1_500_250),
        },
        InvokeError::ToolPanicked {
            tool: tool(),
            message: "index out of bounds: the len is 0".to_owned(),
        },
        InvokeError::GateRefused {
            tool: tool(),
            error: ToolError::new("week_locked", "the week is locked"),
        },
        InvokeError::InvalidInput {
            tool: tool(),
            errors: vec![FieldError::new("/shift_id", "is required")],
        },
    ];
    let outputs = [
        Value::Null,
        json!("text with \"quotes\" and ünïcödé"),
        json!(18_446_744_073_709_551_615_u64),
        json!(-1.25e-7),
        json!([[], {}, [1, [2, [3]]]]),
    ];
    let now = Timestamp::now();
    let mut stored = Vec::new();
    for (n, error) in errors.into_iter().enumerate() {
        stored.push(failed_outcome(&format!("act-err-{n}"), error));
    }
    for (n, output) in outputs.into_iter().enumerate() {
        stored.push(ok_outcome(&format!("act-ok-{n}"), output));
    }
    for (n, outcome) in stored.iter().enumerate() {
        let key = scope("acme", &format!("key-{n}"));
        expect_run(store.claim(&key, &fingerprint("t", 1), now), "a new key")?;
        store.complete(&key, Arc::clone(outcome));
    }
    for (n, outcome) in stored.iter().enumerate() {
        let key = scope("acme", &format!("key-{n}"));
        let replayed = expect_done(store.claim(&key, &fingerprint("t", 1), now), "a retry")?;
        ensure_same(&replayed, outcome, &format!("key-{n}"))?;
    }
    Ok(())
}

/// The same key with another tool or other params is a conflict, while the first call runs
/// and after it finished; a conflict changes nothing for the first call's retries.
pub fn another_tool_or_other_params_conflict(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    let store = make(LONG);
    let key = scope("acme", "k");
    let now = Timestamp::now();
    expect_run(
        store.claim(&key, &fingerprint("t", 1), now),
        "the first claim",
    )?;
    for (what, other) in [
        ("other params", fingerprint("t", 2)),
        ("another tool", fingerprint("u", 1)),
    ] {
        let claim = store.claim(&key, &other, now);
        ensure!(
            matches!(claim, Claim::Conflict),
            "{what} while the first call runs: expected Conflict, got {}",
            kind(&claim)
        );
    }
    let first = ok_outcome("act-1", json!(1));
    store.complete(&key, Arc::clone(&first));
    for (what, other) in [
        ("other params", fingerprint("t", 2)),
        ("another tool", fingerprint("u", 1)),
    ] {
        let claim = store.claim(&key, &other, now);
        ensure!(
            matches!(claim, Claim::Conflict),
            "{what} after the first call finished: expected Conflict, got {}",
            kind(&claim)
        );
    }
    let replayed = expect_done(store.claim(&key, &fingerprint("t", 1), now), "a retry")?;
    ensure_same(&replayed, &first, "a retry after conflicts")
}

/// Keys are per organisation: the same key in two orgs names two actions, each with its own
/// result, and neither conflicts with the other.
pub fn idempotency_keys_are_per_organisation(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    let store = make(LONG);
    let now = Timestamp::now();
    let acme = scope("acme", "shared-key");
    let globex = scope("globex", "shared-key");
    expect_run(store.claim(&acme, &fingerprint("t", 1), now), "acme's key")?;
    expect_run(
        store.claim(&globex, &fingerprint("t", 2), now),
        "the same key in globex, with other params",
    )?;
    let acme_result = ok_outcome("act-acme", json!("acme"));
    let globex_result = ok_outcome("act-globex", json!("globex"));
    store.complete(&acme, Arc::clone(&acme_result));
    store.complete(&globex, Arc::clone(&globex_result));
    let replayed = expect_done(
        store.claim(&acme, &fingerprint("t", 1), now),
        "acme's retry",
    )?;
    ensure_same(&replayed, &acme_result, "acme's retry")?;
    let replayed = expect_done(
        store.claim(&globex, &fingerprint("t", 2), now),
        "globex's retry",
    )?;
    ensure_same(&replayed, &globex_result, "globex's retry")?;
    ensure!(
        store.len() == 2,
        "two orgs' keys are two keys: len {}",
        store.len()
    );
    Ok(())
}

/// Calls with a key that is running wait, and get the first caller's result when it
/// completes, whether they started waiting before or after it did.
pub fn racers_wait_for_the_first_result(make: &IdempotencyStoreFactory) -> Result<(), Failure> {
    let store = make(LONG);
    let key = scope("acme", "k");
    let print = fingerprint("t", 1);
    let now = Timestamp::now();
    expect_run(store.claim(&key, &print, now), "the first claim")?;
    let early = expect_running(store.claim(&key, &print, now), "a racer")?;
    let late = expect_running(store.claim(&key, &print, now), "another racer")?;
    let first = ok_outcome("act-1", json!({ "ran": "once" }));
    let completer = {
        let store = Arc::clone(&store);
        let key = key.clone();
        let first = Arc::clone(&first);
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(50));
            store.complete(&key, first);
        })
    };
    let got = wait_for("a racer's wait", early.wait())?
        .ok_or_else(|| Failure::new("a racer was told the key was released"))?;
    ensure_same(&got, &first, "a racer waiting while the first call ran")?;
    completer
        .join()
        .map_err(|_| Failure::new("the completing thread panicked"))?;
    let got = wait_for("a racer's wait", late.wait())?
        .ok_or_else(|| Failure::new("a racer was told the key was released"))?;
    ensure_same(
        &got,
        &first,
        "a racer waiting after the first call finished",
    )
}

/// Releasing a running key (nothing ran) tells its waiters to claim again, and the next claim
/// runs, with any params; releasing a completed key changes nothing.
pub fn a_released_key_wakes_its_waiters_and_runs_again(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    let store = make(LONG);
    let key = scope("acme", "k");
    let now = Timestamp::now();
    expect_run(
        store.claim(&key, &fingerprint("t", 1), now),
        "the first claim",
    )?;
    let waiter = expect_running(store.claim(&key, &fingerprint("t", 1), now), "a racer")?;
    store.release(&key);
    let woken = wait_for("a waiter of a released key", waiter.wait())?;
    ensure!(
        woken.is_none(),
        "a waiter of a released key should be told to claim again, got {woken:?}"
    );
    ensure!(
        store.is_empty(),
        "a released key is not held: len {}",
        store.len()
    );
    expect_run(
        store.claim(&key, &fingerprint("t", 2), now),
        "a claim after the release, with other params",
    )?;
    let first = ok_outcome("act-2", json!(2));
    store.complete(&key, Arc::clone(&first));
    store.release(&key);
    let replayed = expect_done(
        store.claim(&key, &fingerprint("t", 2), now),
        "a retry after releasing a completed key",
    )?;
    ensure_same(&replayed, &first, "a retry after releasing a completed key")
}

/// Many threads claiming the same new key at once: exactly one runs, every other waits and
/// gets its result. Distinct keys claimed at once all run.
pub fn concurrent_claims_have_exactly_one_runner(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    const CALLERS: usize = 12;
    let store = make(LONG);
    let now = Timestamp::now();
    for round in 0..10 {
        let key = scope("acme", &format!("race-{round}"));
        let print = fingerprint("t", round);
        let barrier = Arc::new(Barrier::new(CALLERS));
        let claims: Vec<Claim> = thread::scope(|threads| {
            let handles: Vec<_> = (0..CALLERS)
                .map(|_| {
                    let (store, barrier, key, print) = (&store, &barrier, &key, &print);
                    threads.spawn(move || {
                        barrier.wait();
                        store.claim(key, print, now)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or(Claim::Conflict))
                .collect()
        });
        let kinds: Vec<&str> = claims.iter().map(kind).collect();
        let runners = kinds.iter().filter(|kind| **kind == "Run").count();
        let waiters = kinds.iter().filter(|kind| **kind == "Running").count();
        ensure!(
            runners == 1 && waiters == CALLERS - 1,
            "round {round}: {CALLERS} racing claims of one key should be one Run and the rest \
             Running, got {kinds:?}"
        );
        let first = ok_outcome(&format!("act-{round}"), json!(round));
        store.complete(&key, Arc::clone(&first));
        for claim in claims {
            if let Claim::Running(waiter) = claim {
                let got = wait_for("a racer's wait", waiter.wait())?
                    .ok_or_else(|| Failure::new("a racer was told the key was released"))?;
                ensure_same(&got, &first, &format!("round {round}"))?;
            }
        }
    }
    let barrier = Arc::new(Barrier::new(CALLERS));
    let distinct: Vec<&str> = thread::scope(|threads| {
        let handles: Vec<_> = (0..CALLERS)
            .map(|caller| {
                let (store, barrier) = (&store, &barrier);
                threads.spawn(move || {
                    barrier.wait();
                    kind(&store.claim(
                        &scope("acme", &format!("distinct-{caller}")),
                        &fingerprint("t", 1),
                        now,
                    ))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or("panicked"))
            .collect()
    });
    ensure!(
        distinct.iter().all(|kind| *kind == "Run"),
        "distinct keys claimed at once should all run: {distinct:?}"
    );
    Ok(())
}

/// A result is replayed within the retention (counted from its completion) and forgotten
/// after it: the key is then new, with any params.
pub fn results_expire_after_the_retention(make: &IdempotencyStoreFactory) -> Result<(), Failure> {
    let store = make(Duration::from_secs(30));
    let key = scope("acme", "k");
    let now = Timestamp::now();
    expect_run(
        store.claim(&key, &fingerprint("t", 1), now),
        "the first claim",
    )?;
    let first = ok_outcome("act-1", json!(1));
    store.complete(&key, Arc::clone(&first));
    let replayed = expect_done(
        store.claim(&key, &fingerprint("t", 1), shifted(now, 20)),
        "a retry within the retention",
    )?;
    ensure_same(&replayed, &first, "a retry within the retention")?;
    expect_run(
        store.claim(&key, &fingerprint("t", 9), shifted(now, 90)),
        "a claim after the retention, with other params",
    )?;
    Ok(())
}

/// `sweep` deletes the results older than the retention and returns how many; it keeps newer
/// results and keys still running. `len` follows.
pub fn sweep_removes_only_expired_results(make: &IdempotencyStoreFactory) -> Result<(), Failure> {
    let store = make(Duration::from_secs(30));
    let now = Timestamp::now();
    let keys: Vec<IdempotencyScope> = (0..4)
        .map(|n| scope("acme", &format!("sweep-{n}")))
        .collect();
    for key in &keys {
        expect_run(store.claim(key, &fingerprint("t", 1), now), "a new key")?;
    }
    for (n, key) in keys[..3].iter().enumerate() {
        store.complete(key, ok_outcome(&format!("act-{n}"), json!(n)));
    }
    ensure!(
        store.len() == 4,
        "three done and one running: len {}",
        store.len()
    );
    let swept = store.sweep(now);
    ensure!(
        swept == 0,
        "nothing is expired yet, but sweep removed {swept}"
    );
    let swept = store.sweep(shifted(now, 90));
    ensure!(
        swept == 3,
        "the three results are past the retention: sweep removed {swept}"
    );
    ensure!(
        store.len() == 1,
        "the running key stays: len {}",
        store.len()
    );
    let waiter = expect_running(
        store.claim(&keys[3], &fingerprint("t", 1), shifted(now, 90)),
        "the running key after a sweep",
    )?;
    let last = ok_outcome("act-3", json!(3));
    store.complete(&keys[3], Arc::clone(&last));
    let got = wait_for("a racer's wait", waiter.wait())?
        .ok_or_else(|| Failure::new("a racer was told the key was released"))?;
    ensure_same(&got, &last, "the key that was running during the sweep")
}

/// In the process that completed a key, a retry gets the typed copy of the output back (a
/// persistent store keeps it in memory next to the JSON it writes).
pub fn typed_results_replay_typed_in_the_process_that_stored_them(
    make: &IdempotencyStoreFactory,
) -> Result<(), Failure> {
    let store = make(LONG);
    let key = scope("acme", "typed");
    let now = Timestamp::now();
    expect_run(
        store.claim(&key, &fingerprint("t", 1), now),
        "the first claim",
    )?;
    let typed: crate::TypedOutput = Arc::new(42_u32);
    store.complete(
        &key,
        Arc::new(StoredOutcome {
            action_id: ActionId::from("act-typed"),
            result: Ok(json!(42)),
            typed: Some(typed),
        }),
    );
    let replayed = expect_done(
        store.claim(&key, &fingerprint("t", 1), now),
        "a typed retry",
    )?;
    let value = replayed
        .typed
        .as_ref()
        .and_then(|typed| typed.downcast_ref::<u32>())
        .copied();
    ensure!(
        value == Some(42) && replayed.result == Ok(json!(42)),
        "a typed retry should get the typed output 42 and its JSON, got {replayed:?} \
         (typed: {value:?})"
    );
    Ok(())
}
