//! The mounts file: which external MCP servers to start, and on what terms their tools enter
//! the registry.
//!
//! ```toml
//! [[server]]
//! id = "everything"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! start_timeout = "60s"
//! call_timeout = "30s"
//! category = "read"             # every tool's category unless overridden (else from annotations)
//! permission = "mounts.everything"
//! lazy = true                   # its tools stay out of tools/list (see `crate::lazy`)
//! description = "MCP reference server: echo, sums, samples"   # used when the server says nothing
//! log_level = "info"            # sent as `logging/setLevel` at each connect, if it logs
//!
//! [server.tools.printEnv]       # per-tool overrides
//! category = "restricted"
//!
//! [server.restart]              # when it dies (all optional; these are the defaults)
//! backoff = "100ms"             # the first restart waits up to this long (full jitter)
//! backoff_max = "10s"           # ... doubling up to this
//! max = 5                       # more losses than this ...
//! within = "60s"                # ... within this window mark it down ...
//! cool_down = "60s"             # ... for this long
//! ping_every = "15s"            # a ping this often ...
//! ping_timeout = "5s"           # ... unanswered this long means wedged: restarted
//!
//! [[server]]
//! id = "vendor"
//! verify = "warn"                # the prompt-injection verifier's findings are logged, not blocking
//! url = "http://127.0.0.1:3001/mcp"
//! bearer_token_env = "VENDOR_TOKEN"   # the credential is read from this variable at start
//!
//! [verifier]
//! rules = "injection-rules.toml"  # more prompt-injection rules, beside this file
//! ```
//!
//! Parsing is strict: an unknown key, a missing or doubled transport, a bad id, duration or
//! category is refused with the file, the line and column, the key, and what is expected. Only
//! a credential's *name* is in the file; its value comes from the environment when the server
//! starts, so the file can be committed.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    time::Duration,
};

use serde::Deserialize;
use switchboard_core::Category;

use crate::{
    actor::RestartPolicy,
    verifier::{Rules, VerifyPolicy},
};
use toml::Spanned;

/// How long a server may take to start and answer `initialize`, unless configured.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one call may take, unless configured.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest server id: ids name a registry domain, whose names are at most 32 characters.
pub const MAX_ID_LEN: usize = 32;

/// Why a mounts file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the mounts file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid mounts file.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (from 1) of the offending text.
        line: usize,
        /// The column (from 1).
        column: usize,
        /// The key at fault, when there is one (`server[1].command`).
        key: Option<String>,
        /// What is wrong, and what is expected.
        message: String,
    },
}

/// The servers a mounts file lists, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct MountsConfig {
    /// The file it was read from (for messages and the lock file beside it).
    pub path: PathBuf,
    /// The servers, in the file's order.
    pub servers: Vec<ServerConfig>,
    /// The prompt-injection verifier's rules: the defaults, extended by `[verifier] rules`.
    pub rules: Rules,
}

/// One server to mount.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its id: the registry domain of its tools, and the prefix of their names (`{id}_{tool}`).
    pub id: String,
    /// How to reach it.
    pub transport: Transport,
    /// How long starting it (spawn and handshake) may take.
    pub start_timeout: Duration,
    /// How long one call may take.
    pub call_timeout: Duration,
    /// Every tool's category unless overridden; `None`: from the tool's annotations.
    pub category: Option<Category>,
    /// Every tool's permission unless overridden.
    pub permission: String,
    /// Whether its tools stay out of `tools/list`, reached through the lazy meta-tools.
    pub lazy: bool,
    /// What it is for, in one line: how a lazy server is introduced to clients when the server
    /// itself says nothing (no `instructions`, no `serverInfo.title`).
    pub description: Option<String>,
    /// Per-tool overrides, by the server's name for the tool.
    pub tools: BTreeMap<String, ToolOverride>,
    /// When and how often it is restarted.
    pub restart: RestartPolicy,
    /// What the prompt-injection verifier's findings do to its tools.
    pub verify: VerifyPolicy,
    /// The level asked of it with `logging/setLevel` each time it connects, if it declares
    /// the logging capability; `None`: it logs at its own default.
    #[allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).
    pub log_level: Option<rmcp::model::LoggingLevel>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP over its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment.
        env: BTreeMap<String, String>,
        /// Its working directory; the current one when `None`.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// The environment variable whose value is sent as the bearer token, if any.
        bearer_token_env: Option<String>,
    },
}

