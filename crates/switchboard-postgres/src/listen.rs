//! [`Listener`]: `LISTEN/NOTIFY`, so a waiter on one node wakes when another node's write
//! lands (a decision, an idempotency result, a workflow run's step).
//!
//! A store writes `SELECT pg_notify(channel, payload)` in the transaction that makes the
//! change, so the notification goes out exactly when the change is visible. Each `Database`
//! keeps one dedicated connection (outside the pool: a pooled connection is shared, and
//! `LISTEN` belongs to a session) that listens on the store's channels and fans what arrives
//! out to its subscribers through a broadcast channel.
//!
//! Notifications are a wake-up, never the truth. They are lost while the connection is down,
//! and a subscriber that falls behind misses some; so a waiter re-reads the row it waits for
//! when woken, and also every poll interval whatever arrives ([`Listener::wait`]). A lost
//! notification only delays. After a reconnection the listener sends
//! [`Notification::Resumed`] so that waiters check at once.

use std::time::Duration;

use futures::StreamExt as _;
use tokio::{runtime::Handle, sync::broadcast};
use tokio_postgres::AsyncMessage;

use crate::options::Target;

/// What a subscriber hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// A `NOTIFY` on one of the listened channels.
    Notify {
        /// The channel.
        channel: String,
        /// Its payload (a store puts the changed row's key there).
        payload: String,
    },
    /// The listening connection came back after a failure: notifications may have been
    /// missed, so every waiter should check.
    Resumed,
}

/// The notifications of a database's channels. Get it with
/// [`Database::listener`](crate::Database::listener).
#[derive(Debug)]
pub struct Listener {
    sender: broadcast::Sender<Notification>,
}

/// How long the listener waits before connecting again after a failure.
const RECONNECT_DELAY: Duration = Duration::from_millis(500);

impl Listener {
    pub(crate) fn start(
        runtime: &Handle,
        config: tokio_postgres::Config,
        channels: &'static [&'static str],
        target: Target,
    ) -> Self {
        let (sender, _) = broadcast::channel(1024);
        let forward = sender.clone();
        // Runs as long as the store's runtime, which the `Database` owns: dropping the last
        // handle to it ends this task.
        runtime.spawn(async move {
            let mut first = true;
            loop {
                if let Err(error) = listen_once(&config, channels, &forward, first).await {
                    tracing::warn!(
                        %target,
                        %error,
                        "the notification connection failed; waiters poll until it is back"
                    );
                }
                first = false;
                tokio::time::sleep(RECONNECT_DELAY).await;
            }
        });
        Self { sender }
    }

    /// A new subscription: every notification from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.sender.subscribe()
    }

    /// Waits until a notification for which `wanted` holds arrives, or [`Notification::Resumed`],
    /// or `poll` has passed, whichever is first. Then the caller re-reads what it waits for.
    pub async fn wait(
        subscription: &mut broadcast::Receiver<Notification>,
        poll: Duration,
        wanted: impl Fn(&str, &str) -> bool,
    ) {
        let woken = async {
            loop {
                match subscription.recv().await {
                    Ok(Notification::Notify { channel, payload }) => {
                        if wanted(&channel, &payload) {
                            return;
                        }
                    }
                    // Missed some: one of them may have been ours.
                    Ok(Notification::Resumed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(poll, woken).await;
    }
}

/// One connection's life: connect, `LISTEN` on every channel, forward until it fails.
async fn listen_once(
    config: &tokio_postgres::Config,
    channels: &[&str],
    forward: &broadcast::Sender<Notification>,
    first: bool,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await?;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    let statements: String = channels
        .iter()
        .map(|channel| format!("LISTEN \"{}\";", channel.replace('"', "\"\"")))
        .collect();
    // The client's requests go through the connection, which only the stream drives: run the
    // LISTEN while polling it.
    let listen = client.batch_execute(&statements);
    tokio::pin!(listen);
    loop {
        tokio::select! {
            done = &mut listen => {
                done?;
                break;
            }
            message = messages.next() => match message {
                Some(Ok(message)) => forward_message(forward, message),
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            },
        }
    }
    if !first {
        let _ = forward.send(Notification::Resumed);
    }
    while let Some(message) = messages.next().await {
        forward_message(forward, message?);
    }
    Ok(())
}

fn forward_message(forward: &broadcast::Sender<Notification>, message: AsyncMessage) {
    if let AsyncMessage::Notification(notification) = message {
        // No subscriber yet is fine: nobody waits.
        let _ = forward.send(Notification::Notify {
            channel: notification.channel().to_owned(),
            payload: notification.payload().to_owned(),
        });
    }
}
