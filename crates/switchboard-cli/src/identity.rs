//! Who a `call` or an `ask` acts as: the identity flags, their environment variables, and the
//! [`CallContext`] built from them.
//!
//! The CLI mints what only identifies the invocation (a session and a correlation id, both
//! `cli-<uuid>`), and never what identifies a person or a tenant: without `--org` or `--user`
//! (or their environment variables) the context simply lacks them, and the runtime answers
//! `missing_context`. Inventing a default organisation would make a forgotten flag act on
//! someone's data.
//!
//! The ids a person chooses with flags (`--session`, `--correlation`, `--thread`, `--project`,
//! `--idempotency-key`, `--agent-type`) end up in audit records and proposals, so they are held
//! to the id format every caller-chosen id meets (`switchboard::is_valid_id`: 1 to 128
//! characters of `A-Z a-z 0-9 . _ : -`) before anything runs; any other value is a usage error
//! naming the flag. Blank values count as absent, as for every identity flag.

use clap::{Args, ValueEnum};
use switchboard::{CallContext, ID_FORMAT, Initiator, is_valid_id};

use crate::{app::UsageError, escape::escape_controls};

/// Who acts, and for which tenant: the flags `call`, `ask` and `serve` share.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct PrincipalArgs {
    /// The organisation (tenant) to act for. Never guessed: a call without it is refused with
    /// `missing_context`, and `serve` (without --tokens) refuses to start.
    #[arg(long, env = "SWITCHBOARD_ORG", value_name = "ORG")]
    pub(crate) org: Option<String>,

    /// The user to act as. Never guessed: a call without it is refused with `missing_context`,
    /// and `serve` (without --tokens) refuses to start.
    #[arg(long, env = "SWITCHBOARD_USER", value_name = "USER")]
    pub(crate) user: Option<String>,

    /// A role the user holds; repeat the flag or separate roles with commas. Roles are checked
    /// against the permission matrix (built-in: admin, manager, staff); `serve` lists only the
    /// tools they may call.
    #[arg(
        long = "role",
        env = "SWITCHBOARD_ROLE",
        value_name = "ROLE",
        value_delimiter = ','
    )]
    pub(crate) roles: Vec<String>,
}

impl PrincipalArgs {
    /// The organisation and user, blank values counting as absent.
    fn org_and_user(&self) -> (Option<String>, Option<String>) {
        (present(self.org.clone()), present(self.user.clone()))
    }

    /// The roles, trimmed, blank ones dropped.
    fn roles(&self) -> impl Iterator<Item = &str> {
        self.roles
            .iter()
            .map(|role| role.trim())
            .filter(|role| !role.is_empty())
    }
}

/// The identity flags of `call` and `ask`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Identity")]
pub(crate) struct IdentityArgs {
    #[command(flatten)]
    pub(crate) principal: PrincipalArgs,

    /// Who starts the call. A person typing a command is a human in a session, hence the
    /// default `human`; pass `agent` to act as an agent deciding on its own, which may not run
    /// `execute` or `restricted` tools.
    #[arg(
        long,
        env = "SWITCHBOARD_INITIATOR",
        value_enum,
        value_name = "INITIATOR",
        default_value_t = InitiatorArg::Human
    )]
    pub(crate) initiator: InitiatorArg,

    /// Mark the call as explicitly confirmed by the human at the terminal. `restricted` tools
    /// (which cannot be undone) run only with it, and only for `--initiator human`.
    #[arg(long)]
    pub(crate) confirm: bool,

    /// The session id (default: a fresh `cli-<uuid>`).
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,

    /// The correlation id tying the call to its audit records (default: a fresh
    /// `cli-<uuid>`).
    #[arg(long, value_name = "ID")]
    pub(crate) correlation: Option<String>,

    #[command(flatten)]
    pub(crate) scope: ScopeArgs,
}