/// What the configuration says of one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// Its category.
    pub category: Option<Category>,
    /// Its permission.
    pub permission: Option<String>,
}

impl MountsConfig {
    /// Reads and checks the mounts file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Checks `text`, the contents of the mounts file at `path`, and reads the rules file it
    /// names (relative to `path`'s folder).
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let invalid = |span: std::ops::Range<usize>, key: Option<String>, message: String| {
            invalid_at(path, text, &span, key, message)
        };
        let file: RawFile = parse_toml(path, text)?;
        let mut seen = BTreeSet::new();
        let mut servers = Vec::with_capacity(file.server.len());
        for (index, raw) in file.server.into_iter().enumerate() {
            let key = |name: &str| Some(format!("server[{index}].{name}"));
            let span = raw.span();
            let raw = raw.into_inner();
            let id_span = raw.id.span();
            let id = raw.id.into_inner();
            check_id(&id).map_err(|message| invalid(id_span.clone(), key("id"), message))?;
            if !seen.insert(id.clone()) {
                return Err(invalid(
                    id_span,
                    key("id"),
                    format!("the id `{id}` is used by an earlier server; give each server its own"),
                ));
            }
            let transport = match (raw.command, raw.url) {
                (Some(command), None) => {
                    if let Some(token) = &raw.bearer_token_env {
                        return Err(invalid(
                            token.span(),
                            key("bearer_token_env"),
                            "`bearer_token_env` is for a server reached by `url`; a `command` \
                             gets its credentials through `env`"
                                .to_owned(),
                        ));
                    }
                    Transport::Stdio {
                        command: command.into_inner(),
                        args: raw.args,
                        env: raw.env,
                        cwd: raw.cwd,
                    }
                }
                (None, Some(url)) => {
                    if !raw.args.is_empty() || !raw.env.is_empty() || raw.cwd.is_some() {
                        return Err(invalid(
                            url.span(),
                            key("url"),
                            "`args`, `env` and `cwd` are for a server started by `command`, not \
                             one reached by `url`"
                                .to_owned(),
                        ));
                    }
                    let url_span = url.span();
                    let url = url.into_inner();
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(invalid(
                            url_span,
                            key("url"),
                            format!("`{url}` is not an http:// or https:// URL"),
                        ));
                    }
                    Transport::Http {
                        url,
                        bearer_token_env: raw.bearer_token_env.map(Spanned::into_inner),
                    }
                }
                (Some(_), Some(url)) => {
                    return Err(invalid(
                        url.span(),
                        key("url"),
                        format!(
                            "server `{id}` has both `command` and `url`; give `command` (a child \
                             process over stdio) or `url` (streamable HTTP), not both"
                        ),
                    ));
                }
                (None, None) => {
                    return Err(invalid(
                        span,
                        key("command"),
                        format!(
                            "server `{id}` has neither `command` nor `url`; give `command` (a \
                             child process over stdio) or `url` (streamable HTTP)"
                        ),
                    ));
                }
            };
            let duration = |value: Option<Spanned<String>>, name: &str, default: Duration| {
                let Some(value) = value else {
                    return Ok(default);
                };
                parse_duration(value.get_ref())
                    .map_err(|message| invalid(value.span(), key(name), message))
            };
            let start_timeout =
                duration(raw.start_timeout, "start_timeout", DEFAULT_START_TIMEOUT)?;
            let call_timeout = duration(raw.call_timeout, "call_timeout", DEFAULT_CALL_TIMEOUT)?;
            let defaults = RestartPolicy::default();
            let restart = raw.restart.unwrap_or_default();
            let restart = RestartPolicy {
                base: duration(restart.backoff, "restart.backoff", defaults.base)?,
                cap: duration(restart.backoff_max, "restart.backoff_max", defaults.cap)?,
                intensity: restart.max.unwrap_or(defaults.intensity),
                period: duration(restart.within, "restart.within", defaults.period)?,
                cool_down: duration(restart.cool_down, "restart.cool_down", defaults.cool_down)?,
                ping_every: duration(
                    restart.ping_every,
                    "restart.ping_every",
                    defaults.ping_every,
                )?,
                ping_deadline: duration(
                    restart.ping_timeout,
                    "restart.ping_timeout",
                    defaults.ping_deadline,
                )?,
            };
            servers.push(ServerConfig {
                permission: raw.permission.unwrap_or_else(|| format!("mounts.{id}")),
                id,
                transport,
                start_timeout,
                call_timeout,
                category: raw.category,
                lazy: raw.lazy,
                description: raw.description,
                tools: raw.tools,
                restart,
                verify: raw.verify,
                log_level: raw.log_level,
            });
        }
        let rules = match file.verifier.and_then(|verifier| verifier.rules) {
            Some(rules) => {
                let rules_path = path
                    .parent()
                    .unwrap_or_else(|| Path::new(""))
                    .join(rules.get_ref());
                Rules::defaults()
                    .extended_by_file(&rules_path)
                    .map_err(|error| match error {
                        ConfigError::Read { path, source } => invalid(
                            rules.span(),
                            Some("verifier.rules".to_owned()),
                            format!("cannot read the rules file {}: {source}", path.display()),
                        ),
                        invalid_rules => invalid_rules,
                    })?
            }
            None => Rules::defaults(),
        };
        Ok(Self {
            path: path.to_owned(),
            servers,
            rules,
        })
    }
}

