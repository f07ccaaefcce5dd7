//! Where each command keeps what when no flag, environment variable or config file names a
//! store: the defaults of docs/cli.md's "Where each command keeps what".
//!
//! `serve` keeps everything it must not lose in the state directory (see
//! [`crate::workflows_setup`]), and the commands that act on what it keeps (`proposals`,
//! `approve`, `reject`, `audit`) default to the same files, so that they find what a `serve` on
//! the same state directory holds with no flag beyond identity. A command that only reads never
//! creates the directory or a store file: finding none, it says that nothing is kept there yet.
//! The one-shot commands (`call`, `ask`, `act`) keep memory defaults, except that run as an
//! agent they keep proposals where `approve` looks for them.
//!
//! The config file's `[store] url` moves all of that into one PostgreSQL database (see
//! [`crate::postgres_setup`]): what would be a state-directory file is kept there instead.

use std::path::PathBuf;

use crate::{
    app::UsageError,
    args::{Command, WorkflowAction},
    config_file::StoreChoice,
    identity::InitiatorArg,
    workflows_setup::{APPROVALS_FILE, AUDIT_FILE, WorkflowStoreArgs},
};

impl Command {
    /// The approvals store this command uses when neither `--approvals` nor the config file
    /// names one (see [`crate::workflows_setup`] for the state directory):
    /// - `serve` and the `workflow` commands that run steps keep theirs in the state directory;
    /// - `proposals`, `approve` and `reject` act on what is kept there (the directory is not
    ///   created: a command that finds nothing there says so, see
    ///   [`crate::commands::proposals::Kept`]);
    /// - `call`, `ask` and `act` run as an agent keep theirs there too, so that the proposal an
    ///   agent's change becomes is found by `switchboard approve`; run as a human they keep
    ///   the in-memory default, as the other commands do.
    pub(crate) fn default_approvals(&self) -> Result<Option<StoreChoice>, UsageError> {
        let in_dir = |dir: PathBuf| Some(StoreChoice::Sqlite(dir.join(APPROVALS_FILE)));
        match self {
            Command::Serve(args) => args.workflow_store.default_approvals().map(Some),
            Command::Workflow(args) => args
                .action
                .store_args()
                .map(WorkflowStoreArgs::default_approvals)
                .transpose(),
            Command::Proposals(args) => args.state.dir().map(in_dir),
            Command::Approve(args) => args.state.dir().map(in_dir),
            Command::Reject(args) => args.state.dir().map(in_dir),
            Command::Call(args) if args.identity.initiator == InitiatorArg::Agent => {
                args.state.created().map(in_dir)
            }
            Command::Ask(args) if args.identity.initiator == InitiatorArg::Agent => {
                args.state.created().map(in_dir)
            }
            Command::Act(args) if args.identity.initiator == InitiatorArg::Agent => {
                args.state.created().map(in_dir)
            }
            _ => Ok(None),
        }
    }

    /// The audit store this command uses when neither `--audit` nor the config file names
    /// one: `serve`, whose records must outlive a restart, keeps them in the state directory,
    /// where `audit` reads them (without creating the directory) and where `proposals`,
    /// `approve` and `reject` add the records of what they do to what `serve` kept (asked only
    /// once their proposals store is found, see [`crate::app`]); the others keep the in-memory
    /// default.
    pub(crate) fn default_audit(&self) -> Result<Option<StoreChoice>, UsageError> {
        let in_dir = |dir: PathBuf| Some(StoreChoice::Sqlite(dir.join(AUDIT_FILE)));
        match self {
            Command::Serve(args) => args.workflow_store.default_audit().map(Some),
            Command::Audit(args) => args.state.dir().map(in_dir),
            Command::Proposals(args) => args.state.created().map(in_dir),
            Command::Approve(args) => args.state.created().map(in_dir),
            Command::Reject(args) => args.state.created().map(in_dir),
            _ => Ok(None),
        }
    }