/// The execution context beyond the principal: the agent type, thread and project, and the
/// idempotency key of a mutation. Set by whoever runs the CLI, never read from params.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct ScopeArgs {
    /// The kind of agent making the call; the agent scope table decides which tools it may use.
    #[arg(long, env = "SWITCHBOARD_AGENT_TYPE", value_name = "TYPE")]
    pub(crate) agent_type: Option<String>,

    /// The conversation thread of the call, opened for the user in this process (the CLI keeps
    /// no threads between runs; `serve` holds them for its clients).
    #[arg(long, value_name = "ID")]
    pub(crate) thread: Option<String>,

    /// The project the call works in.
    #[arg(long, value_name = "ID")]
    pub(crate) project: Option<String>,

    /// The idempotency key of a mutating call (default: derived from tool, org, thread or
    /// correlation id, and params).
    #[arg(long, value_name = "KEY")]
    pub(crate) idempotency_key: Option<String>,
}

/// The identity flags of `serve`: one fixed caller for every MCP call on stdio, and on HTTP
/// without `--tokens` (with it, each token's identity is used and these are ignored). Same
/// flags and environment variables as `call`, but an MCP client is a program, so the initiator
/// defaults to `agent`; session and correlation ids come from the MCP session and request.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Identity")]
pub(crate) struct ServeIdentityArgs {
    #[command(flatten)]
    pub(crate) principal: PrincipalArgs,

    /// Who starts the calls. An MCP client is a program, hence the default `agent` (no
    /// `execute` or `restricted` tools); pass `human` only when a person approves each call in
    /// the client.
    #[arg(
        long,
        env = "SWITCHBOARD_INITIATOR",
        value_enum,
        value_name = "INITIATOR",
        default_value_t = InitiatorArg::Agent
    )]
    pub(crate) initiator: InitiatorArg,

    /// The kind of agent behind the client (`claude-code`, `planner`, ...); the agent scope
    /// table decides which tools it may use. Threads and projects come from each request's
    /// `_meta` instead (see docs/mcp.md).
    #[arg(long, env = "SWITCHBOARD_AGENT_TYPE", value_name = "TYPE")]
    pub(crate) agent_type: Option<String>,

    /// Let the human at the MCP client approve, through an elicitation form, the execute and
    /// restricted calls the agent makes (each becomes a proposal, run once as you if you
    /// approve). Only for clients that show elicitations to their user (docs/mcp.md).
    #[arg(long)]
    pub(crate) approve_by_elicitation: bool,
}

impl ServeIdentityArgs {
    /// The MCP identity, or a usage error naming the missing flags or a bad `--agent-type`.
    /// Blank values count as absent; roles are trimmed, with blank ones dropped.
    pub(crate) fn into_mcp_identity(self) -> Result<switchboard_mcp::Identity, UsageError> {
        check_id(
            "--agent-type (or SWITCHBOARD_AGENT_TYPE)",
            self.agent_type.as_deref(),
        )?;
        let (org, user) = match self.principal.org_and_user() {
            (Some(org), Some(user)) => (org, user),
            (org, user) => {
                let mut missing = Vec::new();
                if org.is_none() {
                    missing.push("--org (or SWITCHBOARD_ORG)");
                }
                if user.is_none() {
                    missing.push("--user (or SWITCHBOARD_USER)");
                }
                return Err(UsageError::new(format!(
                    "`serve` needs to know who the MCP client acts as: give {}",
                    missing.join(" and ")
                )));
            }
        };
        let mut identity = switchboard_mcp::Identity::agent(org, user)
            .with_initiator(self.initiator.into())
            .with_approval_by_elicitation(self.approve_by_elicitation);
        for role in self.principal.roles() {
            identity = identity.with_role(role);
        }
        if let Some(agent_type) = present(self.agent_type) {
            identity = identity.with_agent_type(agent_type);
        }
        Ok(identity)
    }
}

/// `--initiator`, as clap parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InitiatorArg {
    /// A person in a session (you, at the terminal).
    Human,
    /// An agent acting on its own initiative.
    Agent,
}

impl From<InitiatorArg> for Initiator {
    fn from(initiator: InitiatorArg) -> Self {
        match initiator {
            InitiatorArg::Human => Initiator::Human,
            InitiatorArg::Agent => Initiator::Agent,
        }
    }
}

/// A context ready to call with, and its correlation id (for finding its audit records).
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// The context handed to the runtime.
    pub(crate) context: CallContext,
    /// The correlation id in `context`, given or minted.
    pub(crate) correlation_id: String,
}

