//! Errors that cross the boundary between a caller and the runtime.
//!
//! [`ToolError`] is what a tool body returns when it fails; domains convert their own error
//! enums into it with `From`, never by formatting strings. [`InvokeError`] is everything a
//! caller of the runtime can get back, and [`ErrorKind`] is its stable, snake_case name: the
//! CLI's `--json` output, the MCP layer and scripts all match on it, so a kind is never renamed.

use std::{borrow::Cow, fmt, time::Duration};

use serde::{Deserialize, Serialize, Serializer, ser::SerializeMap};
use serde_json::{Map, Value};

use crate::{
    category::Category,
    context::Initiator,
    ids::{ActionId, AgentType, IdempotencyKey, ProposalId, Role, ThreadId},
};

/// The stable name of an error, as scripts and transports see it.
///
/// The names are derived (snake_case of the variant) for serde and strum alike; the variants
/// are listed in the order of the steps of a call that produce them.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(
    serialize_all = "snake_case",
    parse_err_ty = UnknownErrorKind,
    parse_err_fn = UnknownErrorKind::from_name
)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No tool has that name.
    ToolNotFound,
    /// The call context lacks required fields.
    MissingContext,
    /// The params carry an `org_id`, which only the context may supply.
    OrgIdNotAllowed,
    /// The tool's category forbids this kind of caller.
    CategoryDenied,
    /// The caller's roles do not grant the tool's permission.
    PermissionDenied,
    /// The params do not match the tool's input type.
    InvalidInput,
    /// The tool ran and returned an error.
    ToolFailed,
    /// The tool panicked; its domain keeps serving.
    ToolPanicked,
    /// The tool did not finish within its timeout.
    Timeout,
    /// The tool's domain is not running.
    DomainUnavailable,
    /// The audit record of the call could not be written.
    AuditFailed,
    /// No route matches an utterance (produced by the orchestrator).
    NoRoute,
    /// The caller stopped waiting before the call finished (recorded in the audit trail; the
    /// caller itself is gone and sees nothing).
    Cancelled,
    /// The call names a thread the user does not own (or that does not exist).
    ThreadNotOwned,
    /// The agent type making the call may not use this tool (agent scope table).
    ToolScopeDenied,
    /// A check the tool's domain declared (a gate) refused the call.
    GateRefused,
    /// A layer around the registry's calls (cross-cutting policy the service added) refused
    /// the call before it ran.
    LayerRefused,
    /// A rate limit refused the call before it ran; it may succeed after the retry-after.
    RateLimited,
    /// A mutating tool needs scope ids (thread, project) the context lacks.
    MutationScopeMissing,
    /// A mutating call carries no idempotency key and the runtime is set to require one.
    IdempotencyKeyRequired,
    /// The idempotency key was used before for another tool or other params.
    IdempotencyConflict,
    /// The mutation was stored as a proposal; a human must approve it.
    ApprovalRequired,
    /// No proposal with that id exists in the caller's organisation.
    ProposalNotFound,
    /// The proposal was already approved, rejected, withdrawn or has expired.
    ProposalClosed,
    /// The caller may not decide on proposals (an agent, never a human principal).
    ApprovalDenied,
    /// A store the runtime keeps approvals in failed; nothing was changed.
    StoreUnavailable,
    /// The audit store is failing, so the call was refused before it ran (nothing was done):
    /// under strict durability no call runs that cannot be audited.
    AuditUnavailable,
}

impl ErrorKind {
    /// Every kind, in the order of the steps of a call that produce them.
    pub const ALL: &'static [ErrorKind] = <ErrorKind as strum::VariantArray>::VARIANTS;

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A string that names no error kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown error kind `{0}`: expected a stable snake_case kind such as `timeout`")]
pub struct UnknownErrorKind(pub String);

impl UnknownErrorKind {
    fn from_name(name: &str) -> Self {
        Self(name.to_owned())
    }
}

/// One reason why params do not fit a tool's input.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FieldError {
    /// Where in the params, as a JSON Pointer (`/range/from`); empty for the params as a whole.
    pub path: String,
    /// What is wrong there, in words a model or a person can act on.
    pub reason: String,
}

