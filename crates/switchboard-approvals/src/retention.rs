//! How long an idempotency store keeps a key, and when its lazy sweep is next due.
//!
//! Both stores (in memory, and on SQLite in `switchboard-approvals-sqlite`) keep a first
//! result for a retention and sweep expired keys lazily, from whichever claim comes along:
//! one [`Retention`] holds that arithmetic so the two cannot drift apart.

use std::{
    sync::atomic::{AtomicI64, Ordering},
    time::Duration,
};

use jiff::{SignedDuration, Timestamp};

/// A key's lifetime, and the schedule of the sweep that removes expired keys.
#[derive(Debug)]
pub struct Retention {
    keep: SignedDuration,
    /// Unix seconds of the next sweep.
    next_sweep: AtomicI64,
}

impl Retention {
    /// Keys kept for `keep` (saturating at the largest span a timestamp can take).
    pub fn new(keep: Duration) -> Self {
        Self {
            keep: SignedDuration::try_from(keep).unwrap_or(SignedDuration::MAX),
            next_sweep: AtomicI64::new(0),
        }
    }

    /// The retention.
    pub fn duration(&self) -> Duration {
        Duration::try_from(self.keep).unwrap_or(Duration::MAX)
    }

    /// When a key kept from `from` expires.
    pub fn expiry(&self, from: Timestamp) -> Timestamp {
        from.saturating_add(self.keep).unwrap_or(Timestamp::MAX)
    }

    /// Whether a sweep is due at `now`: true for exactly one caller per interval, a tenth of
    /// the retention (at least a second).
    pub fn sweep_due(&self, now: Timestamp) -> bool {
        let due = self.next_sweep.load(Ordering::Relaxed);
        let now_seconds = now.as_second();
        if now_seconds < due {
            return false;
        }
        let step = (self.keep.as_secs() / 10).max(1);
        self.next_sweep
            .compare_exchange(
                due,
                now_seconds.saturating_add(step),
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sweep_per_tenth_of_the_retention() {
        let retention = Retention::new(Duration::from_secs(100));
        let now = Timestamp::from_second(1_000).expect("in range");
        assert!(retention.sweep_due(now), "the first sweep is due at once");
        assert!(!retention.sweep_due(now), "claimed by the first caller");
        let later = Timestamp::from_second(1_009).expect("in range");
        assert!(!retention.sweep_due(later));
        let due = Timestamp::from_second(1_010).expect("in range");
        assert!(retention.sweep_due(due));
        assert_eq!(
            retention.expiry(now),
            Timestamp::from_second(1_100).expect("in range")
        );
        assert_eq!(retention.duration(), Duration::from_secs(100));
    }

    #[test]
    fn a_huge_retention_saturates() {
        let retention = Retention::new(Duration::MAX);
        assert_eq!(retention.expiry(Timestamp::now()), Timestamp::MAX);
    }
}
