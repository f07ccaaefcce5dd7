//! `switchboard serve`: hand the registry to an MCP client, over stdio or streamable HTTP.
//!
//! The protocol, authentication and HTTP rules live in `switchboard-mcp`; this module turns the
//! flags into its configuration before the runtime boots (so an unreadable token file or
//! requestState key, or a refused address, is a usage error, exit 2), says where the HTTP
//! endpoint is (on standard error, as standard output may be the protocol channel) and, on
//! SIGTERM or Ctrl-C, drains and stops the server, stdio or HTTP ([`crate::operate`]).
//!
//! The workflow engine runs inside the server: the process's one engine, on `--workflows`' store,
//! it continues at start the unfinished runs of its store, streams a run's events beside the
//! pages (`switchboard-web`), and a monitor warns about runs that stopped making progress.

use std::{
    collections::HashMap, env::VarError, io::IsTerminal as _, path::Path, sync::Arc, time::Duration,
};

use anyhow::Context as _;
use jiff::SignedDuration;
use switchboard::ToolRegistry;
use switchboard_mcp::{
    HttpAuth, HttpConfig, HttpLimits, Identity, McpServer, NavigationMode, OAuthConfig, StateKey,
    TokenTable,
};
use switchboard_navigation::Navigator;
use switchboard_workflows::{RunId, RunStore};
use switchboard_workflows_engine::{Engine, StuckRun};
use tokio_util::sync::CancellationToken;

use crate::{
    app::{Exit, UsageError},
    args::ServeArgs,
    config_file::{ServeFile, StoreChoice},
    escape::escape_controls,
    mounts_setup::MountsSetup,
    operate, output,
    switches_setup::StartSwitches,
    telemetry,
    workflows_setup::{Workflows, WorkflowsChoice},
};

/// The variable that may hold the requestState key itself, in hex (`--state-key-file` wins).
pub(crate) const STATE_KEY_VARIABLE: &str = "SWITCHBOARD_STATE_KEY";

/// What `serve` was asked for, configured: the transport and the requestState key.
#[derive(Debug, Clone)]
pub(crate) struct Serving {
    transport: Transport,
    state_key: StateKey,
    /// No key was configured, so `state_key` was generated for this process.
    state_key_generated: bool,
    /// Whether and how the navigation meta-tools are offered.
    navigation: NavigationMode,
    /// Where workflow runs are kept, and when a running one counts as stuck.
    workflows: WorkflowsServing,
    /// Where audit records, proposals and idempotency keys are kept.
    stores: KeptStores,
    /// How the HTTP server drains, and whether readiness waits for the mounted servers.
    operations: Operations,
    /// The tools switched off (and back on) before the first client.
    switches: StartSwitches,
}

/// What `serve --http` needs to be run by a platform (see [`crate::operate`]).
#[derive(Debug, Clone, Copy)]
struct Operations {
    /// `--drain-timeout`.
    drain_timeout: Duration,
    /// `--mounts-strict`: `/readyz` also waits for every mounted server to be up.
    mounts_strict: bool,
    /// `--metrics`: serve `GET /metrics`.
    metrics: bool,
}

/// Where `serve` keeps its audit records, proposals and idempotency keys (by default in the
/// state directory, beside its workflow runs), said once at start.
#[derive(Debug, Clone)]
pub(crate) struct KeptStores {
    /// The audit store.
    pub(crate) audit: StoreChoice,
    /// The proposals and idempotency store.
    pub(crate) approvals: StoreChoice,
    /// Where the roster is served, when another node serves it (`[[remote_domain]]`).
    pub(crate) remote_roster: Option<String>,
}

/// The `tracing` target of the start-up lines that say where each store is kept: logged at
/// `info` and shown by default (see [`crate::logging`]).
pub(crate) const STORES_TARGET: &str = "switchboard::stores";

