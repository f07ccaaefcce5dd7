//! The navigator: `navigate(url)` and `execute_action(url, action, params)` over the registry.
//!
//! Both are stateless: every call resolves the URL, loads the page for the caller through
//! read tools, and decides what is offered from the caller's roles, the tool's category and
//! the page's availability predicates at that moment. The listing is advice; the execution is
//! the check. An action runs through [`ToolRegistry::invoke`] (or, for an agent's change,
//! [`ToolRegistry::propose`]) with the URL-bound parameters merged in, so every check and the
//! audit record are the registry's, and a refusal before the call (an action not offered here,
//! a bound parameter the caller tried to set) is audited through
//! [`ToolRegistry::record_refusal`].
//!
//! Every refusal of either leaves exactly one audit record. A call the registry refused or ran
//! has the registry's; a refusal the navigator makes itself (a bad URL, no such page, a page
//! that is not found or whose parameters are invalid, a stale version, a context that does not
//! verify, a proposal that cannot be read) is recorded here, once, as it leaves the public
//! method: a `navigate` under the tool name [`NAVIGATE`] with the params `{"url": ...}`, an
//! `execute_action` under the action's name with its params. The code of the recorded
//! `gate_refused` is the error's [`NavError::kind`]; a refused context or proposal read is
//! recorded as the registry's own error.

use std::{collections::BTreeMap, fmt::Write as _, sync::Arc};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};
use switchboard_core::{
    CallContext, Caller, Category, FieldError, Initiator, InvokeError, LoadedPage, PageAction,
    PageEntry, ToolError, linked_pages, linked_tools,
};
use switchboard_registry::{Proposal, ToolRegistry};
use tracing::Instrument;

use crate::{
    error::{NavError, Refused},
    proposals::{self, BuiltIn, PROPOSAL_ROUTE, PROPOSALS_ROUTE},
    url::{Route, RouteError, segments, truncated},
    version::{changed_fields, version_of},
    view::{ActionMode, ActionView, PageView, ParamView, first_sentence, unbound_params},
};

/// The tool name a refused `navigate` is audited under: the name of the MCP meta-tool, so that
/// a refusal reads the same whether the MCP layer or the navigator made it.
pub const NAVIGATE: &str = "navigate";

/// How many of the nearest routes an unknown URL's error names.
const MAX_NEAREST: usize = 3;

/// Why the navigator did not start: a page declaration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NavigatorError {
    /// A route does not parse.
    #[error("{0}")]
    BadRoute(#[from] RouteError),
    /// Two pages declare the same route.
    #[error("two pages declare the route `{route}` ({first} and {second}): remove one")]
    DuplicateRoute {
        /// The route.
        route: String,
        /// Where the first is declared.
        first: String,
        /// Where the second is declared.
        second: String,
    },
    /// A page's action names a tool the registry does not have.
    #[error(
        "the page `{route}` offers the action `{action}` through the tool `{tool}`, which is \
         not registered: link the tool's domain or remove the action"
    )]
    UnknownActionTool {
        /// The page's route.
        route: String,
        /// The action.
        action: String,
        /// The missing tool.
        tool: String,
    },
}

/// One routable page.
struct RoutedPage {
    route: Route,
    entry: &'static PageEntry,
}

/// Serves pages and runs their actions for callers. Cheap to clone.
#[derive(Clone)]
pub struct Navigator {
    registry: ToolRegistry,
    pages: Arc<Vec<RoutedPage>>,
}

