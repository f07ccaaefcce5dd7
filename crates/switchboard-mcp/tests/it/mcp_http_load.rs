//! Load on the streamable-HTTP endpoint: 50 concurrent rmcp clients (each its own session and
//! bearer token check) × 200 `tools/call` each on loopback. Zero failures, and exactly one
//! audit record per call made.

use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;

use crate::common::{bounded, registry};
use crate::http_support::{
    ALICE_TOKEN, GINA_TOKEN, audit_count, audit_count_reaching, connect, start, token_config,
};

const CLIENTS: usize = 50;
const CALLS_PER_CLIENT: usize = 200;

/// The whole run may take this long on a loaded two-core machine in a debug build.
const RUN_LIMIT: Duration = Duration::from_secs(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_clients_times_two_hundred_calls_fail_nothing_and_audit_everything() {
    let registry = registry().await;
    let server = start(&registry, token_config()).await;
    let before = audit_count(&registry).await;

    let mut clients = Vec::with_capacity(CLIENTS);
    for index in 0..CLIENTS {
        let token = if index % 2 == 0 {
            ALICE_TOKEN
        } else {
            GINA_TOKEN
        };
        clients.push(
            connect(&server, Some(token))
                .await
                .expect("a client connects"),
        );
    }
    assert_eq!(server.session_count(), CLIENTS);

    let started = Instant::now();
    let workers: Vec<_> = clients
        .into_iter()
        .map(|client| {
            tokio::spawn(async move {
                let mut failures = Vec::new();
                for _ in 0..CALLS_PER_CLIENT {
                    let outcome = client
                        .call_tool(CallToolRequestParams::new("core_get_current_user"))
                        .await;
                    match outcome {
                        Ok(result) if result.is_error != Some(true) => {}
                        other => failures.push(format!("{other:?}")),
                    }
                }
                (client, failures)
            })
        })
        .collect();

    let mut failures = Vec::new();
    let mut finished = Vec::with_capacity(CLIENTS);
    for worker in workers {
        let (client, client_failures) = tokio::time::timeout(RUN_LIMIT, worker)
            .await
            .unwrap_or_else(|_| panic!("the load run took longer than {RUN_LIMIT:?}"))
            .expect("a client task ends normally");
        failures.extend(client_failures);
        finished.push(client);
    }
    let elapsed = started.elapsed();
    let calls = u64::try_from(CLIENTS * CALLS_PER_CLIENT).expect("fits");
    assert!(
        failures.is_empty(),
        "{} of {calls} calls failed, for example: {:?}",
        failures.len(),
        failures.first()
    );

    let audited = audit_count_reaching(&registry, before + calls).await - before;
    assert_eq!(audited, calls, "one audit record per call");
    // Nothing else trickles in later.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(audit_count(&registry).await - before, calls);

    report_throughput(calls, elapsed);

    for client in finished {
        bounded("closing a client", client.cancel())
            .await
            .expect("closes");
    }
    bounded("stopping the server", server.shutdown())
        .await
        .expect("stops");
    registry.shutdown().await;
}

/// Prints the throughput (shown by `cargo nextest run --no-capture`).
fn report_throughput(calls: u64, elapsed: Duration) {
    #[allow(
        clippy::print_stderr,
        reason = "a test's report, shown with --no-capture"
    )]
    {
        eprintln!(
            "{calls} calls from {CLIENTS} clients in {elapsed:.2?} ({:.0} calls/s)",
            calls as f64 / elapsed.as_secs_f64()
        );
    }
}
