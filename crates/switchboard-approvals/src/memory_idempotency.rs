//! The in-memory [`IdempotencyStore`]: every key is held in an [`InFlight`] table, running or
//! done, for one process.
//!
//! A result is kept for the retention given at construction, counted from its claim (so
//! completing a key reads no clock). Expired results are swept lazily: at most once per sweep
//! interval, by whichever claim comes along.

use std::{sync::Arc, time::Duration};

use jiff::Timestamp;

use crate::{
    idempotency::{Claim, Fingerprint, IdempotencyScope, IdempotencyStore, StoredOutcome},
    in_flight::InFlight,
    retention::Retention,
};

/// Keys and first results in memory, for one process.
#[derive(Debug)]
pub struct MemoryIdempotencyStore {
    keys: InFlight,
    retention: Retention,
}

impl MemoryIdempotencyStore {
    /// A store keeping each first result for `retention` after its claim.
    pub fn new(retention: Duration) -> Self {
        Self {
            keys: InFlight::new(),
            retention: Retention::new(retention),
        }
    }
}

impl IdempotencyStore for MemoryIdempotencyStore {
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim {
        if self.retention.sweep_due(now) {
            self.sweep(now);
        }
        self.keys.claim(scope, fingerprint, now, || Claim::Run)
    }

    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>) {
        self.keys.complete(scope, outcome, |claimed_at| {
            Some(self.retention.expiry(claimed_at))
        });
    }

    fn release(&self, scope: &IdempotencyScope) {
        self.keys.release(scope, || {});
    }

    fn sweep(&self, now: Timestamp) -> usize {
        self.keys.sweep(now)
    }

    fn len(&self) -> usize {
        self.keys.len()
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
        Fingerprint::new(
            tool,
            digest_json(&json!({ "n": n })).expect("JSON has a digest"),
        )
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
