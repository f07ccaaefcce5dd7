//! A trivial call of a domain served by another node, over each link, beside the same call in
//! process and beside a plain rmcp client calling the serving node directly, in one run.
//!
//! Node B is the real binary, started as an operator starts a serving node: `switchboard serve
//! --http 127.0.0.1:0 --domains roster --tokens F --config B.toml` (a `[[link.peer]]` for node
//! A's public key, the memory audit and approval stores). Rows:
//!
//! - **in process**: `ToolRegistry::invoke` of `roster_list_shifts` on a registry in this
//!   process that holds the roster itself (every check, one audit record).
//! - **MCP link**: the same `invoke` on a front registry in this process that holds the roster
//!   as a remote domain behind an `McpDomainLink` to B: the front's checks and record, a signed
//!   statement, one MCP `tools/call` over loopback HTTP, B's checks and record.
//! - **plain rmcp → B**: an rmcp client with a user's token calling the same tool on B
//!   directly, the floor the MCP link is measured against (goal: the link at most 1.2× it).
//!
//! Every row runs in interleaved rounds that swap their order, so that load which comes and
//! goes hits them alike; latencies are the median and p99 of every call, and the ratios are
//! the median of each round's ratio. Run: `cargo bench -p switchboard-cli --bench remote`, or
//! `-- quick` for a short run. `cargo xtask bench` collects the `BENCH` line it prints.
//!
//! The link reads its bearer token from the environment, as a deployment gives it, and this
//! process sets no variable of its own (`unsafe_code` is forbidden): when the token variable is
//! missing, the bench runs itself again with it set.

