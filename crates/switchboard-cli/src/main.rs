//! The `switchboard` binary: list the linked tools, print their definitions, call them, and ask
//! the orchestrator, from a terminal or a script.
//!
//! This file only parses the command line, starts logging and hands over to [`app::run`],
//! which boots the runtime, runs the command and picks the exit code. See `docs/cli.md` for
//! the commands, the identity flags, the `--json` shapes and the exit codes.

mod app;
mod approvals_setup;
mod args;
mod audit_setup;
mod cluster_setup;
mod commands;
mod config_file;
mod conformance_hooks;
mod escape;
mod hints;
mod identity;
mod limits_setup;
mod link_setup;
mod logging;
mod mounts_setup;
mod operate;
mod output;
mod params;
mod postgres_setup;
mod render;
mod roster_setup;
mod served_domains;
mod store_defaults;
mod switches_setup;
mod table;
mod telemetry;
mod watch;
mod workflows_setup;

use std::process::ExitCode;

use clap::Parser as _;

// A domain's `#[tool]`s are registered only if the binary references its crate: a dependency
// alone does not link it (rust-lang/rust#64731). `switchboard_domains` links every sample
// domain; `switchboard_domain_conformance` is left out of the registry unless
// `serve --conformance`.
use switchboard_domain_conformance as _;
use switchboard_domains as _;

fn main() -> ExitCode {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return app::refuse_command_line(error),
    };
    let (serving_mcp, log_format) = match &cli.command {
        args::Command::Serve(serve) => (true, serve.operate.log_format),
        _ => (false, operate::LogFormat::Text),
    };
    // The config file is read once, before logging starts: its `[telemetry]` says where spans
    // go. A file that cannot be read is reported by `app::run`, as every usage error is.
    let config = cli.command.registry_args().audit.config;
    let file = config_file::ConfigFile::load(config.as_deref());
    let telemetry = file
        .as_ref()
        .map(|file| file.telemetry.clone())
        .unwrap_or_default();
    let export = match logging::init(serving_mcp, log_format, &telemetry, config.as_deref()) {
        Ok(export) => export,
        Err(error) => {
            tracing::error!("{error:#}");
            return app::Exit::Usage.into();
        }
    };
    let exit = app::run(cli, file, export.is_some());
    // The spans still batched are sent before the process ends (after `serve`'s drain too).
    if let Some(export) = export
        && let Err(error) = export.shutdown()
    {
        tracing::warn!("{error}");
    }
    exit.into()
}
