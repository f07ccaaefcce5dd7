//! One row, one round: open the clients, warm them up, release them together, and time each
//! call until the call or time bound is reached.
//!
//! Each client is its own task with its own connection, so 32 clients are 32 keep-alive
//! connections with one call in flight each. The clients and this coordinator meet at a
//! barrier between the warm-up and the measured phase; a client that failed to open still
//! reaches it (and then reports its error), so no failure leaves the others waiting.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use tokio::sync::Barrier;

use crate::{
    Row,
    client::{Connection, Revision, TIMEOUT, is_tool_result},
};

/// How much each row runs per round.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Warm-up calls per client (at least one, which also checks the answer)...
    pub(crate) warm_calls: usize,
    /// ...or this long, whichever comes first.
    pub(crate) warm_time: Duration,
    /// Measured calls, all clients together...
    pub(crate) max_calls: usize,
    /// ...or this long, whichever comes first.
    pub(crate) max_time: Duration,
}

/// What one row measured in one round.
#[derive(Debug)]
pub(crate) struct RowRun {
    /// Every measured call's round trip, all clients together.
    pub(crate) latencies: Vec<Duration>,
    /// From the release of the clients to the end of the last one's last call.
    pub(crate) wall: Duration,
}

/// Runs `row` against the server at `addr` once.
pub(crate) async fn run_row(row: Row, addr: SocketAddr, plan: Plan) -> anyhow::Result<RowRun> {
    let barrier = Arc::new(Barrier::new(row.clients + 1));
    let per_client = plan.max_calls.div_ceil(row.clients).max(1);
    let tasks: Vec<_> = (0..row.clients)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            tokio::spawn(client(addr, row.revision, plan, per_client, barrier))
        })
        .collect();
    barrier.wait().await;
    let released = Instant::now();
    let mut latencies = Vec::with_capacity(plan.max_calls);
    let mut last_end = released;
    let mut first_error = None;
    for task in tasks {
        match task.await.context("a client task")? {
            Ok((samples, ended)) => {
                latencies.extend(samples);
                last_end = last_end.max(ended);
            }
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    Ok(RowRun {
        latencies,
        wall: last_end.duration_since(released),
    })
}

/// One client: open, warm up, wait for the others, then time calls until a bound is reached.
async fn client(
    addr: SocketAddr,
    revision: Revision,
    plan: Plan,
    max_calls: usize,
    barrier: Arc<Barrier>,
) -> anyhow::Result<(Vec<Duration>, Instant)> {
    let warmed = warm_up(addr, revision, plan).await;
    barrier.wait().await;
    let mut connection = warmed?;
    let deadline = Instant::now() + plan.max_time;
    let mut latencies = Vec::with_capacity(max_calls);
    while latencies.len() < max_calls && Instant::now() < deadline {
        latencies.push(timed_call(&mut connection).await?);
    }
    let ended = Instant::now();
    connection.close().await;
    Ok((latencies, ended))
}

async fn warm_up(addr: SocketAddr, revision: Revision, plan: Plan) -> anyhow::Result<Connection> {
    let mut connection = Connection::open(addr, revision).await?;
    let deadline = Instant::now() + plan.warm_time;
    let mut calls = 0;
    while calls == 0 || (calls < plan.warm_calls && Instant::now() < deadline) {
        timed_call(&mut connection).await?;
        calls += 1;
    }
    Ok(connection)
}

/// One `tools/call`, timed from sending the request to the end of its answer's body.
async fn timed_call(connection: &mut Connection) -> anyhow::Result<Duration> {
    let request = connection.call_request()?;
    let started = Instant::now();
    let exchanged = tokio::time::timeout(TIMEOUT, connection.exchange(request)).await;
    let elapsed = started.elapsed();
    let (status, _, body) = match exchanged {
        Ok(result) => result.context("a tools/call")?,
        Err(_) => bail!("a tools/call: no answer within {TIMEOUT:?}"),
    };
    if !status.is_success() || !is_tool_result(&body) {
        bail!("tools/call: {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(elapsed)
}
