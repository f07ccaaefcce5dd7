//! Where the binary keeps proposals and idempotency keys, and what an agent's mutation does:
//! from the config file, then the flags.
//!
//! Chosen once, at startup, before the runtime boots: `--approvals memory` (each process starts
//! with no proposals and no keys; the default of a human's one-shot commands) or
//! `--approvals sqlite:PATH` (the default of `serve`, of the `workflow` commands, of
//! `proposals`, `approve` and `reject`, and of `call`, `ask` and `act` run as an agent is
//! `sqlite:STATE_DIR/approvals.db`, see [`crate::store_defaults`]), one database file
//! for both stores, so that `switchboard approve` in one process decides a proposal another
//! process stored, and a mutation retried with the same `--idempotency-key` in a new process
//! replays its first result instead of running again. `--agent-mutations propose` stores an
//! agent's call of an execute or restricted tool as a proposal (the default, `refuse`, answers
//! `category_denied`). The same keys, plus the proposal lifetime, the key retention and the
//! SQLite `synchronous` setting, live under `[approvals]` in the config file; a flag wins over
//! the file. A database that cannot be opened stops the binary with a usage error naming the
//! path: it never falls back to memory, which would forget approvals and replay nothing.
//! The sample roster is kept with the approvals store (see [`crate::roster_setup`]).

use std::{sync::Arc, time::Duration};

use clap::{Args, ValueEnum};
use serde::Deserialize;
use switchboard::{
    AgentMutations, RegistryBuilder, RegistryConfig,
    registry::{IdempotencyStore, MemoryIdempotencyStore, MemoryProposalStore, ProposalStore},
};
use switchboard_approvals_postgres::ApprovalsDatabase as PostgresApprovals;
use switchboard_approvals_sqlite::{ApprovalsDatabase, SqliteOptions, Synchronous};
use switchboard_domain_roster::{Roster, RosterState};

use crate::{
    app::UsageError,
    config_file::{StoreChoice, age_in_file},
};

/// `--agent-mutations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AgentMutationsChoice {
    /// Refuse an agent's call of an execute or restricted tool (`category_denied`).
    Refuse,
    /// Store it as a proposal for a human to approve (`approval_required`, with its id).
    Propose,
}

/// `[approvals] synchronous`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SynchronousChoice {
    /// Every commit is on stable storage before the call goes on (the default).
    Full,
    /// Commits survive a process kill, but the last ones may be lost on power loss.
    Normal,
}

/// The approvals flags, of every command that calls tools.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Approvals")]
pub(crate) struct ApprovalsArgs {
    /// Where proposals and idempotency keys are kept: `memory` (gone at exit), `sqlite:PATH`
    /// (created if missing, except by `proposals`, `approve` and `reject`; shared by every
    /// process that names it) or `postgres://USER@HOST/DATABASE` (shared by every node; the
    /// config file's `[store] url` names it for every store). Default: `sqlite:STATE_DIR/approvals.db` for `serve`,
    /// `workflow`, `proposals`, `approve`, `reject`, and `call`, `ask`, `act` run as an agent;
    /// `memory` for the others.
    #[arg(long, value_name = "STORE", env = "SWITCHBOARD_APPROVALS")]
    pub(crate) approvals: Option<StoreChoice>,

    /// What an agent's call of an execute or restricted tool does: `refuse` it (default) or
    /// `propose` it, for a human to `approve`.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        env = "SWITCHBOARD_AGENT_MUTATIONS"
    )]
    pub(crate) agent_mutations: Option<AgentMutationsChoice>,
}

/// The `[approvals]` table of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalsFile {
    store: Option<StoreChoice>,
    agent_mutations: Option<AgentMutationsChoice>,
    proposal_ttl: Option<String>,
    idempotency_retention: Option<String>,
    synchronous: Option<SynchronousChoice>,
}

/// The resolved choice, before anything is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApprovalsSetup {
    /// Where proposals and keys are kept.
    pub(crate) store: StoreChoice,
    /// The registry settings that go with them.
    pub(crate) config: RegistryConfig,
    /// When a SQLite commit counts as done.
    pub(crate) synchronous: Synchronous,
}

