//! Where the binary keeps workflow runs, and the engine that drives them.
//!
//! A run is a sequence of checkpoints: a run that outlives its process (paused for a person, a
//! long timer, a crash) can be continued only from a store that outlives it too. So the
//! `workflow` commands default to a SQLite file in a state directory (`--state-dir DIR`, else
//! `SWITCHBOARD_STATE_DIR`, else `$XDG_STATE_HOME/switchboard`, else
//! `~/.local/state/switchboard`), `DIR/workflows.db`, created if missing; `--workflows memory`
//! keeps runs for the life of the process only, `--workflows sqlite:PATH` names another file.
//!
//! The same state directory holds `approvals.db`, the default approvals and idempotency store
//! of the `workflow` commands: a mutating step that was in flight when its process died runs
//! again under the same idempotency key, and only a store that survived the crash can answer
//! "this already ran" instead of running it twice. It also holds the proposals an agent's run
//! waits for, so that `switchboard approve` in another process can decide them.
//!
//! `serve` keeps all three there by default: its runs, its proposals and keys (`approvals.db`:
//! a mutation retried after a restart replays its first result, and a pending proposal can
//! still be approved), and its audit records (`audit.db`). The commands that act on what it
//! keeps (`proposals`, `approve`, `reject`, `audit`) take the same `--state-dir` and look there
//! ([`StateDirArgs`], [`crate::store_defaults`]). Every store is a SQLite file in WAL
//! mode, built to be shared: two processes on one state directory both work, each commit
//! waiting for the other's write lock rather than failing.
//!
//! The engine rebuilds a stored run's definition by validating the document the run keeps
//! against the tools linked into this binary, so a resumed run is checked as strictly as a
//! started one.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use clap::Args;
use jiff::SignedDuration;
use switchboard::ToolRegistry;
use switchboard_workflows::{MemoryRunStore, RunStore, validate};
use switchboard_workflows_engine::{DefinitionLoader, Engine, EngineOptions, LeaseOptions};
use switchboard_workflows_postgres::PostgresRunStore;
use switchboard_workflows_sqlite::{SqliteOptions, SqliteRunStore};

use crate::{app::UsageError, config_file::StoreChoice};

/// The file of the run store in the state directory.
pub(crate) const WORKFLOWS_FILE: &str = "workflows.db";
/// The file of the approvals and idempotency store in the state directory.
pub(crate) const APPROVALS_FILE: &str = "approvals.db";
/// The file of `serve`'s audit store in the state directory.
pub(crate) const AUDIT_FILE: &str = "audit.db";

/// The workflow store flags.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Workflow store")]
pub(crate) struct WorkflowStoreArgs {
    /// Where runs, steps and events are kept: `sqlite:PATH`, `postgres://USER@HOST/DATABASE`
    /// (shared by every node) or `memory` (gone at exit). The `workflow` commands default to
    /// `sqlite:STATE_DIR/workflows.db`, or the config file's `[store] url`.
    #[arg(long, value_name = "STORE", env = "SWITCHBOARD_WORKFLOWS")]
    pub(crate) workflows: Option<StoreChoice>,

    /// The state directory (created if missing): `workflows.db` and, unless `--approvals` is
    /// given, `approvals.db`, whose idempotency keys make a step that was in flight at a crash
    /// run at most once when the run is resumed; for `serve`, also `audit.db` unless `--audit`
    /// is given. Default: `$XDG_STATE_HOME/switchboard`, else `~/.local/state/switchboard`.
    #[arg(long, value_name = "DIR", env = "SWITCHBOARD_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    /// How this process holds the leases of the runs it drives. Boxed: the commands that take
    /// it are variants of one enum (clippy::large_enum_variant).
    #[command(flatten)]
    pub(crate) lease: Box<LeaseArgs>,
}

/// The workflow lease flags: how long the lease on a run this process drives lasts, and how
/// often the process looks for runs another one left (docs/deploy.md).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Workflow leases")]
pub(crate) struct LeaseArgs {
    /// How long the lease on a workflow run this process drives lasts unless renewed (it is
    /// renewed every third of that while the run is driven): how soon after this process dies
    /// another one may take its runs over. Shorter means a faster takeover and more renewals
    /// (one store write per driven run per third). At least 100ms. Default: `10s`.
    #[arg(long, value_name = "DURATION")]
    pub(crate) workflow_lease: Option<SignedDuration>,

