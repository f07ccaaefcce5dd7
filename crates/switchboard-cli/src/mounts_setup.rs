//! `--mounts FILE`: the external MCP servers mounted around one command's run.
//!
//! The file is read and checked before the runtime boots, so a mistake in it costs nothing and
//! is a usage error naming the line. Once the registry runs, the servers start and their tools
//! are registered; a server that fails is reported on standard error and skipped, unless
//! `--mounts-strict` makes that a refusal to run. The servers are closed when the command
//! ends, before the registry stops, whether the command succeeded or not.

use std::sync::Mutex;

use switchboard::ToolRegistry;
use switchboard_mounts::{MountStatus, Mounts, MountsConfig, Strictness};

use crate::{app::UsageError, args::MountArgs, output};

/// The servers to mount, checked, not started.
#[derive(Debug)]
pub(crate) struct MountsSetup {
    mounts: Mounts,
    strictness: Strictness,
    /// The servers that did not start, and why, by id.
    failed: Mutex<Vec<(String, String)>>,
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
            failed: Mutex::default(),
        }))
    }

    /// Starts the servers and registers their tools in `registry`. Under `--mounts-strict`, a
    /// server that does not start is the error (and nothing stays started); otherwise it is
    /// reported on standard error when `report` is set, and kept for [`Self::statuses`].
    pub(crate) async fn start(&self, registry: &ToolRegistry, report: bool) -> anyhow::Result<()> {
        let failed = self.mounts.start(registry, self.strictness).await?;
        let mut kept = self
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for error in failed {
            if report {
                output::write_stderr(&format!(
                    "switchboard: {error}; its tools are not available (--mounts-strict refuses \
                     to run instead)\n"
                ));
            }
            kept.push((error.server().to_owned(), error.to_string()));
        }
        Ok(())
    }

    /// Every configured server's status, in the file's order: those that started as their
    /// actors report, and those that did not as `failed` with why.
    pub(crate) async fn statuses(&self) -> Vec<MountStatus> {
        let started = self.mounts.status().await;
        let failed = self
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        self.mounts
            .config()
            .servers
            .iter()
            .filter_map(|server| {
                started
                    .iter()
                    .find(|status| status.id == server.id)
                    .cloned()
                    .or_else(|| {
                        let (_, why) = failed.iter().find(|(id, _)| *id == server.id)?;
                        Some(MountStatus::failed(&server.id, why))
                    })
            })
            .collect()
    }

    /// What the MCP server tells clients about the lazy servers that started, if any.
    pub(crate) async fn instructions(&self) -> Option<String> {
        self.mounts.instructions().await
    }

    /// Ends every server; safe to call whether or not they started.
    pub(crate) async fn close(&self) {
        self.mounts.close().await;
    }
}
