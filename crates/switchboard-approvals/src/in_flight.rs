//! [`InFlight`]: the part of an idempotency store that lives in one process, shared by every
//! store so that claiming, waiting and waking are written once.
//!
//! Waiting is a matter of one process: a racer that finds a key running subscribes to a
//! `watch` channel and wakes when the caller that claimed the key completes it (with the first
//! result) or releases it (nothing ran: claim again). The channel is created when the first
//! racer arrives, so a key nobody races for never has one.
//!
//! The in-memory store keeps all its keys here. A persistent store keeps here the keys it is
//! running and the results it cannot read back from its file (a typed copy is a Rust value),
//! and asks its file about every other key: [`InFlight::claim`] calls it back for a key that
//! is not held here, while that key is locked, so that two racers in one process never both
//! run it.
//!
//! Entries are keyed by the scope itself (its organisation and key), so two scopes share an
//! entry only if they are equal. A done entry expires at the time its store gave it, and is
//! removed by the next claim of its key or by a sweep.

use std::{
    fmt,
    hash::{BuildHasher, RandomState},
    sync::Arc,
};

use jiff::Timestamp;
use scc::hash_map::Entry;
use tokio::sync::watch;

use crate::idempotency::{Claim, Fingerprint, IdempotencyScope, StoredOutcome, Waiter};

/// What a racer waiting on a running key learns.
#[derive(Clone)]
enum Flight {
    Running,
    Done(Arc<StoredOutcome>),
    Released,
}

/// A key held in this process: what it was claimed for, and how far it got.
struct HeldKey {
    fingerprint: Fingerprint,
    state: KeyState,
}

enum KeyState {
    /// Claimed here and running. The sender exists once a racer waits.
    Running {
        claimed_at: Timestamp,
        racers: Option<watch::Sender<Flight>>,
    },
    /// Completed here, kept until `expires_at`.
    Done {
        outcome: Arc<StoredOutcome>,
        expires_at: Timestamp,
    },
}

impl HeldKey {
    fn running(fingerprint: &Fingerprint, claimed_at: Timestamp) -> Self {
        Self {
            fingerprint: fingerprint.clone(),
            state: KeyState::Running {
                claimed_at,
                racers: None,
            },
        }
    }

    fn expired(&self, now: Timestamp) -> bool {
        matches!(self.state, KeyState::Done { expires_at, .. } if expires_at <= now)
    }

    /// The answer to a claim with `asked` while this key has not expired: a conflict, the
    /// first result, or a waiter on the running call.
    fn answer(&mut self, asked: &Fingerprint) -> Claim {
        if self.fingerprint != *asked {
            return Claim::Conflict;
        }
        match &mut self.state {
            KeyState::Running { racers, .. } => {
                let racers = racers.get_or_insert_with(|| watch::Sender::new(Flight::Running));
                Claim::Running(wait_on(racers.subscribe()))
            }
            KeyState::Done { outcome, .. } => Claim::Done(Arc::clone(outcome)),
        }
    }
}

impl KeyState {
    fn into_racers(self) -> Option<watch::Sender<Flight>> {
        match self {
            Self::Running { racers, .. } => racers,
            Self::Done { .. } => None,
        }
    }
}