/// The stores, opened.
pub(crate) struct ApprovalsStores {
    proposals: Arc<dyn ProposalStore>,
    idempotency: Arc<dyn IdempotencyStore>,
    /// The sample roster, kept with these stores (see [`crate::roster_setup`]); `None` keeps
    /// the roster domain's in-memory default.
    roster: Option<RosterState>,
}

impl ApprovalsFile {
    /// Whether the file names a store (`[approvals] store`).
    pub(crate) fn names_store(&self) -> bool {
        self.store.is_some()
    }
}

impl ApprovalsSetup {
    /// Merges the config file's `[approvals]` table and the flags; flags win.
    pub(crate) fn resolve(args: &ApprovalsArgs, file: &ApprovalsFile) -> Result<Self, UsageError> {
        let store = args
            .approvals
            .clone()
            .or_else(|| file.store.clone())
            .unwrap_or(StoreChoice::Memory);
        let defaults = RegistryConfig::default();
        let agent_mutations = match args.agent_mutations.or(file.agent_mutations) {
            Some(AgentMutationsChoice::Propose) => AgentMutations::Propose,
            Some(AgentMutationsChoice::Refuse) | None => AgentMutations::Refuse,
        };
        let proposal_ttl = age_in_file("approvals", "proposal_ttl", file.proposal_ttl.as_deref())?
            .unwrap_or(defaults.proposal_ttl);
        let idempotency_retention = age_in_file(
            "approvals",
            "idempotency_retention",
            file.idempotency_retention.as_deref(),
        )?
        .unwrap_or(defaults.idempotency_retention);
        if proposal_ttl.is_zero() || idempotency_retention.is_zero() {
            return Err(UsageError::new(
                "`[approvals] proposal_ttl` and `idempotency_retention` in the config file must \
                 be longer than zero",
            ));
        }
        Ok(Self {
            store,
            config: RegistryConfig {
                agent_mutations,
                proposal_ttl,
                idempotency_retention,
                ..defaults
            },
            synchronous: match file.synchronous {
                Some(SynchronousChoice::Normal) => Synchronous::Normal,
                Some(SynchronousChoice::Full) | None => Synchronous::Full,
            },
        })
    }

    /// Opens the chosen stores, and the sample roster kept with them when `with_roster` (a
    /// command that runs tools). A file that is not a usable approvals database is a usage
    /// error naming it; there is no fallback.
    pub(crate) fn open(&self, with_roster: bool) -> Result<ApprovalsStores, UsageError> {
        let retention: Duration = self.config.idempotency_retention;
        match &self.store {
            StoreChoice::Memory => Ok(ApprovalsStores {
                proposals: Arc::new(MemoryProposalStore::new()),
                idempotency: Arc::new(MemoryIdempotencyStore::new(retention)),
                roster: None,
            }),
            StoreChoice::Sqlite(path) => {
                let options = SqliteOptions::default().synchronous(self.synchronous);
                let database = ApprovalsDatabase::open_with(path, options).map_err(|error| {
                    UsageError::new(format!(
                        "the approvals store `sqlite:{}` cannot be used: {error}",
                        path.display()
                    ))
                })?;
                let roster = with_roster
                    .then(|| crate::roster_setup::beside_sqlite(path, self.synchronous))
                    .transpose()?;
                Ok(ApprovalsStores {
                    proposals: Arc::new(database.proposal_store()),
                    idempotency: Arc::new(database.idempotency_store(retention)),
                    roster,
                })
            }
            StoreChoice::Postgres(url) => {
                let database = PostgresApprovals::open_with(&url.options())
                    .map_err(|error| crate::postgres_setup::cannot_open("approvals", &error))?;
                let idempotency = Arc::new(database.idempotency_store(retention));
                let roster = with_roster
                    .then(|| crate::roster_setup::on_postgres(url, Arc::clone(&idempotency)))
                    .transpose()?;
                Ok(ApprovalsStores {
                    proposals: Arc::new(database.proposal_store()),
                    idempotency,
                    roster,
                })
            }
        }
    }
}

