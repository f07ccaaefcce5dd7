//! Calls `core_get_current_user` through the typed registry path in a loop, for profilers.
//!
//! Wall-clock benchmarks on a shared machine are noisy; instruction counts are not. Run:
//!
//! ```sh
//! cargo build --release -p switchboard --example profile_call
//! valgrind --tool=callgrind target/release/examples/profile_call 20000
//! callgrind_annotate --inclusive=yes callgrind.out.*
//! ```
//!
//! The optional argument is the number of calls (default 200,000); JSON invoke is profiled
//! with `--json`, and the tool called directly (no registry, the baseline) with `--direct`.
//!
//! It also times itself: `--rounds N` makes the calls N times over and prints the median and
//! the fastest round's time per call (stderr). Calls run back to back in one task, so the audit
//! writer works on the other core meanwhile, as it does for a busy caller; each round starts
//! with the writer caught up. On a shared machine, compare builds by alternating runs.
//!
//! `--callers N` spreads each round's calls over N concurrent tasks on a two-worker runtime
//! (the benchmark's contended case), for profiling what concurrency adds per call. The tasks
//! share one context, as the benchmark's do (the calls of one session); `--own-context` gives
//! each task a copy with ids of its own, to see what sharing the ids' reference counts costs.

#![allow(clippy::print_stderr, reason = "an example reports to its terminal")]

use std::{process::ExitCode, time::Instant};

use switchboard::{CallContext, Initiator, NoInput, Switchboard, ToolRegistry};
use switchboard_core::{Category, DomainCell, ToolContext};
use switchboard_domain_directory::{DirectoryState, GetCurrentUser, get_current_user};

/// What each call does.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// `registry.call::<GetCurrentUser>`.
    Typed,
    /// `registry.invoke("core_get_current_user", {})`.
    Json,
    /// `get_current_user` itself, with a prepared context: the baseline.
    Direct,
}

/// One call, made the way `mode` says.
async fn call(
    mode: Mode,
    switchboard: &Switchboard,
    context: &CallContext,
    tool_context: &ToolContext<DirectoryState>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    match mode {
        Mode::Typed => {
            std::hint::black_box(
                switchboard
                    .registry
                    .call::<GetCurrentUser>(NoInput {}, context)
                    .await?,
            );
        }
        Mode::Json => {
            let params = serde_json::json!({});
            std::hint::black_box(
                switchboard
                    .registry
                    .invoke("core_get_current_user", params, context)
                    .await?,
            );
        }
        Mode::Direct => {
            std::hint::black_box(get_current_user(tool_context, NoInput {}).await?);
        }
    }
    Ok(())
}

/// The context every call is made with. Each call of this function allocates its ids anew.
fn profile_context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("profile")
        .correlation("profile")
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

fn main() -> ExitCode {
    const USAGE: &str = "usage: profile_call [CALLS] [--json | --direct] [--rounds N] [--callers N] [--own-context]";
    let mut calls: usize = 200_000;
    let mut mode = Mode::Typed;
    let mut rounds: usize = 1;
    let mut callers: usize = 1;
    let mut own_context = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let understood = match arg.as_str() {
            "--json" => {
                mode = Mode::Json;
                true
            }
            "--direct" => {
                mode = Mode::Direct;
                true
            }
            "--own-context" => {
                own_context = true;
                true
            }
            "--rounds" | "--callers" => match args.next().and_then(|n| n.parse::<usize>().ok()) {
                Some(n) => {
                    *(if arg == "--rounds" {
                        &mut rounds
                    } else {
                        &mut callers
                    }) = n.max(1);
                    true
                }
                None => false,
            },
            number => match number.parse() {
                Ok(n) => {
                    calls = n;
                    true
                }
                Err(_) => false,
            },
        };
        if !understood {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    let built = if callers == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    };
    let runtime = match built {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("no tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        let switchboard = Switchboard::start(ToolRegistry::builder()).await?;
        let context = profile_context();
        if std::env::var_os("PROFILE_CALL_SIZES").is_some() {
            let typed = switchboard
                .registry
                .call::<GetCurrentUser>(NoInput {}, &context);
            let json = switchboard.registry.invoke(
                "core_get_current_user",
                serde_json::json!({}),
                &context,
            );
            eprintln!(
                "future sizes: typed call {} bytes, JSON invoke {} bytes",
                std::mem::size_of_val(&typed),
                std::mem::size_of_val(&json)
            );
        }
        let caller = context.verify().map_err(|missing| format!("missing {missing:?}"))?;
        let cell = DomainCell::standalone("core", DirectoryState::seeded());
        let tool_context = std::sync::Arc::new(ToolContext::new(
            caller,
            "core_get_current_user",
            Category::Read,
            cell,
        ));
        let per_task = calls / callers;
        let made = (per_task * callers).max(1);
        let mut per_call = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            switchboard.registry.audit().flush().await;
            let started = Instant::now();
            let tasks: Vec<_> = (0..callers)
                .map(|_| {
                    let context = if own_context {
                        profile_context()
                    } else {
                        context.clone()
                    };
                    let (switchboard, tool_context) = (switchboard.clone(), tool_context.clone());
                    tokio::spawn(async move {
                        for _ in 0..per_task {
                            call(mode, &switchboard, &context, &tool_context).await?;
                        }
                        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
                    })
                })
                .collect();
            for task in tasks {
                task.await??;
            }
            per_call.push(started.elapsed().as_nanos() as f64 / made as f64);
        }
        per_call.sort_by(f64::total_cmp);
        eprintln!(
            "{mode:?}: {calls} calls x {rounds} rounds: median {:.0} ns/call, fastest round {:.0} ns/call",
            per_call[per_call.len() / 2],
            per_call[0]
        );
        switchboard.shutdown().await;
        Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
