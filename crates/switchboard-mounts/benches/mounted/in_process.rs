//! In process: `ToolRegistry::invoke` of the mounted `echo` beside the same server called
//! directly by an rmcp client over its own stdio pipes.

use serde_json::Value;

use crate::{
    Plan, call_direct, context, direct_client,
    echo::{Launch, SERVER_ID, TOOL, arguments},
    interleaved, mount,
    stats::{added, human, print_headline},
};

/// The most the mount may add: 10%.
const TARGET_RATIO: f64 = 1.10;

pub(crate) async fn run(launch: &Launch, plan: Plan) {
    let (registry, mounts) = mount(launch, None).await;
    let direct = direct_client(launch).await;
    let context = context();
    let name = switchboard_mounts::mounted_name(SERVER_ID, TOOL);

    let mounted_answer = registry
        .invoke(&name, Value::Object(arguments()), &context)
        .await
        .expect("the mounted tool answers");
    assert!(
        mounted_answer.to_string().contains("hello"),
        "{mounted_answer}"
    );

    let (through, baseline) = interleaved(
        plan,
        async || {
            let answer = registry
                .invoke(&name, Value::Object(arguments()), &context)
                .await;
            std::hint::black_box(answer.expect("the mounted tool answers"));
        },
        async || {
            std::hint::black_box(call_direct(&direct, TOOL).await);
        },
    )
    .await;

    let ratio = through.median() / baseline.median();
    println!();
    println!(
        "In process, {} rounds of {} calls each, interleaved:",
        plan.rounds, plan.calls
    );
    println!(
        "  {:<30}  median {:>10}  p99 {:>10}",
        format!("registry.invoke(`{name}`)"),
        human(through.median()),
        human(through.p99())
    );
    println!(
        "  rmcp client, server directly    median {:>10}  p99 {:>10}",
        human(baseline.median()),
        human(baseline.p99())
    );
    println!(
        "  ratio of medians {ratio:.3}x ({}), round by round {:.3}x (target <= {TARGET_RATIO:.2}x): {}",
        added(through.median() - baseline.median()),
        through.paired_ratio(&baseline),
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "NOT met"
        }
    );
    print_headline("mounts.invoke", through.median(), baseline.median());

    let _ = direct.cancel().await;
    mounts.close().await;
    registry.shutdown().await;
}
