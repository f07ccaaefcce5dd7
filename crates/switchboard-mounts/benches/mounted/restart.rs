//! Restart: after a SIGKILL of the mounted server's child, the time until a call of its tool
//! succeeds again, beside the child's own start time measured in the same run.
//!
//! Each round, in alternating order:
//! - **restart**: the clock starts just before `kill -KILL` of the child's pid (so it includes
//!   starting `kill`, about a millisecond) and stops when `registry.invoke` of the mounted
//!   `echo` answers. The call made at once waits for the new connection (a read tool's call is
//!   sent again when its connection dies under it); a call that fails anyway is made again.
//!   The figure is what a caller waits: noticing the loss, the backoff, spawning the child, the
//!   handshake, listing its tools through the gate, registering them, and the call.
//! - **start**: the child's own start, measured by starting the server directly with an rmcp
//!   client: spawn, handshake and one call, the same steps without Switchboard.
//!
//! The mount restarts with `RestartPolicy { base: 10 ms, cap: 10 ms }`: a backoff drawn
//! uniformly from 0 to 10 ms (full jitter), included in the figure; the default policy's first
//! restart waits up to 100 ms instead.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::Value;
use switchboard_mounts::RestartPolicy;

use crate::{
    Plan, call_direct, context, direct_client,
    echo::{Launch, SERVER_ID, TOOL, arguments},
    mount,
    stats::{Series, added, human, print_headline},
};

/// The most a restart may take beyond the child's own start.
const TARGET_ADDED_NS: f64 = 500_000_000.0;

/// The restart policy measured: a small backoff, and no breaker within the run.
pub(crate) const POLICY: RestartPolicy = RestartPolicy {
    base: Duration::from_millis(10),
    cap: Duration::from_millis(10),
    intensity: 10_000,
    period: Duration::from_secs(60),
    cool_down: Duration::from_secs(60),
    ping_every: Duration::from_secs(600),
    ping_deadline: Duration::from_secs(5),
};

/// How long one restart may take before the benchmark gives up.
const LIMIT: Duration = Duration::from_secs(30);

/// How long the server is left up between rounds, so that the old child is gone.
const SETTLE: Duration = Duration::from_millis(50);

pub(crate) async fn run(launch: &Launch, plan: Plan) {
    let (registry, mounts) = mount(launch, Some(POLICY)).await;
    let context = context();
    let name = switchboard_mounts::mounted_name(SERVER_ID, TOOL);
    let invoke = async || {
        registry
            .invoke(&name, Value::Object(arguments()), &context)
            .await
    };
    invoke().await.expect("the mounted tool answers");

    let mut restarts = Vec::new();
    let mut starts = Vec::new();
    for round in 0..plan.restarts {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for restart in order {
            if restart {
                let pid = pid(&mounts).await;
                let started = Instant::now();
                let killed = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status()
                    .expect("kill runs");
                assert!(killed.success(), "kill -KILL {pid}");
                tokio::time::timeout(LIMIT, async {
                    while invoke().await.is_err() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
                .await
                .expect("the server serves again");
                restarts.push(started.elapsed());
                assert_ne!(pid, self::pid(&mounts).await, "a new child");
            } else {
                let started = Instant::now();
                let client = direct_client(launch).await;
                std::hint::black_box(call_direct(&client, TOOL).await);
                starts.push(started.elapsed());
                let _ = client.cancel().await;
            }
            tokio::time::sleep(SETTLE).await;
        }
    }
    let mut restart = Series::default();
    restart.push_round(&restarts);
    let mut start = Series::default();
    start.push_round(&starts);
    let restarts_counted = mounts
        .status()
        .await
        .first()
        .map_or(0, |status| status.restarts);

    println!();
    println!(
        "Restart after SIGKILL, {} rounds ({restarts_counted} restarts counted), backoff 0-{} \
         (full jitter) included:",
        plan.restarts,
        human(POLICY.base.as_nanos() as f64)
    );
    println!(
        "  killed until a call succeeds    median {:>10}  max {:>10}",
        human(restart.median()),
        human(restart.quantile(1.0))
    );
    println!(
        "  the child's own start + call    median {:>10}  max {:>10}",
        human(start.median()),
        human(start.quantile(1.0))
    );
    let beyond = restart.median() - start.median();
    println!(
        "  beyond the child's own start: median {} (target < {}): {}",
        added(beyond),
        human(TARGET_ADDED_NS),
        if beyond < TARGET_ADDED_NS {
            "met"
        } else {
            "NOT met"
        }
    );
    print_headline("mounts.restart", restart.median(), start.median());

    mounts.close().await;
    registry.shutdown().await;
}

/// The mounted server's child's pid, waiting (at most [`LIMIT`]) until it is up.
async fn pid(mounts: &switchboard_mounts::Mounts) -> u32 {
    tokio::time::timeout(LIMIT, async {
        loop {
            let status = mounts.status().await;
            if let Some(pid) = status
                .first()
                .filter(|status| status.state == switchboard_mounts::MountState::Up)
                .and_then(|status| status.pid)
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the server is up")
}
