//! Lazy servers: mounted servers whose tools stay out of `tools/list`, reached through four
//! meta-tools that are ordinary registry tools.
//!
//! A client that lists every tool of every mounted server pays for each description in its
//! context, and MCP 2026-07-28 says that a tool list must not vary by connection nor as a side
//! effect of other requests. So a lazy server's tools are registered unlisted
//! ([`Exposure::Unlisted`]) and found through:
//! - `mcp_search(query)`: the lazy servers and tools matching a query, one line each (and
//!   the matching tools of the listed mounted servers, marked as listed);
//! - `mcp_describe(server, tool)`: one tool's full definition;
//! - `mcp_call(server, tool, arguments)`: a call of a mounted tool, as if it were listed;
//! - `mcp_connect(server)`: the server's tools in this session's own list, for sessions that
//!   have one (MCP 2025-11-25 sessions, in-process agents that open one); refused elsewhere.
//!
//! **Gates.** Every meta-tool is a `read` tool, and `mcp_call` makes a nested
//! [`ToolRegistry::invoke`] of the target with the caller's own context (org, user, session,
//! correlation id, roles, initiator, confirmation, agent type, thread, project, idempotency
//! key, progress). A `read` meta-tool is open to every initiator, so it adds no category gate;
//! it weakens none either, because the target's category, permission, agent scope, input
//! schema, idempotency and proposals are checked by the nested call exactly as for a direct
//! one. The meta-tools' own permission is [`LAZY_PERMISSION`], which the roles that may find
//! lazy servers need; `org_id` anywhere in the params is refused at the outer call, before
//! anything else runs. Only tools of mounted servers can be called through `mcp_call`:
//! native tools are listed, so it has nothing to add for them.
//!
//! **Audit.** An `mcp_call` leaves two records with the same correlation id: the target's
//! (the same record as a direct call's) and the meta-tool's own, whose input digest covers the
//! server, the tool and the arguments, and whose outcome repeats the target's.
//!
//! Search and description show only the tools the caller's roles may call, as `tools/list`
//! does. The meta-tools hold the registry weakly: they live in its table.

use std::{
    collections::BTreeMap,
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchboard_core::{
    BoxFuture, CallContext, Caller, Category, InvokeError, Role, ToolContent, ToolContext,
    ToolDescriptor, ToolError, ToolOrigin, schema::schema_of,
};
use switchboard_registry::{
    Exposure, RegistryError, RuntimeTool, RuntimeToolSpec, ToolRegistry, WeakToolRegistry,
};

use crate::{config::MountsConfig, tool::mounted_name};

/// The name of the meta-tool that searches the lazy servers' tools.
pub const MCP_SEARCH: &str = "mcp_search";
/// The name of the meta-tool that describes one mounted tool.
pub const MCP_DESCRIBE: &str = "mcp_describe";
/// The name of the meta-tool that calls one mounted tool.
pub const MCP_CALL: &str = "mcp_call";
/// The name of the meta-tool that lists a lazy server's tools in the caller's session.
pub const MCP_CONNECT: &str = "mcp_connect";

/// The permission of the meta-tools. The built-in `admin` role has it; grant it to the roles
/// that may find and reach lazy servers (the target tool's own permission still applies).
pub const LAZY_PERMISSION: &str = "mounts.lazy";

/// The code of the error of a meta-tool naming a server that is not mounted (or not lazy, for
/// `mcp_connect`).
pub const MOUNTED_SERVER_UNKNOWN: &str = "mounted_server_unknown";
/// The code of the error of a meta-tool naming a tool its server does not have (or that the
/// caller may not call).
pub const MOUNTED_TOOL_UNKNOWN: &str = "mounted_tool_unknown";
/// The code of the error of `mcp_connect` in a session whose tool list cannot change.
pub const SESSION_LIST_FIXED: &str = "session_tool_list_fixed";
/// The code of the error of `mcp_connect` to a server the session already lists.
pub const ALREADY_CONNECTED: &str = "mounted_server_already_connected";

/// Every meta-tool's name.
pub(crate) const META_TOOLS: [&str; 4] = [MCP_SEARCH, MCP_DESCRIBE, MCP_CALL, MCP_CONNECT];

/// The registry domain of the meta-tools.
const META_DOMAIN: &str = "mounts";

/// The most lines one search answers.
const MAX_SEARCH_LINES: usize = 50;

/// `mcp_search`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchInput {
    /// Words to look for in the servers' ids and descriptions and the tools' names, titles
    /// and descriptions (case-insensitive; every word must match). Empty: everything.
    query: String,
}