    /// How often this process looks for unfinished runs whose lease expired or was released
    /// (another process died or drained) and takes them over (`serve`; `workflow resume` while
    /// another process holds the run). Shorter than --workflow-lease. Default: `3s`.
    #[arg(long, value_name = "DURATION")]
    pub(crate) workflow_sweep_every: Option<SignedDuration>,
}

/// The shortest `--workflow-lease`: renewed every third of it, a shorter lease would be renewed
/// more often than a store round trip may take.
const SHORTEST_LEASE: Duration = Duration::from_millis(100);

impl LeaseArgs {
    /// The engine's lease options: the defaults, with the flags' lease (renewed every third of
    /// it) and sweep interval. A usage error says what to change when a duration is not
    /// positive, the lease is shorter than 100 ms, or the sweep is not shorter than the lease.
    pub(crate) fn options(&self) -> Result<LeaseOptions, UsageError> {
        let mut options = LeaseOptions::default();
        if let Some(lease) = self.workflow_lease {
            let lease = positive(lease, "--workflow-lease", "10s")?;
            if lease < SHORTEST_LEASE {
                return Err(UsageError::new(format!(
                    "--workflow-lease must be at least 100ms (it is renewed every third of it), \
                     not {:#}",
                    self.workflow_lease.unwrap_or_default()
                )));
            }
            options = options.with_duration(lease);
        }
        if let Some(sweep) = self.workflow_sweep_every {
            options = options.with_sweep_every(positive(sweep, "--workflow-sweep-every", "3s")?);
        }
        if options.sweep_every >= options.duration {
            return Err(UsageError::new(format!(
                "--workflow-sweep-every ({}) must be shorter than --workflow-lease ({}): a \
                 process looks for runs to take over several times a lease",
                shown(options.sweep_every),
                shown(options.duration)
            )));
        }
        Ok(options)
    }
}

impl LeaseArgs {
    /// These flags, with the config file's `[serve] workflow_lease` and
    /// `[serve] workflow_sweep_every` in place of the ones not given, checked as
    /// [`options`](Self::options) checks them; a usage error names the file's key when its
    /// value is not a duration, and says when a value came from the file.
    pub(crate) fn options_or_file(
        &self,
        lease: Option<&str>,
        sweep_every: Option<&str>,
    ) -> Result<LeaseOptions, UsageError> {
        let from_file = |key: &str, text: Option<&str>| {
            text.map(|text| {
                text.trim().parse::<SignedDuration>().map_err(|error| {
                    UsageError::new(format!(
                        "`[serve] {key}` in the config file: `{text}` is not a duration like \
                         `10s` or `1m 30s`: {error}"
                    ))
                })
            })
            .transpose()
        };
        let merged = Self {
            workflow_lease: match self.workflow_lease {
                Some(flag) => Some(flag),
                None => from_file("workflow_lease", lease)?,
            },
            workflow_sweep_every: match self.workflow_sweep_every {
                Some(flag) => Some(flag),
                None => from_file("workflow_sweep_every", sweep_every)?,
            },
        };
        let filed = (self.workflow_lease.is_none() && lease.is_some())
            || (self.workflow_sweep_every.is_none() && sweep_every.is_some());
        merged.options().map_err(|error| match filed {
            true => UsageError::new(format!(
                "{error} (set in the config file's [serve] table: workflow_lease, \
                 workflow_sweep_every)"
            )),
            false => error,
        })
    }
}

/// `duration` as a positive [`Duration`], or a usage error naming `flag` with an `example`.
fn positive(duration: SignedDuration, flag: &str, example: &str) -> Result<Duration, UsageError> {
    Duration::try_from(duration)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| {
            UsageError::new(format!(
                "{flag} must be a positive duration, such as `{example}`, not `{duration:#}`"
            ))
        })
}

/// `duration` as the flags write it (`3s`, `1m 30s`).
fn shown(duration: Duration) -> String {
    SignedDuration::try_from(duration)
        .map_or_else(|_| format!("{duration:?}"), |d| format!("{d:#}"))
}

impl WorkflowStoreArgs {
    /// The state directory, created if missing. A usage error names the directory when it
    /// cannot be created, and says which variables to set when no default can be found.
    pub(crate) fn state_dir(&self) -> Result<PathBuf, UsageError> {
        created(resolve_state_dir(self.state_dir.as_deref())?)
    }

