//! Pages: what a domain shows at a URL, and the actions a caller can take there.
//!
//! An agent that sees every tool at once has to work out which of them apply to what it is
//! looking at. A page turns that around, the way a person uses an application: it opens a URL
//! (`/roster/shifts/acme-2026-11-24-am`), reads what is there, and is offered the actions that
//! make sense *here*, for *this* caller, in *this* state. A person given the same URL sees the
//! same page.
//!
//! A page is declared beside the domain's tools, like a tool: a type implementing [`Page`]
//! (its route, typed path parameters, a loader, a markdown rendering and its actions) and one
//! [`page!`](crate::page!) line that registers it at link time. A page reads through tools and
//! acts through tools: [`PageLoader::call`] invokes a read tool with the caller's own context,
//! and every [`Action`] names a registered tool. So permissions, organisation isolation,
//! validation, approvals and audit apply to pages exactly as they apply to calls, and this
//! module needs no access to a domain's state.
//!
//! The navigation crate matches URLs to pages, loads them, filters their actions by the
//! caller's permissions and categories, and runs an action through the registry.

use std::{collections::BTreeMap, fmt, future::Future, sync::Arc};

use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

use crate::{
    category::Category,
    context::{CallContext, Caller},
    error::{FieldError, InvokeError, ToolError},
    tool::{BoxFuture, SourceLocation, Tool},
};

/// Everything a page declares about itself, known at compile time.
#[derive(Debug, Clone, Copy)]
pub struct PageSpec {
    /// The URL route, with `{name}` path parameters: `/roster/shifts/{shift_id}`.
    pub route: &'static str,
    /// A short title, such as "Shift".
    pub title: &'static str,
    /// One sentence on what the page shows, for catalogs and MCP resource templates.
    pub description: &'static str,
    /// The domain whose page it is ([`Domain::NAME`](crate::Domain::NAME)), when declared: a
    /// registry that leaves that domain out leaves the page out with it. A page without one
    /// needs every tool its actions name.
    pub domain: Option<&'static str>,
    /// Where the page is declared.
    pub location: SourceLocation,
}

/// Why a page could not be shown.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The resource does not exist for this caller (or exists only in another organisation,
    /// which the caller is never told).
    #[error("{what} does not exist")]
    NotFound {
        /// What was looked for, such as "shift `acme-x`".
        what: String,
    },
    /// A path parameter is not what the route expects.
    #[error("the URL's parameters are not valid: {}", join_field_errors(.errors))]
    InvalidParams {
        /// One entry per bad parameter.
        errors: Vec<FieldError>,
    },
    /// A tool the loader called refused or failed.
    #[error(transparent)]
    Invoke(InvokeError),
}

fn join_field_errors(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|error| format!("`{}` {}", error.path.trim_start_matches('/'), error.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

impl PageError {
    /// A resource that is not there.
    pub fn not_found(what: impl Into<String>) -> Self {
        PageError::NotFound { what: what.into() }
    }

    /// One path parameter that is not valid, and why.
    pub fn invalid_param(name: &str, reason: impl Into<String>) -> Self {
        PageError::InvalidParams {
            errors: vec![FieldError::new(format!("/{name}"), reason)],
        }
    }
}

/// A tool that failed with a `*_not_found` code means the page's resource is not there.
impl From<InvokeError> for PageError {
    fn from(error: InvokeError) -> Self {
        match &error {
            InvokeError::ToolFailed { error: failure, .. }
                if failure.code().ends_with("_not_found") =>
            {
                PageError::NotFound {
                    what: failure.message().to_owned(),
                }
            }
            _ => PageError::Invoke(error),
        }
    }
}

/// What runs a tool for a page's loader: the registry, with every check and the audit.
pub trait ToolInvoker: Send + Sync {
    /// Invokes `tool` with JSON `params` for the caller of `context`.
    fn invoke<'a>(
        &'a self,
        tool: &'a str,
        params: Value,
        context: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, InvokeError>>;
}

/// What a page's loader reads with: tools, called as the caller.
#[allow(
    missing_debug_implementations,
    reason = "holds a trait object and borrowed context"
)]
pub struct PageLoader<'a> {
    invoker: &'a dyn ToolInvoker,
    context: &'a CallContext,
    caller: &'a Caller,
}