impl FieldError {
    /// Makes a field error.
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The error of a property the object at `object_path` (a JSON Pointer) does not take:
    /// it points at the property itself (`/items/0/nmae`), names it, and names the field of
    /// `known` that was probably meant when one is close ("unknown field `titel`; did you
    /// mean `title`?"), else every field the object takes.
    pub fn unknown_field<'k>(
        object_path: &str,
        field: &str,
        known: impl IntoIterator<Item = &'k str>,
    ) -> Self {
        let mut known: Vec<&str> = known.into_iter().collect();
        known.sort_unstable();
        known.dedup();
        let closest = known
            .iter()
            .map(|name| (strsim::jaro_winkler(field, name), *name))
            .filter(|(score, _)| *score >= SIMILAR_FIELD)
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)));
        let reason = match (closest, known.as_slice()) {
            (Some((_, meant)), _) => format!("unknown field `{field}`; did you mean `{meant}`?"),
            (None, []) => format!("unknown field `{field}`; this object takes no fields"),
            (None, names) => format!(
                "unknown field `{field}`; the fields here are {}",
                names
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut path = String::with_capacity(object_path.len() + field.len() + 1);
        path.push_str(object_path);
        path.push('/');
        // JSON Pointer escaping (RFC 6901): `~` first, then `/`.
        path.push_str(&field.replace('~', "~0").replace('/', "~1"));
        Self { path, reason }
    }
}

/// How alike (Jaro-Winkler, 0 to 1) an unknown field and a known one must be for the known one
/// to be suggested: close enough for a typo or a swapped pair of letters, not for another word.
const SIMILAR_FIELD: f64 = 0.8;

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "(params): {}", self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

/// A failure reported by a tool body.
///
/// `code` is a stable snake_case name chosen by the domain (`shift_not_found`); `message` is
/// safe to show to the caller. Domains implement `From<TheirError> for ToolError`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    code: Cow<'static, str>,
    message: String,
    /// Whether the same call may succeed if tried again (a busy upstream, a lost lock):
    /// what a workflow's default retrier retries. Absent from the JSON forms unless set.
    #[serde(skip_serializing_if = "is_false")]
    retryable: bool,
    /// Whether the change the call was making may or may not have been made (the connection
    /// to the system that makes it ended mid-call): what a workflow pauses on rather than
    /// retries or undoes. Absent from the JSON forms unless set.
    #[serde(skip_serializing_if = "is_false")]
    in_doubt: bool,
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

impl ToolError {
    /// The code of the error a write gets when its domain's actor is gone; the registry reports
    /// it as `domain_unavailable`.
    pub const DOMAIN_UNAVAILABLE: &'static str = "domain_unavailable";