/// Logs, for each store, where what it holds is kept.
fn announce_stores(stores: &KeptStores, workflows: &StoreChoice) {
    for (what, flag, choice) in [
        ("audit records", "--audit", &stores.audit),
        (
            "proposals and idempotency keys",
            "--approvals",
            &stores.approvals,
        ),
        ("workflow runs", "--workflows", workflows),
    ] {
        match choice {
            StoreChoice::Sqlite(path) => {
                tracing::info!(target: STORES_TARGET, "{what} are kept in {}", path.display());
            }
            StoreChoice::Postgres(url) => {
                tracing::info!(target: STORES_TARGET, "{what} are kept in PostgreSQL at {url}");
            }
            StoreChoice::Memory => tracing::info!(
                target: STORES_TARGET,
                "{what} are kept in memory, gone when the server stops ({flag} memory; \
                 {flag} sqlite:PATH keeps them)"
            ),
        }
    }
    // The sample roster is kept with the proposals (see `roster_setup`), unless another node
    // serves it.
    if let Some(node) = &stores.remote_roster {
        tracing::info!(target: STORES_TARGET, "the roster is kept by {node}, which serves it");
        return;
    }
    match &stores.approvals {
        StoreChoice::Sqlite(path) => tracing::info!(
            target: STORES_TARGET,
            "the roster is kept in {}",
            path.with_file_name(crate::roster_setup::ROSTER_FILE).display()
        ),
        StoreChoice::Postgres(url) => {
            tracing::info!(target: STORES_TARGET, "the roster is kept in PostgreSQL at {url}");
        }
        StoreChoice::Memory => tracing::info!(
            target: STORES_TARGET,
            "the roster is kept in memory, gone when the server stops (with the proposals)"
        ),
    }
}

/// The workflow flags of `serve`.
#[derive(Debug, Clone)]
struct WorkflowsServing {
    store: StoreChoice,
    /// `--workflow-lease` and `--workflow-sweep-every`, checked.
    lease: switchboard_workflows_engine::LeaseOptions,
    /// Whether `--workflows` named the store (else it is the state directory's).
    store_chosen: bool,
    stuck_after: SignedDuration,
    /// Whether proposals and idempotency keys outlive the process (`--approvals sqlite:`).
    approvals_persistent: bool,
}

impl Serving {
    /// Serves with the config file's links: verifies the identity statements of peer sessions
    /// (`[[link.peer]]`; over HTTP, where a token file maps peers: stdio has none), and says
    /// at start where a remote roster is kept.
    pub(crate) fn with_link(mut self, link: &crate::link_setup::LinkSetup) -> Self {
        if let (Transport::Http(config, _), Some(verifier)) = (&mut self.transport, link.verifier())
        {
            **config = (**config).clone().link_verifier(verifier);
        }
        self.stores.remote_roster = link
            .remote_node(crate::roster_setup::ROSTER_DOMAIN)
            .map(str::to_owned);
        self
    }

    /// Where the server keeps workflow runs, and how its engine holds their leases.
    pub(crate) fn workflows_choice(&self) -> WorkflowsChoice {
        WorkflowsChoice {
            store: self.workflows.store.clone(),
            lease: self.workflows.lease.clone(),
        }
    }

    /// Checks the flags and the config file's `[serve]` table, and builds the configuration.
    pub(crate) fn prepare(
        args: ServeArgs,
        file: &ServeFile,
        stores: KeptStores,
    ) -> Result<Self, UsageError> {
        let state_key_flag = args.state_key_file.clone();
        let navigation = args.navigation.into();
        if args.stuck_after <= SignedDuration::ZERO {
            return Err(UsageError::new(
                "--stuck-after must be a positive duration, such as `15m`",
            ));
        }
        let workflows = WorkflowsServing {
            store: args.workflow_store.store_choice()?,
            lease: args.workflow_store.lease.options_or_file(
                file.workflow_lease.as_deref(),
                file.workflow_sweep_every.as_deref(),
            )?,
            store_chosen: args.workflow_store.workflows.is_some(),
            stuck_after: args.stuck_after,
            approvals_persistent: stores.approvals.is_persistent(),
        };
        let operations = Operations {
            drain_timeout: args.operate.drain_timeout()?,
            mounts_strict: args.mounts.mounts_strict,
            metrics: args.operate.metrics,
        };
        let switches = StartSwitches::prepare(
            &file.disabled_tools,
            args.switches.disable.clone(),
            args.switches.enable.clone(),
        )?;
        let transport = Transport::prepare(args, file.oauth.as_deref())?;
        let (state_key, state_key_generated) = match configured_state_key(
            state_key_flag.as_deref(),
            std::env::var(STATE_KEY_VARIABLE),
            file.state_key_file.as_deref(),
        )? {
            Some(key) => (key, false),
            None => (StateKey::generate(), true),
        };
        Ok(Self {
            transport,
            state_key,
            state_key_generated,
            navigation,
            workflows,
            stores,
            operations,
            switches,
        })
    }
}