impl<'a> PageLoader<'a> {
    /// A loader calling through `invoker` with `context`, whose checked caller is `caller`.
    pub fn new(invoker: &'a dyn ToolInvoker, context: &'a CallContext, caller: &'a Caller) -> Self {
        Self {
            invoker,
            context,
            caller,
        }
    }

    /// Calls read tool `T` with `input`, as the caller, and returns its typed output.
    pub async fn call<T: Tool>(&self, input: T::Input) -> Result<T::Output, PageError>
    where
        T::Output: DeserializeOwned,
    {
        let params = serde_json::to_value(&input).map_err(|error| {
            PageError::invalid_param(
                "",
                format!("the loader's input does not serialize: {error}"),
            )
        })?;
        let output = self
            .invoker
            .invoke(T::SPEC.name, params, self.context)
            .await?;
        serde_json::from_value(output).map_err(|error| {
            PageError::Invoke(InvokeError::ToolFailed {
                tool: T::SPEC.name.to_owned(),
                error: ToolError::new(
                    "unexpected_output",
                    format!(
                        "`{}` returned an output its type does not read: {error}",
                        T::SPEC.name
                    ),
                ),
            })
        })
    }

    /// Who is looking at the page.
    pub fn caller(&self) -> &Caller {
        self.caller
    }
}

/// A page: a route, typed path parameters, a loader, a rendering and actions.
///
/// Register it with [`page!`](crate::page!).
pub trait Page: Send + Sync + Sized + 'static {
    /// The path parameters, deserialized from the route's `{name}` segments (as strings, so
    /// use `String`, ids, or types that parse from a string such as `jiff::civil::Date`).
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What the loader reads. Serialized, it is the page's structured content, and its digest
    /// is the version a `page_state` token binds.
    type Data: Serialize + Send + Sync + 'static;
    /// Route, title, description.
    const SPEC: PageSpec;

    /// Reads the page for the loader's caller, through read tools.
    fn load(
        loader: &PageLoader<'_>,
        params: &Self::Params,
    ) -> impl Future<Output = Result<Self::Data, PageError>> + Send;

    /// The page's content as markdown, without its title or actions (the navigator adds both).
    fn render(params: &Self::Params, data: &Self::Data) -> String;

    /// The actions the page offers, in the order to show them; none by default.
    fn actions() -> Vec<Action<Self>> {
        Vec::new()
    }

    /// Action `name` of this page, running tool `T` (see [`Action::new`]). Starting from
    /// `Self::action` lets the closures given to [`Action::bind`] and [`Action::when`] know
    /// this page's types.
    fn action<T: Tool>(name: &'static str) -> Action<Self> {
        Action::new::<T>(name)
    }
}

/// Binds parameters a page supplies to an action's tool input beyond its URL parameters (which
/// every action gets under their own names), from the URL or the loaded data; the caller
/// supplies the rest and may override none of them.
pub type BindFn<P> = fn(&<P as Page>::Params, &<P as Page>::Data) -> Value;
/// Whether an action is available in the page's loaded state, for this caller.
pub type AvailableFn<P> = fn(&<P as Page>::Data, &Caller) -> bool;
/// The URL to look at after the action ran, from the page and the tool's output; `None`
/// stays on the page.
pub type NextFn<P> = fn(&<P as Page>::Params, &<P as Page>::Data, &Value) -> Option<String>;

/// An action a page offers: a registered tool, with what the page binds, when it is
/// available, and where to go next.
pub struct Action<P: Page> {
    name: &'static str,
    tool: &'static str,
    category: Category,
    permission: &'static str,
    bind: BindFn<P>,
    available: AvailableFn<P>,
    next: NextFn<P>,
}

impl<P: Page> fmt::Debug for Action<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Action")
            .field("name", &self.name)
            .field("tool", &self.tool)
            .field("category", &self.category)
            .field("permission", &self.permission)
            .finish_non_exhaustive()
    }
}

