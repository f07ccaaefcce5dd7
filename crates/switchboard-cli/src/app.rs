//! The run of one command: check the inputs, boot the runtime, dispatch, shut down, and pick
//! the exit code.
//!
//! Everything the user can get wrong (a permission file, `PARAMS_JSON`) is checked before the
//! runtime boots, and is a [`UsageError`] with exit code 2. A refused or failed call is not an
//! error here: the command reports it and returns [`Exit::Refused`]. Anything else that goes
//! wrong is the runtime's fault and exits with 3.

use std::{fmt, path::Path, process::ExitCode};

use anyhow::Context as _;
use switchboard::{PermissionMatrix, Switchboard, ToolRegistry, registry::PermissionsError};

use crate::{
    approvals_setup::ApprovalsSetup,
    args::{Cli, Command},
    audit_setup::AuditSetup,
    commands::{self, Prepared, Ready, proposals::Kept},
    config_file::{ConfigFile, StoreChoice},
    limits_setup,
    link_setup::LinkSetup,
    mounts_setup::MountsSetup,
    output, served_domains,
    workflows_setup::Workflows,
};

/// How a run ended, as the process exit code tells scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: the command did what was asked.
    Success,
    /// 1: the call was refused or failed, or the tool does not exist.
    Refused,
    /// 2: the command line, its params or its permission file are wrong.
    Usage,
    /// 3: the runtime failed (it did not start, or could not report).
    Internal,
    /// 4: a workflow run paused: it waits for a person, a decision or a long timer.
    Paused,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(match exit {
            Exit::Success => 0,
            Exit::Refused => 1,
            Exit::Usage => 2,
            Exit::Internal => 3,
            Exit::Paused => 4,
        })
    }
}

/// A mistake in what the user passed; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsageError {
    message: String,
}