    /// Makes a tool error with a stable code and a message.
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            retryable: false,
            in_doubt: false,
        }
    }

    /// Marks the error retryable: the same call may succeed if tried again (a busy upstream,
    /// a lost lock), so a workflow's retrier that matches retryable tool errors retries it.
    #[must_use]
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// Whether the tool marked the error retryable.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// Marks the error in doubt: the call's change may or may not have been made (it was
    /// sent, and the answer was lost), so neither trying it again nor undoing it is safe until
    /// someone checks the target system. A workflow step failing so pauses for a person.
    #[must_use]
    pub fn in_doubt(mut self) -> Self {
        self.in_doubt = true;
        self
    }

    /// Whether the tool marked the error in doubt.
    pub fn is_in_doubt(&self) -> bool {
        self.in_doubt
    }

    /// The stable code.
    pub fn code(&self) -> &str {
        &self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Everything a call through the runtime can fail with.
///
/// The checks run in a fixed order (see `ARCHITECTURE.md`), so the error says which check
/// refused the call first. Every variant is written to the audit trail.
///
/// Two JSON forms are derived from the fields below, both tagged with the variant's
/// [`ErrorKind`] name under `kind`:
/// - the *record* ([`to_record`](Self::to_record), [`from_record`](Self::from_record)): every
///   field, so that a stored first result rebuilds the very same error;
/// - the *wire form* (`Serialize`, [`details`](Self::details)): the record without the fields
///   that only the record needs (free-text reasons, a tool error's or a panic's own message,
///   the exact timeout),
///   plus the `message`.
///
/// `#[serde(remote = "Self")]` makes the derive generate the record's `InvokeError::serialize`
/// and `InvokeError::deserialize` as associated functions, so that the `Serialize` trait is free
/// for the wire form.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum InvokeError {
    /// No tool has that name.
    #[error("no tool is named `{name}`{}", suggest(.suggestions))]
    ToolNotFound {
        /// The name asked for.
        #[serde(rename = "tool")]
        name: String,
        /// Registered names that look alike.
        suggestions: Vec<String>,
    },

    /// The call context lacks required fields.
    #[error(
        "the call context is missing {}: the runtime takes these from the caller's session, \
         never from params; supply them when building the context",
        .fields.join(", ")
    )]
    MissingContext {
        /// The missing fields, in the order `org_id`, `user_id`, `session_id`, `correlation_id`.
        #[serde(deserialize_with = "crate::error_record::fields::context_fields")]
        fields: Vec<&'static str>,
    },

    /// The params carry an `org_id`.
    #[error(
        "params may not contain `org_id` (found at `{path}`): the organisation is always taken \
         from the call context; remove the field"
    )]
    OrgIdNotAllowed {
        /// JSON Pointer of the offending key.
        path: String,
    },

    /// The tool's category forbids this caller.
    #[error("`{tool}` is {} {category} tool and {reason}", article(*.category))]
    CategoryDenied {
        /// The tool.
        tool: String,
        /// Its category.
        category: Category,
        /// Who initiated the call.
        initiator: Initiator,
        /// Why, and what would make the call allowed.
        reason: String,
    },

    /// The caller's roles do not grant the tool's permission.
    #[error(
        "calling `{tool}` needs permission `{permission}`, which none of the roles [{}] grants; \
         ask an administrator for a role that does",
        join_roles(.roles)
    )]
    PermissionDenied {
        /// The tool.
        tool: String,
        /// The permission it needs.
        permission: String,
        /// The roles the caller holds.
        roles: Vec<Role>,
    },

    /// The params do not match the tool's input.
    #[error(
        "invalid input for `{tool}`: {}",
        .errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    InvalidInput {
        /// The tool.
        tool: String,
        /// Every problem found, not only the first.
        errors: Vec<FieldError>,
    },

    /// The tool returned an error.
    #[error("`{tool}` failed: {error}")]
    ToolFailed {
        /// The tool.
        tool: String,
        /// What it reported.
        #[source]
        #[serde(flatten, with = "crate::error_record::fields::tool_error")]
        error: ToolError,
    },

    /// The tool panicked.
    #[error("`{tool}` panicked: {message}; its domain keeps serving, and the panic is audited")]
    ToolPanicked {
        /// The tool.
        tool: String,
        /// The panic payload, if it was a string.
        #[serde(rename = "panic_message")]
        message: String,
    },

    /// The tool ran past its timeout.
    #[error(
        "`{tool}` did not finish within {} ms and was stopped; retry, or raise its timeout",
        .after.as_millis()
    )]
    Timeout {
        /// The tool.
        tool: String,
        /// The timeout that elapsed.
        #[serde(flatten, with = "crate::error_record::fields::timeout")]
        after: Duration,
    },

    /// The tool's domain is not running.
    #[error(
        "the `{domain}` domain is not running ({reason}); `{tool}` cannot be called until it is back"
    )]
    DomainUnavailable {
        /// The tool.
        tool: String,
        /// Its domain.
        domain: String,
        /// Why the domain cannot take the call.
        reason: String,
    },

    /// The audit record could not be written, so the call is not acknowledged. The call may
    /// have run: the reason says what happened to it (a mutation's action id, its result kept
    /// under its idempotency key) and to its record.
    #[error("the audit record for `{tool}` could not be written: {reason}")]
    AuditFailed {
        /// The tool.
        tool: String,
        /// What happened to the call and to its record, and the store's error.
        reason: String,
    },

    /// The call names a thread its user does not own.
    #[error(
        "`{tool}` was called in thread `{thread_id}`, which is not yours (or does not exist); \
         call it from one of your own threads"
    )]
    ThreadNotOwned {
        /// The tool.
        tool: String,
        /// The thread named by the context.
        thread_id: ThreadId,
    },

    /// The agent type may not use this tool.
    #[error(
        "agent type `{}` may not use `{tool}` (agent scope table); ask an administrator to add \
         it to the agent's scope, or let a human make the call",
        .agent_type.as_ref().map_or("(none)", AgentType::as_str)
    )]
    ToolScopeDenied {
        /// The tool.
        tool: String,
        /// The agent type of the caller; absent for an agent that did not say.
        agent_type: Option<AgentType>,
    },

    /// A gate the tool's domain declared refused the call.
    #[error("`{tool}` cannot run now: {error}")]
    GateRefused {
        /// The tool.
        tool: String,
        /// What the gate reported (a stable code and a message).
        #[source]
        #[serde(flatten, with = "crate::error_record::fields::tool_error")]
        error: ToolError,
    },

    /// A layer around the registry's calls refused the call before it ran (nothing was done).
    #[error("`{tool}` was refused by the `{layer}` layer ({code}): {reason}")]
    LayerRefused {
        /// The tool.
        tool: String,
        /// The layer's name.
        layer: String,
        /// The layer's own stable snake_case code for the refusal.
        code: String,
        /// Why, in words a caller can act on.
        reason: String,
    },

    /// A rate limit refused the call before it ran (nothing was done, and no idempotency key
    /// was claimed).
    #[error(
        "`{tool}` was not run: the rate limit {limit} is used up; retry in {retry_after_ms} ms"
    )]
    RateLimited {
        /// The tool.
        tool: String,
        /// The limit that was reached, as configured (`60 calls per 60 s per user`).
        limit: String,
        /// How long to wait before the same call may be admitted, in milliseconds.
        retry_after_ms: u64,
    },

    /// A mutating tool needs scope ids the context lacks.
    #[error(
        "`{tool}` changes data and needs {} in the call context; the runtime takes them from the \
         session, never from params",
        .fields.join(", ")
    )]
    MutationScopeMissing {
        /// The tool.
        tool: String,
        /// The missing fields (`thread_id`, `project_id`).
        #[serde(deserialize_with = "crate::error_record::fields::scope_fields")]
        fields: Vec<&'static str>,
    },

    /// A mutating call has no idempotency key and the runtime requires one.
    #[error(
        "`{tool}` changes data and this runtime requires an idempotency key; set one in the call \
         context (the same key on every retry of the same action)"
    )]
    IdempotencyKeyRequired {
        /// The tool.
        tool: String,
    },

    /// The key was used before for another tool or other params — or, with `first_run`, it
    /// names this very action, which already ran, but this typed call cannot rebuild its
    /// first result (kept as JSON only: a JSON call ran it, or another process did).
    #[error("{}", conflict_message(.tool, .key, .first_run.as_ref()))]
    IdempotencyConflict {
        /// The tool.
        tool: String,
        /// The key.
        key: IdempotencyKey,
        /// The action the key names, when it is this call's own action that already ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_run: Option<ActionId>,
    },

    /// The mutation was stored as a proposal instead of running.
    #[error(
        "`{tool}` needs a human's approval: stored as proposal `{proposal_id}` (expires \
         {expires_at}): {summary}"
    )]
    ApprovalRequired {
        /// The tool.
        tool: String,
        /// The stored proposal.
        proposal_id: ProposalId,
        /// When it expires (RFC 3339).
        expires_at: String,
        /// What it would do.
        summary: String,
    },

    /// No such proposal in the caller's organisation.
    #[error("no proposal `{proposal_id}` exists in your organisation; list the pending proposals")]
    ProposalNotFound {
        /// The id asked for.
        proposal_id: ProposalId,
    },

    /// The proposal was already decided, or has expired, or was withdrawn.
    #[error("proposal `{proposal_id}` is {status}; a decision is final, propose again if needed")]
    ProposalClosed {
        /// The proposal.
        proposal_id: ProposalId,
        /// `approved`, `rejected`, `expired` or `withdrawn`.
        #[serde(deserialize_with = "crate::error_record::fields::proposal_status")]
        status: &'static str,
    },

    /// The caller may not decide on proposals.
    #[error("`{tool}` proposal `{proposal_id}` cannot be decided by this caller: {reason}")]
    ApprovalDenied {
        /// The proposal's target tool.
        tool: String,
        /// The proposal.
        proposal_id: ProposalId,
        /// Why, and who could.
        reason: String,
    },

    /// A store the runtime keeps state in (proposals) failed, so the call could not be
    /// answered truthfully; nothing was changed (a failed write leaves the store as it was).
    #[error(
        "the {store} store failed: {reason}; nothing was changed, so retry once it works again \
         (the server log has the details)"
    )]
    StoreUnavailable {
        /// Which store: `proposals`.
        store: String,
        /// What it was doing and why it failed.
        reason: String,
    },

    /// The audit store is failing (the audit writer is retrying records it did not take), so
    /// the call was refused before it ran: nothing was done, and no idempotency key was
    /// claimed.
    #[error(
        "`{tool}` was not run, because it could not be audited: {reason}; nothing was changed, \
         so retry once the audit store works again (the server log has the details)"
    )]
    AuditUnavailable {
        /// The tool.
        tool: String,
        /// Why the audit log refused the call.
        reason: String,
    },
}

