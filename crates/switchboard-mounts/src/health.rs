//! What a mounted server's tools know of it: whether it is up (and the connection to call
//! through), restarting, or down, published by the server's actor on a `watch` channel.
//!
//! A tool never talks to the actor: it reads the channel and calls the peer itself, so a call
//! takes no mailbox hop. When the server is restarting, a call waits on the channel (within its
//! own timeout) for the next connection; when it is down, the call fails at once with why and
//! until when.

use std::time::Duration;

use jiff::Timestamp;
use rmcp::{RoleClient, service::Peer};
use tokio::sync::watch;

/// The state of one mounted server.
#[derive(Debug, Clone)]
pub(crate) enum Health {
    /// Serving, through this connection; `generation` counts the connections so far (1 for
    /// the first), so a call can wait for one newer than the one that failed it.
    Up {
        /// The connection.
        peer: Peer<RoleClient>,
        /// Which connection this is.
        generation: u64,
    },
    /// The connection was lost (or is being made for the first time) and a new one is being
    /// made.
    Restarting {
        /// Why.
        reason: String,
    },
    /// Restarted too often: no new connection is tried before `until`.
    Down {
        /// Why.
        reason: String,
        /// When a start is tried again.
        until: Timestamp,
    },
    /// Closed on purpose.
    Closed,
}

/// Why a call could not get a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// The server is down until a cool-down ends, or closed; the message says which.
    Down(String),
    /// No connection came within the call's time.
    TimedOut {
        /// The last reason the server gave.
        reason: String,
    },
}

/// Waits for a connection newer than generation `after` (0: any), for at most `patience`.
pub(crate) async fn connection_after(
    health: &mut watch::Receiver<Health>,
    after: u64,
    patience: Duration,
) -> Result<(Peer<RoleClient>, u64), Unavailable> {
    let wait = async {
        loop {
            let current = health.borrow_and_update().clone();
            match current {
                Health::Up { peer, generation } if generation > after => {
                    return Ok((peer, generation));
                }
                Health::Down { reason, until } => {
                    return Err(Unavailable::Down(format!(
                        "{reason}; it is marked down until {until} (no restart is tried before)"
                    )));
                }
                Health::Closed => {
                    return Err(Unavailable::Down("it was closed".to_owned()));
                }
                Health::Up { .. } | Health::Restarting { .. } => {}
            }
            if health.changed().await.is_err() {
                return Err(Unavailable::Down("its supervisor is gone".to_owned()));
            }
        }
    };
    match tokio::time::timeout(patience, wait).await {
        Ok(answer) => answer,
        Err(_) => {
            let reason = match &*health.borrow() {
                Health::Restarting { reason, .. } => format!("restarting after: {reason}"),
                _ => "no connection".to_owned(),
            };
            Err(Unavailable::TimedOut { reason })
        }
    }
}
