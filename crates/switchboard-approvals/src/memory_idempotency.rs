//! The in-memory [`IdempotencyStore`]: a sharded hash map (64 shards, each a `Mutex` over a
//! foldhash `HashMap`, dashmap-style; a lock is held for one entry operation, never across an
//! `.await`) of in-flight and done entries. Entries are keyed by a 128-bit hash of the scope,
//! stored inline, so that a lookup in a large map touches one cache line instead of chasing the
//! key's strings (docs/benchmarks.md has the figures).
//!
//! An in-flight entry gets a `watch` sender when the first racer arrives (most keys never see
//! one, and pay nothing for it); racers subscribe and wait for the first caller's result. Done
//! entries expire once the retention given at construction has passed since their claim, and
//! are swept lazily: at most once per sweep interval, by whichever claim comes along.

use std::{
    collections::HashMap,
    hash::BuildHasher,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use jiff::Timestamp;
use tokio::sync::watch;

use crate::{
    idempotency::{Claim, Fingerprint, IdempotencyScope, IdempotencyStore, StoredOutcome, Waiter},
    retention::Retention,
};

#[derive(Clone)]
enum Flight {
    Running,
    Done(Arc<StoredOutcome>),
    Released,
}

enum SlotState {
    /// Claimed; the sender exists once someone waits.
    Running(Option<watch::Sender<Flight>>),
    Done {
        outcome: Arc<StoredOutcome>,
        expires_at: Timestamp,
    },
}

struct Slot {
    fingerprint: Fingerprint,
    /// When the key was claimed: its result is kept for the retention from then, so
    /// completing a key reads no clock.
    claimed_at: Timestamp,
    state: SlotState,
}

impl Slot {
    fn running(fingerprint: &Fingerprint, claimed_at: Timestamp) -> Self {
        Self {
            fingerprint: fingerprint.clone(),
            claimed_at,
            state: SlotState::Running(None),
        }
    }

    fn expired(&self, now: Timestamp) -> bool {
        matches!(self.state, SlotState::Done { expires_at, .. } if expires_at <= now)
    }
}

/// How many shards the map is split into: enough that concurrent callers rarely meet.
const SHARDS: usize = 64;

/// A scope's 128-bit hash: two independent 64-bit hashes. Two scopes colliding (odds of about
/// 2^-128 per pair) would share an entry; even then a replay needs the same tool and params.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ScopeHash(u64, u64);

type Shard = HashMap<ScopeHash, Slot, foldhash::fast::RandomState>;

/// Keys and first results in memory, for one process.
pub struct MemoryIdempotencyStore {
    shards: Box<[Mutex<Shard>]>,
    hashers: (foldhash::fast::RandomState, foldhash::fast::RandomState),
    retention: Retention,
}

impl std::fmt::Debug for MemoryIdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIdempotencyStore")
            .field("entries", &self.len())
            .field("retention", &self.retention)
            .finish()
    }
}

impl MemoryIdempotencyStore {
    /// A store keeping each first result for `retention` after it completed.
    pub fn new(retention: Duration) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            hashers: Default::default(),
            retention: Retention::new(retention),
        }
    }

    /// The shard holding `scope`, locked. A panic while a shard was locked cannot leave an
    /// entry half-changed (each change is one assignment), so a poisoned lock is taken as is.
    fn shard(&self, scope: &IdempotencyScope) -> (ScopeHash, MutexGuard<'_, Shard>) {
        let hash = ScopeHash(
            self.hashers.0.hash_one(scope),
            self.hashers.1.hash_one(scope),
        );
        let index = (hash.0 as usize) % SHARDS;
        let shard = self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        (hash, shard)
    }

    fn expiry(&self, now: Timestamp) -> Timestamp {
        self.retention.expiry(now)
    }

    fn maybe_sweep(&self, now: Timestamp) {
        if self.retention.sweep_due(now) {
            self.sweep(now);
        }
    }
}

fn wait_on(receiver: watch::Receiver<Flight>) -> Waiter {
    Waiter::new(async move {
        let mut receiver = receiver;
        match receiver
            .wait_for(|flight| !matches!(flight, Flight::Running))
            .await
        {
            Ok(flight) => match &*flight {
                Flight::Done(outcome) => Some(Arc::clone(outcome)),
                Flight::Running | Flight::Released => None,
            },
            // The entry went away without a result: claim again.
            Err(_) => None,
        }
    })
}

