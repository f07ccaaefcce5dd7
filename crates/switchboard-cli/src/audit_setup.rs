//! Which audit store the binary writes to, and how: from the config file, then the flags.
//!
//! The store is chosen once, at startup, before the runtime boots: `--audit memory` or
//! `--audit sqlite:PATH`, with the durability, the full-queue policy, the queue size and the
//! retention age beside it. A one-shot command defaults to memory; `serve`, whose records
//! must outlive a restart, to `sqlite:STATE_DIR/audit.db`, as do the commands that read or act
//! on what it keeps (`audit`, `proposals`, `approve`, `reject`; see [`crate::store_defaults`]). The same keys live under `[audit]` in the config file
//! (`--config FILE` or `SWITCHBOARD_CONFIG`); a flag wins over the file. A store that cannot be
//! opened — a corrupt file, a directory that cannot be written — stops the binary with a usage
//! error naming the path: it never falls back to memory, which would lose the records silently.

use std::{path::PathBuf, sync::Arc, time::Duration};

use clap::{Args, ValueEnum};
use serde::Deserialize;
use switchboard::{AuditConfig, AuditStore, Durability, MemoryAuditStore, WhenFull};
use switchboard_audit_postgres::PostgresAuditStore;
use switchboard_audit_sqlite::SqliteAuditStore;

pub(crate) use crate::config_file::StoreChoice;
use crate::{
    app::UsageError,
    config_file::{age_in_file, parse_age},
};

/// `--audit-durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DurabilityChoice {
    /// A call returns once its record is stored (committed, for SQLite). The default for
    /// SQLite.
    Strict,
    /// A call returns once its record is queued; a crash may lose the queue. The default for
    /// memory.
    Relaxed,
}

/// `--audit-when-full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WhenFullChoice {
    /// Wait for room (the default).
    Block,
    /// Refuse the call with `audit_failed` before it runs.
    Fail,
}

/// Which audit store, and the config file: the flags of `audit`, which reads the store, and of
/// every command that calls tools. Global, so that `audit export` takes them after `export` too.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Audit")]
pub(crate) struct AuditStoreArgs {
    /// Read settings from this TOML file (`[audit]` keys: store, durability, when_full,
    /// queue_capacity, retention; `[approvals]` keys: store, agent_mutations, proposal_ttl,
    /// idempotency_retention, synchronous). Flags win over the file.
    #[arg(long, global = true, value_name = "FILE", env = "SWITCHBOARD_CONFIG")]
    pub(crate) config: Option<PathBuf>,

    /// Where audit records go: `memory` (gone at exit), `sqlite:PATH` (created if missing,
    /// except by `audit`) or `postgres://USER@HOST/DATABASE` (shared by every node; the config
    /// file's `[store] url` names it for every store). Default: `sqlite:STATE_DIR/audit.db` for `serve`, `audit`,
    /// `proposals`, `approve` and `reject`; `memory` for the other commands.
    #[arg(long, global = true, value_name = "STORE", env = "SWITCHBOARD_AUDIT")]
    pub(crate) audit: Option<StoreChoice>,
}

/// How records are written: the flags of the commands that call tools (`audit` only reads).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Audit")]
pub(crate) struct AuditWriterArgs {
    /// When a call counts as acknowledged: once its record is stored (`strict`, the default for
    /// SQLite) or once it is queued (`relaxed`, faster; a crash may lose the queue).
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) audit_durability: Option<DurabilityChoice>,

    /// What a call meets when the audit queue is full: wait (`block`, default) or be refused
    /// (`fail`).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub(crate) audit_when_full: Option<WhenFullChoice>,

    /// Delete records older than this (e.g. `720h`, `90 days`); default: keep everything.
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub(crate) audit_retention: Option<Duration>,
}

/// The `[audit]` table of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditFile {
    store: Option<StoreChoice>,
    durability: Option<DurabilityChoice>,
    when_full: Option<WhenFullChoice>,
    queue_capacity: Option<usize>,
    retention: Option<String>,
}

impl AuditFile {
    /// Whether the file names a store (`[audit] store`).
    pub(crate) fn names_store(&self) -> bool {
        self.store.is_some()
    }
}

/// The resolved choice, before anything is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditSetup {
    /// Where records go.
    pub(crate) store: StoreChoice,
    /// How they are queued and acknowledged.
    pub(crate) config: AuditConfig,
}