impl UsageError {
    /// Makes a usage error.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}

/// Runs the parsed command line with its config `file` (as read, or why it could not be) and
/// reports any error on standard error, or on standard output as a JSON object under `--json`.
/// `traced`: the call spans are exported (logging installed an OTLP exporter), so the registry
/// gets the tracing layer.
pub(crate) fn run(cli: Cli, file: Result<ConfigFile, UsageError>, traced: bool) -> Exit {
    let json = cli.command.wants_json();
    match try_run(cli, file, traced) {
        Ok(exit) => exit,
        Err(error) => {
            let exit = if error.is::<UsageError>() {
                Exit::Usage
            } else {
                Exit::Internal
            };
            if json {
                output::write_stdout(&output::failure_json(exit, &format!("{error:#}")));
            } else {
                output::write_stderr(&output::render_failure(&error));
            }
            exit
        }
    }
}

/// Reports a command line clap refused: under `--json` (anywhere on it) as the JSON failure
/// object on standard output, with exit code 2; otherwise as clap does (which also prints
/// `--help` and `--version`).
pub(crate) fn refuse_command_line(error: clap::Error) -> ExitCode {
    let asked_for_json = std::env::args_os()
        .skip(1)
        .any(|argument| argument == "--json");
    if !asked_for_json || !error.use_stderr() {
        error.exit()
    }
    let text = error.to_string();
    let message = text.strip_prefix("error: ").unwrap_or(&text).trim_end();
    output::write_stdout(&output::failure_json(Exit::Usage, message));
    Exit::Usage.into()
}

fn try_run(
    mut cli: Cli,
    file: Result<ConfigFile, UsageError>,
    traced: bool,
) -> anyhow::Result<Exit> {
    if let Command::LinkKey(args) = &cli.command {
        return crate::link_setup::new_key(args);
    }
    let mut flags = cli.command.registry_args();
    let permissions = load_permissions(flags.permissions.as_deref())?;
    let file = file?;
    if flags.approvals.approvals.is_none() && !file.approvals.names_store() {
        flags.approvals.approvals = file.store.in_place_of(cli.command.default_approvals()?);
    }
    if let Some(store) = cli.command.workflow_store_args_mut() {
        // The run store's flag, else `[store] url` in place of its state-directory file.
        store.workflows = match store.workflows.take() {
            Some(choice) => Some(file.store.settle(choice)),
            None if file.store.names_database() => {
                file.store.in_place_of(Some(store.store_choice()?))
            }
            None => None,
        };
    }
    let mut approvals = ApprovalsSetup::resolve(&flags.approvals, &file.approvals)?;
    approvals.store = file.store.settle(approvals.store);
    let kept = Kept::of(&approvals.store);
    // `proposals`, `approve` and `reject` on a proposals file that does not exist yet create
    // nothing: they read an empty store in memory in its place (and say so), and write their
    // audit records to memory too unless a store is named.
    let nothing_kept = cli.command.acts_on_kept_proposals() && matches!(kept, Kept::NotYet(_));
    if nothing_kept {
        approvals.store = StoreChoice::Memory;
    }
    if flags.audit.audit.is_none() && !file.audit.names_store() {
        flags.audit.audit = if nothing_kept {
            Some(StoreChoice::Memory)
        } else {
            file.store.in_place_of(cli.command.default_audit()?)
        };
    }
    let mut audit = AuditSetup::resolve(&flags.audit, &flags.audit_writer, &file.audit)?;
    audit.store = file.store.settle(audit.store);
    // The node's name in its audit records: `serve --node`, else `[link] node`.
    let node = match &cli.command {
        Command::Serve(serve) => serve.operate.node.clone(),
        _ => None,
    };
    if let Some(node) = node.or_else(|| file.link.node.clone()) {
        audit.config = audit.config.clone().node(node.as_str());
    }
    let mounts = MountsSetup::resolve(&cli.command.mount_args())?;
    let may_run_tools = cli.command.may_run_tools();
    // `serve --domains`: the linked domains this node leaves out; a name that is not one
    // stops here, before anything opens.
    let named_domains = match &cli.command {
        Command::Serve(serve) => serve.domains.clone(),
        _ => None,
    };
    let mut left_out = served_domains::left_out(named_domains.as_deref())?;
    // `[link]` and `[[remote_domain]]`: the keys are read and every entry checked here. A
    // remote domain is never left out: this node serves it through its link.
    let link = LinkSetup::resolve(
        &file.link,
        &file.remote_domain,
        named_domains.as_deref(),
        cli.command.mount_args().strict_remote,
        matches!(cli.command, Command::Serve(_)),
    )?;
    left_out.retain(|domain| !link.is_remote(domain));
    // `--intent-prompts`, else the config file's `[serve] intent_prompts`.
    let offers_intent_prompts = match &cli.command {
        Command::Serve(serve) => serve.intent_prompts || file.serve.intent_prompts,
        _ => false,
    };
    // Params are read before the runtime boots: a typo should cost nothing.
    let command = match Ready::prepare(cli.command, &audit, &approvals, kept, &file.serve)? {
        Prepared::Runtime(command) => command.with_link(&link),
        Prepared::Audit(args, source) => {
            return async_runtime()?.block_on(commands::audit::run(args, source));
        }
        Prepared::MountsAccept(args) => {
            return async_runtime()?.block_on(commands::mounts::accept(args));
        }
    };
    // A store that cannot be opened stops here, naming the file: never a silent fallback.
    let workflow_store = command.workflow_store()?;
    let store = audit.open()?;
    // A roster served by another node keeps its data there: no roster store opens here.
    let approval_stores =
        approvals.open(may_run_tools && !link.is_remote(crate::roster_setup::ROSTER_DOMAIN))?;
    let mut builder = ToolRegistry::builder()
        .permissions(permissions)
        .audit_store(store)
        .audit_config(audit.config);
    if traced {
        // Outermost: the call's span covers the other layers too.
        builder = builder.layer(switchboard_telemetry::TracingLayer);
    }
    let mut builder = approval_stores.configure(builder, &approvals);
    // The rate limits of `[limits]`, around every call of every command.
    let limits = file.limits;
    if let Some(layer) = limits_setup::layer(&limits) {
        builder = builder.layer(layer);
    }
    if command.wants_conformance_tools()
        && let Some(layer) = crate::conformance_hooks::pause_after_mutation()?
    {
        builder = builder.layer(layer);
    }
    if !command.wants_conformance_tools() {
        // Linked into the binary, but only `serve --conformance` may see these test tools.
        builder = builder.exclude_domain(switchboard_domain_conformance::DOMAIN);
    }
    for domain in &left_out {
        builder = builder.exclude_domain(*domain);
    }
    if offers_intent_prompts {
        let conformance = command.wants_conformance_tools();
        let served = |domain: &str| {
            (conformance || domain != switchboard_domain_conformance::DOMAIN)
                && !left_out.contains(&domain)
        };
        builder = with_intent_prompts(builder, &served);
    }
    async_runtime()?.block_on(async move {
        let links = link.start().await?;
        let builder = links.register(builder);
        let switchboard = match Switchboard::start(builder).await {
            Ok(switchboard) => switchboard,
            Err(error) => {
                links.close().await;
                return Err(error).context("the switchboard runtime did not start");
            }
        };
        // The one workflow engine of the process, on the store the command chose. The workflows
        // domains export are tools of every command; an invalid one stops here.
        let workflows = Workflows::open(workflow_store, &switchboard.registry)?;
        workflows
            .engine
            .register_exported()
            .await
            .context("cannot offer the exported workflows as tools")?;
        if command.wants_conformance_tools() {
            crate::conformance_hooks::register(&switchboard.registry).await?;
        }
        let mounted = match &mounts {
            Some(mounts) => {
                mounts
                    .start(&switchboard.registry, !command.shows_mounts())
                    .await
            }
            None => Ok(()),
        };
        let mounted = mounted.and_then(|()| {
            limits_setup::check_tools(&limits, &switchboard.registry).map_err(Into::into)
        });
        // Boxed: the commands' futures together are large (clippy `large_futures`).
        let exit = match mounted {
            Ok(()) => Box::pin(command.run(&switchboard, mounts.as_ref(), &workflows)).await,
            Err(error) => Err(error),
        };
        if let Some(mounts) = &mounts {
            mounts.close().await;
        }
        links.close().await;
        // A run this process still drives (one left paused) stays at its last checkpoint.
        workflows.engine.shutdown();
        switchboard.shutdown().await;
        exit
    })
}

/// `builder` serving the intent patterns of the linked tools it serves (those of the domains
/// `served` keeps) as prompts (`serve --intent-prompts`, `[serve] intent_prompts`).
fn with_intent_prompts(
    mut builder: switchboard::RegistryBuilder,
    served: &dyn Fn(&str) -> bool,
) -> switchboard::RegistryBuilder {
    let tools: Vec<switchboard_core::ToolDescriptor> = switchboard_core::linked_tools()
        .filter(|entry| served(entry.spec.domain))
        .map(switchboard_core::ToolDescriptor::from_entry)
        .collect();
    for (descriptor, prompt) in switchboard::orchestrator::intent_prompts(&tools) {
        builder = builder.prompt(descriptor, prompt);
    }
    builder
}

fn async_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("could not start the async runtime")
}

/// The matrix from `--permissions FILE`, else the built-in one.
fn load_permissions(path: Option<&Path>) -> Result<PermissionMatrix, UsageError> {
    match path {
        None => Ok(PermissionMatrix::default()),
        Some(path) => PermissionMatrix::from_file(path).map_err(|error| match error {
            // This one names the file already.
            PermissionsError::Read { .. } => {
                UsageError::new(format!("{error} (given with --permissions)"))
            }
            other => UsageError::new(format!(
                "the permission file {} (given with --permissions) is not usable: {other}",
                path.display()
            )),
        }),
    }
}