impl<P: Page> Action<P> {
    /// Action `name` (what agents and people pick, such as `claim`) runs tool `T`. It gets
    /// the page's URL parameters under their own names (so a route's parameters must be
    /// fields of its actions' inputs, which an architecture test checks); by default it binds
    /// nothing more, is always available, and stays on the page.
    pub fn new<T: Tool>(name: &'static str) -> Self {
        Self {
            name,
            tool: T::SPEC.name,
            category: T::SPEC.category,
            permission: T::SPEC.permission,
            bind: |_, _| Value::Object(Map::new()),
            available: |_, _| true,
            next: |_, _, _| None,
        }
    }

    /// Parameters the page supplies beyond its URL's, as a JSON object:
    /// `|_, data| json!({"position": data.position})`.
    pub fn bind(mut self, bind: BindFn<P>) -> Self {
        self.bind = bind;
        self
    }

    /// When the action is available, from the loaded data and the caller.
    pub fn when(mut self, available: AvailableFn<P>) -> Self {
        self.available = available;
        self
    }

    /// Where to go after it ran.
    pub fn then(mut self, next: NextFn<P>) -> Self {
        self.next = next;
        self
    }
}

/// A page as the navigator sees it once loaded: its content and its actions, erased.
pub struct LoadedPage {
    /// The content, as markdown.
    pub markdown: String,
    /// The loaded data, as JSON.
    pub data: Value,
    /// Every action the page declares, with what it binds and whether its state allows it.
    pub actions: Vec<PageAction>,
}

impl fmt::Debug for LoadedPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedPage")
            .field("data", &self.data)
            .field("actions", &self.actions)
            .finish_non_exhaustive()
    }
}

/// One declared action of a loaded page.
pub struct PageAction {
    /// What callers pick.
    pub name: &'static str,
    /// The tool it runs.
    pub tool: &'static str,
    /// The tool's category.
    pub category: Category,
    /// The tool's permission.
    pub permission: &'static str,
    /// The parameters the page binds.
    pub bound: Map<String, Value>,
    /// Whether the loaded state allows it for this caller (permissions and categories are
    /// the navigator's to check).
    pub available: bool,
    next: NextUrl,
}

/// An action's [`NextFn`] with its page's parameters and data captured.
type NextUrl = Box<dyn Fn(&Value) -> Option<String> + Send + Sync>;

impl PageAction {
    /// The URL to look at after the action returned `output`; `None` stays on the page.
    pub fn next_url(&self, output: &Value) -> Option<String> {
        (self.next)(output)
    }
}

impl fmt::Debug for PageAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageAction")
            .field("name", &self.name)
            .field("tool", &self.tool)
            .field("bound", &self.bound)
            .field("available", &self.available)
            .finish_non_exhaustive()
    }
}

/// Loads a page from its route's raw parameters.
pub type LoadFn = for<'a> fn(
    &'a dyn ToolInvoker,
    &'a CallContext,
    &'a Caller,
    &'a BTreeMap<String, String>,
) -> BoxFuture<'a, Result<LoadedPage, PageError>>;

/// The erased face of a linked page, collected by `inventory`.
pub struct PageEntry {
    /// The declared metadata.
    pub spec: PageSpec,
    /// Loads it.
    pub load: LoadFn,
    /// `(action, tool)` for every action it declares, for catalogs and architecture tests.
    pub actions: fn() -> Vec<(&'static str, &'static str)>,
}

impl PageEntry {
    /// The entry for page `P`. Const, so [`page!`](crate::page!) can hand it to `inventory`.
    pub const fn of<P: Page>() -> Self {
        PageEntry {
            spec: P::SPEC,
            load: load_erased::<P>,
            actions: action_names::<P>,
        }
    }
}

impl fmt::Debug for PageEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageEntry")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

inventory::collect!(PageEntry);

/// Every page linked into this binary, in unspecified order.
pub fn linked_pages() -> impl Iterator<Item = &'static PageEntry> {
    inventory::iter::<PageEntry>.into_iter()
}

