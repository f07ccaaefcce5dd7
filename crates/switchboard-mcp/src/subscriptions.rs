//! Resource subscriptions: `resources/subscribe` on 2025 revisions, and the resource URIs of a
//! `subscriptions/listen` on 2026-07-28. Both tell a client that a resource it reads changed
//! (`notifications/resources/updated`).
//!
//! Nothing in the registry knows which resources a write touches: a page is drawn from
//! several tools, a resource from a tool's output. So a subscription reads its resource again
//! after every write the registry counts ([`ToolRegistry::watch_writes`]), as the subscriber,
//! and notifies when the answer differs from the last one (a refusal included).
//! Writes that come in a burst are read once, since a `watch` channel keeps only the newest
//! count. Each read again is a call of the resource's read tools, checked and audited like the
//! subscriber's own reads: a client subscribed to many resources of a busy server pays for
//! that in reads.
//!
//! [`ToolRegistry::watch_writes`]: switchboard_registry::ToolRegistry::watch_writes

use std::future::Future;

use serde_json::Value;
use tokio::sync::watch;

/// Reads the resource with `read` (its answer as JSON), then calls `notify` each time a
/// write changes that answer, until `stop` completes, the registry goes away, or `notify`
/// answers `false` (the client is gone).
///
/// `writes` is subscribed when the subscription starts. A write between then and the first
/// read may have changed what the client read before subscribing, so it is notified at once.
pub(crate) async fn watch_resource<Read, Answer, Notify, Sent>(
    mut writes: watch::Receiver<u64>,
    mut read: Read,
    stop: impl Future<Output = ()>,
    mut notify: Notify,
) where
    Read: FnMut() -> Answer,
    Answer: Future<Output = Value>,
    Notify: FnMut() -> Sent,
    Sent: Future<Output = bool>,
{
    let mut stop = std::pin::pin!(stop);
    let mut seen = read().await;
    if writes.has_changed().unwrap_or(false) {
        writes.mark_unchanged();
        if !notify().await {
            return;
        }
    }
    loop {
        tokio::select! {
            () = &mut stop => return,
            changed = writes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let now = read().await;
        if now != seen {
            seen = now;
            if !notify().await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use serde_json::json;
    use tokio::sync::{mpsc, oneshot};

    use super::*;

    /// A resource whose answer is the number in `value`; every notification lands in `sent`.
    struct Fixture {
        writes: watch::Sender<u64>,
        value: Arc<AtomicUsize>,
        sent: mpsc::UnboundedReceiver<()>,
        stop: Option<oneshot::Sender<()>>,
        watcher: tokio::task::JoinHandle<()>,
    }

    impl Fixture {
        fn start() -> Self {
            let writes = watch::Sender::new(0);
            let value = Arc::new(AtomicUsize::new(0));
            let (notices, sent) = mpsc::unbounded_channel();
            let (stop, stopped) = oneshot::channel::<()>();
            let read_value = Arc::clone(&value);
            let watcher = tokio::spawn(watch_resource(
                writes.subscribe(),
                move || {
                    let answer = read_value.load(Ordering::SeqCst);
                    async move { json!(answer) }
                },
                async move {
                    let _ = stopped.await;
                },
                move || {
                    let delivered = notices.send(()).is_ok();
                    async move { delivered }
                },
            ));
            Self {
                writes,
                value,
                sent,
                stop: Some(stop),
                watcher,
            }
        }

        /// A write that sets the answer to `value`.
        fn write(&self, value: usize) {
            self.value.store(value, Ordering::SeqCst);
            self.writes.send_modify(|count| *count += 1);
        }

        /// Waits until the watcher has handled everything sent so far.
        async fn settle(&self) {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
        }
    }

    #[tokio::test]
    async fn a_write_that_changes_the_answer_is_notified_once() {
        let mut fixture = Fixture::start();
        fixture.settle().await;
        fixture.write(1);
        fixture.settle().await;
        assert_eq!(fixture.sent.try_recv(), Ok(()));
        assert!(fixture.sent.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_write_that_leaves_the_answer_alone_is_not_notified() {
        let mut fixture = Fixture::start();
        fixture.settle().await;
        fixture.write(0);
        fixture.settle().await;
        assert!(fixture.sent.try_recv().is_err());
        fixture.write(2);
        fixture.settle().await;
        assert_eq!(fixture.sent.try_recv(), Ok(()));
    }

    #[tokio::test]
    async fn a_write_before_the_first_read_is_notified() {
        let writes = watch::Sender::new(0);
        let receiver = writes.subscribe();
        writes.send_modify(|count| *count += 1);
        let (notices, mut sent) = mpsc::unbounded_channel();
        let watcher = tokio::spawn(watch_resource(
            receiver,
            || async { json!(0) },
            std::future::pending(),
            move || {
                let delivered = notices.send(()).is_ok();
                async move { delivered }
            },
        ));
        assert_eq!(sent.recv().await, Some(()));
        watcher.abort();
    }

    #[tokio::test]
    async fn stopping_ends_the_watch() {
        let mut fixture = Fixture::start();
        fixture.settle().await;
        if let Some(stop) = fixture.stop.take() {
            let _ = stop.send(());
        }
        fixture.watcher.await.expect("the watcher ends cleanly");
        assert!(fixture.sent.try_recv().is_err());
    }
}