/// `mcp_describe`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DescribeInput {
    /// The mounted server's id.
    server: String,
    /// The tool's name on that server (as `mcp_search` shows it after the `/`).
    tool: String,
}

/// `mcp_call`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CallInput {
    /// The mounted server's id.
    server: String,
    /// The tool's name on that server.
    tool: String,
    /// The tool's arguments, as its input schema (`mcp_describe`) says.
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// `mcp_connect`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConnectInput {
    /// The lazy server's id.
    server: String,
}

/// The mounted servers as the meta-tools see them.
#[derive(Debug)]
pub(crate) struct Directory {
    registry: WeakToolRegistry,
    /// Every configured server's id, and whether it is lazy.
    configured: BTreeMap<String, bool>,
    /// The lazy servers that started, with their one-line descriptions.
    started: RwLock<BTreeMap<String, String>>,
}

impl Directory {
    /// The directory of `config`'s servers, none started yet.
    pub(crate) fn new(registry: &ToolRegistry, config: &MountsConfig) -> Self {
        Self {
            registry: registry.downgrade(),
            configured: config
                .servers
                .iter()
                .map(|server| (server.id.clone(), server.lazy))
                .collect(),
            started: RwLock::default(),
        }
    }

    /// Notes that the lazy server `id` started, introduced by `description`.
    pub(crate) fn started(&self, id: &str, description: String) {
        self.started
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned(), description);
    }

    /// The lazy servers that started, by id, with their descriptions.
    pub(crate) fn lazy_servers(&self) -> BTreeMap<String, String> {
        self.started
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn registry(&self) -> Result<ToolRegistry, ToolError> {
        self.registry.upgrade().ok_or_else(|| {
            ToolError::new(
                ToolError::DOMAIN_UNAVAILABLE,
                "the registry has stopped".to_owned(),
            )
        })
    }

    /// `server` if it is a mounted server, else the error naming the ones there are.
    fn mounted<'a>(&self, server: &'a str) -> Result<&'a str, ToolError> {
        if self.configured.contains_key(server) {
            return Ok(server);
        }
        Err(ToolError::new(
            MOUNTED_SERVER_UNKNOWN,
            format!(
                "no mounted server `{server}`; the lazy servers are {} (mcp_search finds their \
                 tools)",
                listing(self.lazy_servers().keys())
            ),
        ))
    }
}

