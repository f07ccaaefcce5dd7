//! The arguments of `switchboard mounts` and the `--mounts` flags of the commands that mount
//! external MCP servers: one concern (docs/mounts.md), kept apart from the other commands'
//! flags.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The external MCP servers to mount behind the registry (docs/mounts.md).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Mounted MCP servers")]
pub(crate) struct MountArgs {
    /// Start the MCP servers this TOML file lists and add their tools (`{id}_{tool}`), checked
    /// and audited like every tool. A server that fails to start is reported and skipped.
    #[arg(long, value_name = "FILE")]
    pub(crate) mounts: Option<PathBuf>,

    /// Refuse to run unless every server of --mounts starts.
    #[arg(long, requires = "mounts")]
    pub(crate) mounts_strict: bool,

    /// Refuse to run unless the node of every remote domain of the config file
    /// (`[[remote_domain]]`) answers at start; without it, such a domain's calls answer
    /// `domain_unavailable` until its node answers.
    #[arg(long)]
    pub(crate) strict_remote: bool,
}

/// `switchboard mounts FILE [--json]`, or `switchboard mounts accept ID --mounts FILE`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct MountsArgs {
    /// Review and accept a server's changed tools.
    #[command(subcommand)]
    pub(crate) action: Option<MountsAction>,

    /// The mounts file (see docs/mounts.md).
    #[arg(value_name = "FILE", required = true)]
    pub(crate) file: Option<PathBuf>,

    /// Print a JSON array, one object per server.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `switchboard mounts` does besides showing the servers.
#[derive(Debug, Subcommand)]
pub(crate) enum MountsAction {
    /// Start one mounted server, show how its tools changed since they were accepted (a diff
    /// of each changed tool, new and removed tools, changed instructions), and, once you
    /// confirm, accept them as they are now: its quarantined tools are exposed again.
    Accept(MountsAcceptArgs),
}

/// `switchboard mounts accept ID --mounts FILE [--yes]`.
#[derive(Debug, Args)]
pub(crate) struct MountsAcceptArgs {
    /// The server's id in the mounts file.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    /// The mounts file; the accepted tools are pinned in the lock file beside it (`.lock`).
    #[arg(long, value_name = "FILE")]
    pub(crate) mounts: PathBuf,

    /// Accept without asking (otherwise asked on a terminal, and refused without one).
    #[arg(long)]
    pub(crate) yes: bool,
}
