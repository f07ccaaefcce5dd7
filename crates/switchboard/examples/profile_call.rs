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
//! with `--json`.

#![allow(clippy::print_stderr, reason = "an example reports to its terminal")]

use std::process::ExitCode;

use switchboard::{CallContext, Initiator, NoInput, Switchboard, ToolRegistry};
use switchboard_domain_core::GetCurrentUser;

fn main() -> ExitCode {
    let mut calls: usize = 200_000;
    let mut json = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            number => match number.parse() {
                Ok(n) => calls = n,
                Err(_) => {
                    eprintln!("usage: profile_call [CALLS] [--json]");
                    return ExitCode::from(2);
                }
            },
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("no tokio runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        let switchboard = Switchboard::start(ToolRegistry::builder()).await?;
        let context = CallContext::builder()
            .org("acme")
            .user("alice")
            .session("profile")
            .correlation("profile")
            .role("admin")
            .initiator(Initiator::Human)
            .build();
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
        for _ in 0..calls {
            if json {
                let params = serde_json::json!({});
                std::hint::black_box(
                    switchboard
                        .registry
                        .invoke("core_get_current_user", params, &context)
                        .await?,
                );
            } else {
                std::hint::black_box(
                    switchboard
                        .registry
                        .call::<GetCurrentUser>(NoInput {}, &context)
                        .await?,
                );
            }
        }
        switchboard.shutdown().await;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}
