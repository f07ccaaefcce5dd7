//! Invoke throughput by audit store: the in-memory table, SQLite with strict
//! durability (a call returns once its record is committed) and SQLite with relaxed durability
//! (once it is queued), each with 1 and 64 concurrent callers, in one run.
//!
//! The machine is shared and noisy, so each configuration is measured in interleaved rounds
//! (every configuration once per round) and the summary prints medians over rounds and the
//! ratios against the memory store measured in the same rounds. Run:
//!
//! ```sh
//! cargo bench -p switchboard --bench audit_stores
//! ```
//!
//! Relaxed SQLite is measured over bursts shorter than the audit queue (65,536 records): past
//! that, relaxed callers wait for the writer like strict ones, so a burst measures the call
//! path and a long run measures the writer (see the writer benchmark in
//! `crates/switchboard-audit-sqlite/benches/writer.rs`).

#![allow(clippy::print_stdout, reason = "a benchmark reports to its terminal")]

// A domain's `#[tool]`s are registered only if the binary references its crate
// (rust-lang/rust#64731).
use switchboard_domain_directory as _;

use std::{sync::Arc, time::Instant};

use serde_json::json;
use switchboard::{
    AuditConfig, AuditStore, CallContext, Durability, Initiator, MemoryAuditStore, ToolRegistry,
};
use switchboard_audit_sqlite::SqliteAuditStore;

const ROUNDS: usize = 7;
/// Calls per measurement: well under the queue's capacity (see the module docs).
const CALLS: u64 = 20_000;
const CALLERS: [usize; 2] = [1, 64];

struct Configuration {
    name: &'static str,
    registry: ToolRegistry,
}

async fn registry(store: Arc<dyn AuditStore>, durability: Durability) -> ToolRegistry {
    ToolRegistry::builder()
        .audit_store(store)
        .audit_config(AuditConfig::default().durability(durability))
        .start()
        .await
        .expect("the registry starts")
}

fn context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("bench-session")
        .correlation("bench-correlation")
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

/// `calls` JSON invokes spread over `callers` tasks, then a flush; returns calls per second.
async fn throughput(registry: &ToolRegistry, callers: usize, calls: u64) -> f64 {
    let per_caller = calls.div_ceil(callers as u64);
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|_| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let context = context();
                for _ in 0..per_caller {
                    registry
                        .invoke("core_get_current_user", json!({}), &context)
                        .await
                        .expect("the call succeeds");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("caller task");
    }
    let elapsed = started.elapsed();
    // Let the writer catch up so one configuration's backlog does not slow the next.
    registry.audit().flush().await;
    (per_caller * callers as u64) as f64 / elapsed.as_secs_f64()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = std::env::temp_dir().join(format!("switchboard-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    runtime.block_on(async {
        let sqlite = |name: &str| {
            Arc::new(SqliteAuditStore::open(dir.join(name)).expect("the store opens"))
                as Arc<dyn AuditStore>
        };
        let configurations = [
            Configuration {
                name: "memory",
                registry: registry(Arc::new(MemoryAuditStore::new()), Durability::Relaxed).await,
            },
            Configuration {
                name: "SQLite, strict",
                registry: registry(sqlite("strict.db"), Durability::Strict).await,
            },
            Configuration {
                name: "SQLite, relaxed",
                registry: registry(sqlite("relaxed.db"), Durability::Relaxed).await,
            },
        ];
        // Warm up every configuration (page cache, WAL file, allocator).
        for configuration in &configurations {
            throughput(&configuration.registry, 8, 2_000).await;
        }
        let mut samples = vec![vec![Vec::new(); CALLERS.len()]; configurations.len()];
        for _ in 0..ROUNDS {
            for (index, configuration) in configurations.iter().enumerate() {
                for (slot, callers) in CALLERS.iter().enumerate() {
                    let calls = if configuration.name == "SQLite, strict" && *callers == 1 {
                        // One caller waits for one commit per call: fewer calls, same median.
                        CALLS / 20
                    } else {
                        CALLS
                    };
                    samples[index][slot]
                        .push(throughput(&configuration.registry, *callers, calls).await);
                }
            }
        }
        println!(
            "\nInvoke throughput by audit store: median calls/s over {ROUNDS} interleaved rounds"
        );
        println!(
            "{:<18} {:>14} {:>14} {:>12} {:>12}",
            "store", "1 caller/s", "64 callers/s", "1 vs memory", "64 vs memory"
        );
        let medians: Vec<Vec<f64>> = samples
            .iter_mut()
            .map(|per_callers| per_callers.iter_mut().map(|s| median(s)).collect())
            .collect();
        for (configuration, row) in configurations.iter().zip(&medians) {
            println!(
                "{:<18} {:>14.0} {:>14.0} {:>11.2}x {:>11.2}x",
                configuration.name,
                row[0],
                row[1],
                medians[0][0] / row[0],
                medians[0][1] / row[1],
            );
        }
        let relaxed_ratio = medians[0][1] / medians[2][1];
        println!(
            "\nmemory / relaxed SQLite throughput at 64 callers = {relaxed_ratio:.2}x (target <= 1.5x): {}",
            if relaxed_ratio <= 1.5 { "met" } else { "NOT met" }
        );
        for configuration in &configurations {
            let stats = configuration.registry.audit().settled_stats().await;
            println!(
                "{}: {} records written in {} batches (largest {}), {} lost",
                configuration.name, stats.written, stats.batches, stats.largest_batch, stats.lost
            );
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}