    /// The workflow store flags of the commands that keep runs (`serve`, and the `workflow`
    /// actions that read or write runs).
    pub(crate) fn workflow_store_args_mut(&mut self) -> Option<&mut WorkflowStoreArgs> {
        match self {
            Command::Serve(args) => Some(&mut args.workflow_store),
            Command::Workflow(args) => match &mut args.action {
                WorkflowAction::Validate(_) => None,
                WorkflowAction::Run(action) => Some(&mut action.session.store),
                WorkflowAction::List(action) => Some(&mut action.session.store),
                WorkflowAction::Show(action) => Some(&mut action.session.store),
                WorkflowAction::Cancel(action) => Some(&mut action.session.store),
                WorkflowAction::Resume(action) => Some(&mut action.run.session.store),
                WorkflowAction::Answer(action) => Some(&mut action.run.session.store),
            },
            _ => None,
        }
    }

    /// Whether this command decides or lists the proposals a store keeps (`proposals`,
    /// `approve`, `reject`): it never creates that store.
    pub(crate) fn acts_on_kept_proposals(&self) -> bool {
        matches!(
            self,
            Command::Proposals(_) | Command::Approve(_) | Command::Reject(_)
        )
    }

    /// Whether this command may run a roster tool, and so needs the roster kept with the
    /// approvals store (see [`crate::roster_setup`]): every command but `proposals` and
    /// `reject`, which only read and decide proposals, and so create no roster file.
    pub(crate) fn may_run_tools(&self) -> bool {
        !matches!(self, Command::Proposals(_) | Command::Reject(_))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::args::Cli;

    fn command(args: &[&str]) -> Command {
        Cli::try_parse_from(args.iter().copied())
            .expect("a valid command line")
            .command
    }

    fn temp_state_dir(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!(
            "switchboard-defaults-{name}-{}",
            std::process::id()
        ))
    }

    #[test]
    fn the_commands_acting_on_what_serve_keeps_default_to_its_files_and_create_nothing() {
        let dir = temp_state_dir("readers");
        let state = dir.to_str().expect("a UTF-8 temp path");
        for name in ["proposals", "approve", "reject"] {
            let mut args = vec!["switchboard", name];
            if name != "proposals" {
                args.push("prop-1");
            }
            if name == "reject" {
                args.extend(["--feedback", "no"]);
            }
            args.extend(["--state-dir", state]);
            let command = command(&args);
            assert!(command.acts_on_kept_proposals(), "{name}");
            assert_eq!(
                command.default_approvals().expect("resolves"),
                Some(StoreChoice::Sqlite(dir.join(APPROVALS_FILE))),
                "{name}"
            );
            assert!(!dir.exists(), "{name} creates no directory to look in");
        }
        let audit = command(&["switchboard", "audit", "export", "--state-dir", state]);
        assert_eq!(
            audit.default_audit().expect("resolves"),
            Some(StoreChoice::Sqlite(dir.join(AUDIT_FILE)))
        );
        assert!(!dir.exists(), "audit creates no directory to look in");
    }

    #[test]
    fn a_one_shot_keeps_proposals_in_the_state_directory_only_as_an_agent() {
        let dir = temp_state_dir("one-shot");
        let state = dir.to_str().expect("a UTF-8 temp path");
        for initiator in ["human", "agent"] {
            let call = command(&[
                "switchboard",
                "call",
                "core_get_current_user",
                "--initiator",
                initiator,
                "--state-dir",
                state,
            ]);
            let expected =
                (initiator == "agent").then(|| StoreChoice::Sqlite(dir.join(APPROVALS_FILE)));
            assert_eq!(
                call.default_approvals().expect("resolves"),
                expected,
                "{initiator}"
            );
            assert_eq!(call.default_audit().expect("resolves"), None, "{initiator}");
            assert!(!call.acts_on_kept_proposals());
        }
        assert!(
            dir.is_dir(),
            "an agent's call writes there: the directory is made"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