impl IdempotencyStore for MemoryIdempotencyStore {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        self.maybe_sweep(now);
        let (hash, mut shard) = self.shard(scope);
        match shard.get_mut(&hash) {
            None => {
                shard.insert(hash, Slot::running(fingerprint, now));
                Claim::Run
            }
            Some(slot) => {
                if slot.expired(now) {
                    *slot = Slot::running(fingerprint, now);
                    return Claim::Run;
                }
                let same = (Arc::ptr_eq(&slot.fingerprint.tool, &fingerprint.tool)
                    || slot.fingerprint.tool == fingerprint.tool)
                    && slot.fingerprint.params == fingerprint.params;
                if !same {
                    return Claim::Conflict;
                }
                match &mut slot.state {
                    SlotState::Done { outcome, .. } => Claim::Done(Arc::clone(outcome)),
                    SlotState::Running(sender) => {
                        let sender =
                            sender.get_or_insert_with(|| watch::Sender::new(Flight::Running));
                        Claim::Running(wait_on(sender.subscribe()))
                    }
                }
            }
        }
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        let (hash, mut shard) = self.shard(scope);
        if let Some(slot) = shard.get_mut(&hash) {
            let expires_at = self.expiry(slot.claimed_at);
            let previous = std::mem::replace(
                &mut slot.state,
                SlotState::Done {
                    outcome: Arc::clone(&outcome),
                    expires_at,
                },
            );
            if let SlotState::Running(Some(sender)) = previous {
                sender.send_replace(Flight::Done(outcome));
            }
        }
    }

    fn release(&self, scope: &IdempotencyScope) {
        let removed = {
            let (hash, mut shard) = self.shard(scope);
            match shard.get(&hash) {
                Some(slot) if matches!(slot.state, SlotState::Running(_)) => shard.remove(&hash),
                _ => None,
            }
        };
        if let Some(Slot {
            state: SlotState::Running(Some(sender)),
            ..
        }) = removed
        {
            sender.send_replace(Flight::Released);
        }
    }

    fn sweep(&self, now: Timestamp) -> usize {
        let mut removed = 0;
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            let before = shard.len();
            shard.retain(|_, slot| !slot.expired(now));
            removed += before - shard.len();
        }
        removed
    }

    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;
    use serde_json::json;
    use switchboard_core::ActionId;
    use switchboard_core::digest_json;

    use super::*;

    fn scope(key: &str) -> IdempotencyScope {
        IdempotencyScope::new("acme".into(), key.into())
    }

    fn print(tool: &str, n: u64) -> Fingerprint {
        Fingerprint::new(tool, digest_json(&json!({ "n": n })))
    }

    #[test]
    fn first_claim_runs_then_retries_replay() {
        let store = MemoryIdempotencyStore::new(Duration::from_secs(60));
        let now = Timestamp::now();
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 1), now),
            Claim::Run
        ));
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 1), now),
            Claim::Running(_)
        ));
        store.complete(
            &scope("k"),
            Arc::new(StoredOutcome::ok(ActionId::from("a1"), json!(1))),
        );
        match store.claim(&scope("k"), &print("t", 1), now) {
            Claim::Done(outcome) => assert_eq!(outcome.result, Ok(json!(1))),
            other => panic!("expected a replay, got {other:?}"),
        }
    }

    #[test]
    fn other_params_or_tool_conflict_and_orgs_are_apart() {
        let store = MemoryIdempotencyStore::new(Duration::from_secs(60));
        let now = Timestamp::now();
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 1), now),
            Claim::Run
        ));
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 2), now),
            Claim::Conflict
        ));
        assert!(matches!(
            store.claim(&scope("k"), &print("u", 1), now),
            Claim::Conflict
        ));
        let globex = IdempotencyScope::new("globex".into(), "k".into());
        assert!(matches!(
            store.claim(&globex, &print("t", 2), now),
            Claim::Run
        ));
    }

    #[tokio::test]
    async fn waiters_get_the_result_or_learn_of_a_release() {
        let store = MemoryIdempotencyStore::new(Duration::from_secs(60));
        let now = Timestamp::now();
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 1), now),
            Claim::Run
        ));
        let Claim::Running(waiter) = store.claim(&scope("k"), &print("t", 1), now) else {
            panic!("the key is in flight");
        };
        store.release(&scope("k"));
        assert!(waiter.wait().await.is_none(), "released: claim again");
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 1), now),
            Claim::Run
        ));
        let Claim::Running(waiter) = store.claim(&scope("k"), &print("t", 1), now) else {
            panic!("the key is in flight");
        };
        store.complete(
            &scope("k"),
            Arc::new(StoredOutcome::ok(ActionId::from("a2"), json!(2))),
        );
        let outcome = waiter.wait().await.expect("completed");
        assert_eq!(outcome.action_id, "a2");
    }

    #[test]
    fn results_expire_after_the_retention() {
        let store = MemoryIdempotencyStore::new(Duration::from_secs(10));
        let now = Timestamp::now();
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 1), now),
            Claim::Run
        ));
        store.complete(
            &scope("k"),
            Arc::new(StoredOutcome::ok(ActionId::from("a"), json!(1))),
        );
        let later = now
            .saturating_add(SignedDuration::from_secs(11))
            .expect("in range");
        // Expired: the key is new again, even with other params.
        assert!(matches!(
            store.claim(&scope("k"), &print("t", 9), later),
            Claim::Run
        ));
        assert_eq!(
            store.sweep(later),
            0,
            "the claim replaced the expired entry"
        );
    }
}