impl IdentityArgs {
    /// Checks the ids given with flags (see the module docs); run before the runtime starts,
    /// so that a bad id costs nothing.
    pub(crate) fn check_ids(&self) -> Result<(), UsageError> {
        let scope = &self.scope;
        for (flag, value) in [
            ("--session", &self.session),
            ("--correlation", &self.correlation),
            ("--thread", &scope.thread),
            ("--project", &scope.project),
            ("--idempotency-key", &scope.idempotency_key),
            (
                "--agent-type (or SWITCHBOARD_AGENT_TYPE)",
                &scope.agent_type,
            ),
        ] {
            check_id(flag, value.as_deref())?;
        }
        Ok(())
    }

    /// Builds the call context. Blank values count as absent (so `--org ""` is refused like a
    /// missing `--org`), and roles are trimmed, with blank ones dropped.
    pub(crate) fn into_identity(self) -> Identity {
        let correlation_id = present(self.correlation).unwrap_or_else(mint_id);
        let session_id = present(self.session).unwrap_or_else(mint_id);
        let mut builder = CallContext::builder()
            .session(session_id)
            .correlation(correlation_id.as_str())
            .initiator(self.initiator.into())
            .confirmed(self.confirm);
        let (org, user) = self.principal.org_and_user();
        if let Some(org_id) = org {
            builder = builder.org(org_id);
        }
        if let Some(user_id) = user {
            builder = builder.user(user_id);
        }
        builder = builder.roles(self.principal.roles());
        if let Some(agent_type) = present(self.scope.agent_type) {
            builder = builder.agent_type(agent_type);
        }
        if let Some(thread) = present(self.scope.thread) {
            builder = builder.thread(thread);
        }
        if let Some(project) = present(self.scope.project) {
            builder = builder.project(project);
        }
        if let Some(key) = present(self.scope.idempotency_key) {
            builder = builder.idempotency_key(key);
        }
        Identity {
            context: builder.build(),
            correlation_id,
        }
    }
}

/// A usage error unless `value` (trimmed) is absent, blank or an id.
fn check_id(flag: &str, value: Option<&str>) -> Result<(), UsageError> {
    let Some(value) = value.map(str::trim) else {
        return Ok(());
    };
    if value.is_empty() || is_valid_id(value) {
        return Ok(());
    }
    Err(UsageError::new(format!(
        "{flag} {} is not an id: use {ID_FORMAT}",
        quoted(value)
    )))
}

/// `value` for a message: its first characters, control characters escaped, in backquotes;
/// the length too when it is cut.
fn quoted(value: &str) -> String {
    /// Enough to recognise a value without repeating a megabyte of it.
    const SHOWN: usize = 40;
    let count = value.chars().count();
    let start: String = value.chars().take(SHOWN).collect();
    let start = escape_controls(&start);
    if count > SHOWN {
        format!("`{start}…` ({count} characters)")
    } else {
        format!("`{start}`")
    }
}

