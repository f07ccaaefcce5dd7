//! The breaker of a remote domain's link: after [`TRIP_AFTER`] calls in a row that got no
//! usable answer (not sent, or in doubt), calls are refused at once, so a node that accepts
//! requests and answers none costs its callers nothing more than a refusal.
//!
//! The breaker is tied to the connection the failures happened on: a new connection (the
//! server actor made one after a loss) closes it, and so does its cool-down, after which it is
//! half-open: the next call goes through, and one more failure trips it again at once.
//! A call that got any answer from the remote registry (an output, a refusal, a failure of the
//! tool) closes it.

use std::{
    sync::{Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

/// How many calls in a row without a usable answer trip the breaker.
pub(crate) const TRIP_AFTER: u32 = 3;

/// Counts the calls in a row without a usable answer, and trips.
#[derive(Debug)]
pub(crate) struct Breaker {
    /// How long a tripped breaker refuses calls on the connection it tripped on.
    cool_down: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    failures: u32,
    tripped: Option<Tripped>,
}

#[derive(Debug)]
struct Tripped {
    reason: String,
    /// The connection it tripped on.
    generation: u64,
    at: Instant,
}

impl Breaker {
    /// A closed breaker that, once tripped, stays open for `cool_down` on that connection.
    pub(crate) fn new(cool_down: Duration) -> Self {
        Self {
            cool_down,
            state: Mutex::default(),
        }
    }

    /// Why calls on connection `generation` are refused now, if they are.
    pub(crate) fn open(&self, generation: u64) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let tripped = state.tripped.as_ref()?;
        (tripped.generation == generation && tripped.at.elapsed() < self.cool_down)
            .then(|| tripped.reason.clone())
    }

    /// A call got an answer from the remote registry.
    pub(crate) fn answered(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.failures = 0;
        state.tripped = None;
    }

    /// A call on connection `generation` got no usable answer, for `reason`.
    pub(crate) fn failed(&self, generation: u64, reason: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.failures = state.failures.saturating_add(1);
        if state.failures >= TRIP_AFTER {
            tracing::warn!(failures = state.failures, %reason, "a remote domain's breaker is open");
            state.tripped = Some(Tripped {
                reason: format!(
                    "{} calls in a row got no usable answer (the last: {reason}); calls are \
                     refused until a new connection, or for {:?}",
                    state.failures, self.cool_down
                ),
                generation,
                at: Instant::now(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failures_in_a_row_trip_it_on_their_connection_until_an_answer() {
        let breaker = Breaker::new(Duration::from_secs(60));
        breaker.failed(1, "lost");
        breaker.failed(1, "lost");
        assert_eq!(breaker.open(1), None);
        breaker.answered();
        breaker.failed(1, "lost");
        breaker.failed(1, "lost");
        assert_eq!(breaker.open(1), None, "an answer starts the count again");
        breaker.failed(1, "no answer by the deadline");
        let reason = breaker.open(1).expect("tripped");
        assert!(reason.contains("no answer by the deadline"), "{reason}");
        assert_eq!(breaker.open(2), None, "a new connection closes it");
        breaker.failed(2, "lost");
        assert!(
            breaker.open(2).is_some(),
            "half-open: one more failure trips it"
        );
        breaker.answered();
        assert_eq!(breaker.open(2), None);
    }

    #[test]
    fn its_cool_down_half_opens_it() {
        let breaker = Breaker::new(Duration::from_millis(20));
        for _ in 0..TRIP_AFTER {
            breaker.failed(1, "lost");
        }
        assert!(breaker.open(1).is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(breaker.open(1), None);
    }
}