/// `ids` as `a, b` in backquotes, or `none`.
fn listing<'a>(ids: impl Iterator<Item = &'a String>) -> String {
    let ids: Vec<String> = ids.map(|id| format!("`{id}`")).collect();
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

/// The one line introducing a lazy server: the first line of its `instructions`, else its
/// `serverInfo.title`, else the configured `description`, else a line saying it has none.
pub(crate) fn one_line_description(
    instructions: Option<&str>,
    title: Option<&str>,
    configured: Option<&str>,
) -> String {
    let first_line = |text: &str| {
        text.lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(|line| clamp(line, 200))
    };
    instructions
        .and_then(first_line)
        .or_else(|| title.and_then(first_line))
        .or_else(|| configured.and_then(first_line))
        .unwrap_or_else(|| "no description".to_owned())
}

/// `text`, cut to at most `max` characters (with `…` when cut).
fn clamp(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// The paragraph of the MCP server's `instructions` that introduces `servers` (id →
/// description); `None` without lazy servers.
pub(crate) fn instructions(servers: &BTreeMap<String, String>) -> Option<String> {
    if servers.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Lazy MCP servers: their tools are not in tools/list. Find them with \
         mcp_search(query), read one with mcp_describe(server, tool), and call it with \
         mcp_call(server, tool, arguments); on a 2025-11-25 session, mcp_connect(server) adds \
         a server's tools to this session's list.",
    );
    for (id, description) in servers {
        text.push_str(&format!("\n- {id}: {description}"));
    }
    Some(text)
}

/// The four meta-tools, over `directory`; `mcp_call` may take up to `call_timeout`.
pub(crate) fn specs(directory: &Arc<Directory>, call_timeout: Duration) -> Vec<RuntimeToolSpec> {
    let spec = |meta: Meta,
                name: &'static str,
                title: &'static str,
                description: &'static str,
                input_schema: Value,
                timeout: Option<Duration>| RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: name.into(),
            title: Some(title.into()),
            domain: META_DOMAIN.into(),
            category: Category::Read,
            permission: LAZY_PERMISSION.into(),
            description: description.into(),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout,
            input_schema: Arc::new(input_schema),
            output_schema: Some(Arc::new(schema_of::<ToolContent>().to_value())),
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "the lazy mounted MCP servers".to_owned(),
            },
        },
        tool: Arc::new(MetaTool {
            meta,
            directory: Arc::clone(directory),
        }),
        exposure: Exposure::Listed,
    };
    vec![
        spec(
            Meta::Search,
            MCP_SEARCH,
            "Search lazy MCP servers",
            "Finds the tools of the lazy mounted MCP servers (whose tools are not listed) \
             matching a query: one line per server and per tool, `server/tool: what it does`.",
            schema_of::<SearchInput>().to_value(),
            None,
        ),
        spec(
            Meta::Describe,
            MCP_DESCRIBE,
            "Describe a mounted tool",
            "Shows one mounted tool's full definition: its description, input and output \
             schemas, category and permission. Call it before mcp_call to know the arguments.",
            schema_of::<DescribeInput>().to_value(),
            None,
        ),
        spec(
            Meta::Call,
            MCP_CALL,
            "Call a mounted tool",
            "Calls one tool of a mounted MCP server with its arguments, through every check a \
             direct call passes (category, permission, input schema, approvals), and answers \
             what the tool answers.",
            schema_of::<CallInput>().to_value(),
            Some(call_timeout),
        ),
        spec(
            Meta::Connect,
            MCP_CONNECT,
            "Connect a lazy MCP server",
            "Adds a lazy server's tools to this session's tools/list (MCP 2025-11-25 sessions \
             only; a tools/list_changed notification follows). Elsewhere use mcp_call.",
            schema_of::<ConnectInput>().to_value(),
            None,
        ),
    ]
}

/// Which meta-tool a body is.
#[derive(Debug, Clone, Copy)]
enum Meta {
    Search,
    Describe,
    Call,
    Connect,
}

/// One meta-tool's body.
struct MetaTool {
    meta: Meta,
    directory: Arc<Directory>,
}

impl RuntimeTool for MetaTool {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let directory = &self.directory;
            let registry = directory.registry()?;
            let caller = ctx.caller();
            let text = match self.meta {
                Meta::Search => {
                    let input: SearchInput = parse(params)?;
                    search(&registry, directory, &caller.roles, &input.query)
                }
                Meta::Describe => {
                    let input: DescribeInput = parse(params)?;
                    let server = directory.mounted(&input.server)?;
                    let descriptor = find_tool(&registry, &caller.roles, server, &input.tool)?;
                    describe(server, &input.tool, &descriptor)
                }
                Meta::Call => {
                    let input: CallInput = parse(params)?;
                    let server = directory.mounted(&input.server)?;
                    return call(&registry, caller, server, &input.tool, input.arguments).await;
                }
                Meta::Connect => {
                    let input: ConnectInput = parse(params)?;
                    connect(&registry, directory, caller, &input.server)?
                }
            };
            content(text)
        })
    }
}

fn parse<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, ToolError> {
    serde_json::from_value(params)
        .map_err(|error| ToolError::new("invalid_input", format!("invalid params: {error}")))
}