    /// The run store and the engine's leases, checked.
    pub(crate) fn choice(&self) -> Result<WorkflowsChoice, UsageError> {
        Ok(WorkflowsChoice {
            store: self.store_choice()?,
            lease: self.lease.options()?,
        })
    }

    /// The run store: the flag's, else `sqlite:STATE_DIR/workflows.db`.
    pub(crate) fn store_choice(&self) -> Result<StoreChoice, UsageError> {
        match &self.workflows {
            Some(choice) => Ok(choice.clone()),
            None => Ok(StoreChoice::Sqlite(self.state_dir()?.join(WORKFLOWS_FILE))),
        }
    }

    /// The approvals store `serve` and the `workflow` commands use when `--approvals` (and
    /// the config file) name none: `sqlite:STATE_DIR/approvals.db`.
    pub(crate) fn default_approvals(&self) -> Result<StoreChoice, UsageError> {
        Ok(StoreChoice::Sqlite(self.state_dir()?.join(APPROVALS_FILE)))
    }

    /// The audit store `serve` uses when `--audit` (and the config file) name none:
    /// `sqlite:STATE_DIR/audit.db`.
    pub(crate) fn default_audit(&self) -> Result<StoreChoice, UsageError> {
        Ok(StoreChoice::Sqlite(self.state_dir()?.join(AUDIT_FILE)))
    }
}

/// The state directory alone: the flag of the commands that act on what `serve` keeps there
/// without keeping workflow runs themselves (`proposals`, `approve`, `reject`, `audit`), and of
/// `call`, `ask` and `act`, which run as an agent keep their proposals and keys there.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "State directory")]
pub(crate) struct StateDirArgs {
    /// The state directory `serve` keeps its stores in: `approvals.db` (proposals and
    /// idempotency keys) unless --approvals is given, and `audit.db` unless --audit is given.
    /// `call`, `ask` and `act` use it only run as an agent (--initiator agent), for their
    /// proposals and keys. Default:
    /// `$XDG_STATE_HOME/switchboard`, else `~/.local/state/switchboard`.
    #[arg(long, global = true, value_name = "DIR", env = "SWITCHBOARD_STATE_DIR")]
    pub(crate) state_dir: Option<PathBuf>,
}

impl StateDirArgs {
    /// The state directory, as it is: never created, so that a command that only reads finds
    /// it missing rather than making it.
    pub(crate) fn dir(&self) -> Result<PathBuf, UsageError> {
        resolve_state_dir(self.state_dir.as_deref())
    }

    /// The state directory, created if missing: for a command that writes a store there.
    pub(crate) fn created(&self) -> Result<PathBuf, UsageError> {
        created(self.dir()?)
    }
}

/// The state directory a flag (or `SWITCHBOARD_STATE_DIR`) names, else the default one; a
/// usage error says which variables to set when there is no default.
fn resolve_state_dir(flag: Option<&Path>) -> Result<PathBuf, UsageError> {
    match flag {
        Some(dir) => Ok(dir.to_path_buf()),
        None => default_state_dir().ok_or_else(|| {
            UsageError::new(
                "no state directory: pass --state-dir DIR, or set SWITCHBOARD_STATE_DIR, \
                 XDG_STATE_HOME or HOME",
            )
        }),
    }
}

/// `dir`, created if missing; a usage error names it when it cannot be.
fn created(dir: PathBuf) -> Result<PathBuf, UsageError> {
    std::fs::create_dir_all(&dir).map_err(|error| {
        UsageError::new(format!(
            "the state directory {} cannot be created: {error} (choose another with \
             --state-dir or SWITCHBOARD_STATE_DIR)",
            dir.display()
        ))
    })?;
    Ok(dir)
}

fn default_state_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    state_dir_from(non_empty("XDG_STATE_HOME"), non_empty("HOME"))
}

/// `$XDG_STATE_HOME/switchboard`, else `$HOME/.local/state/switchboard`.
fn state_dir_from(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    match (xdg_state_home, home) {
        (Some(xdg), _) => Some(PathBuf::from(xdg).join("switchboard")),
        (None, Some(home)) => Some(Path::new(&home).join(".local/state/switchboard")),
        (None, None) => None,
    }
}