/// The key from `--state-key-file`, else from [`STATE_KEY_VARIABLE`], else from the config
/// file's `[serve] state_key_file`; `None` if none is given. A key that is unreadable, not hex
/// or shorter than 32 bytes is a usage error naming where it came from.
fn configured_state_key(
    flag: Option<&Path>,
    variable: Result<String, VarError>,
    config_file: Option<&Path>,
) -> Result<Option<StateKey>, UsageError> {
    let from_file = |path: &Path, source: &str| {
        StateKey::from_file(path)
            .map(Some)
            .map_err(|error| UsageError::new(format!("{error} ({source})")))
    };
    if let Some(path) = flag {
        return from_file(path, "given with --state-key-file");
    }
    match variable {
        Ok(text) => StateKey::from_hex(&text)
            .map(Some)
            .map_err(|error| UsageError::new(format!("{error} (from {STATE_KEY_VARIABLE})"))),
        Err(VarError::NotPresent) => match config_file {
            Some(path) => from_file(path, "state_key_file in the config file's [serve] table"),
            None => Ok(None),
        },
        Err(VarError::NotUnicode(_)) => Err(UsageError::new(format!(
            "{STATE_KEY_VARIABLE} is not text; it must hold the requestState key as 64 or more \
             hex digits, such as the output of `openssl rand -hex 32`"
        ))),
    }
}

/// Says, once the server is up, that the requestState key was generated and what that means.
fn warn_generated_state_key() {
    tracing::warn!(
        "no requestState key configured (--state-key-file FILE, {STATE_KEY_VARIABLE}, or \
         state_key_file in the config file's [serve] table): \
         generated one for this process, so an approval asked over MCP and still open is refused \
         after a restart or by another replica; make a key with `openssl rand -hex 32`"
    );
}

/// The transport `serve` was asked for, configured.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    /// `--stdio`, acting as the identity flags.
    Stdio(Identity),
    /// `--http ADDR`, with how it authenticates (for the start-up line). Boxed: the HTTP
    /// configuration is several times the size of an identity (clippy::large_enum_variant).
    Http(Box<HttpConfig>, String),
}

