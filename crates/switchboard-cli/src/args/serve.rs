//! The arguments of `switchboard serve`: its transport, identity, stores, start switches and
//! the flags of `--http` only, apart from the other commands' flags because they are most of
//! the command line and change together (docs/mcp.md, docs/cli.md).

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, ValueEnum};

use super::{MountArgs, RegistryArgs};
use crate::{identity::ServeIdentityArgs, workflows_setup::WorkflowStoreArgs};

/// The values of `serve --navigation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum NavigationArg {
    /// The plain tools only.
    Off,
    /// `navigate` and `execute_action` only.
    Only,
    /// The plain tools, and `navigate` and `execute_action` beside them.
    Beside,
}

impl From<NavigationArg> for switchboard_mcp::NavigationMode {
    fn from(arg: NavigationArg) -> Self {
        match arg {
            NavigationArg::Off => Self::Off,
            NavigationArg::Only => Self::Only,
            NavigationArg::Beside => Self::Beside,
        }
    }
}

/// Where `serve` listens when `--http` is given without an address.
pub(crate) const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";

/// `switchboard serve (--stdio | --http [ADDR]) [IDENTITY]`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "http"])))]
pub(crate) struct ServeArgs {
    /// Speak MCP on standard input and output (for clients that spawn this process). Logs go
    /// to standard error.
    #[arg(long)]
    pub(crate) stdio: bool,

    /// Serve MCP over streamable HTTP at `http://ADDR/mcp`, and the navigation pages for people
    /// at every other path (`http://ADDR/` in a browser), until SIGTERM or Ctrl-C, then drain
    /// (--drain-timeout). `GET /healthz` and `GET /readyz` answer a platform's probes (see
    /// docs/deploy.md). Without --tokens every client acts as the identity flags, so ADDR must
    /// be a loopback address.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        default_missing_value = DEFAULT_HTTP_ADDR
    )]
    pub(crate) http: Option<SocketAddr>,

    /// Also serve the reference tools of the official MCP conformance suite (`test_*`, domain
    /// `conformance`), for running that suite. Never for real clients; no other command has
    /// them.
    #[arg(long)]
    pub(crate) conformance: bool,

    /// Serve only these linked domains (comma-separated, or the flag repeated) and leave every
    /// other one out, with its tools, prompts, pages and the exported workflows that need
    /// them: a node serving one domain for others. The `core` domain is always served (who the
    /// caller is); the conformance domain only with --conformance. Default: every linked
    /// domain (`switchboard tools` lists them).
    #[arg(long, value_name = "DOMAIN", value_delimiter = ',')]
    pub(crate) domains: Option<Vec<String>>,

    /// Seal the approval states MCP clients echo back (`requestState`) with the key in FILE:
    /// 64 or more hex digits, such as `openssl rand -hex 32 > FILE`. SWITCHBOARD_STATE_KEY may
    /// hold the key itself instead. Without either, a key is generated for this process, and
    /// what it sealed is refused after a restart or by another replica.
    #[arg(long, value_name = "FILE")]
    pub(crate) state_key_file: Option<PathBuf>,

    /// The tools switched off (and back on) at start.
    #[command(flatten)]
    pub(crate) switches: crate::switches_setup::SwitchArgs,

    /// Offer each linked tool's intent patterns as prompts (`intent_<tool>`, docs/mcp.md
    /// "Prompts"), as `[serve] intent_prompts = true` in the config file does.
    #[arg(long)]
    pub(crate) intent_prompts: bool,

    /// Offer navigation: the `navigate` and `execute_action` tools, which open pages at URLs
    /// and run the actions offered there, and the pages as MCP resources.
    #[arg(long, value_name = "MODE", value_enum, default_value_t = NavigationArg::Off)]
    pub(crate) navigation: NavigationArg,

    /// Where workflow runs are kept (default: `sqlite:STATE_DIR/workflows.db`). At start, the
    /// server continues the unfinished runs it finds there.
    #[command(flatten)]
    pub(crate) workflow_store: WorkflowStoreArgs,

    /// Warn (once per run) about a running workflow run with no progress for this long:
    /// `15m`, `1h 30m`, `90s`.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "15m",
        help_heading = "Workflow store"
    )]
    pub(crate) stuck_after: jiff::SignedDuration,

    /// Who every MCP call acts as (on stdio, and on HTTP without --tokens).
    #[command(flatten)]
    pub(crate) identity: ServeIdentityArgs,

    /// The permission matrix and the stores.
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,

    /// Mounted MCP servers, whose tools are served too.
    #[command(flatten)]
    pub(crate) mounts: MountArgs,

    /// Authentication, DNS-rebinding protection, limits and sessions of `--http`.
    #[command(flatten)]
    pub(crate) http_options: ServeHttpArgs,

    /// Draining on SIGTERM, and the log format.
    #[command(flatten)]
    pub(crate) operate: crate::operate::OperateArgs,
}

