//! Navigation over MCP: two meta-tools, `navigate` and `execute_action`, and the pages as MCP
//! resources.
//!
//! A model given a hundred tools must work out which apply to what it is looking at. With
//! navigation on ([`NavigationMode`]), it can move the way a person does: `navigate(url)`
//! returns the page at `url` (markdown for the model, the [`PageView`] as `structuredContent`)
//! with the actions offered to this caller there, and `execute_action(url, action, params)`
//! runs one through the [`Navigator`], which resolves the page again and checks everything at
//! the moment it runs. The plain tools stay callable beside them ([`NavigationMode::Beside`])
//! or are hidden ([`NavigationMode::Only`]).
//!
//! Both tools are stateless. `navigate` also returns a `page_state` token ([`page_state`]),
//! sealed with the approvals' key, binding the caller, the URL and the version of the page
//! they saw; handed back to `execute_action`, it makes an action on a page that has changed
//! since fail with `page_changed`, naming what changed.
//!
//! Errors follow the server's convention ([`crate::result`]): a refusal is a result with
//! `isError` and the error's JSON (`{"kind", "message", ...}`, the kind being
//! [`NavError::kind`]) in `_meta`.
//!
//! Every refusal leaves one audit record, wherever it is made, and only one: each refusal is
//! recorded by the layer that makes it. The navigator records the refusals of its `navigate`
//! and `execute_action` (under [`NAVIGATE`], or under the action's name), and the registry
//! those of the calls it is asked to make. The refusals made here, before the navigator is
//! asked (arguments that do not fit a meta-tool's input schema, a `page_state` that does not
//! open), are audited through
//! [`ToolRegistry::record_refusal`](switchboard_registry::ToolRegistry::record_refusal): under
//! the meta-tool's name with the arguments as sent, or, for a `page_state`, under the action's
//! name with its params, as the navigator records the refusals it makes before an action runs.
//! A refusal the navigator returns is answered as it is, never recorded again here.
//!
//! The same pages are resources ([`resources`]) at `switchboard:///<path>`.

mod page_state;
pub(crate) mod resources;

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, Resource, Tool};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchboard_core::{CallContext, FieldError, InvokeError, ToolError, schema::schema_of};
use switchboard_navigation::{ActionOutcome, NavError, Navigator, PageView};

use crate::{approval::StateKey, identity::Identity, result};

/// The name of the tool that opens a page: the name the navigator audits its refusals of a
/// `navigate` under, so that the refusals made here read the same.
pub(crate) const NAVIGATE: &str = switchboard_navigation::NAVIGATE;

/// The name of the tool that runs one of a page's actions.
pub(crate) const EXECUTE_ACTION: &str = "execute_action";

/// The `structuredContent` field holding the `page_state` token of a page.
const PAGE_STATE_FIELD: &str = "page_state";

/// What `initialize` tells the model when navigation is on.
pub(crate) const INSTRUCTIONS: &str = "Navigation: start with navigate('/'), which lists the \
     pages you can open. Each page shows its content and the actions available to you there, \
     with the parameters you still supply. Run one with execute_action(url, action, params, \
     page_state), passing the page's URL and the page_state that navigate returned, so that \
     the action is refused if the page changed since you read it. An action answers the URL \
     to look at next and that page's actions. The pages are also resources at \
     switchboard:///<path>.";

/// Whether the server offers navigation, and beside what (`switchboard serve --navigation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum NavigationMode {
    /// No navigation: the plain tools only.
    #[default]
    Off,
    /// `navigate` and `execute_action` only: `tools/list` shows just those two, and the plain
    /// tools are not callable directly.
    Only,
    /// The plain tools and the two meta-tools.
    Beside,
}

/// Navigation as one server offers it: the navigator and the two tools in MCP form. One
/// pointer, cheap to clone; shared by every handler instance of a server.
#[derive(Debug, Clone)]
pub(crate) struct Navigation(Arc<Offered>);

#[derive(Debug)]
struct Offered {
    navigator: Navigator,
    hides_plain_tools: bool,
    tools: [Tool; 2],
}

/// The arguments of `navigate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NavigateArguments {
    url: String,
}