fn wait_on(mut receiver: watch::Receiver<Flight>) -> Waiter {
    Waiter::new(async move {
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

/// The keys one process is running, with their waiting racers, and the results it keeps in
/// memory.
pub struct InFlight<H: BuildHasher = RandomState> {
    keys: scc::HashMap<IdempotencyScope, HeldKey, H>,
}

impl Default for InFlight {
    fn default() -> Self {
        Self::new()
    }
}

impl InFlight {
    /// An empty table.
    pub fn new() -> Self {
        Self::with_hasher(RandomState::new())
    }
}

impl<H: BuildHasher> fmt::Debug for InFlight<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InFlight")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl<H: BuildHasher> InFlight<H> {
    /// An empty table hashing scopes with `hasher`.
    pub fn with_hasher(hasher: H) -> Self {
        Self {
            keys: scc::HashMap::with_hasher(hasher),
        }
    }

    /// Claims `scope` for `fingerprint` at `now`. A key held here and not expired answers
    /// itself: [`Claim::Conflict`] for another fingerprint, else its result or a waiter on its
    /// run. Any other key is decided by `claim_elsewhere` (the in-memory store answers
    /// [`Claim::Run`]; a persistent store asks its file), called with the key locked; a `Run`
    /// is then held here as running, claimed at `now`.
    pub fn claim(
        &self,
        scope: &IdempotencyScope,
        fingerprint: &Fingerprint,
        now: Timestamp,
        claim_elsewhere: impl FnOnce() -> Claim,
    ) -> Claim {
        let entry = match self.keys.entry_sync(scope.clone()) {
            Entry::Occupied(mut held) if !held.get().expired(now) => {
                return held.get_mut().answer(fingerprint);
            }
            absent_or_expired => absent_or_expired,
        };
        let claim = claim_elsewhere();
        if matches!(claim, Claim::Run) {
            entry.insert_entry(HeldKey::running(fingerprint, now));
        } else if let Entry::Occupied(expired) = entry {
            drop(expired.remove());
        }
        claim
    }

    /// Completes a key running here with its first result and wakes its racers with it. `keep`
    /// is called with the key locked and the time it was claimed (a persistent store writes
    /// the result there), and says until when the result stays here: `None` forgets the key.
    /// A key that is not running here (completed before, or never claimed) is left as it is:
    /// the first result stands.
    pub fn complete(
        &self,
        scope: &IdempotencyScope,
        outcome: Arc<StoredOutcome>,
        keep: impl FnOnce(Timestamp) -> Option<Timestamp>,
    ) {
        let racers = {
            let Some(mut entry) = self.keys.get_sync(scope) else {
                return;
            };
            let KeyState::Running { claimed_at, .. } = entry.get().state else {
                return;
            };
            match keep(claimed_at) {
                Some(expires_at) => {
                    let done = KeyState::Done {
                        outcome: Arc::clone(&outcome),
                        expires_at,
                    };
                    std::mem::replace(&mut entry.get_mut().state, done).into_racers()
                }
                None => entry.remove().state.into_racers(),
            }
        };
        if let Some(racers) = racers {
            racers.send_replace(Flight::Done(outcome));
        }
    }

    /// Gives up a key running here (nothing ran) and tells its racers to claim again. `forget`
    /// is called first, with the key locked (a persistent store deletes its claim there). A key
    /// that is not running here is left as it is.
    pub fn release(&self, scope: &IdempotencyScope, forget: impl FnOnce()) {
        let racers = {
            let Some(entry) = self.keys.get_sync(scope) else {
                return;
            };
            if !matches!(entry.get().state, KeyState::Running { .. }) {
                return;
            }
            forget();
            entry.remove().state.into_racers()
        };
        if let Some(racers) = racers {
            racers.send_replace(Flight::Released);
        }
    }

    /// Removes the results expired at `now`; returns how many. Running keys stay.
    pub fn sweep(&self, now: Timestamp) -> usize {
        let mut removed = 0;
        self.keys.retain_sync(|_, held| {
            let expired = held.expired(now);
            removed += usize::from(expired);
            !expired
        });
        removed
    }

    /// How many keys are held here, running and done.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is held here.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::BTreeSet,
        hash::{BuildHasherDefault, Hasher},
    };

    use proptest::prelude::*;
    use serde_json::json;
    use switchboard_core::ActionId;
    use switchboard_core::digest_json;

    use super::*;

    /// A hasher under which every scope collides.
    #[derive(Default)]
    struct EveryScopeCollides;

    impl Hasher for EveryScopeCollides {
        fn finish(&self) -> u64 {
            7
        }

        fn write(&mut self, _bytes: &[u8]) {}
    }

    fn fingerprint(n: usize) -> Fingerprint {
        Fingerprint::new(
            "t",
            digest_json(&json!({ "n": n })).expect("JSON has a digest"),
        )
    }

    proptest! {
        /// Even when all their hashes are equal, distinct scopes are distinct keys: each runs,
        /// and each replays its own result, never another's.
        #[test]
        fn distinct_scopes_never_share_an_entry(
            pairs in proptest::collection::btree_set(("[a-c-]{0,3}", "[a-c-]{0,3}"), 1..24),
        ) {
            let scopes: Vec<IdempotencyScope> = pairs
                .iter()
                .map(|(org, key)| IdempotencyScope::new(org.as_str().into(), key.as_str().into()))
                .collect();
            let keys = InFlight::with_hasher(BuildHasherDefault::<EveryScopeCollides>::default());
            let now = Timestamp::now();
            let forever = |_| Some(Timestamp::MAX);
            for (n, scope) in scopes.iter().enumerate() {
                let claim = keys.claim(scope, &fingerprint(n), now, || Claim::Run);
                prop_assert!(matches!(claim, Claim::Run), "{scope:?} was claimed before");
                let outcome = StoredOutcome::ok(ActionId::from(format!("act-{n}")), json!(n));
                keys.complete(scope, Arc::new(outcome), forever);
            }
            prop_assert_eq!(keys.len(), scopes.len());
            let mut replayed = BTreeSet::new();
            for (n, scope) in scopes.iter().enumerate() {
                match keys.claim(scope, &fingerprint(n), now, || Claim::Run) {
                    Claim::Done(outcome) => {
                        prop_assert_eq!(&outcome.result, &Ok(json!(n)), "{:?}", scope);
                        replayed.insert(outcome.action_id.to_string());
                    }
                    other => prop_assert!(false, "{scope:?}: expected its result, got {other:?}"),
                }
            }
            prop_assert_eq!(replayed.len(), scopes.len());
        }
    }

    #[test]
    fn a_key_held_here_is_answered_without_asking_elsewhere() {
        let keys = InFlight::new();
        let scope = IdempotencyScope::new("acme".into(), "k".into());
        let now = Timestamp::now();
        let claim = keys.claim(&scope, &fingerprint(1), now, || Claim::Run);
        assert!(matches!(claim, Claim::Run));
        let asked_elsewhere = || panic!("a running key is answered here");
        assert!(matches!(
            keys.claim(&scope, &fingerprint(1), now, asked_elsewhere),
            Claim::Running(_)
        ));
        assert!(matches!(
            keys.claim(&scope, &fingerprint(2), now, asked_elsewhere),
            Claim::Conflict
        ));
    }

    #[test]
    fn a_key_not_run_here_is_not_held() {
        let keys = InFlight::new();
        let scope = IdempotencyScope::new("acme".into(), "k".into());
        let claim = keys.claim(&scope, &fingerprint(1), Timestamp::now(), || {
            Claim::Conflict
        });
        assert!(matches!(claim, Claim::Conflict));
        assert!(keys.is_empty());
    }

    #[tokio::test]
    async fn a_result_not_kept_still_wakes_the_racers() {
        let keys = InFlight::new();
        let scope = IdempotencyScope::new("acme".into(), "k".into());
        let now = Timestamp::now();
        keys.claim(&scope, &fingerprint(1), now, || Claim::Run);
        let Claim::Running(waiter) = keys.claim(&scope, &fingerprint(1), now, || Claim::Run) else {
            panic!("the key is running");
        };
        let outcome = Arc::new(StoredOutcome::ok(ActionId::from("act-1"), json!(1)));
        keys.complete(&scope, outcome, |_| None);
        assert!(keys.is_empty(), "a result kept elsewhere leaves this table");
        let woken = waiter.wait().await.expect("completed, not released");
        assert_eq!(woken.action_id, "act-1");
    }
}
