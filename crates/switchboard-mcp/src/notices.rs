//! The notifications one `tools/call` sends while it runs: progress and log messages, in the
//! order the tool produced them, all sent before the call's result.
//!
//! A tool reports progress and logs from its own task, synchronously (`ctx.progress(..)`, a
//! `tracing` event); sending an MCP notification is async. So every call that may notify gets a
//! bounded channel: the producers ([`NoticeSender`], a [`ProgressSink`] and the sink the
//! logging layer finds in the call's span) `try_send` without waiting, and [`forward_while`]
//! drains the channel to the client while the call runs, then once more after it ends, so
//! nothing is lost and nothing arrives after the result. A producer that outruns the client by
//! more than [`CAPACITY`] notices loses the excess (counted, and logged at the end); a tool
//! never waits for a client.
//!
//! Progress must increase (MCP says so): a report that does not is dropped here.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    Peer, RoleServer,
    model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken},
};
use switchboard_core::{Progress, ProgressSink};
use tokio::sync::mpsc;

/// How many notices may wait for the client before new ones are dropped.
pub(crate) const CAPACITY: usize = 256;

/// One notification to send.
#[derive(Debug)]
pub(crate) enum Notice {
    /// A progress report.
    Progress {
        done: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// A log message, ready to send.
    Log(LoggingMessageNotificationParam),
}

/// The producing end of a call's channel. Cheap to clone; never blocks.
#[derive(Debug, Clone)]
pub(crate) struct NoticeSender {
    notices: mpsc::Sender<Notice>,
    /// How many notices were dropped: the channel was full or the call was over.
    dropped: Arc<AtomicU64>,
}

impl NoticeSender {
    /// Queues `notice`, or counts it as dropped if the channel is full or the call is over.
    pub(crate) fn send(&self, notice: Notice) {
        if self.notices.try_send(notice).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ProgressSink for NoticeSender {
    fn report(&self, progress: Progress<'_>) {
        self.send(Notice::Progress {
            done: progress.done,
            total: progress.total,
            message: progress.message.map(str::to_owned),
        });
    }
}

/// The consuming end: sends the queued notices to the client. Dropping it closes the channel,
/// so later notices are dropped (and counted) instead of queued.
#[derive(Debug)]
pub(crate) struct Pump {
    notices: mpsc::Receiver<Notice>,
    dropped: Arc<AtomicU64>,
    peer: Peer<RoleServer>,
    /// The request's `_meta.progressToken`; progress reports are dropped without one.
    progress_token: Option<ProgressToken>,
    /// The last progress value sent, so that only increasing values go out.
    last_progress: Option<f64>,
}

/// A channel for one call: its sender, its receiver, and its count of dropped notices.
fn channel() -> (NoticeSender, mpsc::Receiver<Notice>, Arc<AtomicU64>) {
    let (sender, receiver) = mpsc::channel(CAPACITY);
    let dropped = Arc::new(AtomicU64::new(0));
    let sender = NoticeSender {
        notices: sender,
        dropped: Arc::clone(&dropped),
    };
    (sender, receiver, dropped)
}

/// A channel for one call whose notices go to `peer`.
pub(crate) fn queue(
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
) -> (NoticeSender, Pump) {
    let (sender, notices, dropped) = channel();
    let pump = Pump {
        notices,
        dropped,
        peer,
        progress_token,
        last_progress: None,
    };
    (sender, pump)
}

/// Runs `work`, forwarding `pump`'s notices to the client meanwhile; once `work` is done,
/// sends what is still queued, then returns `work`'s output. Without a pump, just runs `work`.
pub(crate) async fn forward_while<F: Future>(work: F, pump: Option<&mut Pump>) -> F::Output {
    let Some(pump) = pump else {
        return work.await;
    };
    let mut work = std::pin::pin!(work);
    let output = loop {
        tokio::select! {
            biased;
            Some(notice) = pump.notices.recv() => pump.forward(notice).await,
            output = work.as_mut() => break output,
        }
    };
    // The senders may outlive the call (a clone in a span, in the context): do not wait for
    // them, take what is there.
    while let Ok(notice) = pump.notices.try_recv() {
        pump.forward(notice).await;
    }
    let dropped = pump.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "progress or log notifications of an MCP call were dropped: the client read them \
             more slowly than the tool produced them"
        );
    }
    output
}

impl Pump {
    async fn forward(&mut self, notice: Notice) {
        // A client that went away cannot be told anything; the call itself ends on its own.
        match notice {
            Notice::Progress {
                done,
                total,
                message,
            } => {
                let Some(token) = &self.progress_token else {
                    return;
                };
                if !increases(self.last_progress, done) {
                    return;
                }
                self.last_progress = Some(done);
                let mut param = ProgressNotificationParam::new(token.clone(), done);
                if let Some(total) = total.filter(|total| total.is_finite()) {
                    param = param.with_total(total);
                }
                if let Some(message) = message {
                    param = param.with_message(message);
                }
                let _ = self.peer.notify_progress(param).await;
            }
            Notice::Log(param) => {
                let _ = self.peer.notify_logging_message(param).await;
            }
        }
    }
}

/// Whether `next` may follow `last`: finite, and greater than the last value sent.
fn increases(last: Option<f64>, next: f64) -> bool {
    next.is_finite() && last.is_none_or(|last| next > last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(done: f64) -> Notice {
        Notice::Progress {
            done,
            total: None,
            message: None,
        }
    }

    #[test]
    fn notices_queue_in_order_up_to_the_capacity_then_are_counted_as_dropped() {
        let (sender, mut notices, dropped) = channel();
        for done in 0..CAPACITY + 3 {
            sender.send(progress(done as f64));
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        for expected in 0..CAPACITY {
            match notices.try_recv() {
                Ok(Notice::Progress { done, .. }) => assert_eq!(done, expected as f64),
                other => panic!("expected progress {expected}, got {other:?}"),
            }
        }
        assert!(notices.try_recv().is_err());
    }

    #[test]
    fn after_the_call_notices_are_dropped_not_kept() {
        let (sender, notices, dropped) = channel();
        // What dropping the pump leaves.
        drop(notices);
        sender.send(progress(1.0));
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn progress_must_increase_and_be_finite() {
        assert!(increases(None, 0.0));
        assert!(increases(Some(0.0), 50.0));
        assert!(!increases(Some(50.0), 50.0));
        assert!(!increases(Some(50.0), 10.0));
        assert!(!increases(None, f64::NAN));
        assert!(!increases(Some(1.0), f64::INFINITY));
    }
}
