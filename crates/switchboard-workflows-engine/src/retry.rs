//! Retry delays, shaped like AWS Step Functions' `Retry`.
//!
//! The wait before retry `n` (1 for the first retry) is `interval × backoff_rate^(n−1)`, capped
//! at `max_delay`; with full jitter it is a uniformly random share of that, so that many runs
//! failing together do not retry together.

use std::time::Duration;

use switchboard_core::InvokeError;
use switchboard_workflows::{Jitter, Retrier, RetryOn};

/// Whether `retrier` retries `error`.
pub(crate) fn matches(retrier: &Retrier, error: &InvokeError) -> bool {
    retrier.errors.iter().any(|retry_on| match retry_on {
        RetryOn::Kind(kind) => *kind == error.kind(),
        RetryOn::RetryableToolError => {
            matches!(error, InvokeError::ToolFailed { error, .. } if error.is_retryable())
        }
    })
}

/// The computed wait before retry `retry` (from 1), before jitter.
pub(crate) fn backoff(retrier: &Retrier, retry: u32) -> Duration {
    let interval = retrier.interval.as_secs_f64().max(0.0);
    let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
    let mut seconds = interval * retrier.backoff_rate.max(0.0).powi(exponent);
    if let Some(max_delay) = retrier.max_delay {
        seconds = seconds.min(max_delay.as_secs_f64().max(0.0));
    }
    if !seconds.is_finite() {
        seconds = retrier
            .max_delay
            .map_or(f64::from(u32::MAX), |max| max.as_secs_f64());
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// The wait before retry `retry` (from 1), jitter applied.
pub(crate) fn delay(retrier: &Retrier, retry: u32) -> Duration {
    let computed = backoff(retrier, retry);
    match retrier.jitter {
        Jitter::None => computed,
        Jitter::Full => computed.mul_f64(fastrand::f64()),
    }
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;

    use super::*;

    fn retrier(jitter: Jitter) -> Retrier {
        Retrier {
            errors: Retrier::DEFAULT_ERRORS.to_vec(),
            interval: SignedDuration::from_secs(1),
            max_attempts: 10,
            backoff_rate: 2.0,
            max_delay: Some(SignedDuration::from_secs(5)),
            jitter,
        }
    }

    #[test]
    fn backoff_doubles_from_the_interval_up_to_the_cap() {
        let retrier = retrier(Jitter::None);
        let waits: Vec<u64> = (1..=5).map(|n| delay(&retrier, n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
    }

    #[test]
    fn full_jitter_stays_within_the_computed_wait() {
        let retrier = retrier(Jitter::Full);
        for retry in 1..=5 {
            let wait = delay(&retrier, retry);
            assert!(
                wait <= backoff(&retrier, retry),
                "{wait:?} at retry {retry}"
            );
        }
    }

    #[test]
    fn the_default_errors_retry_timeouts_and_retryable_tool_errors_only() {
        let retrier = retrier(Jitter::None);
        let failed = |error: switchboard_core::ToolError| InvokeError::ToolFailed {
            tool: "t".to_owned(),
            error,
        };
        assert!(matches(
            &retrier,
            &failed(switchboard_core::ToolError::new("busy", "busy").retryable())
        ));
        assert!(!matches(
            &retrier,
            &failed(switchboard_core::ToolError::new("gone", "gone"))
        ));
        assert!(matches(
            &retrier,
            &InvokeError::Timeout {
                tool: "t".to_owned(),
                after: Duration::from_secs(1)
            }
        ));
        assert!(!matches(
            &retrier,
            &InvokeError::InvalidInput {
                tool: "t".to_owned(),
                errors: Vec::new()
            }
        ));
    }
}
