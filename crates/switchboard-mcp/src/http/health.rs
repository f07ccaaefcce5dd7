//! `GET /healthz` and `GET /readyz`, for the platform that starts, probes and stops the
//! process: outside the MCP endpoint, its token check and its Origin check.
//!
//! - `/healthz` says the process is alive: `200` with `{"status":"ok"}`, always, draining or
//!   not (a process that answers is alive).
//! - `/readyz` says whether to send it traffic: `200` with `{"status":"ready"}` when every
//!   [`ReadinessCheck`] passed its latest run; `503` with `{"status":"not_ready","failing":[…]}`
//!   naming the checks that did not (by name only: why is logged, never told to whoever asks),
//!   or `{"status":"draining"}` once the server drains (`super::drain`), so that a load balancer
//!   takes the node out.
//!
//! The probes never wait for a check. The checks run in a background task, every
//! [`CHECK_INTERVAL`], concurrently, each bounded by [`CHECK_TIMEOUT`] (a check that does not
//! answer in time fails); `/readyz` answers the latest result, so it costs a lock and a small
//! JSON body whatever the stores do. The first run completes before the server starts
//! listening, so the first probe already has an answer.

use std::{
    fmt,
    future::Future,
    pin::Pin,
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use axum::{
    extract::State,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::drain::Drain;

/// Where the liveness probe is answered.
pub const HEALTHZ_PATH: &str = "/healthz";

/// Where the readiness probe is answered.
pub const READYZ_PATH: &str = "/readyz";

/// How often the readiness checks run.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// How long one readiness check may take before it counts as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// What a readiness check returns: `Ok` when ready, else why not (for the log).
pub type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// One thing `/readyz` depends on, such as a store answering a cheap read.
///
/// Implement it, or build one from a closure with [`readiness_check`].
pub trait ReadinessCheck: Send + Sync + 'static {
    /// A short name, given in the `503` body when the check fails (`"audit store"`).
    fn name(&self) -> &str;

    /// Runs the check once. It is bounded by [`CHECK_TIMEOUT`] and may be dropped then.
    fn check(&self) -> CheckFuture;
}

/// A [`ReadinessCheck`] named `name` that runs `check`.
pub fn readiness_check<F>(name: impl Into<String>, check: F) -> Arc<dyn ReadinessCheck>
where
    F: Fn() -> CheckFuture + Send + Sync + 'static,
{
    Arc::new(ClosureCheck {
        name: name.into(),
        check,
    })
}

struct ClosureCheck<F> {
    name: String,
    check: F,
}

impl<F> ReadinessCheck for ClosureCheck<F>
where
    F: Fn() -> CheckFuture + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self) -> CheckFuture {
        (self.check)()
    }
}

/// The checks of one endpoint, by name in its configuration's `Debug`.
#[derive(Clone, Default)]
pub(crate) struct Checks(pub(crate) Vec<Arc<dyn ReadinessCheck>>);

impl fmt::Debug for Checks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|check| check.name().to_owned()))
            .finish()
    }
}

/// The readiness of one endpoint: its checks, their latest result and its drain state.
pub(crate) struct Readiness {
    checks: Checks,
    /// The names of the checks that failed their latest run.
    failing: RwLock<Arc<[String]>>,
    drain: Arc<Drain>,
}

impl Readiness {
    /// Readiness over `checks`, not yet run (ready until the first run says otherwise).
    pub(crate) fn new(checks: Checks, drain: Arc<Drain>) -> Self {
        Self {
            checks,
            failing: RwLock::new(Arc::from(Vec::new())),
            drain,
        }
    }

    /// Runs every check once, concurrently, and keeps the result; logs each check that starts
    /// or stops failing.
    pub(crate) async fn refresh(&self) {
        let runs = self.checks.0.iter().map(|check| async move {
            let outcome = match tokio::time::timeout(CHECK_TIMEOUT, check.check()).await {
                Ok(outcome) => outcome,
                Err(_) => Err(format!("no answer within {} ms", CHECK_TIMEOUT.as_millis())),
            };
            (check.name(), outcome)
        });
        let outcomes = futures::future::join_all(runs).await;
        let before = self.failing_now();
        let mut failing = Vec::new();
        for (name, outcome) in outcomes {
            let failed_before = before.iter().any(|failed| failed == name);
            match outcome {
                Ok(()) if failed_before => tracing::info!(check = name, "ready again"),
                Ok(()) => {}
                Err(error) => {
                    if !failed_before {
                        tracing::warn!(check = name, %error, "not ready: a readiness check failed");
                    }
                    failing.push(name.to_owned());
                }
            }
        }
        *self.failing.write().unwrap_or_else(PoisonError::into_inner) = Arc::from(failing);
    }