/// `Some` only for a value that is not blank, trimmed.
fn present(value: Option<String>) -> Option<String> {
    value
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

/// A fresh id for a session or a correlation: `cli-<uuid v7>`.
fn mint_id() -> String {
    switchboard::mint_id("cli")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> IdentityArgs {
        IdentityArgs {
            principal: PrincipalArgs::default(),
            initiator: InitiatorArg::Human,
            confirm: false,
            session: None,
            correlation: None,
            scope: ScopeArgs::default(),
        }
    }

    #[test]
    fn mints_session_and_correlation_but_never_org_or_user() {
        let identity = args().into_identity();
        assert_eq!(identity.context.missing_fields(), ["org_id", "user_id"]);
        assert!(identity.correlation_id.starts_with("cli-"));
        let session = identity.context.session_id.expect("minted");
        assert!(session.as_str().starts_with("cli-"));
        assert_ne!(session.as_str(), identity.correlation_id);
    }

    #[test]
    fn serve_names_the_agent_type_and_the_approval_opt_in() {
        let serve = |agent_type: Option<&str>, approve_by_elicitation| ServeIdentityArgs {
            principal: PrincipalArgs {
                org: Some("acme".to_owned()),
                user: Some("alice".to_owned()),
                roles: vec!["admin".to_owned()],
            },
            initiator: InitiatorArg::Agent,
            agent_type: agent_type.map(str::to_owned),
            approve_by_elicitation,
        };
        let identity = serve(Some(" claude-code "), true)
            .into_mcp_identity()
            .expect("a complete identity");
        assert_eq!(
            identity.agent_type.as_ref().map(|t| t.as_str()),
            Some("claude-code")
        );
        assert!(identity.approve_by_elicitation);
        let identity = serve(Some(" "), false)
            .into_mcp_identity()
            .expect("a complete identity");
        assert_eq!(identity.agent_type, None, "a blank agent type is absent");
        assert!(!identity.approve_by_elicitation);
    }

    #[test]
    fn keeps_given_values_and_drops_blank_ones() {
        let identity = IdentityArgs {
            principal: PrincipalArgs {
                org: Some("acme".to_owned()),
                user: Some("  ".to_owned()),
                roles: vec!["admin".to_owned(), " staff ".to_owned(), String::new()],
            },
            initiator: InitiatorArg::Agent,
            confirm: true,
            session: Some("s1".to_owned()),
            correlation: Some("c1".to_owned()),
            scope: ScopeArgs {
                agent_type: Some("planner".to_owned()),
                thread: Some(" ".to_owned()),
                project: Some("p1".to_owned()),
                idempotency_key: Some("k1".to_owned()),
            },
        }
        .into_identity();
        let context = identity.context;
        assert_eq!(context.missing_fields(), ["user_id"]);
        assert_eq!(identity.correlation_id, "c1");
        let roles: Vec<&str> = context.roles.iter().map(|role| role.as_str()).collect();
        assert_eq!(roles, ["admin", "staff"]);
        assert_eq!(context.initiator, Initiator::Agent);
        assert!(context.confirmed);
        assert_eq!(
            context.agent_type.as_ref().map(|t| t.as_str()),
            Some("planner")
        );
        assert_eq!(context.thread_id, None, "a blank thread is absent");
        assert_eq!(context.project_id.as_ref().map(|p| p.as_str()), Some("p1"));
        assert_eq!(
            context.idempotency_key.as_ref().map(|k| k.as_str()),
            Some("k1")
        );
    }

    #[test]
    fn ids_given_with_flags_must_be_ids() {
        /// Puts a value into one of the id flags.
        type Setter = fn(&mut IdentityArgs, String);
        let with = |set: Setter, value: &str| {
            let mut identity = args();
            set(&mut identity, value.to_owned());
            identity.check_ids()
        };
        let setters: [(&str, Setter); 6] = [
            ("--session", |a, v| a.session = Some(v)),
            ("--correlation", |a, v| a.correlation = Some(v)),
            ("--thread", |a, v| a.scope.thread = Some(v)),
            ("--project", |a, v| a.scope.project = Some(v)),
            ("--idempotency-key", |a, v| {
                a.scope.idempotency_key = Some(v)
            }),
            ("--agent-type", |a, v| a.scope.agent_type = Some(v)),
        ];
        for (flag, set) in setters {
            for good in [
                "c-1",
                " c-1 ",
                "",
                "  ",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ] {
                assert_eq!(with(set, good), Ok(()), "{flag} {good:?}");
            }
            for bad in ["a b", "c1\nforged", "\u{1b}[2J", "caf\u{e9}"] {
                let error = with(set, bad).expect_err("not an id").to_string();
                assert!(error.starts_with(flag), "{error}");
                assert!(error.contains(ID_FORMAT), "{error}");
                assert!(!error.chars().any(char::is_control), "{error:?}");
            }
        }
        let long = "x".repeat(1 << 20);
        let error = with(setters[1].1, &long).expect_err("too long").to_string();
        assert!(error.len() < 200, "{error}");
        assert!(error.contains("1048576 characters"), "{error}");
        assert_eq!(args().check_ids(), Ok(()), "no ids given, none to check");
    }

    #[test]
    fn serve_refuses_an_agent_type_that_is_not_an_id() {
        let serve = ServeIdentityArgs {
            principal: PrincipalArgs {
                org: Some("acme".to_owned()),
                user: Some("alice".to_owned()),
                roles: Vec::new(),
            },
            initiator: InitiatorArg::Agent,
            agent_type: Some("claude\ncode".to_owned()),
            approve_by_elicitation: false,
        };
        let error = serve.into_mcp_identity().expect_err("not an id");
        assert!(error.to_string().starts_with("--agent-type"), "{error}");
    }
}