/// Opens a run store. A file that is not a usable workflows database is a usage error naming
/// it; there is no fallback to memory.
pub(crate) fn open_store(choice: &StoreChoice) -> Result<Arc<dyn RunStore>, UsageError> {
    match choice {
        StoreChoice::Memory => Ok(Arc::new(MemoryRunStore::new())),
        StoreChoice::Sqlite(path) => SqliteRunStore::open_with(path, SqliteOptions::default())
            .map(|store| Arc::new(store) as Arc<dyn RunStore>)
            .map_err(|error| {
                UsageError::new(format!(
                    "the workflow store `sqlite:{}` cannot be used: {error}",
                    path.display()
                ))
            }),
        StoreChoice::Postgres(url) => PostgresRunStore::open(&url.options())
            .map(|store| Arc::new(store) as Arc<dyn RunStore>)
            .map_err(|error| crate::postgres_setup::cannot_open("workflow", &error)),
    }
}

/// The loader that rebuilds a stored run's definition: the stored document, validated against
/// the registry's tools.
pub(crate) fn definition_loader(registry: &ToolRegistry) -> DefinitionLoader {
    // The tools are read when a run is loaded, not when the engine is built: mounted servers'
    // and exported workflows' tools are registered after it.
    let registry = registry.clone();
    Arc::new(move |document| {
        validate(document, &registry.list())
            .map(Arc::new)
            .map_err(|errors| errors.to_string())
    })
}

/// An engine over `registry` and `store`, with the loader above and `lease`. Call inside a
/// tokio runtime. It does not recover unfinished runs: the caller decides which
/// (`Engine::recover` continues every organisation's).
pub(crate) fn engine(
    registry: &ToolRegistry,
    store: Arc<dyn RunStore>,
    lease: LeaseOptions,
) -> Engine {
    let options = EngineOptions {
        loader: Some(definition_loader(registry)),
        lease,
        // A run started in a traced call keeps that call's span for its later drives' steps.
        current_trace: Some(switchboard_telemetry::traceparent::current),
        ..EngineOptions::default()
    };
    Engine::new(registry.clone(), store, options)
}

/// Where the process's engine keeps runs, and how it holds their leases: what a command chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkflowsChoice {
    /// The run store.
    pub(crate) store: StoreChoice,
    /// The leases (`--workflow-lease`, `--workflow-sweep-every`).
    pub(crate) lease: LeaseOptions,
}

impl WorkflowsChoice {
    /// Runs in memory, with the default leases: the engine of a command that keeps no runs.
    pub(crate) fn memory() -> Self {
        Self {
            store: StoreChoice::Memory,
            lease: LeaseOptions::default(),
        }
    }
}

/// The one workflow engine of a process, and the store it keeps runs in. It is built before
/// the command runs, on the store the command chose (a `workflow` command's, `serve`'s, else
/// memory), so that the workflows the domains export are tools of every command and their runs
/// go where the command keeps runs.
pub(crate) struct Workflows {
    /// The engine.
    pub(crate) engine: Engine,
    /// Its store.
    pub(crate) store: Arc<dyn RunStore>,
    /// Where that store is, as a flag would name it.
    pub(crate) choice: StoreChoice,
}