impl std::fmt::Debug for Navigator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Navigator")
            .field("routes", &self.routes().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What running an action gave.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ActionOutcome {
    /// The action that ran.
    pub action: &'static str,
    /// The tool it ran.
    pub tool: String,
    /// The tool's output, or for an agent's change the stored proposal.
    pub result: Value,
    /// The proposal, when the action became one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Map<String, Value>>")]
    pub proposal: Option<Proposal>,
    /// Where to look next: a changed or created resource, or the same page.
    pub next_url: String,
    /// That page, with its actions, loaded after the action.
    pub next: PageView,
}

impl Navigator {
    /// A navigator over every page linked into the binary, checked against `registry`'s tools.
    pub fn new(registry: ToolRegistry) -> Result<Self, NavigatorError> {
        Self::with_pages(registry, linked_pages())
    }

    /// A navigator over `entries` only, checked against `registry`'s tools.
    ///
    /// A page goes with a domain the registry leaves out
    /// ([`ToolRegistry::excludes_domain`]): the page of such a domain
    /// ([`PageSpec::domain`](switchboard_core::PageSpec::domain)), and a page with an action
    /// whose tool is a linked tool of such a domain, are not served. An action naming any
    /// other tool the registry does not have stops the start.
    pub fn with_pages(
        registry: ToolRegistry,
        entries: impl IntoIterator<Item = &'static PageEntry>,
    ) -> Result<Self, NavigatorError> {
        let mut pages: Vec<RoutedPage> = Vec::new();
        for entry in entries {
            if let Some(domain) = left_out_with(&registry, entry) {
                tracing::debug!(
                    route = entry.spec.route,
                    domain,
                    "page not served: its domain is left out of the registry"
                );
                continue;
            }
            let route = Route::parse(entry.spec.route)?;
            if let Some(existing) = pages.iter().find(|page| page.route == route) {
                return Err(NavigatorError::DuplicateRoute {
                    route: entry.spec.route.to_owned(),
                    first: existing.entry.spec.location.to_string(),
                    second: entry.spec.location.to_string(),
                });
            }
            for (action, tool) in (entry.actions)() {
                if registry.find(tool).is_none() {
                    return Err(NavigatorError::UnknownActionTool {
                        route: entry.spec.route.to_owned(),
                        action: action.to_owned(),
                        tool: tool.to_owned(),
                    });
                }
            }
            pages.push(RoutedPage { route, entry });
        }
        // More literal segments first: `/roster/weeks/current` before `/roster/weeks/{week_start}`.
        pages.sort_by(|left, right| {
            right
                .route
                .literal_count()
                .cmp(&left.route.literal_count())
                .then(left.route.as_str().cmp(right.route.as_str()))
        });
        Ok(Self {
            registry,
            pages: Arc::new(pages),
        })
    }

    /// Every route, most specific first, then the built-in proposal pages.
    pub fn routes(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.pages
            .iter()
            .map(|page| page.route.as_str())
            .chain([PROPOSALS_ROUTE, PROPOSAL_ROUTE])
    }

    /// Every page's declaration, most specific route first.
    pub fn pages(&self) -> impl Iterator<Item = &'static PageEntry> + '_ {
        self.pages.iter().map(|page| page.entry)
    }

    /// The registry actions run through.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// The page at `url` for the caller of `context`, with the actions offered to them.
    ///
    /// A refusal leaves one audit record: the registry's when a read of the page was refused,
    /// else one written here under [`NAVIGATE`].
    pub async fn navigate(&self, url: &str, context: &CallContext) -> Result<PageView, NavError> {
        let span = tracing::info_span!("navigate", url = %truncated(url));
        match self.page(url, context).instrument(span).await {
            Ok(view) => Ok(view),
            Err(refused) => Err(self
                .recorded(NAVIGATE, &json!({ "url": url }), context, refused)
                .await),
        }
    }

    /// The page at `url` for the caller of `context`; a refusal says whether it has its
    /// record yet.
    async fn page(&self, url: &str, context: &CallContext) -> Result<PageView, Refused> {
        let caller = verify(context)?;
        let segments = segments(url)?;
        if self.is_home(&segments) {
            return Ok(self.home(url));
        }
        match BuiltIn::matching(&segments) {
            Some(BuiltIn::List) => return proposals::list(&self.registry, url, context).await,
            Some(BuiltIn::One(id)) => {
                return proposals::one(&self.registry, url, &id, context, &caller).await;
            }
            None => {}
        }
        let (page, loaded) = self.load(url, &segments, context, &caller).await?;
        Ok(self.view(url, page, loaded, &caller).0)
    }

    /// `refused`'s error, once one audit record covers it: when none does yet, the refusal of
    /// a call of `tool` with `params` is recorded here (as the registry's error it is, or as
    /// `gate_refused` with the error's kind as its code). `audit_failed` when that record
    /// cannot be written (`audit_unavailable` while the audit store is failing).
    async fn recorded(
        &self,
        tool: &str,
        params: &Value,
        context: &CallContext,
        refused: Refused,
    ) -> NavError {
        if refused.audited {
            return refused.error;
        }
        let refusal = match &refused.error {
            NavError::Invoke(error) => error.clone(),
            error => InvokeError::GateRefused {
                tool: tool.to_owned(),
                error: ToolError::new(error.kind(), error.to_string()),
            },
        };
        match self
            .registry
            .record_refusal(tool, params, context, refusal)
            .await
        {
            audit_failed @ (InvokeError::AuditFailed { .. }
            | InvokeError::AuditUnavailable { .. }) => audit_failed.into(),
            _ => refused.error,
        }
    }

    /// Runs `action` of the page at `url` with `params` (the page binds the rest), for the
    /// caller of `context`, and returns its result and the page to look at next.
    ///
    /// With `seen_version` (a [`PageView::version`] the caller was shown), an action on a page
    /// whose data has changed since is refused with [`NavError::Stale`], naming what changed.
    pub async fn execute_action(
        &self,
        url: &str,
        action: &str,
        params: Value,
        seen_version: Option<&str>,
        context: &CallContext,
    ) -> Result<ActionOutcome, NavError> {
        let span = tracing::info_span!("execute_action", url = %truncated(url), action);
        let params_for_audit = params.clone();
        let attempt = async {
            let caller = verify(context)?;
            let segments = segments(url)?;
            if let Some(BuiltIn::One(id)) = BuiltIn::matching(&segments) {
                let (chosen, tool, result, proposal) =
                    proposals::decide(&self.registry, url, &id, action, &params, context, &caller)
                        .await?;
                let next = self.page_after_the_action(url, context).await?;
                return Ok(ActionOutcome {
                    action: chosen,
                    tool,
                    result,
                    proposal: Some(proposal),
                    next_url: url.to_owned(),
                    next,
                });
            }
            let (page, loaded) = self.load(url, &segments, context, &caller).await?;
            let (view, declared_actions) = self.view(url, page, loaded, &caller);
            if let Some(seen) = seen_version {
                let changed = changed_fields(seen, &view.version);
                if !changed.is_empty() {
                    return Err(NavError::Stale {
                        url: truncated(url),
                        changed,
                    }
                    .into());
                }
            }
            let offered = view.actions;
            let Some(declared) = declared_actions.iter().find(|declared| {
                declared.name == action && offered.iter().any(|view| view.name == action)
            }) else {
                let tool = declared_actions
                    .iter()
                    .find(|declared| declared.name == action)
                    .map_or(action, |declared| declared.tool);
                let refusal = unavailable(tool, action, url, &offered);
                return Err(self
                    .registry
                    .record_refusal(tool, &params, context, refusal)
                    .await
                    .into());
            };
            let merged = match merge(&params, &declared.bound) {
                Ok(merged) => merged,
                Err(errors) => {
                    let refusal = InvokeError::InvalidInput {
                        tool: declared.tool.to_owned(),
                        errors,
                    };
                    return Err(self
                        .registry
                        .record_refusal(declared.tool, &params, context, refusal)
                        .await
                        .into());
                }
            };
            let mode = mode_for(declared.category, &caller);
            let (result, proposal) = if mode == Some(ActionMode::Propose) {
                let proposal = self
                    .registry
                    .propose(declared.tool, Value::Object(merged), context, None)
                    .await?;
                let json = serde_json::to_value(&proposal).unwrap_or(Value::Null);
                (json, Some(proposal))
            } else {
                let output = self
                    .registry
                    .invoke(declared.tool, Value::Object(merged), context)
                    .await?;
                (output, None)
            };
            // An agent's change waits on its proposal's page, where a person decides it.
            let next_url = match &proposal {
                Some(proposal) => format!("/proposals/{}", proposal.id),
                None => declared.next_url(&result).unwrap_or_else(|| url.to_owned()),
            };
            let next = self.page_after_the_action(&next_url, context).await?;
            Ok::<_, Refused>(ActionOutcome {
                action: declared.name,
                tool: declared.tool.to_owned(),
                result,
                proposal,
                next_url,
                next,
            })
        };
        match attempt.instrument(span).await {
            Ok(outcome) => Ok(outcome),
            Err(refused) => Err(self
                .recorded(action, &params_for_audit, context, refused)
                .await),
        }
    }

    /// The page to look at after an action ran. The action has its record already (its run),
    /// so a refusal here is not recorded again.
    async fn page_after_the_action(
        &self,
        url: &str,
        context: &CallContext,
    ) -> Result<PageView, Refused> {
        self.page(url, context)
            .await
            .map_err(|refused| Refused::audited(refused.error))
    }

    /// The parameters `action` of the page at `url` takes from its caller (those its URL does
    /// not bind), read from the action's tool without loading the page: what a form's text
    /// fields are typed by. Empty when `url` names no declared page with that action. Whether
    /// the action is offered to a caller is [`execute_action`](Self::execute_action)'s to
    /// check.
    pub fn action_params(&self, url: &str, action: &str) -> Vec<ParamView> {
        let Ok(segments) = segments(url) else {
            return Vec::new();
        };
        if BuiltIn::matching(&segments).is_some() {
            return Vec::new();
        }
        let Some((page, url_params)) = self.route_of(&segments) else {
            return Vec::new();
        };
        let Some(tool) = (page.entry.actions)()
            .into_iter()
            .find(|(name, _)| *name == action)
            .and_then(|(_, tool)| self.registry.find(tool))
        else {
            return Vec::new();
        };
        let bound: Map<String, Value> = url_params
            .into_keys()
            .map(|name| (name, Value::Null))
            .collect();
        unbound_params(&tool.input_schema, &bound)
    }

    /// The page whose route matches a URL's decoded `segments`, and the URL's parameters.
    fn route_of(&self, segments: &[String]) -> Option<(&RoutedPage, BTreeMap<String, String>)> {
        self.pages
            .iter()
            .find_map(|page| page.route.matches(segments).map(|params| (page, params)))
    }

    /// Whether a URL's `segments` are `/` and no page declares that route: the built-in home
    /// page then.
    fn is_home(&self, segments: &[String]) -> bool {
        segments.is_empty() && !self.routes().any(|route| route == "/")
    }

    /// The built-in home page: every page without parameters, the proposals, and the routes
    /// of the pages reached from those.
    fn home(&self, url: &str) -> PageView {
        let mut content = String::from("Pages you can open:\n\n");
        let (fixed, parameterised): (Vec<_>, Vec<_>) = self
            .pages
            .iter()
            .partition(|page| page.route.params().next().is_none());
        for page in fixed {
            let spec = &page.entry.spec;
            let _ = writeln!(
                content,
                "- [{}]({}): {}",
                spec.title, spec.route, spec.description
            );
        }
        let _ = writeln!(
            content,
            "- [Proposals]({PROPOSALS_ROUTE}): changes agents proposed, waiting for a person's \
             decision."
        );
        content.push_str("\nPages reached from those, by their links:\n\n");
        for page in parameterised {
            let spec = &page.entry.spec;
            let _ = writeln!(content, "- `{}`: {}", spec.route, spec.description);
        }
        let _ = writeln!(
            content,
            "- `{PROPOSAL_ROUTE}`: one proposal, which a person with its permission approves or \
             rejects."
        );
        PageView {
            url: url.to_owned(),
            route: "/",
            title: "Home",
            content,
            version: version_of(&Value::Null),
            data: Value::Null,
            actions: Vec::new(),
        }
    }

    /// Finds the page for `url` (whose decoded path is `segments`) and loads it for `caller`.
    async fn load(
        &self,
        url: &str,
        segments: &[String],
        context: &CallContext,
        caller: &Caller,
    ) -> Result<(&RoutedPage, LoadedPage), NavError> {
        let Some((page, params)) = self.route_of(segments) else {
            return Err(NavError::NoSuchPage {
                url: truncated(url),
                nearest: self.nearest(url),
            });
        };
        let invoker: &dyn switchboard_core::ToolInvoker = &self.registry;
        let loaded = (page.entry.load)(invoker, context, caller, &params)
            .await
            .map_err(|error| NavError::from_page(&truncated(url), error))?;
        Ok((page, loaded))
    }

    /// The caller's view of a loaded page: the actions their roles, their kind and the page's
    /// state allow.
    /// Also returns the page's declared actions, which running one needs.
    fn view(
        &self,
        url: &str,
        page: &RoutedPage,
        loaded: LoadedPage,
        caller: &Caller,
    ) -> (PageView, Vec<PageAction>) {
        let actions = loaded
            .actions
            .iter()
            .filter(|action| action.available)
            .filter(|action| {
                self.registry
                    .permissions()
                    .allows(&caller.roles, action.permission)
            })
            .filter_map(|action| {
                let mode = mode_for(action.category, caller)?;
                let tool = self.registry.find(action.tool)?;
                Some(ActionView {
                    name: action.name,
                    tool: action.tool.to_owned(),
                    description: first_sentence(&tool.description),
                    category: action.category,
                    mode,
                    params: unbound_params(&tool.input_schema, &action.bound),
                })
            })
            .collect();
        let view = PageView {
            url: url.to_owned(),
            route: page.route.as_str(),
            title: page.entry.spec.title,
            version: version_of(&loaded.data),
            content: loaded.markdown,
            data: loaded.data,
            actions,
        };
        (view, loaded.actions)
    }

    /// The routes closest to `url`, by edit distance, best first.
    fn nearest(&self, url: &str) -> Vec<String> {
        let path = url.split(['?', '#']).next().unwrap_or_default();
        let mut scored: Vec<(f64, &str)> = self
            .routes()
            .map(|route| (strsim::normalized_levenshtein(path, route), route))
            .filter(|(score, _)| *score > 0.3)
            .collect();
        scored.sort_by(|left, right| right.0.total_cmp(&left.0).then(left.1.cmp(right.1)));
        scored
            .into_iter()
            .take(MAX_NEAREST)
            .map(|(_, route)| route.to_owned())
            .collect()
    }
}

/// The domain left out of `registry` that `page` goes with, if any: its own, or the domain of a
/// linked tool one of its actions runs.
fn left_out_with(registry: &ToolRegistry, page: &PageEntry) -> Option<&'static str> {
    if let Some(domain) = page.spec.domain
        && registry.excludes_domain(domain)
    {
        return Some(domain);
    }
    (page.actions)()
        .into_iter()
        .filter(|(_, tool)| registry.find(tool).is_none())
        .find_map(|(_, tool)| {
            linked_tools()
                .find(|entry| entry.spec.name == tool)
                .map(|entry| entry.spec.domain)
                .filter(|domain| registry.excludes_domain(domain))
        })
}

