//! Errors of starting and changing the registry (not of calls: those are `InvokeError`).

/// Why the registry cannot start, or cannot take a change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools have the same name.
    #[error(
        "two tools are named `{name}`: one at {first}, one at {second}; tool names must be unique, rename one"
    )]
    DuplicateTool {
        /// The name.
        name: String,
        /// Where the first is defined.
        first: String,
        /// Where the second is defined.
        second: String,
    },
    /// Two crates declare the same domain.
    #[error(
        "two crates declare the domain `{name}` (states `{first}` and `{second}`); domain names must be unique"
    )]
    DuplicateDomain {
        /// The domain.
        name: String,
        /// The first state type.
        first: String,
        /// The second state type.
        second: String,
    },
    /// A tool names a domain nobody declares.
    #[error(
        "`{tool}` ({location}) names the domain `{domain}`, which no linked crate declares; declare it with `domain!` or fix the name (known: {known})"
    )]
    UnknownDomain {
        /// The tool.
        tool: String,
        /// Where it is defined.
        location: String,
        /// The domain it names.
        domain: String,
        /// The domains that exist.
        known: String,
    },
    /// A remote domain names a domain nobody declares.
    #[error(
        "the remote domain `{domain}` is not a domain any linked crate declares; a remote domain is served by another registry but its tools are linked here: link the domain's crate or fix the name (known: {known})"
    )]
    UnknownRemoteDomain {
        /// The domain named.
        domain: String,
        /// The domains that exist.
        known: String,
    },
    /// A tool's domain type is not the one that declared the domain of that name.
    #[error(
        "`{tool}` ({location}) expects another state than the one the `{domain}` domain declares: its domain type is not the `domain!` of that name; name the declared domain type"
    )]
    DomainStateMismatch {
        /// The tool.
        tool: String,
        /// Where it is defined.
        location: String,
        /// The domain's name.
        domain: String,
    },
    /// A run-time tool names a domain that has state, or one served by another registry.
    #[error(
        "the run-time tool `{tool}` names the domain `{domain}`, which has state or is served by another registry; run-time tools run in domains without state in this registry: give it a domain of its own"
    )]
    StatefulDomain {
        /// The tool.
        tool: String,
        /// The domain it names.
        domain: String,
    },
    /// A tool's input schema has an `org_id` property somewhere.
    #[error(
        "`{tool}` accepts an `org_id` in its input (schema path `{path}`); the organisation only ever comes from the call context: remove the field"
    )]
    OrgIdInSchema {
        /// The tool.
        tool: String,
        /// Where in the schema.
        path: String,
    },
    /// A tool's input schema cannot be used.
    #[error("`{tool}` has an unusable input schema: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A tool name does not fit MCP's rule, `^[a-zA-Z0-9_.-]{{1,128}}$` (`#[tool]` holds linked
    /// tools to the stricter `^[a-zA-Z0-9_-]{{1,64}}$`).
    #[error("invalid tool name `{0}`: use 1 to 128 characters from [a-zA-Z0-9_.-]")]
    InvalidToolName(String),
    /// An actor could not be started.
    #[error("could not start the {what} actor: {reason}")]
    Spawn {
        /// Which actor.
        what: String,
        /// Why.
        reason: String,
    },
    /// The registry actor has stopped.
    #[error("the registry has stopped")]
    Stopped,
    /// A `tool_policy!` names a tool that is not linked.
    #[error(
        "the tool policy at {location} names `{tool}`, which no linked crate defines; fix the name or remove the policy"
    )]
    PolicyForUnknownTool {
        /// The name it gives.
        tool: String,
        /// Where the policy is declared.
        location: String,
    },
    /// Two `tool_policy!`s name the same tool.
    #[error(
        "two tool policies name `{tool}`: one at {first}, one at {second}; a tool has at most one policy, merge them"
    )]
    DuplicatePolicy {
        /// The tool.
        tool: String,
        /// Where the first is declared.
        first: String,
        /// Where the second is declared.
        second: String,
    },
    /// A session asked to reveal tools without an open list of its own.
    #[error(
        "the session `{session}` has no tool list of its own, so its list cannot change (MCP \
         2026-07-28 sessions never have one: their tool list does not vary by connection); call \
         the tools by name instead"
    )]
    SessionNotOpen {
        /// The session.
        session: String,
    },
    /// A session asked to reveal a domain it already lists.
    #[error("the session `{session}` already lists the tools of `{domain}`")]
    AlreadyRevealed {
        /// The session.
        session: String,
        /// The domain.
        domain: String,
    },
    /// A tool carries a tag that is not [a valid tag](switchboard_core::is_valid_tag).
    #[error("`{tool}` carries the tag `{tag}`, which is not a valid tag: use {format}", format = switchboard_core::TAG_FORMAT)]
    InvalidTag {
        /// The tool.
        tool: String,
        /// The tag.
        tag: String,
    },
    /// A selector of tools to switch is not written `tool:NAME`, `domain:NAME` or `tag:NAME`.
    #[error("invalid tool selector `{selector}`: {reason}")]
    InvalidSelector {
        /// The selector as given.
        selector: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A switch names no registered tool, enabled or disabled.
    #[error("no tool matches `{selector}`{}", did_you_mean(.similar))]
    NoToolSelected {
        /// The selector.
        selector: crate::switches::Selector,
        /// Selectors of the same kind that match tools and look like it.
        similar: Vec<String>,
    },
    /// A switch was not made: the audit log refused its record (its store is failing under
    /// strict durability, or its queue is full), and no switch is made unaudited.
    #[error(
        "the switch of `{selector}` was not made: its audit record cannot be written ({reason}); \
         switch again once the audit store is back"
    )]
    SwitchNotAudited {
        /// The selector.
        selector: crate::switches::Selector,
        /// Why the record cannot be written.
        reason: String,
    },
    /// A linked prompt cannot be served: a bad name, an unknown domain, or arguments that are
    /// not strings.
    #[error("the prompt `{prompt}` ({location}) cannot be served: {reason}")]
    InvalidPrompt {
        /// The prompt.
        prompt: String,
        /// Where it is declared.
        location: String,
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// Two prompts have the same name.
    #[error(
        "two prompts are named `{name}`: one at {first}, one at {second}; prompt names must be unique, rename one"
    )]
    DuplicatePrompt {
        /// The name.
        name: String,
        /// Where the first is declared.
        first: String,
        /// Where the second is declared.
        second: String,
    },
}

/// `; did you mean `a` or `b`?`, or nothing.
fn did_you_mean(similar: &[String]) -> String {
    match similar {
        [] => String::new(),
        [only] => format!("; did you mean `{only}`?"),
        [first @ .., last] => {
            let first: Vec<String> = first.iter().map(|name| format!("`{name}`")).collect();
            format!("; did you mean {} or `{last}`?", first.join(", "))
        }
    }
}