impl Transport {
    /// Checks the flags (and `oauth` of the config file's `[serve]` table) and builds the
    /// transport's configuration (clap already requires exactly one of `--stdio` and
    /// `--http`).
    fn prepare(args: ServeArgs, oauth_in_file: Option<&Path>) -> Result<Self, UsageError> {
        let addr = match args.http {
            Some(addr) if !args.stdio => addr,
            _ => return Ok(Transport::Stdio(args.identity.into_mcp_identity()?)),
        };
        let options = args.http_options;
        let oauth = match (&options.oauth, oauth_in_file) {
            (Some(path), _) => Some((path.as_path(), "given with --oauth")),
            (None, Some(path)) => Some((path, "`oauth` in the config file's [serve] table")),
            (None, None) => None,
        };
        if let (Some((_, source)), Some(_)) = (oauth, &options.tokens) {
            return Err(UsageError::new(format!(
                "--tokens and an OAuth configuration ({source}) cannot both be given: an \
                 endpoint accepts one kind of bearer token; drop one of them"
            )));
        }
        let (auth, summary) = match (&options.tokens, oauth) {
            (None, Some((path, source))) => {
                let oauth = OAuthConfig::from_file(path)
                    .map_err(|error| UsageError::new(format!("{error} ({source})")))?;
                let summary = format!(
                    "OAuth access tokens of {} for {} (metadata at {})",
                    oauth.issuer(),
                    oauth.resource(),
                    oauth.resource_metadata_url()
                );
                (HttpAuth::OAuth(oauth), summary)
            }
            (Some(path), _) => {
                let table = TokenTable::from_file(path)
                    .map_err(|error| UsageError::new(format!("{error} (given with --tokens)")))?;
                let count = table.len();
                let noun = if count == 1 { "token" } else { "tokens" };
                let summary = format!("bearer tokens from {} ({count} {noun})", path.display());
                (HttpAuth::Tokens(table), summary)
            }
            (None, None) => {
                let identity = args.identity.into_mcp_identity()?;
                let summary = format!(
                    "no authentication, every client acts as {}/{}",
                    identity.org.as_deref().unwrap_or("?"),
                    identity.user.as_deref().unwrap_or("?")
                );
                (HttpAuth::Operator(identity), summary)
            }
        };
        let mut config =
            HttpConfig::new(addr, auth).map_err(|error| UsageError::new(error.to_string()))?;
        for origin in options.allow_origins {
            config = config.allow_origin(origin);
        }
        for host in options.allow_hosts {
            config = config.allow_host(host);
        }
        let count = |flag: u64| usize::try_from(flag).unwrap_or(usize::MAX);
        let mut limits = HttpLimits::default();
        limits.max_sessions = count(options.max_sessions);
        limits.max_sessions_per_principal = count(options.max_sessions_per_client);
        limits.max_connections = count(options.max_connections);
        limits.max_connections_per_peer = count(options.max_connections_per_peer);
        limits.request_head_timeout = Duration::from_secs(options.request_head_timeout);
        limits.body_timeout = Duration::from_secs(options.body_timeout);
        let config = config
            .max_body_bytes(count(options.max_body_bytes))
            .session_grace(Duration::from_secs(options.session_grace))
            .limits(limits);
        Ok(Transport::Http(Box::new(config), summary))
    }
}

/// What `serve --stdio` says when a person starts it in a terminal.
const STDIO_WAITING: &str = "switchboard: waiting for an MCP client on stdin (one JSON-RPC \
     message per line); MCP clients start this command themselves. Ctrl-D or Ctrl-C to stop.\n";

/// Serves until the client closes stdin (stdio) or the process is interrupted (HTTP), adding
/// `instructions` (the lazy mounted servers, `--mounts`) to what the server tells clients.
pub(crate) async fn run(
    registry: &ToolRegistry,
    serving: Serving,
    instructions: Option<String>,
    mounts: Option<&MountsSetup>,
    running: &Workflows,
) -> anyhow::Result<Exit> {
    let Serving {
        transport,
        state_key,
        state_key_generated,
        navigation,
        workflows,
        stores,
        operations,
        switches,
    } = serving;
    switches.apply(registry).await?;
    let engine = &running.engine;
    // The one engine of this process (built on `--workflows`' store before the command
    // runs): every workflow surface of the server uses it.
    if workflows.store.is_persistent() && !workflows.approvals_persistent {
        // A warning for whoever asked for durable runs; the default store gets the same words
        // at `info`, so that a plain `serve` starts quietly.
        if workflows.store_chosen {
            tracing::warn!("{IN_MEMORY_KEYS}");
        } else {
            tracing::info!("{IN_MEMORY_KEYS}");
        }
    }
    let continued = engine
        .recover()
        .await
        .context("could not continue the unfinished workflow runs")?;
    tracing::info!(runs = continued, "continued the unfinished workflow runs");
    let monitor = tokio::spawn(monitor_stuck_runs(engine.clone(), workflows.stuck_after));
    let served = Box::pin(serve_transport(
        registry,
        transport,
        StartUp {
            state_key,
            state_key_generated,
            navigation,
            instructions,
            stores,
            workflow_store: workflows.store,
            operations,
            runs: Arc::clone(&running.store),
            mounts,
        },
        engine,
    ))
    .await;
    monitor.abort();
    served
}