/// The checked caller of `context`, or `missing_context`.
fn verify(context: &CallContext) -> Result<Caller, NavError> {
    context
        .verify()
        .map_err(|fields| NavError::Invoke(InvokeError::MissingContext { fields }))
}

/// How an action of `category` runs for `caller`, or `None` when it is not offered to them.
fn mode_for(category: Category, caller: &Caller) -> Option<ActionMode> {
    match (category, caller.initiator) {
        (Category::Read | Category::Propose, _) => Some(ActionMode::Run),
        (Category::Execute, Initiator::Human) => Some(ActionMode::Run),
        (Category::Restricted, Initiator::Human) => Some(ActionMode::Confirm),
        // An agent alone never changes data: it proposes, and a person approves. Restricted
        // changes are only ever a person's.
        (Category::Execute, Initiator::Agent) => Some(ActionMode::Propose),
        (Category::Restricted, Initiator::Agent) => None,
    }
}

/// The caller's params with the page's bound ones added; a caller's attempt to set a bound
/// parameter is refused, not overridden.
fn merge(
    params: &Value,
    bound: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<FieldError>> {
    let mut merged = match params {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => {
            return Err(vec![FieldError::new(
                "",
                "params must be a JSON object of the action's remaining parameters",
            )]);
        }
    };
    let overridden: Vec<FieldError> = bound
        .keys()
        .filter(|name| merged.contains_key(*name))
        .map(|name| {
            FieldError::new(
                format!("/{name}"),
                "is set by the page's URL and cannot be given; leave it out",
            )
        })
        .collect();
    if !overridden.is_empty() {
        return Err(overridden);
    }
    merged.extend(
        bound
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    Ok(merged)
}

/// The refusal of an action that is not offered at `url`, naming those that are.
pub(crate) fn unavailable(
    tool: &str,
    action: &str,
    url: &str,
    offered: &[ActionView],
) -> InvokeError {
    let available = if offered.is_empty() {
        "none is available to you there".to_owned()
    } else {
        format!(
            "available there: {}",
            offered
                .iter()
                .map(|view| format!("`{}`", view.name))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    InvokeError::GateRefused {
        tool: tool.to_owned(),
        error: ToolError::new(
            "action_unavailable",
            format!(
                "the action `{action}` is not available at `{}` for you now; {available}; \
                 navigate to the page again to see its current state",
                truncated(url)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use switchboard_core::CallContext;

    use super::*;

    // The sample domains, linked so their tools and pages register.
    use switchboard_domains as _;

    /// Monday morning, worked by sam.
    const WORKED_SHIFT: &str = "/roster/shifts/acme-2026-11-23-am";

    fn manager() -> CallContext {
        CallContext::builder()
            .org("acme")
            .user("mark")
            .role("manager")
            .session("test")
            .correlation("test")
            .initiator(Initiator::Human)
            .build()
    }

    #[tokio::test]
    async fn an_actions_params_without_the_page_are_those_the_page_offers() {
        let registry = ToolRegistry::builder()
            .start()
            .await
            .expect("the registry starts");
        let navigator = Navigator::new(registry).expect("the sample pages are valid");
        let view = navigator
            .navigate(WORKED_SHIFT, &manager())
            .await
            .expect("the shift loads");
        let offered = view
            .actions
            .iter()
            .find(|action| action.name == "propose_swap")
            .expect("a worked shift offers propose_swap");
        assert!(!offered.params.is_empty());
        assert_eq!(
            navigator.action_params(WORKED_SHIFT, "propose_swap"),
            offered.params
        );
        assert!(
            navigator
                .action_params(WORKED_SHIFT, "no_such_action")
                .is_empty()
        );
        assert!(
            navigator
                .action_params("/no/such/page", "propose_swap")
                .is_empty()
        );
        assert!(
            navigator
                .action_params("/proposals/p1", "reject")
                .is_empty()
        );
    }
}