/// The arguments of `execute_action`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecuteArguments {
    url: String,
    action: String,
    #[serde(default)]
    params: Option<Map<String, Value>>,
    #[serde(default)]
    page_state: Option<String>,
}

impl Navigation {
    /// Navigation over `navigator` in `mode`; `None` when the mode is [`NavigationMode::Off`].
    pub(crate) fn new(navigator: Navigator, mode: NavigationMode) -> Option<Self> {
        let hides_plain_tools = match mode {
            NavigationMode::Off => return None,
            NavigationMode::Only => true,
            NavigationMode::Beside => false,
        };
        Some(Self(Arc::new(Offered {
            navigator,
            hides_plain_tools,
            tools: [navigate_tool(), execute_action_tool()],
        })))
    }

    /// Whether the plain tools are hidden ([`NavigationMode::Only`]).
    pub(crate) fn hides_plain_tools(&self) -> bool {
        self.0.hides_plain_tools
    }

    /// The two meta-tools, in MCP form.
    pub(crate) fn tools(&self) -> &[Tool] {
        self.0.tools.as_slice()
    }

    /// The meta-tool called `name`, if it is one.
    pub(crate) fn tool(&self, name: &str) -> Option<Tool> {
        self.0.tools.iter().find(|tool| tool.name == name).cloned()
    }

    /// The navigator the tools and resources use.
    pub(crate) fn navigator(&self) -> &Navigator {
        &self.0.navigator
    }

    /// Answers a call of the meta-tool `name` (one of [`Navigation::tool`]'s) made by
    /// `identity` with `context`.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        identity: &Identity,
        state_key: &StateKey,
        context: &CallContext,
    ) -> CallToolResult {
        let arguments = Value::Object(arguments);
        if name == NAVIGATE {
            match NavigateArguments::deserialize(&arguments) {
                Ok(arguments) => {
                    self.navigate(&arguments.url, identity, state_key, context)
                        .await
                }
                Err(error) => {
                    self.refuse_arguments(name, &arguments, &error, context)
                        .await
                }
            }
        } else {
            match ExecuteArguments::deserialize(&arguments) {
                Ok(arguments) => {
                    self.execute_action(arguments, identity, state_key, context)
                        .await
                }
                Err(error) => {
                    self.refuse_arguments(name, &arguments, &error, context)
                        .await
                }
            }
        }
    }

    /// Refuses a call of the meta-tool `tool` whose `arguments` do not fit its input schema,
    /// and audits the refusal.
    async fn refuse_arguments(
        &self,
        tool: &str,
        arguments: &Value,
        error: &serde_json::Error,
        context: &CallContext,
    ) -> CallToolResult {
        let message =
            format!("invalid arguments for `{tool}`: {error}; see its input schema in tools/list");
        let refusal = InvokeError::InvalidInput {
            tool: tool.to_owned(),
            errors: vec![FieldError::new("", error.to_string())],
        };
        let answer = result::refusal(
            message.clone(),
            json!({"kind": "invalid_input", "tool": tool, "message": message}),
        );
        self.audited(tool, arguments, context, refusal, answer)
            .await
    }

    /// `answer`, once `refusal` of a call of `tool` with `params` is audited; if the record
    /// cannot be written, the refusal that says so (`audit_failed`, or `audit_unavailable` while
    /// the audit store is failing) instead.
    async fn audited(
        &self,
        tool: &str,
        params: &Value,
        context: &CallContext,
        refusal: InvokeError,
        answer: CallToolResult,
    ) -> CallToolResult {
        let registry = self.0.navigator.registry();
        match registry
            .record_refusal(tool, params, context, refusal)
            .await
        {
            audit_failed @ (InvokeError::AuditFailed { .. }
            | InvokeError::AuditUnavailable { .. }) => {
                result::refusal(audit_failed.to_string(), result::error_json(&audit_failed))
            }
            _ => answer,
        }
    }

    async fn navigate(
        &self,
        url: &str,
        identity: &Identity,
        state_key: &StateKey,
        context: &CallContext,
    ) -> CallToolResult {
        let view = match self.0.navigator.navigate(url, context).await {
            Ok(view) => view,
            Err(error) => return nav_refusal(&error),
        };
        let markdown = view.markdown();
        let (structured, token) = with_page_state(&view, identity, state_key);
        let mut text = markdown;
        if let Some(token) = token {
            text.push_str(&format!(
                "\npage_state: `{token}` (pass it to execute_action with this URL: the action \
                 is then refused if the page changed since)\n"
            ));
        }
        let mut answer = CallToolResult::structured(structured);
        answer.content = vec![ContentBlock::text(text)];
        answer
    }

    async fn execute_action(
        &self,
        arguments: ExecuteArguments,
        identity: &Identity,
        state_key: &StateKey,
        context: &CallContext,
    ) -> CallToolResult {
        let ExecuteArguments {
            url,
            action,
            params,
            page_state,
        } = arguments;
        let params = Value::Object(params.unwrap_or_default());
        let seen_version = match page_state {
            Some(token) => match page_state::open(state_key, identity, &url, &token) {
                Ok(version) => Some(version),
                Err(refused) => {
                    let message = refused.to_string();
                    let refusal = InvokeError::GateRefused {
                        tool: action.clone(),
                        error: ToolError::new("invalid_page_state", message.clone()),
                    };
                    let answer = result::refusal(
                        message.clone(),
                        json!({"kind": "invalid_page_state", "message": message, "url": url}),
                    );
                    return self
                        .audited(&action, &params, context, refusal, answer)
                        .await;
                }
            },
            None => None,
        };
        let outcome = match self
            .0
            .navigator
            .execute_action(&url, &action, params, seen_version.as_deref(), context)
            .await
        {
            Ok(outcome) => outcome,
            Err(error) => return nav_refusal(&error),
        };
        outcome_result(&outcome, identity, state_key)
    }
}