/// What a server whose runs outlive it, but whose idempotency keys do not, says at start.
const IN_MEMORY_KEYS: &str = "workflow runs are kept on disk but proposals and idempotency \
     keys in memory: a mutating step in flight at a crash may run again when its run is \
     continued; keep them on disk too with --approvals sqlite:PATH";

/// Every `threshold / 4` (at least 10 s), warns about each run running with no checkpoint for
/// longer than `threshold`: once per run, and again only after it moved.
async fn monitor_stuck_runs(engine: Engine, threshold: SignedDuration) {
    let quarter = Duration::try_from(threshold / 4).unwrap_or(Duration::MAX);
    let mut ticks = tokio::time::interval(quarter.max(STUCK_CHECK_FLOOR));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut warnings = StuckWarnings::default();
    loop {
        ticks.tick().await;
        let stuck = match engine.stuck_runs(threshold) {
            Ok(stuck) => stuck,
            Err(error) => {
                tracing::warn!(%error, "could not look for stuck workflow runs");
                continue;
            }
        };
        for run in warnings.fresh(stuck) {
            tracing::warn!(
                run = %run.run,
                org = %run.org_id,
                workflow = %run.workflow,
                state = run.state.as_str(),
                idle = %format!("{:#}", run.idle),
                "workflow run has made no progress for longer than --stuck-after"
            );
        }
    }
}

/// The stuck runs already warned about, each with its idle time then.
#[derive(Debug, Default)]
struct StuckWarnings {
    warned: HashMap<RunId, SignedDuration>,
}

impl StuckWarnings {
    /// Of the runs stuck now, those not warned about yet, or stuck again after they moved (a
    /// run seen with less idle time than before made a checkpoint meanwhile). A run no longer
    /// stuck is forgotten.
    fn fresh(&mut self, stuck: Vec<StuckRun>) -> Vec<StuckRun> {
        let mut warned = HashMap::with_capacity(stuck.len());
        let mut fresh = Vec::new();
        for run in stuck {
            warned.insert(run.run, run.idle);
            if self
                .warned
                .get(&run.run)
                .is_none_or(|idle| *idle > run.idle)
            {
                fresh.push(run);
            }
        }
        self.warned = warned;
        fresh
    }
}

/// The shortest time between two looks for stuck runs.
const STUCK_CHECK_FLOOR: Duration = Duration::from_secs(10);

/// What the server is started with besides its transport.
struct StartUp<'a> {
    state_key: StateKey,
    state_key_generated: bool,
    navigation: NavigationMode,
    instructions: Option<String>,
    stores: KeptStores,
    workflow_store: StoreChoice,
    operations: Operations,
    /// The workflow run store, for `/readyz`.
    runs: Arc<dyn RunStore>,
    /// The mounted servers, for `/readyz` under `--mounts-strict`.
    mounts: Option<&'a MountsSetup>,
}