impl Workflows {
    /// Opens `choice`'s store and builds the engine over it, on `registry`.
    pub(crate) fn open(
        choice: WorkflowsChoice,
        registry: &ToolRegistry,
    ) -> Result<Self, UsageError> {
        let store = open_store(&choice.store)?;
        Ok(Self {
            engine: engine(registry, Arc::clone(&store), choice.lease),
            store,
            choice: choice.store,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn the_default_state_directory_follows_xdg_then_home() {
        assert_eq!(
            state_dir_from(Some("/xdg".into()), Some("/home/ann".into())),
            Some(PathBuf::from("/xdg/switchboard"))
        );
        assert_eq!(
            state_dir_from(None, Some("/home/ann".into())),
            Some(PathBuf::from("/home/ann/.local/state/switchboard"))
        );
        assert_eq!(state_dir_from(None, None), None);
    }

    #[test]
    fn the_state_directory_holds_both_stores_and_is_created() {
        let dir = temp_dir("state-dir").join("nested/state");
        let args = WorkflowStoreArgs {
            workflows: None,
            state_dir: Some(dir.clone()),
            lease: Box::default(),
        };
        assert_eq!(
            args.store_choice().expect("resolves"),
            StoreChoice::Sqlite(dir.join(WORKFLOWS_FILE))
        );
        assert_eq!(
            args.default_approvals().expect("resolves"),
            StoreChoice::Sqlite(dir.join(APPROVALS_FILE))
        );
        assert_eq!(
            args.default_audit().expect("resolves"),
            StoreChoice::Sqlite(dir.join(AUDIT_FILE))
        );
        assert!(dir.is_dir());
        let flagged = WorkflowStoreArgs {
            workflows: Some(StoreChoice::Memory),
            state_dir: Some(dir.clone()),
            lease: Box::default(),
        };
        assert_eq!(
            flagged.store_choice().expect("resolves"),
            StoreChoice::Memory
        );
        let _ = std::fs::remove_dir_all(temp_dir("state-dir"));
    }

    #[test]
    fn a_state_directory_that_cannot_be_created_and_an_unusable_store_are_usage_errors() {
        let dir = temp_dir("state-file");
        let file = dir.join("a-file");
        std::fs::write(&file, "not a directory").expect("write");
        let args = WorkflowStoreArgs {
            workflows: None,
            state_dir: Some(file.join("state")),
            lease: Box::default(),
        };
        let error = args.state_dir().expect_err("under a file");
        assert!(error.to_string().contains("cannot be created"), "{error}");
        assert!(error.to_string().contains("--state-dir"), "{error}");

        let garbage = dir.join("garbage.db");
        std::fs::write(&garbage, vec![7_u8; 8_192]).expect("garbage");
        let Err(error) = open_store(&StoreChoice::Sqlite(garbage.clone())) else {
            panic!("a garbage file must not open");
        };
        assert!(error.to_string().contains("workflow store"), "{error}");
        assert!(
            error.to_string().contains(&garbage.display().to_string()),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    fn leases(lease: Option<&str>, sweep: Option<&str>) -> Result<LeaseOptions, UsageError> {
        LeaseArgs {
            workflow_lease: lease.map(|text| text.parse().expect("a duration")),
            workflow_sweep_every: sweep.map(|text| text.parse().expect("a duration")),
        }
        .options()
    }

    #[test]
    fn the_config_files_leases_fill_in_for_the_flags_not_given() {
        let flags = LeaseArgs {
            workflow_lease: Some("20s".parse().expect("a duration")),
            workflow_sweep_every: None,
        };
        let options = flags
            .options_or_file(Some("5s"), Some("2s"))
            .expect("valid");
        assert_eq!(
            (options.duration, options.sweep_every),
            (Duration::from_secs(20), Duration::from_secs(2)),
            "the flag wins, the file fills in"
        );
        let error = LeaseArgs::default()
            .options_or_file(Some("soon"), None)
            .expect_err("not a duration");
        assert!(
            error
                .to_string()
                .contains("`[serve] workflow_lease` in the config file: `soon`"),
            "{error}"
        );
        let error = LeaseArgs::default()
            .options_or_file(Some("2s"), None)
            .expect_err("the default sweep is not shorter");
        assert!(
            error
                .to_string()
                .contains("(set in the config file's [serve] table"),
            "{error}"
        );
    }

    #[test]
    fn the_lease_flags_set_the_engines_leases_and_are_checked() {
        let defaults = leases(None, None).expect("the defaults");
        assert_eq!(
            (
                defaults.duration,
                defaults.renew_every,
                defaults.sweep_every
            ),
            (
                Duration::from_secs(10),
                Duration::from_secs(3),
                Duration::from_secs(3)
            )
        );
        let short = leases(Some("3s"), Some("500ms")).expect("valid");
        assert_eq!(
            (short.duration, short.renew_every, short.sweep_every),
            (
                Duration::from_secs(3),
                Duration::from_secs(1),
                Duration::from_millis(500)
            )
        );
        for (lease, sweep, says) in [
            (
                Some("0s"),
                None,
                "--workflow-lease must be a positive duration",
            ),
            (
                Some("-5s"),
                None,
                "--workflow-lease must be a positive duration",
            ),
            (
                Some("50ms"),
                None,
                "--workflow-lease must be at least 100ms",
            ),
            (
                None,
                Some("0s"),
                "--workflow-sweep-every must be a positive duration",
            ),
            (
                Some("2s"),
                None,
                "--workflow-sweep-every (3s) must be shorter than --workflow-lease (2s)",
            ),
            (
                Some("5s"),
                Some("5s"),
                "must be shorter than --workflow-lease (5s)",
            ),
            (
                None,
                Some("1m"),
                "--workflow-sweep-every (1m) must be shorter than --workflow-lease (10s)",
            ),
        ] {
            let error = leases(lease, sweep).expect_err("refused");
            assert!(
                error.to_string().contains(says),
                "{lease:?} {sweep:?}: {error}"
            );
        }
    }
}