#![allow(clippy::print_stdout, reason = "a benchmark's output is its report")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "shared/quick.rs"]
mod quick;
#[path = "../../switchboard-mounts/benches/mounted/stats.rs"]
mod stats;
#[allow(dead_code, reason = "this bench starts node B with its own arguments")]
#[path = "shared/switchboard.rs"]
mod switchboard;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use ::switchboard::ToolRegistry;
use anyhow::Context as _;
use rmcp::{
    RoleClient, ServiceExt as _,
    model::CallToolRequestParams,
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_link::{SigningKeys, StatementSigner, generate_signing_key_pem};
use switchboard_mounts::{DomainLinkConfig, McpDomainLink};

use stats::{Series, added, human, print_headline};
use switchboard::Switchboard;

// Links every sample domain, the roster among them.
use switchboard_domains as _;

/// The tool every row calls.
const TOOL: &str = "roster_list_shifts";

/// The variable the link reads its bearer token from.
const TOKEN_VARIABLE: &str = "SWITCHBOARD_BENCH_REMOTE_PEER_TOKEN";

/// The peer token B maps to node A (loopback only, for this run).
const PEER_TOKEN: &str = "bench-remote-peer-token";

/// The user token the plain client calls B with.
const USER_TOKEN: &str = "bench-remote-user-token";

/// How much to measure.
#[derive(Debug, Clone, Copy)]
struct Plan {
    rounds: usize,
    calls: usize,
}

impl Plan {
    const FULL: Plan = Plan {
        rounds: 15,
        calls: 300,
    };
    const QUICK: Plan = Plan {
        rounds: 3,
        calls: 100,
    };
}

/// The longest any setup step may take.
const LIMIT: Duration = Duration::from_secs(60);

type Client = RunningService<RoleClient, ()>;

fn main() -> anyhow::Result<()> {
    if std::env::var_os(TOKEN_VARIABLE).is_none() {
        let status = std::process::Command::new(std::env::current_exe()?)
            .args(std::env::args_os().skip(1))
            .env(TOKEN_VARIABLE, PEER_TOKEN)
            .status()
            .context("running the bench again with the link's token set")?;
        std::process::exit(status.code().unwrap_or(1));
    }
    let plan = if quick::asked_for_quick("SWITCHBOARD_BENCH_QUICK") {
        Plan::QUICK
    } else {
        Plan::FULL
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run(plan))
}

async fn run(plan: Plan) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("switchboard-bench-remote-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure(plan, &dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(plan: Plan, dir: &Path) -> anyhow::Result<()> {
    let key = generate_signing_key_pem()?;
    let keys = SigningKeys::from_pems(&[key.as_bytes()])?;
    let public = keys.verifying_keys().to_pems().join("\n");
    let public_file = write(dir, "a.pub", &public)?;
    let tokens = write(
        dir,
        "tokens.toml",
        &format!(
            "[[token]]\nsha256 = \"{}\"\npeer = \"node-a\"\n\n\
             [[token]]\nsha256 = \"{}\"\norg = \"acme\"\nuser = \"alice\"\nroles = [\"admin\"]\n",
            switchboard_mcp::token_sha256_hex(PEER_TOKEN),
            switchboard_mcp::token_sha256_hex(USER_TOKEN),
        ),
    )?;
    let config = write(
        dir,
        "b.toml",
        &format!(
            "[link]\nnode = \"node-b\"\n\n[[link.peer]]\nname = \"node-a\"\n\
             public_key_files = [{:?}]\n",
            public_file.display().to_string()
        ),
    )?;
    let mut node_b = Switchboard::start_with(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--domains",
        "roster",
        "--tokens",
        path_str(&tokens)?,
        "--config",
        path_str(&config)?,
        "--audit",
        "memory",
        "--approvals",
        "memory",
        "--state-dir",
        path_str(&dir.join("b-state"))?,
    ])
    .await?;
    let url = format!("http://{}/mcp", node_b.addr);

    let local = bounded("the in-process registry", ToolRegistry::builder().start()).await?;
    let link = bounded(
        "the MCP link to B",
        McpDomainLink::start(
            DomainLinkConfig::new("roster", url.clone(), "node-b").bearer_token_env(TOKEN_VARIABLE),
            Arc::new(StatementSigner::new("node-a", keys)),
        ),
    )
    .await?;
    let link = Arc::new(link);
    let front = bounded(
        "the front registry",
        ToolRegistry::builder()
            .remote_domain("roster", link.clone())
            .start(),
    )
    .await?;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(USER_TOKEN),
    );
    let client: Client = bounded("a plain rmcp client of B", ().serve(transport)).await?;

    let params = json!({ "from": "2026-11-23", "to": "2026-11-29" });
    let context = context();
    // The three answer alike before anything is timed.
    let in_process = local.invoke(TOOL, params.clone(), &context).await?;
    let linked = front.invoke(TOOL, params.clone(), &context).await?;
    let direct = call_plain(&client, &params).await?;
    anyhow::ensure!(
        in_process == linked && linked == direct,
        "the rows answer differently: {in_process} / {linked} / {direct}"
    );

    let mut rows = [Series::default(), Series::default(), Series::default()];
    for round in 0..plan.rounds {
        let mut order = [0usize, 1, 2];
        order.rotate_left(round % 3);
        for row in order {
            let mut took = Vec::with_capacity(plan.calls);
            for _ in 0..plan.calls {
                let started = Instant::now();
                match row {
                    0 => drop(local.invoke(TOOL, params.clone(), &context).await?),
                    1 => drop(front.invoke(TOOL, params.clone(), &context).await?),
                    _ => drop(call_plain(&client, &params).await?),
                }
                took.push(started.elapsed());
            }
            rows[row].push_round(&took);
        }
    }
    let [in_process, linked, plain] = rows;
    println!(
        "remote domain: {TOOL}, {} rounds of {} calls per row",
        plan.rounds, plan.calls
    );
    println!(
        "{:<18} {:>11} {:>11} {:>14}",
        "row", "median", "p99", "× plain rmcp"
    );
    for (name, series) in [
        ("in process", &in_process),
        ("MCP link", &linked),
        ("plain rmcp → B", &plain),
    ] {
        println!(
            "{name:<18} {:>11} {:>11} {:>13.2}×",
            human(series.median()),
            human(series.p99()),
            series.paired_ratio(&plain)
        );
    }
    let ratio = linked.paired_ratio(&plain);
    println!(
        "the MCP link: {} to a plain rmcp call of B (median of the rounds), {ratio:.2}× it; \
         goal at most 1.20×: {}",
        added(linked.paired_difference_ns(&plain)),
        if ratio <= 1.2 { "met" } else { "not met" }
    );
    print_headline("remote_mcp_link", linked.median(), plain.median());
    client.cancel().await.ok();
    link.close().await;
    node_b.stop().await;
    Ok(())
}

/// The plain client's call, answered as the registry answers: the structured output.
async fn call_plain(client: &Client, params: &Value) -> anyhow::Result<Value> {
    let arguments = params.as_object().cloned();
    let mut request = CallToolRequestParams::new(TOOL);
    request.arguments = arguments;
    let result = client.call_tool(request).await?;
    anyhow::ensure!(
        result.is_error != Some(true),
        "B refused the call: {result:?}"
    );
    result.structured_content.context("a structured answer")
}

/// Who every call acts as: alice, admin of acme, a person.
fn context() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .role("admin")
        .session("bench")
        .correlation("bench")
        .initiator(Initiator::Human)
        .build()
}

fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str().context("a UTF-8 temp path")
}

/// Awaits `future`, failing with `what` if it takes longer than [`LIMIT`].
async fn bounded<T, E>(what: &str, future: impl Future<Output = Result<T, E>>) -> anyhow::Result<T>
where
    E: Into<anyhow::Error>,
{
    tokio::time::timeout(LIMIT, future)
        .await
        .map_err(|_| anyhow::anyhow!("{what} took longer than {LIMIT:?}"))?
        .map_err(Into::into)
}