/// Serves MCP over the chosen transport until it ends (stdio), or until SIGTERM or Ctrl-C
/// and a drain (HTTP).
async fn serve_transport(
    registry: &ToolRegistry,
    transport: Transport,
    start_up: StartUp<'_>,
    engine: &Engine,
) -> anyhow::Result<Exit> {
    let StartUp {
        state_key,
        state_key_generated,
        navigation,
        instructions,
        stores,
        workflow_store,
        operations,
        runs,
        mounts,
    } = start_up;
    // Built before serving, so that a page declaration that cannot work stops the start.
    let navigator = match navigation {
        NavigationMode::Off => None,
        _ => Some(Navigator::new(registry.clone()).context("cannot offer navigation")?),
    };
    match transport {
        Transport::Stdio(identity) => {
            announce_stores(&stores, &workflow_store);
            if state_key_generated {
                warn_generated_state_key();
            }
            let mut server = McpServer::new(registry.clone(), identity).with_state_key(state_key);
            if let Some(navigator) = navigator {
                server = server.with_navigation(navigator, navigation);
            }
            if let Some(text) = instructions {
                server = server.with_instructions(text);
            }
            // A person who started this in a terminal would otherwise see nothing at all; an MCP
            // client pipes stdin and gets no such line.
            if std::io::stdin().is_terminal() {
                output::write_stderr(STDIO_WAITING);
            }
            return operate::serve_stdio_until_stopped(
                server,
                registry,
                engine,
                operations.drain_timeout,
            )
            .await;
        }
        Transport::Http(config, summary) => {
            let mut config = (*config).state_key(state_key);
            if let Some(navigator) = navigator {
                config = config.navigation(navigator, navigation);
            }
            if let Some(text) = instructions {
                config = config.instructions(text);
            }
            let mounts_health = match mounts {
                Some(mounts) => Some(operate::mounts_health(mounts).await),
                None => None,
            };
            // Under --mounts-strict, readiness also waits for the mounted servers.
            let watched = mounts_health
                .as_ref()
                .filter(|_| operations.mounts_strict)
                .map(tokio::sync::watch::Sender::subscribe);
            for check in operate::readiness_checks(registry, &runs, watched) {
                config = config.readiness_check(check);
            }
            if operations.metrics {
                let handle = telemetry::install()?;
                config = config.metrics(telemetry::render(
                    handle,
                    registry.clone(),
                    Arc::clone(&runs),
                ));
            }
            let streams_stop = CancellationToken::new();
            let pages = super::pages::router(registry, &config, engine, &streams_stop)?;
            let server = switchboard_mcp::serve_http_with_pages(registry.clone(), config, pages)
                .await
                .context("could not start the MCP HTTP server")?;
            // The summary quotes a path and the identity flags: escaped like any data.
            output::write_stderr(&format!(
                "switchboard: serving MCP at {} ({}; SIGTERM or Ctrl-C to stop)\n",
                server.url(),
                escape_controls(&summary)
            ));
            // After the start-up line, which scripts read first.
            output::write_stderr(&format!(
                "switchboard: the pages, for people in a browser, at http://{}/\n",
                server.local_addr()
            ));
            announce_stores(&stores, &workflow_store);
            if state_key_generated {
                warn_generated_state_key();
            }
            let stopping = operate::Stopping {
                drain_timeout: operations.drain_timeout,
                engine,
                streams_stop: &streams_stop,
                mounts: mounts.zip(mounts_health),
            };
            return operate::serve_until_stopped(server, registry, stopping).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use switchboard::OrgId;
    use switchboard_workflows::RunState;

    use super::*;

    fn stuck(run: RunId, idle_secs: i64) -> StuckRun {
        StuckRun {
            run,
            org_id: OrgId::from("acme"),
            workflow: "slow".to_owned(),
            state: RunState::Running,
            idle: SignedDuration::from_secs(idle_secs),
        }
    }

    #[test]
    fn a_stuck_run_is_warned_about_once_until_it_moves() {
        let (first, second) = (RunId::new(), RunId::new());
        let mut warnings = StuckWarnings::default();
        let runs =
            |found: Vec<StuckRun>| -> Vec<RunId> { found.into_iter().map(|run| run.run).collect() };
        assert_eq!(runs(warnings.fresh(vec![stuck(first, 60)])), vec![first]);
        assert_eq!(
            runs(warnings.fresh(vec![stuck(first, 90), stuck(second, 70)])),
            vec![second],
            "the first one was warned about"
        );
        // The first one made a checkpoint and is stuck again: less idle than before.
        assert_eq!(
            runs(warnings.fresh(vec![stuck(first, 65), stuck(second, 100)])),
            vec![first]
        );
        // Gone (moved or finished), then stuck again: warned about again.
        assert!(warnings.fresh(vec![]).is_empty());
        assert_eq!(runs(warnings.fresh(vec![stuck(second, 200)])), vec![second]);
    }
}