impl AuditSetup {
    /// Merges the config file's `[audit]` table and the flags; flags win.
    pub(crate) fn resolve(
        store_args: &AuditStoreArgs,
        writer: &AuditWriterArgs,
        file: &AuditFile,
    ) -> Result<Self, UsageError> {
        let store = store_args
            .audit
            .clone()
            .or_else(|| file.store.clone())
            .unwrap_or(StoreChoice::Memory);
        let durability = writer
            .audit_durability
            .or(file.durability)
            .unwrap_or(match store {
                StoreChoice::Memory => DurabilityChoice::Relaxed,
                StoreChoice::Sqlite(_) | StoreChoice::Postgres(_) => DurabilityChoice::Strict,
            });
        let when_full = writer
            .audit_when_full
            .or(file.when_full)
            .unwrap_or(WhenFullChoice::Block);
        let retention = match writer.audit_retention {
            Some(age) => Some(age),
            None => age_in_file("audit", "retention", file.retention.as_deref())?,
        };
        let mut config = AuditConfig::default()
            .durability(match durability {
                DurabilityChoice::Strict => Durability::Strict,
                DurabilityChoice::Relaxed => Durability::Relaxed,
            })
            .when_full(match when_full {
                WhenFullChoice::Block => WhenFull::Block,
                WhenFullChoice::Fail => WhenFull::Fail,
            });
        if let Some(capacity) = file.queue_capacity {
            config = config.queue_capacity(capacity);
        }
        if let Some(age) = retention {
            config = config.retention(age, Duration::from_secs(60).min(age));
        }
        Ok(Self { store, config })
    }

    /// Opens the chosen store. A file that is not a usable audit database is a usage error
    /// naming it; there is no fallback.
    pub(crate) fn open(&self) -> Result<Arc<dyn AuditStore>, UsageError> {
        match &self.store {
            StoreChoice::Memory => Ok(Arc::new(MemoryAuditStore::new())),
            StoreChoice::Sqlite(path) => match SqliteAuditStore::open(path) {
                Ok(store) => Ok(Arc::new(store)),
                Err(error) => Err(UsageError::new(format!(
                    "the audit store `sqlite:{}` cannot be used: {error}",
                    path.display()
                ))),
            },
            StoreChoice::Postgres(url) => PostgresAuditStore::open_with(&url.options())
                .map(|store| Arc::new(store) as Arc<dyn AuditStore>)
                .map_err(|error| crate::postgres_setup::cannot_open("audit", &error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_file::ConfigFile;

    fn resolve(store: AuditStoreArgs, writer: AuditWriterArgs) -> AuditSetup {
        let file = ConfigFile::load(store.config.as_deref()).expect("the config file loads");
        AuditSetup::resolve(&store, &writer, &file.audit).expect("resolves")
    }

    #[test]
    fn defaults_to_memory_with_relaxed_durability_and_sqlite_to_strict() {
        let memory = resolve(AuditStoreArgs::default(), AuditWriterArgs::default());
        assert_eq!(memory.store, StoreChoice::Memory);
        assert_eq!(memory.config.durability, Durability::Relaxed);

        let sqlite = resolve(
            AuditStoreArgs {
                audit: Some("sqlite:audit.db".parse().expect("parses")),
                ..AuditStoreArgs::default()
            },
            AuditWriterArgs::default(),
        );
        assert_eq!(sqlite.store, StoreChoice::Sqlite("audit.db".into()));
        assert_eq!(sqlite.config.durability, Durability::Strict);
        assert_eq!(sqlite.config.when_full, WhenFull::Block);
    }

    #[test]
    fn flags_win_over_the_config_file() {
        let dir = std::env::temp_dir().join(format!("switchboard-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("switchboard.toml");
        std::fs::write(
            &path,
            "[audit]\nstore = \"sqlite:from-file.db\"\ndurability = \"relaxed\"\nwhen_full = \"fail\"\nqueue_capacity = 128\nretention = \"48h\"\n",
        )
        .expect("write config");
        let from_file = resolve(
            AuditStoreArgs {
                config: Some(path.clone()),
                ..AuditStoreArgs::default()
            },
            AuditWriterArgs::default(),
        );
        assert_eq!(from_file.store, StoreChoice::Sqlite("from-file.db".into()));
        assert_eq!(from_file.config.durability, Durability::Relaxed);
        assert_eq!(from_file.config.when_full, WhenFull::Fail);
        assert_eq!(from_file.config.queue_capacity, 128);
        assert_eq!(
            from_file.config.retention,
            Some(Duration::from_secs(48 * 3600))
        );

        let flags = resolve(
            AuditStoreArgs {
                config: Some(path),
                audit: Some(StoreChoice::Memory),
            },
            AuditWriterArgs {
                audit_durability: Some(DurabilityChoice::Strict),
                ..AuditWriterArgs::default()
            },
        );
        assert_eq!(flags.store, StoreChoice::Memory);
        assert_eq!(flags.config.durability, Durability::Strict);
        assert_eq!(
            flags.config.when_full,
            WhenFull::Fail,
            "unset flags keep the file's"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_bad_config_file_is_a_usage_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("switchboard-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("bad.toml");
        std::fs::write(&path, "[audit]\nstroe = \"memory\"\n").expect("write config");
        let error = ConfigFile::load(Some(&path)).expect_err("unknown key");
        assert!(error.to_string().contains("bad.toml"), "{error}");
        assert!(error.to_string().contains("stroe"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