fn action_names<P: Page>() -> Vec<(&'static str, &'static str)> {
    P::actions()
        .iter()
        .map(|action| (action.name, action.tool))
        .collect()
}

fn load_erased<'a, P: Page>(
    invoker: &'a dyn ToolInvoker,
    context: &'a CallContext,
    caller: &'a Caller,
    raw: &'a BTreeMap<String, String>,
) -> BoxFuture<'a, Result<LoadedPage, PageError>> {
    Box::pin(async move {
        let params: P::Params = parse_params(raw)?;
        let loader = PageLoader::new(invoker, context, caller);
        let data = P::load(&loader, &params).await?;
        let markdown = P::render(&params, &data);
        let json = serde_json::to_value(&data).map_err(|error| {
            PageError::Invoke(InvokeError::ToolFailed {
                tool: P::SPEC.route.to_owned(),
                error: ToolError::new(
                    "unserializable_page",
                    format!("the page's data does not serialize: {error}"),
                ),
            })
        })?;
        let shared = Arc::new((params, data));
        let actions = P::actions()
            .into_iter()
            .map(|action| {
                let (params, data) = &*shared;
                // Every URL parameter, under its own name, then what the action binds itself.
                let mut bound: Map<String, Value> = raw
                    .iter()
                    .map(|(name, value)| (name.clone(), Value::String(value.clone())))
                    .collect();
                if let Value::Object(extra) = (action.bind)(params, data) {
                    bound.extend(extra);
                }
                let available = (action.available)(data, caller);
                let next = action.next;
                let for_next = Arc::clone(&shared);
                PageAction {
                    name: action.name,
                    tool: action.tool,
                    category: action.category,
                    permission: action.permission,
                    bound,
                    available,
                    next: Box::new(move |output| next(&for_next.0, &for_next.1, output)),
                }
            })
            .collect();
        Ok(LoadedPage {
            markdown,
            data: json,
            actions,
        })
    })
}

/// Deserializes a route's raw parameters (strings) into the page's typed parameters.
fn parse_params<T: DeserializeOwned>(raw: &BTreeMap<String, String>) -> Result<T, PageError> {
    let object: Map<String, Value> = raw
        .iter()
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect();
    serde_json::from_value(Value::Object(object)).map_err(|error| PageError::InvalidParams {
        errors: vec![FieldError::new("", error.to_string())],
    })
}

/// A [`PageSpec`] with the location of the declaration filled in. `domain` (a type
/// implementing [`Domain`](crate::Domain), as `#[tool(domain = ...)]` takes) says whose page
/// it is, so that a registry leaving that domain out leaves the page out too:
///
/// ```ignore
/// const SPEC: PageSpec = switchboard_core::page_spec! {
///     domain: crate::Roster,
///     route: "/roster/shifts/{shift_id}",
///     title: "Shift",
///     description: "One shift: its day, hours and position, and who works it.",
/// };
/// ```
#[macro_export]
macro_rules! page_spec {
    (domain: $domain:ty, route: $route:expr, title: $title:expr, description: $description:expr $(,)?) => {
        $crate::PageSpec {
            route: $route,
            title: $title,
            description: $description,
            domain: ::core::option::Option::Some(<$domain as $crate::Domain>::NAME),
            location: $crate::SourceLocation {
                file: file!(),
                line: line!(),
            },
        }
    };
    (route: $route:expr, title: $title:expr, description: $description:expr $(,)?) => {
        $crate::PageSpec {
            route: $route,
            title: $title,
            description: $description,
            domain: ::core::option::Option::None,
            location: $crate::SourceLocation {
                file: file!(),
                line: line!(),
            },
        }
    };
}

/// Registers a page at link time, as `#[tool]` does for a tool.
///
/// ```ignore
/// switchboard_core::page!(ShiftPage);
/// ```
#[macro_export]
macro_rules! page {
    ($page:ty) => {
        $crate::__private::inventory::submit! {
            $crate::PageEntry::of::<$page>()
        }
    };
}
