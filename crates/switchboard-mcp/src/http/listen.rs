//! Accepting connections: `TCP_NODELAY`, caps on open connections (in total and per peer
//! address), and hyper's request-head timeout.
//!
//! - **`TCP_NODELAY`** on every accepted socket. An answer streamed as server-sent events goes
//!   out in several small writes; with Nagle's algorithm on, each one after the first waits for
//!   the client's delayed ACK, about 40 ms on Linux, on every call.
//! - **Connections are capped** so that idle or slow peers cannot take every file descriptor:
//!   at most `max_connections` in total (lowered to fit the process's open-file limit, so the
//!   cap is reached before `accept` starts failing), and at most `max_connections_per_peer`
//!   from one address (at most half the total, so one peer never holds them all). At the total
//!   cap, new connections wait in the kernel's listen backlog until one closes; a peer over its
//!   own cap gets a `503` with a JSON-RPC error and the connection is closed at once.
//! - **A request head must arrive in time**: hyper closes a connection that has not sent a
//!   complete request head within `request_head_timeout` of opening, or of its previous response
//!   ending, which bounds both slow senders and idle keep-alive connections.
//!
//! axum's `serve` builds hyper's connection builder itself, without a timer, so the head
//! timeout cannot be set through it; the loop here does what it does (one task per connection,
//! graceful shutdown through hyper-util) with hyper's builder configured.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex, PoisonError},
};

use axum::{Router, body::Body, extract::ConnectInfo};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore},
};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::{Connection, HttpLimits, reject};

/// File descriptors kept free for everything else the process opens (stores, logs, pipes).
const RESERVED_FILES: u64 = 64;

/// The connection caps of one endpoint.
#[derive(Debug)]
pub(crate) struct ConnectionCaps {
    total: Arc<Semaphore>,
    max_total: usize,
    max_per_peer: usize,
    per_peer: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl ConnectionCaps {
    /// The caps of `limits`, the total lowered to fit `open_file_limit` (when known) and the
    /// per-peer cap to half the total.
    pub(crate) fn new(limits: &HttpLimits, open_file_limit: Option<u64>) -> Self {
        let mut max_total = limits.max_connections.max(1);
        if let Some(files) = open_file_limit {
            let room = usize::try_from(files.saturating_sub(RESERVED_FILES)).unwrap_or(usize::MAX);
            if room < max_total {
                tracing::warn!(
                    open_file_limit = files,
                    configured = max_total,
                    capped_at = room.max(1),
                    "the connection cap is lowered to fit the process's open-file limit \
                     (raise it with ulimit -n)"
                );
                max_total = room.max(1);
            }
        }
        let max_per_peer = limits
            .max_connections_per_peer
            .clamp(1, (max_total / 2).max(1));
        Self {
            total: Arc::new(Semaphore::new(max_total)),
            max_total,
            max_per_peer,
            per_peer: Arc::default(),
        }
    }

    /// The total cap's semaphore and the cap, to count the open connections.
    pub(crate) fn open_gauge(&self) -> (Arc<Semaphore>, usize) {
        (Arc::clone(&self.total), self.max_total)
    }

    /// The effective caps: in total, and per peer.
    pub(crate) fn caps(&self) -> (usize, usize) {
        (self.max_total, self.max_per_peer)
    }

    /// A place for one more connection from `peer`, or `None` when it has its cap.
    fn peer_slot(&self, peer: IpAddr) -> Option<PeerSlot> {
        let mut counts = self.per_peer.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counts.entry(peer).or_default();
        if *count >= self.max_per_peer {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peer,
            counts: Arc::clone(&self.per_peer),
        })
    }
}

/// The soft open-file limit of this process, if it can be read.
pub(crate) fn open_file_limit() -> Option<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE)
        .ok()
        .map(|(soft, _hard)| soft)
}

/// One connection's place in its peer's count; dropping it frees the place.
#[derive(Debug)]
struct PeerSlot {
    peer: IpAddr,
    counts: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.peer);
            }
        }
    }
}

/// What one connection holds until it closes.
struct Held {
    _total: OwnedSemaphorePermit,
    _peer: PeerSlot,
}

/// Serves `app` on `listener` until `stop`, then lets open connections finish (rmcp ends its
/// event streams on the same signal).
pub(crate) async fn serve(
    mut listener: TcpListener,
    app: Router,
    caps: ConnectionCaps,
    limits: HttpLimits,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request_head_timeout)
        .keep_alive(true);
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => break,
            permit = Arc::clone(&caps.total).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, remote) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = axum::serve::Listener::accept(&mut listener) => accepted,
        };
        let Some(peer) = caps.peer_slot(remote.ip()) else {
            super::observe::refused("peer_connection_cap");
            refuse_over_cap(&stream, remote, caps.max_per_peer);
            continue;
        };
        metrics::counter!(super::observe::HTTP_CONNECTIONS_ACCEPTED_TOTAL).increment(1);
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, %remote, "could not set TCP_NODELAY");
        }
        let held = Held {
            _total: permit,
            _peer: peer,
        };
        let connection = Connection::accepted(remote);
        let service = app
            .clone()
            .map_request(move |mut request: hyper::Request<Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo(connection.clone()));
                request.map(Body::new)
            });
        let serving = graceful.watch(
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service)),
        );
        tokio::spawn(async move {
            if let Err(error) = serving.await {
                tracing::debug!(%error, %remote, "an HTTP connection ended with an error");
            }
            drop(held);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Answers a connection over its peer's cap with a `503` (best effort: one non-blocking
/// write into an empty send buffer) and closes it.
fn refuse_over_cap(stream: &TcpStream, remote: SocketAddr, cap: usize) {
    tracing::warn!(
        %remote,
        cap,
        "refused an HTTP connection: its peer address has too many open connections"
    );
    let body = reject::error_body(
        &serde_json::Value::Null,
        reject::INVALID_REQUEST,
        &format!(
            "Service Unavailable: this address already has {cap} open connections to the \
             server; close some, or reuse them (keep-alive)"
        ),
    );
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_peer: usize) -> HttpLimits {
        HttpLimits {
            max_connections: total,
            max_connections_per_peer: per_peer,
            ..HttpLimits::default()
        }
    }

    #[test]
    fn the_total_fits_the_file_limit_and_a_peer_gets_at_most_half() {
        assert_eq!(
            ConnectionCaps::new(&limits(1024, 128), Some(256)).caps(),
            (192, 96)
        );
        assert_eq!(
            ConnectionCaps::new(&limits(1024, 128), Some(65_536)).caps(),
            (1024, 128)
        );
        assert_eq!(ConnectionCaps::new(&limits(10, 128), None).caps(), (10, 5));
        assert_eq!(ConnectionCaps::new(&limits(0, 0), Some(10)).caps(), (1, 1));
    }

    #[test]
    fn peer_slots_count_per_address_and_free_on_drop() {
        let caps = ConnectionCaps::new(&limits(4, 2), None);
        let one: IpAddr = "127.0.0.1".parse().expect("an address");
        let two: IpAddr = "127.0.0.2".parse().expect("an address");
        let first = caps.peer_slot(one).expect("room");
        let _second = caps.peer_slot(one).expect("room");
        assert!(caps.peer_slot(one).is_none(), "the peer is at its cap");
        let _other = caps.peer_slot(two).expect("another peer has its own cap");
        drop(first);
        assert!(
            caps.peer_slot(one).is_some(),
            "a closed connection frees its place"
        );
    }
}
