//! Progress reports from a running tool to whoever started the call.
//!
//! A tool reports with [`ToolContext::progress`](crate::ToolContext::progress); the report goes
//! to the [`ProgressNotifier`] the caller put in its [`CallContext`](crate::CallContext), which
//! [`CallContext::verify`](crate::CallContext::verify) copies into the [`Caller`](crate::Caller)
//! the tool sees. The registry's call path never looks at it: a notifier rides along with the
//! context. The MCP server sets one when a request carries `_meta.progressToken` and turns each
//! report into `notifications/progress`; an in-process caller can set its own.
//!
//! Without a notifier (the default) a report is one branch on a `None`: tools may report as
//! often as they like. A notifier must not block: it is called on the tool's task, in the
//! middle of its work.

use std::{fmt, sync::Arc};

/// One progress report: how far a tool got, out of how much, and what it is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress<'a> {
    /// The work done so far. Should increase with every report (MCP drops one that does not).
    pub done: f64,
    /// The total amount of work, when known.
    pub total: Option<f64>,
    /// What the tool is doing now, for a human to read.
    pub message: Option<&'a str>,
}

/// Where a call's progress reports go. Implemented for every `Fn(Progress<'_>)` closure.
///
/// Called on the tool's task: return quickly, and never block (hand the report to a channel).
pub trait ProgressSink: Send + Sync + 'static {
    /// Receives one report.
    fn report(&self, progress: Progress<'_>);
}

impl<F> ProgressSink for F
where
    F: Fn(Progress<'_>) + Send + Sync + 'static,
{
    fn report(&self, progress: Progress<'_>) {
        self(progress);
    }
}

/// The progress sink of one call, or none. Cheap to clone (an optional `Arc`).
///
/// A notifier is not part of who is calling: it is never serialised, and every notifier
/// compares equal to every other, so that contexts and callers compare by their identity
/// fields alone.
#[derive(Clone, Default)]
pub struct ProgressNotifier {
    sink: Option<Arc<dyn ProgressSink>>,
}

impl ProgressNotifier {
    /// No sink: every report is dropped at once. The default.
    pub const fn none() -> Self {
        Self { sink: None }
    }

    /// Sends reports to `sink`.
    pub fn new(sink: impl ProgressSink) -> Self {
        Self {
            sink: Some(Arc::new(sink)),
        }
    }

    /// Whether reports go anywhere. A tool may check it before building an expensive message.
    pub fn is_active(&self) -> bool {
        self.sink.is_some()
    }

    /// Reports progress: `done` out of `total` (if known), with an optional message.
    #[inline]
    pub fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.sink {
            sink.report(Progress {
                done,
                total,
                message,
            });
        }
    }
}

impl fmt::Debug for ProgressNotifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressNotifier")
            .field("active", &self.is_active())
            .finish()
    }
}

/// Every notifier equals every other: a notifier says where reports go, not who calls.
impl PartialEq for ProgressNotifier {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for ProgressNotifier {}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn reports_reach_the_sink_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let notifier = ProgressNotifier::new(move |progress: Progress<'_>| {
            sink.lock().expect("not poisoned").push((
                progress.done,
                progress.total,
                progress.message.map(str::to_owned),
            ));
        });
        assert!(notifier.is_active());
        notifier.report(0.0, Some(2.0), None);
        notifier.clone().report(2.0, Some(2.0), Some("done"));
        let seen = seen.lock().expect("not poisoned");
        assert_eq!(
            *seen,
            [
                (0.0, Some(2.0), None),
                (2.0, Some(2.0), Some("done".to_owned()))
            ]
        );
    }

    #[test]
    fn without_a_sink_reports_go_nowhere_and_notifiers_never_differ() {
        let none = ProgressNotifier::none();
        assert!(!none.is_active());
        none.report(1.0, None, Some("ignored"));
        assert_eq!(none, ProgressNotifier::new(|_: Progress<'_>| {}));
        assert_eq!(format!("{none:?}"), "ProgressNotifier { active: false }");
    }
}