fn content(text: String) -> Result<Value, ToolError> {
    serde_json::to_value(ToolContent::text(text))
        .map_err(|error| ToolError::new("invalid_output", error.to_string()))
}

/// Whether every word of `query` (lowercased) is in one of `fields` (lowercased).
pub(crate) fn matches(query: &str, fields: &[&str]) -> bool {
    let haystack = fields.join("\n").to_lowercase();
    query
        .split_whitespace()
        .all(|word| haystack.contains(&word.to_lowercase()))
}

/// The lazy servers and their tools that `roles` may call and that match `query`, one line
/// each; then the matching tools of the other mounted servers, saying that they are listed.
fn search(registry: &ToolRegistry, directory: &Directory, roles: &[Role], query: &str) -> String {
    let servers = directory.lazy_servers();
    let mut lines = Vec::new();
    for (id, description) in &servers {
        let tools = permitted_tools(registry, roles, id);
        if matches(query, &[id, description]) {
            lines.push(format!(
                "{id}: {description} (lazy server, {} tools)",
                tools.len()
            ));
        }
        lines.extend(tool_lines(id, &tools, query, |_| String::new()));
    }
    let listed = directory.configured.iter().filter(|(_, lazy)| !**lazy);
    for (id, _) in listed {
        let tools = permitted_tools(registry, roles, id);
        lines.extend(tool_lines(id, &tools, query, |tool| {
            format!(" (listed: call `{}` directly)", tool.name)
        }));
    }
    if lines.is_empty() {
        return format!(
            "nothing matches `{query}` in the lazy servers ({}); try fewer or other words",
            listing(servers.keys())
        );
    }
    let more = lines.len().saturating_sub(MAX_SEARCH_LINES);
    lines.truncate(MAX_SEARCH_LINES);
    if more > 0 {
        lines.push(format!("… and {more} more: add words to narrow the search"));
    }
    lines.join("\n")
}

/// The tools of server `id` that `roles` may call, leaving out withheld ones (their
/// definitions are what a person has not accepted, or what the verifier flagged).
fn permitted_tools(registry: &ToolRegistry, roles: &[Role], id: &str) -> Vec<Arc<ToolDescriptor>> {
    registry
        .list_by_domain(id)
        .into_iter()
        .filter(|tool| findable(registry, roles, &tool.name))
        .collect()
}

/// Whether `roles` may call the tool `name` and it is not withheld.
fn findable(registry: &ToolRegistry, roles: &[Role], name: &str) -> bool {
    registry.exposure(name) != Some(Exposure::Withheld)
        && registry.find_permitted(name, roles).is_some()
}

/// `server/tool: first line of its description{suffix}` for each of `tools` matching `query`.
fn tool_lines(
    id: &str,
    tools: &[Arc<ToolDescriptor>],
    query: &str,
    suffix: impl Fn(&ToolDescriptor) -> String,
) -> Vec<String> {
    let prefix = mounted_name(id, "");
    tools
        .iter()
        .filter_map(|tool| {
            let remote = tool.name.strip_prefix(&prefix).unwrap_or(&tool.name);
            let title = tool.title.as_deref().unwrap_or_default();
            if !matches(query, &[id, remote, title, &tool.description]) {
                return None;
            }
            let summary = tool
                .description
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or(title);
            Some(format!(
                "{id}/{remote}: {}{}",
                clamp(summary, 200),
                suffix(tool)
            ))
        })
        .collect()
}