fn article(category: Category) -> &'static str {
    match category {
        Category::Execute => "an",
        Category::Read | Category::Propose | Category::Restricted => "a",
    }
}

fn conflict_message(tool: &str, key: &IdempotencyKey, first_run: Option<&ActionId>) -> String {
    match first_run {
        None => format!(
            "the idempotency key `{key}` was already used for another call (another tool or \
             other params); use a new key for a new action"
        ),
        Some(action) => format!(
            "the idempotency key `{key}` names action `{action}` of `{tool}`, which already ran \
             and will not run again; its first result was kept as JSON only (a JSON call or \
             another process ran it), which a typed call cannot turn back into the output \
             type: read it with a JSON `invoke` of the same params and key"
        ),
    }
}

fn suggest(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        "; list the tools to see what exists".to_owned()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

fn join_roles(roles: &[Role]) -> String {
    roles
        .iter()
        .map(Role::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

impl InvokeError {
    /// The stable name of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            InvokeError::ToolNotFound { .. } => ErrorKind::ToolNotFound,
            InvokeError::MissingContext { .. } => ErrorKind::MissingContext,
            InvokeError::OrgIdNotAllowed { .. } => ErrorKind::OrgIdNotAllowed,
            InvokeError::CategoryDenied { .. } => ErrorKind::CategoryDenied,
            InvokeError::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            InvokeError::InvalidInput { .. } => ErrorKind::InvalidInput,
            InvokeError::ToolFailed { .. } => ErrorKind::ToolFailed,
            InvokeError::ToolPanicked { .. } => ErrorKind::ToolPanicked,
            InvokeError::Timeout { .. } => ErrorKind::Timeout,
            InvokeError::DomainUnavailable { .. } => ErrorKind::DomainUnavailable,
            InvokeError::AuditFailed { .. } => ErrorKind::AuditFailed,
            InvokeError::ThreadNotOwned { .. } => ErrorKind::ThreadNotOwned,
            InvokeError::ToolScopeDenied { .. } => ErrorKind::ToolScopeDenied,
            InvokeError::GateRefused { .. } => ErrorKind::GateRefused,
            InvokeError::LayerRefused { .. } => ErrorKind::LayerRefused,
            InvokeError::RateLimited { .. } => ErrorKind::RateLimited,
            InvokeError::MutationScopeMissing { .. } => ErrorKind::MutationScopeMissing,
            InvokeError::IdempotencyKeyRequired { .. } => ErrorKind::IdempotencyKeyRequired,
            InvokeError::IdempotencyConflict { .. } => ErrorKind::IdempotencyConflict,
            InvokeError::ApprovalRequired { .. } => ErrorKind::ApprovalRequired,
            InvokeError::ProposalNotFound { .. } => ErrorKind::ProposalNotFound,
            InvokeError::ProposalClosed { .. } => ErrorKind::ProposalClosed,
            InvokeError::ApprovalDenied { .. } => ErrorKind::ApprovalDenied,
            InvokeError::StoreUnavailable { .. } => ErrorKind::StoreUnavailable,
            InvokeError::AuditUnavailable { .. } => ErrorKind::AuditUnavailable,
        }
    }

    /// Whether a call that failed so may still have made its change: a tool error marked
    /// [`ToolError::in_doubt`], or a timeout (the tool was stopped midway, and what it did
    /// before stands). Only a mutating call's doubt matters; a read changes nothing.
    pub fn is_in_doubt(&self) -> bool {
        match self {
            InvokeError::ToolFailed { error, .. } => error.is_in_doubt(),
            InvokeError::Timeout { .. } => true,
            _ => false,
        }
    }

    /// How long to wait before the same call may be admitted, for a call a rate limit refused.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            InvokeError::RateLimited { retry_after_ms, .. } => {
                Some(Duration::from_millis(*retry_after_ms))
            }
            _ => None,
        }
    }

    /// The structured details of this error: its wire form without `kind` and `message`.
    pub fn details(&self) -> Map<String, Value> {
        let mut details = self.record_fields();
        details.remove("kind");
        for field in RECORD_ONLY_FIELDS {
            details.remove(field);
        }
        details
    }

    /// Every field of this error and its `kind`, as the derived record form writes them.
    pub(crate) fn record_fields(&self) -> Map<String, Value> {
        match InvokeError::serialize(self, serde_json::value::Serializer) {
            Ok(Value::Object(fields)) => fields,
            // Every field serializes to JSON (strings, numbers, lists and enums of them), and
            // an internally tagged variant always serializes to an object.
            Ok(_) | Err(_) => Map::new(),
        }
    }
}

