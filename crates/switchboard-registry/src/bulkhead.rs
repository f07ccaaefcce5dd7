//! A domain's bulkhead: at most a fixed number of its calls run at once.
//!
//! Every call enters and leaves, so both sides are on the hot path, and concurrent calls to
//! one domain meet here. tokio's `Semaphore` takes a mutex (its waiters' list) to return every
//! permit, and `async_lock`'s takes `event_listener`'s list lock to notify on every return, so
//! with both cores calling one domain the permit's return is a lock they contend for. Here
//! entering is one compare-and-swap, leaving one subtraction and one load, and the waiters' list
//! is touched only when a call actually waits (the domain is at its limit).

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;
use event_listener::{Event, listener};

/// At most `limit` permits out at once. Waiting for one never spins: each returned permit
/// wakes one waiting call, oldest first, which tries again, and a call that arrives while others
/// wait queues behind them instead of taking a permit first (so a busy domain cannot starve a
/// waiter until its timeout).
#[derive(Debug)]
pub(crate) struct Bulkhead {
    limit: usize,
    /// Permits out now. Written by every call on every core, so it has a cache line of its own:
    /// the domain's other fields, read by every call, do not bounce between cores with it.
    in_flight: CachePadded<AtomicUsize>,
    /// Calls waiting for a permit. A leaving call notifies only when this is non-zero.
    waiting: AtomicUsize,
    left: Event,
}

/// A permit to run; returned when dropped.
#[derive(Debug)]
#[must_use = "the permit is returned as soon as it is dropped"]
pub(crate) struct Permit<'a>(&'a Bulkhead);

impl Bulkhead {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            in_flight: CachePadded::new(AtomicUsize::new(0)),
            waiting: AtomicUsize::new(0),
            left: Event::new(),
        }
    }

    /// A permit if one is free now and no call is waiting for one.
    pub(crate) fn try_enter(&self) -> Option<Permit<'_>> {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            return None;
        }
        self.take()
    }

    /// A permit if one is free now, waiters or not.
    fn take(&self) -> Option<Permit<'_>> {
        let mut in_flight = self.in_flight.load(Ordering::SeqCst);
        loop {
            if in_flight >= self.limit {
                return None;
            }
            match self.in_flight.compare_exchange_weak(
                in_flight,
                in_flight + 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(Permit(self)),
                Err(now) => in_flight = now,
            }
        }
    }

    /// Waits for a permit. Dropping the future gives up the wait without losing a wake-up
    /// meant for another waiter.
    pub(crate) async fn enter(&self) -> Permit<'_> {
        let _waiting = Waiting::new(&self.waiting);
        loop {
            if let Some(permit) = self.take() {
                return permit;
            }
            // Listen first, then look again: a call that leaves after the look sees `waiting`
            // and notifies this listener; one that left before it freed the permit the look
            // takes. (Both sides use sequentially consistent operations on the two counters.)
            listener!(self.left => left);
            if let Some(permit) = self.take() {
                return permit;
            }
            left.await;
        }
    }

    /// How many permits may be out at once.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// How many permits are out.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let bulkhead = self.0;
        bulkhead.in_flight.fetch_sub(1, Ordering::SeqCst);
        if bulkhead.waiting.load(Ordering::SeqCst) > 0 {
            bulkhead.left.notify(1);
        }
    }
}

/// Counts a waiter for as long as it waits (including when its future is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(waiting: &'a AtomicUsize) -> Self {
        waiting.fetch_add(1, Ordering::SeqCst);
        Self(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use super::*;

    #[test]
    fn at_most_the_limit_is_out_and_a_returned_permit_is_free_again() {
        let bulkhead = Bulkhead::new(2);
        let first = bulkhead.try_enter().expect("free");
        let second = bulkhead.try_enter().expect("free");
        assert!(bulkhead.try_enter().is_none());
        assert_eq!(bulkhead.in_flight(), 2);
        drop(first);
        let third = bulkhead.try_enter().expect("returned");
        drop((second, third));
        assert_eq!(bulkhead.in_flight(), 0);
        assert!(Bulkhead::new(0).try_enter().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiters_are_woken_as_permits_return_and_a_dropped_wait_loses_no_wake_up() {
        let bulkhead = Arc::new(Bulkhead::new(1));
        let held = bulkhead.try_enter().expect("free");
        // A waiter that gives up: its wake-up, if it had one, must reach the others.
        let gave_up = tokio::time::timeout(Duration::from_millis(20), bulkhead.enter()).await;
        assert!(gave_up.is_err());
        assert_eq!(bulkhead.waiting.load(Ordering::SeqCst), 0);
        let waiters: Vec<_> = (0..8)
            .map(|_| {
                let bulkhead = Arc::clone(&bulkhead);
                tokio::spawn(async move {
                    let _permit = bulkhead.enter().await;
                    assert_eq!(bulkhead.in_flight(), 1);
                    tokio::task::yield_now().await;
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        for waiter in waiters {
            tokio::time::timeout(Duration::from_secs(10), waiter)
                .await
                .expect("every waiter gets its turn")
                .expect("waiter ran");
        }
        assert_eq!(bulkhead.in_flight(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_arriving_while_others_wait_queues_behind_them() {
        let bulkhead = Arc::new(Bulkhead::new(1));
        let held = bulkhead.try_enter().expect("free");
        let waiter = {
            let bulkhead = Arc::clone(&bulkhead);
            tokio::spawn(async move {
                let _permit = bulkhead.enter().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            })
        };
        while bulkhead.waiting.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        drop(held);
        // The permit is the waiter's, even if it has not woken up to take it yet.
        assert!(bulkhead.try_enter().is_none());
        waiter.await.expect("the waiter ran");
        assert!(bulkhead.try_enter().is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_calls_racing_for_few_permits_never_exceed_the_limit() {
        let bulkhead = Arc::new(Bulkhead::new(3));
        let peak = Arc::new(AtomicUsize::new(0));
        let calls: Vec<_> = (0..64)
            .map(|_| {
                let (bulkhead, peak) = (Arc::clone(&bulkhead), Arc::clone(&peak));
                tokio::spawn(async move {
                    for _ in 0..200 {
                        let _permit = bulkhead.enter().await;
                        peak.fetch_max(bulkhead.in_flight(), Ordering::SeqCst);
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for call in calls {
            tokio::time::timeout(Duration::from_secs(30), call)
                .await
                .expect("no call waits forever")
                .expect("call ran");
        }
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(bulkhead.in_flight(), 0);
    }
}
