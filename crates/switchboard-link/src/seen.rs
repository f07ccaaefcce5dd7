//! The statement ids a verifier has accepted, each kept until its statement expires, so that
//! a statement is accepted once.
//!
//! A concurrent map (`scc::HashMap`), so that checking an id takes no lock every call shares.
//! It is swept as it grows: when it reaches twice the size it had after the last sweep (and at
//! least [`SWEEP_FLOOR`] entries), the ids whose statements can no longer be valid are dropped.
//! An id is kept until its statement's `exp` plus the leeway, the last moment the statement
//! could still be accepted.

use std::sync::atomic::{AtomicUsize, Ordering};

use uuid::Uuid;

/// Below this many ids the map is never swept.
const SWEEP_FLOOR: usize = 1024;

/// The accepted statement ids, with the second after which each may be forgotten.
#[derive(Debug)]
pub(crate) struct SeenStatements {
    ids: scc::HashMap<Uuid, u64>,
    /// The size at which the next sweep runs.
    sweep_at: AtomicUsize,
}

impl Default for SeenStatements {
    fn default() -> Self {
        Self {
            ids: scc::HashMap::new(),
            sweep_at: AtomicUsize::new(SWEEP_FLOOR),
        }
    }
}

impl SeenStatements {
    /// Records `jti`, to be kept until `forget_after` (seconds since the epoch); `false` if it
    /// was seen already.
    pub(crate) fn first_time(&self, jti: Uuid, forget_after: u64, now: u64) -> bool {
        if self.ids.insert_sync(jti, forget_after).is_err() {
            return false;
        }
        let len = self.ids.len();
        if len >= self.sweep_at.load(Ordering::Relaxed) {
            self.ids.retain_sync(|_, keep_until| *keep_until >= now);
            let kept = self.ids.len();
            self.sweep_at
                .store((kept * 2).max(SWEEP_FLOOR), Ordering::Relaxed);
        }
        true
    }

    /// How many ids are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_accepted_once() {
        let seen = SeenStatements::default();
        let jti = Uuid::now_v7();
        assert!(seen.first_time(jti, 100, 10));
        assert!(!seen.first_time(jti, 100, 10));
        assert!(seen.first_time(Uuid::now_v7(), 100, 10));
    }

    #[test]
    fn expired_ids_are_swept_as_the_map_grows_and_live_ones_kept() {
        let seen = SeenStatements::default();
        let live = Uuid::now_v7();
        assert!(seen.first_time(live, 1_000, 10));
        for _ in 1..SWEEP_FLOOR - 1 {
            assert!(seen.first_time(Uuid::now_v7(), 20, 10));
        }
        assert_eq!(seen.len(), SWEEP_FLOOR - 1);
        // The floor is reached at second 50: every id kept until second 20 goes.
        assert!(seen.first_time(Uuid::now_v7(), 1_000, 50));
        assert_eq!(seen.len(), 2);
        assert!(!seen.first_time(live, 1_000, 50), "a live id is kept");
    }
}
