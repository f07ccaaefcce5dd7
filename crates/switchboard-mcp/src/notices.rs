//! The notifications one `tools/call` sends while it runs: progress and log messages, in the
//! order the tool produced them, all sent before the call's result.
//!
//! A tool reports progress and logs from its own task, synchronously (`ctx.progress(..)`, a
//! `tracing` event); sending an MCP notification is async. So every call that may notify gets a
//! small bounded queue: the producers ([`NoticeSender`], a [`ProgressSink`] and the sink the
//! logging layer finds in the call's span) push without waiting, and [`forward_while`] drains
//! the queue to the client while the call runs, then once more after it ends, so nothing is
//! lost and nothing arrives after the result. A producer that outruns the client by more than
//! [`CAPACITY`] notices loses the excess (logged at the end); a tool never waits for a client.
//!
//! Progress must increase (MCP says so): a report that does not is dropped here.
//!
//! The queue is a mutex-guarded `VecDeque` and a [`Notify`], one small allocation per call,
//! rather than a Tokio channel, whose first block of slots is a ~4 KB allocation: rmcp's own
//! client asks for progress on every request, so every call from it pays for the queue, while
//! few tools ever report.

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

use std::{
    collections::VecDeque,
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    Peer, RoleServer,
    model::{LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken},
};
use switchboard_core::{Progress, ProgressSink};
use tokio::sync::Notify;

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

/// A call's queue, shared by its producers and its pump.
#[derive(Debug, Default)]
struct NoticeQueue {
    /// The waiting notices, oldest first; `None` once the pump is gone (the call is over).
    notices: Mutex<Option<VecDeque<Notice>>>,
    /// Wakes the pump when a notice arrives (a permit is kept if it is not waiting).
    arrived: Notify,
    /// How many notices were dropped: the queue was full or the call was over.
    dropped: AtomicU64,
}

impl NoticeQueue {
    /// The oldest waiting notice, if any.
    fn pop(&self) -> Option<Notice> {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .and_then(VecDeque::pop_front)
    }
}

/// The producing end of a call's queue. Cheap to clone; never blocks.
#[derive(Debug, Clone)]
pub(crate) struct NoticeSender {
    queue: Arc<NoticeQueue>,
}

impl NoticeSender {
    /// Queues `notice`, or counts it as dropped if the queue is full or the call is over.
    pub(crate) fn send(&self, notice: Notice) {
        {
            let mut notices = self
                .queue
                .notices
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match notices.as_mut() {
                Some(notices) if notices.len() < CAPACITY => notices.push_back(notice),
                _ => {
                    self.queue.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
        self.queue.arrived.notify_one();
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

/// The consuming end: sends the queued notices to the client. Dropping it closes the queue.
#[derive(Debug)]
pub(crate) struct Pump {
    queue: Arc<NoticeQueue>,
    peer: Peer<RoleServer>,
    /// The request's `_meta.progressToken`; progress reports are dropped without one.
    progress_token: Option<ProgressToken>,
    /// The last progress value sent, so that only increasing values go out.
    last_progress: Option<f64>,
}

/// A queue for one call whose notices go to `peer`.
pub(crate) fn queue(
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
) -> (NoticeSender, Pump) {
    let queue = Arc::new(NoticeQueue {
        notices: Mutex::new(Some(VecDeque::new())),
        ..NoticeQueue::default()
    });
    (
        NoticeSender {
            queue: Arc::clone(&queue),
        },
        Pump {
            queue,
            peer,
            progress_token,
            last_progress: None,
        },
    )
}

/// Runs `work`, forwarding `pump`'s notices to the client meanwhile; once `work` is done,
/// sends what is still queued, then returns `work`'s output. Without a pump, just runs `work`.
///
/// `work` and `pump` are held by the caller, and a notice's send is boxed, so that this future
/// holds neither a second copy of them nor the send's state: rmcp spawns a task per request
/// whose future holds this one (see `McpServer::invoke`), tokio copies a task's future several
/// times between spawn and completion, and every byte of it is paid on every call (the pump
/// and the send took this future from ~140 to ~940 bytes). Notices are rare; calls are not.
pub(crate) async fn forward_while<F: Future>(
    mut work: Pin<&mut F>,
    pump: Option<&mut Pump>,
) -> F::Output {
    let Some(pump) = pump else {
        return work.await;
    };
    let output = loop {
        tokio::select! {
            biased;
            () = pump.queue.arrived.notified() => {
                while let Some(notice) = pump.queue.pop() {
                    Box::pin(pump.forward(notice)).await;
                }
            }
            output = work.as_mut() => break output,
        }
    };
    // The senders may outlive the call (a clone in a span, in the context): do not wait for
    // them, take what is there.
    while let Some(notice) = pump.queue.pop() {
        Box::pin(pump.forward(notice)).await;
    }
    let dropped = pump.queue.dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "progress or log notifications of an MCP call were dropped: the client read them \
             more slowly than the tool produced them"
        );
    }
    output
}

impl Drop for Pump {
    /// The call is over: later notices are dropped (and counted) instead of queued.
    fn drop(&mut self) {
        *self
            .queue
            .notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }
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
                // Boxed (as below): only a call that notifies pays for the send's future.
                let _ = Box::pin(self.peer.notify_progress(param)).await;
            }
            Notice::Log(param) => {
                let _ = Box::pin(self.peer.notify_logging_message(param)).await;
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
        let queue = Arc::new(NoticeQueue {
            notices: Mutex::new(Some(VecDeque::new())),
            ..NoticeQueue::default()
        });
        let sender = NoticeSender {
            queue: Arc::clone(&queue),
        };
        for done in 0..CAPACITY + 3 {
            sender.send(progress(done as f64));
        }
        assert_eq!(queue.dropped.load(Ordering::Relaxed), 3);
        for expected in 0..CAPACITY {
            match queue.pop() {
                Some(Notice::Progress { done, .. }) => assert_eq!(done, expected as f64),
                other => panic!("expected progress {expected}, got {other:?}"),
            }
        }
        assert!(queue.pop().is_none());
    }

    #[test]
    fn after_the_call_notices_are_dropped_not_kept() {
        let queue = Arc::new(NoticeQueue::default());
        let sender = NoticeSender {
            queue: Arc::clone(&queue),
        };
        // `notices: None` is what dropping the pump leaves.
        sender.send(progress(1.0));
        assert!(queue.pop().is_none());
        assert_eq!(queue.dropped.load(Ordering::Relaxed), 1);
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