/// The record's fields that the wire form leaves out: free-text reasons, a tool error's or a
/// panic's own message (the `message` already says what a caller may see) and the exact timeout.
pub(crate) const RECORD_ONLY_FIELDS: [&str; 5] = [
    "reason",
    "error_message",
    "panic_message",
    "timeout_secs",
    "timeout_subsec_nanos",
];

/// Serializes as `{"kind": …, "message": …, …details}`: the shape the CLI and MCP layer emit.
impl Serialize for InvokeError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let details = self.details();
        let mut map = serializer.serialize_map(Some(details.len() + 2))?;
        map.serialize_entry("kind", &self.kind())?;
        map.serialize_entry("message", &self.to_string())?;
        for (key, value) in &details {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_back_from_its_name() {
        for kind in ErrorKind::ALL {
            assert_eq!(kind.as_str().parse::<ErrorKind>(), Ok(*kind));
        }
        assert_eq!(
            "Timeout".parse::<ErrorKind>(),
            Err(UnknownErrorKind("Timeout".to_owned()))
        );
    }

    #[test]
    fn serializes_kind_message_and_details() {
        let error = InvokeError::MissingContext {
            fields: vec!["org_id", "user_id"],
        };
        let json = serde_json::to_value(&error).expect("serializes");
        assert_eq!(json["kind"], "missing_context");
        assert_eq!(json["fields"], serde_json::json!(["org_id", "user_id"]));
        assert!(
            json["message"]
                .as_str()
                .is_some_and(|m| m.contains("org_id, user_id"))
        );
    }

    #[test]
    fn invalid_input_lists_every_error() {
        let error = InvokeError::InvalidInput {
            tool: "roster_list_shifts".into(),
            errors: vec![
                FieldError::new("/from", "is not a date"),
                FieldError::new("", "`to` is required"),
            ],
        };
        assert_eq!(
            error.to_string(),
            "invalid input for `roster_list_shifts`: /from: is not a date; (params): `to` is required"
        );
    }

    #[test]
    fn unknown_tool_suggests_names() {
        let error = InvokeError::ToolNotFound {
            name: "core_get_user".into(),
            suggestions: vec!["core_get_current_user".into()],
        };
        assert!(
            error
                .to_string()
                .ends_with("did you mean core_get_current_user?")
        );
        assert_eq!(error.kind().as_str(), "tool_not_found");
    }
}