/// The answer to an action that ran: a summary and the next page as text, a `resource_link`
/// to the next page, and the outcome (its next page with a `page_state`) as
/// `structuredContent`.
fn outcome_result(
    outcome: &ActionOutcome,
    identity: &Identity,
    state_key: &StateKey,
) -> CallToolResult {
    let (next, token) = with_page_state(&outcome.next, identity, state_key);
    let mut structured = serde_json::to_value(outcome).unwrap_or_else(|_| json!({}));
    if let Some(fields) = structured.as_object_mut() {
        fields.insert("next".to_owned(), next);
    }
    let mut text = match &outcome.proposal {
        Some(proposal) => format!(
            "`{}` became the proposal `{}`: a person who may run `{}` approves or rejects it. \
             Nothing changed yet.\n",
            outcome.action, proposal.id, outcome.tool
        ),
        None => format!(
            "`{}` ran (`{}`). Result:\n\n```json\n{}\n```\n",
            outcome.action,
            outcome.tool,
            serde_json::to_string_pretty(&outcome.result).unwrap_or_default()
        ),
    };
    text.push_str(&format!(
        "\nNext: {} (shown below{})\n\n",
        outcome.next_url,
        if token.is_some() {
            ", with its page_state in the structured result"
        } else {
            ""
        }
    ));
    text.push_str(&outcome.next.markdown());
    let link = Resource::new(resources::uri_of(&outcome.next_url), outcome.next.title)
        .with_title(outcome.next.title)
        .with_mime_type(resources::MARKDOWN);
    let mut answer = CallToolResult::structured(structured);
    answer.content = vec![ContentBlock::text(text), ContentBlock::resource_link(link)];
    answer
}

/// `view` as JSON with its `page_state` token added, and the token. A token that cannot be
/// sealed is left out (logged): the page is still worth answering, and `execute_action` works
/// without one.
fn with_page_state(
    view: &PageView,
    identity: &Identity,
    state_key: &StateKey,
) -> (Value, Option<String>) {
    let mut structured = serde_json::to_value(view).unwrap_or_else(|_| json!({}));
    let token = match page_state::seal(state_key, identity, &view.url, &view.version) {
        Ok(token) => Some(token),
        Err(error) => {
            tracing::error!(%error, "could not seal a page_state; the page is answered without");
            None
        }
    };
    if let (Some(fields), Some(token)) = (structured.as_object_mut(), &token) {
        fields.insert(PAGE_STATE_FIELD.to_owned(), Value::String(token.clone()));
    }
    (structured, token)
}