/// The flags of `serve --http` only (see `docs/mcp.md`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "HTTP")]
pub(crate) struct ServeHttpArgs {
    /// Require `Authorization: Bearer <token>`: FILE (TOML) maps the SHA-256 of each token to
    /// the identity it acts as (org, user, roles, initiator). The identity flags are then not
    /// used. Hash a token with `printf %s "$TOKEN" | sha256sum`.
    #[arg(long, value_name = "FILE", conflicts_with = "stdio")]
    pub(crate) tokens: Option<PathBuf>,

    /// Require an OAuth 2.1 access token of the issuer FILE (TOML) names, its claims mapped to
    /// the identity (docs/mcp.md, "OAuth"); also `oauth` in the config file's `[serve]` table.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["stdio", "tokens"])]
    pub(crate) oauth: Option<PathBuf>,

    /// Also accept requests from web pages at this origin (`scheme://host[:port]`); repeatable.
    /// By default only the loopback origins of the bound port are accepted.
    #[arg(long = "allow-origin", value_name = "URL", conflicts_with = "stdio")]
    pub(crate) allow_origins: Vec<switchboard_mcp::AllowedOrigin>,

    /// Also answer to this `Host` header (host or host:port), for a server reached by a name or
    /// through a proxy; repeatable. By default: localhost, 127.0.0.1, ::1 and the bound address.
    #[arg(long = "allow-host", value_name = "HOST", conflicts_with = "stdio")]
    pub(crate) allow_hosts: Vec<switchboard_mcp::AllowedHost>,

    /// Refuse request bodies larger than this with 413 (at least 1024).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_BODY_BYTES,
        value_parser = clap::value_parser!(u64).range(1024..)
    )]
    pub(crate) max_body_bytes: u64,

    /// Keep an MCP session this many seconds after its last request ended, so a client can
    /// reconnect to it; idle sessions are then swept.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = DEFAULT_SESSION_GRACE_SECS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) session_grace: u64,

    /// Live MCP sessions allowed in all; a new `initialize` beyond it is refused with 503.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_SESSIONS as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_sessions: u64,

    /// Live MCP sessions allowed per client (token; without tokens, peer address); a new
    /// `initialize` beyond it ends that client's longest-idle session, or is refused with 429.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_sessions_per_client: u64,

    /// Open connections allowed in all (lowered to fit the open-file limit); further ones wait
    /// until one closes.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_CONNECTIONS as u64,
        value_parser = clap::value_parser!(u64).range(2..)
    )]
    pub(crate) max_connections: u64,

    /// Open connections allowed from one address (at most half of --max-connections); further
    /// ones are answered 503 and closed.
    #[arg(
        long,
        value_name = "N",
        default_value_t = switchboard_mcp::DEFAULT_MAX_CONNECTIONS_PER_PEER as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) max_connections_per_peer: u64,

    /// Close a connection that has not sent a complete request head this many seconds after it
    /// opened or its previous response ended (slow senders and idle keep-alive connections).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = switchboard_mcp::DEFAULT_REQUEST_HEAD_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) request_head_timeout: u64,

    /// Answer 408 to a request whose body has not fully arrived after this many seconds.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = switchboard_mcp::DEFAULT_BODY_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub(crate) body_timeout: u64,
}

/// `--max-body-bytes` when not given: 4 MiB.
const DEFAULT_MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// `--session-grace` when not given: 10 minutes.
const DEFAULT_SESSION_GRACE_SECS: u64 = 600;

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::{Cli, Command};

    #[test]
    fn http_only_flags_need_http_and_their_defaults_do_not() {
        let parse = |args: &[&str]| Cli::try_parse_from(args.iter().copied());
        let stdio = parse(&["switchboard", "serve", "--stdio"]).expect("defaults are fine");
        let Command::Serve(serve) = stdio.command else {
            panic!("a serve command");
        };
        assert_eq!(serve.http_options.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert_eq!(serve.http_options.session_grace, DEFAULT_SESSION_GRACE_SECS);
        for flags in [
            &["--tokens", "t.toml"][..],
            &["--oauth", "o.toml"],
            &["--allow-origin", "http://localhost:6274"],
            &["--allow-host", "mcp.example.com"],
        ] {
            let mut args = vec!["switchboard", "serve", "--stdio"];
            args.extend_from_slice(flags);
            assert!(parse(&args).is_err(), "{flags:?} without --http");
        }
        assert!(
            parse(&[
                "switchboard",
                "serve",
                "--http",
                "--allow-origin",
                "localhost:6274"
            ])
            .is_err(),
            "an origin needs a scheme"
        );
        assert!(parse(&["switchboard", "serve", "--http", "--max-body-bytes", "10"]).is_err());
        assert!(parse(&["switchboard", "serve", "--http", "--session-grace", "0"]).is_err());
    }
}