impl ApprovalsStores {
    /// Hands the stores and their settings to the registry.
    pub(crate) fn configure(
        self,
        builder: RegistryBuilder,
        setup: &ApprovalsSetup,
    ) -> RegistryBuilder {
        let builder = builder
            .config(setup.config.clone())
            .proposal_store(self.proposals)
            .idempotency_store(self.idempotency);
        match self.roster {
            Some(roster) => builder.domain_state::<Roster>(roster),
            None => builder,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_file::ConfigFile;

    fn write_config(name: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("switchboard-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("switchboard.toml");
        std::fs::write(&path, text).expect("write config");
        (dir, path)
    }

    fn resolve(
        args: &ApprovalsArgs,
        config: Option<&std::path::Path>,
    ) -> Result<ApprovalsSetup, UsageError> {
        let file = ConfigFile::load(config)?;
        ApprovalsSetup::resolve(args, &file.approvals)
    }

    #[test]
    fn defaults_to_memory_refusing_agent_mutations_with_the_registry_defaults() {
        let setup = resolve(&ApprovalsArgs::default(), None).expect("resolves");
        assert_eq!(setup.store, StoreChoice::Memory);
        assert_eq!(setup.config, RegistryConfig::default());
        assert_eq!(setup.synchronous, Synchronous::Full);
    }

    #[test]
    fn flags_win_over_the_config_file() {
        let (dir, path) = write_config(
            "approvals-cfg",
            "[approvals]\nstore = \"sqlite:from-file.db\"\nagent_mutations = \"propose\"\n\
             proposal_ttl = \"2h\"\nidempotency_retention = \"7 days\"\nsynchronous = \"normal\"\n",
        );
        let from_file = resolve(&ApprovalsArgs::default(), Some(&path)).expect("resolves");
        assert_eq!(from_file.store, StoreChoice::Sqlite("from-file.db".into()));
        assert_eq!(from_file.config.agent_mutations, AgentMutations::Propose);
        assert_eq!(from_file.config.proposal_ttl, Duration::from_secs(2 * 3600));
        assert_eq!(
            from_file.config.idempotency_retention,
            Duration::from_secs(7 * 86_400)
        );
        assert_eq!(from_file.synchronous, Synchronous::Normal);

        let flags = ApprovalsArgs {
            approvals: Some(StoreChoice::Memory),
            agent_mutations: Some(AgentMutationsChoice::Refuse),
        };
        let flagged = resolve(&flags, Some(&path)).expect("resolves");
        assert_eq!(flagged.store, StoreChoice::Memory);
        assert_eq!(flagged.config.agent_mutations, AgentMutations::Refuse);
        assert_eq!(
            flagged.config.proposal_ttl,
            Duration::from_secs(2 * 3600),
            "unset flags keep the file's"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn bad_keys_and_ages_are_usage_errors_naming_them() {
        for (text, expected) in [
            ("[approvals]\nstroe = \"memory\"\n", "stroe"),
            (
                "[approvals]\nproposal_ttl = \"soon\"\n",
                "[approvals] proposal_ttl",
            ),
            (
                "[approvals]\nidempotency_retention = \"0s\"\n",
                "longer than zero",
            ),
            ("[approvals]\nsynchronous = \"off\"\n", "off"),
        ] {
            let (dir, path) = write_config("approvals-bad", text);
            let error = resolve(&ApprovalsArgs::default(), Some(&path)).expect_err(text);
            assert!(error.to_string().contains(expected), "{text}: {error}");
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn an_unusable_database_is_a_usage_error_naming_it() {
        let dir =
            std::env::temp_dir().join(format!("switchboard-approvals-db-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("garbage.db");
        std::fs::write(&path, vec![7_u8; 8_192]).expect("garbage");
        let setup = ApprovalsSetup::resolve(
            &ApprovalsArgs {
                approvals: Some(StoreChoice::Sqlite(path.clone())),
                agent_mutations: None,
            },
            &ApprovalsFile::default(),
        )
        .expect("resolves");
        let Err(error) = setup.open(true) else {
            panic!("a garbage file must not open");
        };
        let message = error.to_string();
        assert!(message.contains("approvals store"), "{message}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