/// A navigation error as a refused call: its message, and its JSON with
/// [`NavError::kind`].
pub(crate) fn nav_refusal(error: &NavError) -> CallToolResult {
    result::refusal(error.to_string(), nav_error_json(error))
}

/// The JSON of a navigation error: `{"kind", "message", ...}` with what the model can act on
/// (the nearest routes, the fields that changed); a registry error's own JSON.
pub(crate) fn nav_error_json(error: &NavError) -> Value {
    let message = error.to_string();
    match error {
        NavError::Invoke(invoke) => result::error_json(invoke),
        NavError::NoSuchPage { url, nearest } => {
            json!({"kind": error.kind(), "message": message, "url": url, "nearest": nearest})
        }
        NavError::Stale { url, changed } => {
            json!({"kind": error.kind(), "message": message, "url": url, "changed": changed})
        }
        _ => json!({"kind": error.kind(), "message": message}),
    }
}

/// The output schema of `navigate`: a [`PageView`] with its `page_state`.
fn page_schema() -> Value {
    let mut schema = schema_of::<PageView>().to_value();
    declare_page_state(&mut schema);
    schema
}

/// The output schema of `execute_action`: an [`ActionOutcome`] whose next page has its
/// `page_state`.
fn outcome_schema() -> Value {
    let mut schema = schema_of::<ActionOutcome>().to_value();
    // The next page is a reference to the page's definition, or the definition itself.
    let next_page = schema
        .pointer("/properties/next/$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix('#'))
        .unwrap_or("/properties/next")
        .to_owned();
    if let Some(page) = schema.pointer_mut(&next_page) {
        declare_page_state(page);
    }
    schema
}

/// Adds the `page_state` property, which [`with_page_state`] adds to a page's JSON, to a
/// page's schema.
fn declare_page_state(page: &mut Value) {
    if let Some(properties) = page.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert(
            PAGE_STATE_FIELD.to_owned(),
            json!({
                "type": "string",
                "description": "Pass it to execute_action with this URL: the action is refused \
                                if the page changed since. Valid for 10 minutes."
            }),
        );
    }
}

fn navigate_tool() -> Tool {
    tool(json!({
        "name": NAVIGATE,
        "title": "Open a page",
        "description": "Opens the page at a URL: its content, and the actions available to you \
                        there with the parameters you still supply. Start with `/`.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The page's path, such as `/` or `/roster`."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        },
        "outputSchema": page_schema(),
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    }))
}

fn execute_action_tool() -> Tool {
    tool(json!({
        "name": EXECUTE_ACTION,
        "title": "Run an action of a page",
        "description": "Runs one of the actions a page offers, with the parameters it still \
                        needs (the URL binds the others). Returns the outcome, the URL to look \
                        at next and that page's actions. Pass the page_state navigate returned \
                        so that the action is refused if the page changed since.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The page's URL, as navigated."},
                "action": {"type": "string", "description": "The action's name on that page."},
                "params": {
                    "type": "object",
                    "description": "The action's parameters that the URL does not bind."
                },
                "page_state": {
                    "type": "string",
                    "description": "The page_state navigate returned for this URL."
                }
            },
            "required": ["url", "action"],
            "additionalProperties": false
        },
        "outputSchema": outcome_schema(),
        "annotations": {"readOnlyHint": false, "openWorldHint": false}
    }))
}

/// A meta-tool's definition as rmcp's [`Tool`]. The definitions are constants of this module,
/// which the tests convert.
fn tool(definition: Value) -> Tool {
    serde_json::from_value(definition).unwrap_or_else(|error| {
        unreachable!("the navigation tools' definitions are valid MCP tools: {error}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_tools_convert_and_declare_their_output() {
        for tool in [navigate_tool(), execute_action_tool()] {
            assert!(tool.output_schema.is_some(), "{}", tool.name);
        }
    }

    #[test]
    fn both_output_schemas_declare_the_page_state() {
        let page = page_schema();
        assert!(page.pointer("/properties/page_state").is_some(), "{page}");
        let outcome = outcome_schema();
        assert!(
            outcome
                .pointer("/$defs/PageView/properties/page_state")
                .is_some(),
            "{outcome}"
        );
    }
}
