//! `--mounts FILE`: the external MCP servers mounted around one command's run.
//!
//! The file is read and checked before the runtime boots, so a mistake in it costs nothing and
//! is a usage error naming the line. Once the registry runs, the servers start and their tools
//! are registered; a server that fails is reported on standard error and skipped, unless
//! `--mounts-strict` makes that a refusal to run. The servers are closed when the command
//! ends, before the registry stops, whether the command succeeded or not.

use switchboard::ToolRegistry;
use switchboard_mounts::{Mounts, MountsConfig, Strictness};

use crate::{app::UsageError, args::MountArgs, output};

/// The servers to mount, checked, not started.
#[derive(Debug)]
pub(crate) struct MountsSetup {
    mounts: Mounts,
    strictness: Strictness,
}

impl MountsSetup {
    /// The servers `--mounts` names, or `None` without it.
    pub(crate) fn resolve(args: &MountArgs) -> Result<Option<Self>, UsageError> {
        let Some(path) = &args.mounts else {
            return Ok(None);
        };
        let config = MountsConfig::load(path)
            .map_err(|error| UsageError::new(format!("{error} (given with --mounts)")))?;
        let strictness = if args.mounts_strict {
            Strictness::Strict
        } else {
            Strictness::Lenient
        };
        Ok(Some(Self {
            mounts: Mounts::new(config),
            strictness,
        }))
    }

    /// Starts the servers and registers their tools in `registry`. Under `--mounts-strict`, a
    /// server that does not start is the error (and nothing stays started); otherwise it is
    /// reported on standard error.
    pub(crate) async fn start(&self, registry: &ToolRegistry) -> anyhow::Result<()> {
        let failed = self.mounts.start(registry, self.strictness).await?;
        for error in failed {
            output::write_stderr(&format!(
                "switchboard: {error}; its tools are not available (--mounts-strict refuses to \
                 run instead)\n"
            ));
        }
        Ok(())
    }

    /// Ends every server; safe to call whether or not they started.
    pub(crate) async fn close(&self) {
        self.mounts.close().await;
    }
}