/// `server`'s tool `tool`, if `roles` may call it; else the error with the names it may mean.
fn find_tool(
    registry: &ToolRegistry,
    roles: &[Role],
    server: &str,
    tool: &str,
) -> Result<Arc<ToolDescriptor>, ToolError> {
    let name = mounted_name(server, tool);
    if findable(registry, roles, &name)
        && let Some(descriptor) = registry.find_permitted(&name, roles)
    {
        return Ok(descriptor);
    }
    let prefix = mounted_name(server, "");
    let similar: Vec<String> = registry
        .similar_names(&name)
        .into_iter()
        .filter(|similar| findable(registry, roles, similar))
        .filter_map(|similar| {
            similar
                .strip_prefix(&prefix)
                .map(|remote| format!("`{remote}`"))
        })
        .collect();
    let hint = if similar.is_empty() {
        format!("mcp_search lists the tools of `{server}`")
    } else {
        format!("did you mean {}?", similar.join(", "))
    };
    Err(ToolError::new(
        MOUNTED_TOOL_UNKNOWN,
        format!("the mounted server `{server}` has no tool `{tool}` that you may call; {hint}"),
    ))
}

/// One tool's definition, as JSON text.
fn describe(server: &str, tool: &str, descriptor: &ToolDescriptor) -> String {
    let definition = json!({
        "server": server,
        "tool": tool,
        "name": descriptor.name,
        "title": descriptor.title,
        "description": descriptor.description,
        "input_schema": *descriptor.input_schema,
        "output_schema": descriptor.output_schema.as_deref(),
        "category": descriptor.category,
        "permission": descriptor.permission,
    });
    serde_json::to_string_pretty(&definition).unwrap_or_else(|_| definition.to_string())
}

/// Calls `server`'s `tool` as `caller`, through the registry's whole path.
async fn call(
    registry: &ToolRegistry,
    caller: &Caller,
    server: &str,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Value, ToolError> {
    let name = mounted_name(server, tool);
    let context = CallContext::from(caller);
    match registry
        .invoke(&name, Value::Object(arguments), &context)
        .await
    {
        Ok(output) => Ok(output),
        Err(error @ InvokeError::ToolNotFound { .. }) => {
            Err(find_tool(registry, &caller.roles, server, tool)
                .err()
                .unwrap_or_else(|| ToolError::new(MOUNTED_TOOL_UNKNOWN, error.to_string())))
        }
        Err(InvokeError::ToolFailed { error, .. }) => Err(error),
        Err(error) => Err(ToolError::new(error.kind().as_str(), error.to_string())),
    }
}

/// Lists `server`'s tools in `caller`'s session.
fn connect(
    registry: &ToolRegistry,
    directory: &Directory,
    caller: &Caller,
    server: &str,
) -> Result<String, ToolError> {
    let lazy = directory.lazy_servers();
    if !lazy.contains_key(server) {
        let why = match directory.configured.get(server) {
            Some(false) => "is not lazy: its tools are already in tools/list",
            Some(true) => "did not start",
            None => "is not mounted",
        };
        return Err(ToolError::new(
            MOUNTED_SERVER_UNKNOWN,
            format!(
                "the server `{server}` {why}; the lazy servers are {}",
                listing(lazy.keys())
            ),
        ));
    }
    match registry.reveal_domain(caller.session_id.as_str(), server) {
        Ok(()) => {}
        Err(RegistryError::SessionNotOpen { .. }) => {
            return Err(ToolError::new(
                SESSION_LIST_FIXED,
                format!(
                    "this session's tool list cannot change (an MCP 2026-07-28 client's list \
                     does not vary by connection, and this caller opened no session list of \
                     its own); call the tools of `{server}` with mcp_call(server, tool, \
                     arguments) instead"
                ),
            ));
        }
        Err(RegistryError::AlreadyRevealed { .. }) => {
            return Err(ToolError::new(
                ALREADY_CONNECTED,
                format!(
                    "this session is already connected to `{server}`: its tools are in \
                     tools/list (list again if you have not since)"
                ),
            ));
        }
        Err(error) => {
            return Err(ToolError::new(
                ToolError::DOMAIN_UNAVAILABLE,
                error.to_string(),
            ));
        }
    }
    let names: Vec<String> = registry
        .list_permitted_in(&caller.roles, caller.session_id.as_str())
        .iter()
        .filter(|tool| tool.domain == server)
        .map(|tool| tool.name.to_string())
        .collect();
    Ok(format!(
        "connected `{server}`: this session's tools/list now has its {} tools ({}); a \
         tools/list_changed notification follows",
        names.len(),
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests;
