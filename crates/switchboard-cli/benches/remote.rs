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
//! - **cluster link** (built with `--features cluster`): the same `invoke` on a front registry
//!   that holds the roster behind a `ClusterDomainLink`: the front's checks and record, a
//!   signed statement, one `ractor_cluster` message to B's roster actor over a loopback TCP
//!   session, B's checks and record. B listens for it with `[link] cluster_listen`, and this
//!   process is a cluster node too. Reported beside the MCP link, with no target.
//! - **plain rmcp → B**: an rmcp client with a user's token calling the same tool on B
//!   directly, the floor the MCP link is measured against (goal: the link at most 1.2× it).
//!
//! Every row runs in interleaved rounds that swap their order, so that load which comes and
//! goes hits them alike; latencies are the median and p99 of every call, and the ratios are
//! the median of each round's ratio. Run: `cargo bench -p switchboard-cli --features cluster
//! --bench remote`, or `-- quick` for a short run (without the feature, the cluster row is
//! left out). `cargo xtask bench` builds it with the feature and collects the `BENCH` lines.
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
    let cluster = cluster::Setup::prepare(dir)?;
    let config = write(
        dir,
        "b.toml",
        &format!(
            "[link]\nnode = \"node-b\"\n{}\n[[link.peer]]\nname = \"node-a\"\n\
             public_key_files = [{:?}]\n",
            cluster.b_link_keys(),
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
    let signer = Arc::new(StatementSigner::new("node-a", keys));

    let local = bounded("the in-process registry", ToolRegistry::builder().start()).await?;
    let link = bounded(
        "the MCP link to B",
        McpDomainLink::start(
            DomainLinkConfig::new("roster", url.clone(), "node-b").bearer_token_env(TOKEN_VARIABLE),
            Arc::clone(&signer),
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
    let cluster = cluster.start(signer).await?;
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(USER_TOKEN),
    );
    let client: Client = bounded("a plain rmcp client of B", ().serve(transport)).await?;

    let params = json!({ "from": "2026-11-23", "to": "2026-11-29" });
    let context = context();
    let mut rows = vec![
        Row::new("in process", Caller::Registry(&local)),
        Row::new("MCP link", Caller::Registry(&front)),
    ];
    if let Some(front) = cluster.front() {
        rows.push(Row::new("cluster link", Caller::Registry(front)));
    }
    rows.push(Row::new("plain rmcp → B", Caller::Plain(&client)));
    // Every row answers alike before anything is timed.
    let expected = local.invoke(TOOL, params.clone(), &context).await?;
    for row in &rows {
        let answer = row.caller.call(&params, &context).await?;
        anyhow::ensure!(
            answer == expected,
            "the {} row answers differently: {answer} / {expected}",
            row.name
        );
    }

    for round in 0..plan.rounds {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.rotate_left(round % rows.len());
        for index in order {
            let row = &mut rows[index];
            let mut took = Vec::with_capacity(plan.calls);
            for _ in 0..plan.calls {
                let started = Instant::now();
                drop(row.caller.call(&params, &context).await?);
                took.push(started.elapsed());
            }
            row.series.push_round(&took);
        }
    }
    println!(
        "remote domain: {TOOL}, {} rounds of {} calls per row",
        plan.rounds, plan.calls
    );
    println!(
        "{:<18} {:>11} {:>11} {:>14}",
        "row", "median", "p99", "× plain rmcp"
    );
    let plain = &rows[rows.len() - 1].series;
    for row in &rows {
        println!(
            "{:<18} {:>11} {:>11} {:>13.2}×",
            row.name,
            human(row.series.median()),
            human(row.series.p99()),
            row.series.paired_ratio(plain)
        );
    }
    let linked = &rows[1].series;
    let ratio = linked.paired_ratio(plain);
    println!(
        "the MCP link: {} to a plain rmcp call of B (median of the rounds), {ratio:.2}× it; \
         goal at most 1.20×: {}",
        added(linked.paired_difference_ns(plain)),
        if ratio <= 1.2 { "met" } else { "not met" }
    );
    print_headline("remote_mcp_link", linked.median(), plain.median());
    if let Some(row) = rows.iter().find(|row| row.name == "cluster link") {
        println!(
            "the cluster link: {} to a plain rmcp call of B, {:.2}× it; {} to the MCP link",
            added(row.series.paired_difference_ns(plain)),
            row.series.paired_ratio(plain),
            added(row.series.paired_difference_ns(linked)),
        );
        print_headline("remote_cluster_link", row.series.median(), plain.median());
    } else {
        println!("no cluster row: build the bench with `--features cluster` to measure it");
    }
    drop(rows);
    client.cancel().await.ok();
    link.close().await;
    node_b.stop().await;
    Ok(())
}

/// One row: what it calls, and every round's latencies.
struct Row<'a> {
    name: &'static str,
    caller: Caller<'a>,
    series: Series,
}

impl<'a> Row<'a> {
    fn new(name: &'static str, caller: Caller<'a>) -> Self {
        Self {
            name,
            caller,
            series: Series::default(),
        }
    }
}

/// What a row calls the tool through.
enum Caller<'a> {
    /// `invoke` on a registry (in process, or a front over a link).
    Registry(&'a ToolRegistry),
    /// The plain rmcp client of B.
    Plain(&'a Client),
}

impl Caller<'_> {
    async fn call(&self, params: &Value, context: &CallContext) -> anyhow::Result<Value> {
        match self {
            Caller::Registry(registry) => {
                Ok(registry.invoke(TOOL, params.clone(), context).await?)
            }
            Caller::Plain(client) => call_plain(client, params).await,
        }
    }
}

/// The cluster row's setup: B's cluster listener and this process as a cluster node, when the
/// bench is built with the `cluster` feature, and nothing otherwise.
#[cfg(feature = "cluster")]
mod cluster {
    use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

    use ::switchboard::{
        ToolRegistry,
        registry::{DomainLink as _, LinkHealth},
    };
    use anyhow::Context as _;
    use switchboard_link::{
        ClusterDomainLink, ClusterNode, ClusterNodeConfig, Cookie, StatementSigner,
    };

    use super::{bounded, write};

    /// The cookie file and both nodes' cluster addresses, before anything listens.
    pub(super) struct Setup {
        cookie: PathBuf,
        a: SocketAddr,
        b: SocketAddr,
    }

    impl Setup {
        pub(super) fn prepare(dir: &std::path::Path) -> anyhow::Result<Self> {
            let secret = uuid::Uuid::new_v4().simple().to_string().repeat(2);
            let cookie = write(dir, "cluster.cookie", &secret)?;
            {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&cookie, std::fs::Permissions::from_mode(0o600))?;
            }
            Ok(Self {
                cookie,
                a: free_addr()?,
                b: free_addr()?,
            })
        }

        /// The `[link]` keys that make B listen for the cluster link.
        pub(super) fn b_link_keys(&self) -> String {
            format!(
                "cluster_listen = \"{}\"\ncookie_file = {:?}\n",
                self.b,
                self.cookie.display().to_string()
            )
        }

        /// Starts this process's cluster node, a link to B's roster, and a front registry
        /// over it; waits until the link answers a ping.
        pub(super) async fn start(self, signer: Arc<StatementSigner>) -> anyhow::Result<Started> {
            let cookie = Cookie::from_file(&self.cookie)?;
            let node = ClusterNode::start(
                ClusterNodeConfig::new("node-a", self.a, cookie).peer("node-b", self.b),
            )
            .await?;
            let link = node.link("node-b", "roster", signer)?;
            let up = async {
                while link.health() != LinkHealth::Up {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Ok::<_, anyhow::Error>(())
            };
            bounded("the cluster link to B", up).await?;
            let front = bounded(
                "the cluster front registry",
                ToolRegistry::builder()
                    .remote_domain("roster", link.clone())
                    .start(),
            )
            .await?;
            Ok(Started {
                front,
                _link: link,
                _node: node,
            })
        }
    }

    /// The front registry over the cluster link, with the link and node it needs.
    pub(super) struct Started {
        front: ToolRegistry,
        _link: Arc<ClusterDomainLink>,
        _node: ClusterNode,
    }

    impl Started {
        pub(super) fn front(&self) -> Option<&ToolRegistry> {
            Some(&self.front)
        }
    }

    fn free_addr() -> anyhow::Result<SocketAddr> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr().context("a free loopback port")
    }
}

/// Without the `cluster` feature there is no cluster row.
#[cfg(not(feature = "cluster"))]
mod cluster {
    use std::sync::Arc;

    use ::switchboard::ToolRegistry;
    use switchboard_link::StatementSigner;

    pub(super) struct Setup;

    impl Setup {
        pub(super) fn prepare(_dir: &std::path::Path) -> anyhow::Result<Self> {
            Ok(Self)
        }

        pub(super) fn b_link_keys(&self) -> String {
            String::new()
        }

        pub(super) async fn start(self, _signer: Arc<StatementSigner>) -> anyhow::Result<Started> {
            Ok(Started)
        }
    }

    pub(super) struct Started;

    impl Started {
        pub(super) fn front(&self) -> Option<&ToolRegistry> {
            None
        }
    }
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