    /// Refreshes every [`CHECK_INTERVAL`] until `stop`.
    pub(crate) async fn refresh_until(self: Arc<Self>, stop: CancellationToken) {
        if self.checks.0.is_empty() {
            return;
        }
        let mut ticks = tokio::time::interval(CHECK_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate; the server ran the checks once before listening.
        ticks.tick().await;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => self.refresh().await,
            }
        }
    }

    fn failing_now(&self) -> Arc<[String]> {
        Arc::clone(&self.failing.read().unwrap_or_else(PoisonError::into_inner))
    }
}

/// `GET /healthz`.
pub(crate) async fn healthz() -> Response {
    probe_answer(StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
}

/// `GET /readyz`.
pub(crate) async fn readyz(State(readiness): State<Arc<Readiness>>) -> Response {
    if readiness.drain.is_draining() {
        return probe_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            r#"{"status":"draining"}"#.to_owned(),
        );
    }
    let failing = readiness.failing_now();
    if failing.is_empty() {
        probe_answer(StatusCode::OK, r#"{"status":"ready"}"#.to_owned())
    } else {
        probe_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "not_ready", "failing": &*failing}).to_string(),
        )
    }
}

/// A probe's answer: JSON, never cached.
fn probe_answer(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;

    use super::*;

    fn fixed(name: &str, outcome: Result<(), &'static str>) -> Arc<dyn ReadinessCheck> {
        readiness_check(name, move || {
            Box::pin(async move { outcome.map_err(str::to_owned) })
        })
    }

    fn stuck(name: &str) -> Arc<dyn ReadinessCheck> {
        readiness_check(name, || Box::pin(std::future::pending()))
    }

    async fn body(response: Response) -> String {
        let bytes = to_bytes(response.into_body(), 1024).await.expect("a body");
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn ready_when_every_check_passes_else_the_failing_ones_are_named() {
        let drain = Arc::new(Drain::default());
        let readiness = Arc::new(Readiness::new(
            Checks(vec![
                fixed("audit store", Ok(())),
                fixed("proposals", Ok(())),
            ]),
            Arc::clone(&drain),
        ));
        readiness.refresh().await;
        let answer = readyz(State(Arc::clone(&readiness))).await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(body(answer).await, r#"{"status":"ready"}"#);

        let readiness = Arc::new(Readiness::new(
            Checks(vec![
                fixed("audit store", Ok(())),
                fixed("proposals", Err("disk gone: /secret/path")),
            ]),
            drain,
        ));
        readiness.refresh().await;
        let answer = readyz(State(readiness)).await;
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        let text = body(answer).await;
        let answer: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            answer,
            json!({"status": "not_ready", "failing": ["proposals"]})
        );
        assert!(!text.contains("secret"), "why is logged, not told: {text}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_check_that_does_not_answer_in_time_fails_instead_of_hanging() {
        let readiness = Readiness::new(
            Checks(vec![stuck("workflow runs")]),
            Arc::new(Drain::default()),
        );
        readiness.refresh().await;
        assert_eq!(&*readiness.failing_now(), ["workflow runs".to_owned()]);
    }

    #[tokio::test]
    async fn a_draining_server_is_not_ready_but_alive() {
        let drain = Arc::new(Drain::default());
        let readiness = Arc::new(Readiness::new(
            Checks(vec![fixed("audit store", Ok(()))]),
            Arc::clone(&drain),
        ));
        readiness.refresh().await;
        drain.start();
        let answer = readyz(State(readiness)).await;
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body(answer).await, r#"{"status":"draining"}"#);
        assert_eq!(healthz().await.status(), StatusCode::OK);
    }
}