/// The file as written, before it is checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    server: Vec<Spanned<RawServer>>,
    verifier: Option<RawVerifier>,
}

/// `[verifier]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerifier {
    rules: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).
struct RawServer {
    id: Spanned<String>,
    command: Option<Spanned<String>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<Spanned<String>>,
    bearer_token_env: Option<Spanned<String>>,
    start_timeout: Option<Spanned<String>>,
    call_timeout: Option<Spanned<String>>,
    category: Option<Category>,
    permission: Option<String>,
    #[serde(default)]
    lazy: bool,
    description: Option<String>,
    #[serde(default)]
    tools: BTreeMap<String, ToolOverride>,
    restart: Option<RawRestart>,
    #[serde(default)]
    verify: VerifyPolicy,
    log_level: Option<rmcp::model::LoggingLevel>,
}

/// `[server.restart]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRestart {
    backoff: Option<Spanned<String>>,
    backoff_max: Option<Spanned<String>>,
    max: Option<usize>,
    within: Option<Spanned<String>>,
    cool_down: Option<Spanned<String>>,
    ping_every: Option<Spanned<String>>,
    ping_timeout: Option<Spanned<String>>,
}

/// Whether `id` can name a server: 1 to 32 characters from `[a-z0-9_]`, starting with a
/// letter. `Err` says what is expected.
fn check_id(id: &str) -> Result<(), String> {
    let valid = (1..=MAX_ID_LEN).contains(&id.len())
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "the id `{id}` is not valid: use 1 to {MAX_ID_LEN} characters from a-z, 0-9 and `_`, \
             starting with a letter (it names the tools' domain and prefixes their names)"
        ))
    }
}

/// A positive duration written as `30s`, `500ms`, `2m` or `1m 30s`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let expected =
        || format!("`{text}` is not a duration: write one such as `30s`, `500ms` or `2m`");
    let parsed: jiff::SignedDuration = text.parse().map_err(|_| expected())?;
    if parsed.is_zero() || parsed.is_negative() {
        return Err(format!("`{text}` is not a positive duration"));
    }
    Duration::try_from(parsed).map_err(|_| expected())
}

/// `text`, the TOML file at `path`, read as `T`; what TOML or `T`'s shape refuses is
/// [`ConfigError::Invalid`] at the line and column it names.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|error| {
        invalid_at(
            path,
            text,
            &error.span().unwrap_or(0..0),
            None,
            error.message().trim_end().to_owned(),
        )
    })
}

/// The [`ConfigError::Invalid`] of the bytes `span` of `text`, the file at `path`, under `key`
/// (as `server[0].url`) when one is known.
pub(crate) fn invalid_at(
    path: &Path,
    text: &str,
    span: &std::ops::Range<usize>,
    key: Option<String>,
    message: String,
) -> ConfigError {
    let (line, column) = line_and_column(text, span.start);
    ConfigError::Invalid {
        path: path.to_owned(),
        line,
        column,
        key,
        message,
    }
}

/// The line and column (both from 1) of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(1, |last| last.chars().count() + 1);
    (line, column)
}

#[cfg(test)]
mod tests;
