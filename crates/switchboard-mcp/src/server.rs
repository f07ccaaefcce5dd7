//! [`McpServer`]: rmcp's [`ServerHandler`] over a [`ToolRegistry`], acting as one [`Identity`].
//!
//! Written without rmcp's tool macros because the tool list is the registry's, not a fixed set
//! of Rust functions. Each call gets a [`CallContext`](switchboard_core::CallContext) from the
//! identity, the session (the streamable-HTTP `mcp-session-id` header, else an id this handler
//! instance minted) and a correlation id (the request's `_meta.traceparent` if it is a valid
//! W3C one, else a fresh one: [`crate::traceparent`]), then goes through
//! [`ToolRegistry::invoke`], which checks, runs and audits it. That path, with the refusals
//! made here before the registry is asked, is the [`call`] module.
//!
//! rmcp does not abort a handler when the client cancels: it only fires the request's
//! cancellation token. The call races that token and drops the `invoke` future when it fires,
//! which is how the registry's audit record ends as `cancelled`.
//!
//! While a call runs it may notify the client (see [`crate::notices`]): progress when the
//! request carries `_meta.progressToken` (a [`ProgressNotifier`] in the call context, which the
//! tool reaches through `ToolContext::progress`), and log messages when the session set a level
//! (the call runs in a span the [`crate::log_layer`] recognises). Calls that ask for neither
//! run exactly as before. Each session (one handler instance) also watches the registry and
//! sends `notifications/tools/list_changed` when the tools it may call change
//! ([`crate::list_changed`]).
//!
//! The thread and project of a call come from its `_meta` ([`crate::scope`]). An agent's
//! mutation may instead become a proposal that the human at the client approves through
//! elicitation ([`crate::approval`]); `call_tool` hands such calls, and the retries that carry
//! the answer, to that module before the ordinary path.
//!
//! The session of a peer token (another node linking this node's domains) takes another path:
//! its tools are those this registry serves, and each call runs as the caller of the identity
//! statement it carries ([`peer`]).
//!
//! With navigation on ([`crate::NavigationMode`]), `tools/list` also (or only) offers the
//! `navigate` and `execute_action` meta-tools, `call_tool` hands their calls to
//! [`crate::navigation`], and the pages are resources. Resources that read tools serve
//! ([`crate::resources`]) are offered with or without it. A client may subscribe to any
//! resource it can read ([`crate::subscriptions`]).

#![allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).

mod call;
mod peer;

pub(crate) use peer::PeerSession;

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, MutexGuard, PoisonError},
};

use serde_json::Value;
use switchboard_core::{CallContext, CorrelationId, SessionId, mint_id};
use switchboard_registry::ToolRegistry;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
        CompleteResult, CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams,
        GetPromptResponse, GetTaskParams, GetTaskResult, Implementation, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestMethod, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, ServerCapabilities, ServerConfig, SetLevelRequestParams,
        SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
        UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use tokio::sync::watch;
use tokio_util::sync::DropGuard;

use crate::{
    approval::StateKey,
    identity::Identity,
    list_changed,
    navigation::{self, Navigation, NavigationMode},
    prompts, resources,
    scope::RequestScope,
    server_info::ServerInfo,
    session::{ListenBaseline, SessionState, transport_session},
    stdio::known_methods,
    subscriptions, tasks, tools, traceparent,
};

/// An MCP server handler for one connection (stdio) or one HTTP session.
///
/// Cloning is cheap, and clones share the session (its id and log level); use
/// [`McpServer::fresh_instance`] for a new session.
#[derive(Debug, Clone)]
pub struct McpServer {
    registry: ToolRegistry,
    identity: Identity,
    /// The session id used when the transport supplies none.
    minted_session_id: SessionId,
    /// Every call's context before its correlation id is set: the identity and the minted
    /// session, built once so that a call only clones it (reference counts, no allocation).
    call_template: CallContext,
    /// What this handler instance (one session) keeps between requests.
    session: Arc<SessionState>,
    /// The tools in MCP shape, shared with every instance made by [`McpServer::fresh_instance`]
    /// (or by the HTTP server for its sessions).
    catalog: Arc<tools::ToolCatalog>,
    /// Seals and opens approval states; shared by every instance, like the catalog. `None`:
    /// the key generated for the process, the first time an approval state needs one.
    state_key: Option<StateKey>,
    /// The meta-tools and resources of navigation; `None` when it is off.
    navigation: Option<Navigation>,
    /// What the embedding application adds to the `instructions` (shared by every instance).
    instructions: Option<Arc<str>>,
    /// The name, version and opening instructions of `initialize` (shared by every instance).
    server_info: Arc<ServerInfo>,
    /// The peer this session's token stands for; `None`: a client acting as `identity`.
    peer: Option<PeerSession>,
}

impl McpServer {
    /// A handler serving `registry` to a client acting as `identity`.
    ///
    /// Approval states are sealed with a key generated once per process (with a warning)
    /// unless one is given with [`McpServer::with_state_key`].
    pub fn new(registry: ToolRegistry, identity: Identity) -> Self {
        Self::sharing_catalog(registry, identity, Arc::default(), None)
    }

    /// The same handler, sealing and opening approval states with `key`: servers given the
    /// same key open each other's states, across restarts and replicas.
    #[must_use]
    pub fn with_state_key(mut self, key: StateKey) -> Self {
        self.state_key = Some(key);
        self
    }

    /// [`McpServer::new`], with the tools' MCP forms kept in `catalog`: the HTTP server makes
    /// a handler per session and per request, and converts each tool once for all of them.
    pub(crate) fn sharing_catalog(
        registry: ToolRegistry,
        identity: Identity,
        catalog: Arc<tools::ToolCatalog>,
        state_key: Option<StateKey>,
    ) -> Self {
        let minted_session_id = SessionId::from(switchboard_core::mint_id("mcp-session"));
        let mut call_template = identity.call_context(minted_session_id.as_str(), "");
        call_template.correlation_id = None;
        Self {
            registry,
            identity,
            minted_session_id,
            call_template,
            session: Arc::new(SessionState::new()),
            catalog,
            state_key,
            navigation: None,
            instructions: None,
            server_info: Arc::default(),
            peer: None,
        }
    }

    /// The same handler, offering navigation over `navigator` in `mode`: the `navigate` and
    /// `execute_action` tools (alone, or beside the plain tools) and the pages as resources.
    /// [`NavigationMode::Off`] changes nothing.
    #[must_use]
    pub fn with_navigation(
        self,
        navigator: switchboard_navigation::Navigator,
        mode: NavigationMode,
    ) -> Self {
        self.navigating(Navigation::new(navigator, mode))
    }

    /// The same handler with `navigation` (shared by every handler of a server).
    #[must_use]
    pub(crate) fn navigating(mut self, navigation: Option<Navigation>) -> Self {
        self.navigation = navigation;
        self
    }

    /// The same handler, adding `text` as a paragraph of its own to the `instructions` it
    /// gives in `initialize` (what the embedding application wants clients to know, such as
    /// the lazy mounted servers and how to reach them).
    #[must_use]
    pub fn with_instructions(self, text: impl Into<String>) -> Self {
        self.instructing(Some(Arc::from(text.into())))
    }

    /// The same handler with `instructions` added (shared by every handler of a server).
    #[must_use]
    pub(crate) fn instructing(mut self, instructions: Option<Arc<str>>) -> Self {
        self.instructions = instructions;
        self
    }

    /// The same handler, answering `initialize` with `info`: its name and version as
    /// `serverInfo`, and its instructions (if any) as the opening paragraph of
    /// `instructions` (default [`ServerInfo::default`]).
    #[must_use]
    pub fn with_server_info(self, info: ServerInfo) -> Self {
        self.informing(Arc::new(info))
    }

    /// The same handler with `info` (shared by every handler of a server).
    #[must_use]
    pub(crate) fn informing(mut self, info: Arc<ServerInfo>) -> Self {
        self.server_info = info;
        self
    }

    /// The same handler, serving the session of a peer (`None`: of a client).
    #[must_use]
    pub(crate) fn peering(mut self, peer: Option<PeerSession>) -> Self {
        self.peer = peer;
        self
    }

    /// The key that seals approval and page states.
    fn state_key(&self) -> StateKey {
        self.state_key
            .clone()
            .unwrap_or_else(StateKey::process_default)
    }

    /// The same registry, identity and state key, with a newly minted session id.
    #[must_use]
    pub fn fresh_instance(&self) -> Self {
        Self::sharing_catalog(
            self.registry.clone(),
            self.identity.clone(),
            Arc::clone(&self.catalog),
            self.state_key.clone(),
        )
        .navigating(self.navigation.clone())
        .instructing(self.instructions.clone())
        .informing(Arc::clone(&self.server_info))
        .peering(self.peer.clone())
    }

    /// The session id calls use when the transport has none (stdio, in-memory).
    pub fn minted_session_id(&self) -> &str {
        self.minted_session_id.as_str()
    }

    /// The session's pending subscription baselines, locked (a panic elsewhere cannot leave
    /// the queue half-changed).
    fn subscription_baselines(&self) -> MutexGuard<'_, VecDeque<ListenBaseline>> {
        self.session
            .subscription_baselines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's `resources/subscribe` subscriptions, locked.
    fn resource_subscriptions(&self) -> MutexGuard<'_, HashMap<String, DropGuard>> {
        self.session
            .resource_subscriptions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether this server offers any resource: pages, or resources that read tools serve
    /// (never to a peer).
    fn offers_resources(&self) -> bool {
        self.peer.is_none()
            && (self.navigation.is_some() || resources::any(&self.registry, &self.identity.roles))
    }

    /// Whether this session offers prompts (never to a peer).
    fn offers_prompts(&self) -> bool {
        self.peer.is_none() && prompts::any(&self.registry, &self.identity.roles)
    }

    /// Reads the resource `uri` names for the caller of `context`: a resource a read tool
    /// serves, else a page. A URI that names neither is `-32002` (resource not found).
    async fn read_any(
        &self,
        uri: &str,
        context: &CallContext,
    ) -> Result<ReadResourceResult, ErrorData> {
        if self.peer.is_some() {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri:?} here: a peer session is offered none"),
                None,
            ));
        }
        if let Some((spec, values)) = resources::find(&self.registry, uri) {
            return resources::read(&self.registry, spec, values, uri, context).await;
        }
        match &self.navigation {
            Some(navigation) => {
                navigation::resources::read(navigation.navigator(), uri, context).await
            }
            None => Err(ErrorData::resource_not_found(
                format!(
                    "no resource {uri:?} here; resources/list and resources/templates/list name them"
                ),
                Some(serde_json::json!({"uri": uri})),
            )),
        }
    }

    /// Watches `uri` for the caller of `context` until `stop`, calling `notify` when it
    /// changes ([`subscriptions::watch_resource`]). Each read again has its own correlation
    /// id.
    async fn watch_resource<Notify, Sent>(
        &self,
        uri: String,
        context: CallContext,
        writes: watch::Receiver<u64>,
        stop: impl std::future::Future<Output = ()>,
        notify: Notify,
    ) where
        Notify: FnMut() -> Sent,
        Sent: std::future::Future<Output = bool>,
    {
        let read = || {
            let mut context = context.clone();
            context.correlation_id = Some(CorrelationId::from(mint_id("mcp")));
            let uri = uri.as_str();
            async move {
                match self.read_any(uri, &context).await {
                    Ok(answer) => serde_json::to_value(answer).unwrap_or(Value::Null),
                    Err(error) => {
                        serde_json::json!({"code": error.code.0, "message": error.message})
                    }
                }
            }
        };
        subscriptions::watch_resource(writes, read, stop, notify).await;
    }

    /// The context of one call: the template with the request's session (the
    /// streamable-HTTP `mcp-session-id` header, else the minted one already in the template),
    /// its correlation id (a valid `_meta.traceparent`, else a fresh `mcp-<uuid v7>`), and the
    /// thread and project its `_meta` names.
    ///
    /// The HTTP server admits only session ids it issued (and replaces the header of requests
    /// without a session with its own per-connection handle), so the header is ours; it is
    /// still held to the id format ([`switchboard_core::is_valid_id`]) before it is stored,
    /// like every id that arrives with a request.
    fn call_context(
        &self,
        context: &RequestContext<RoleServer>,
        scope: &RequestScope,
    ) -> CallContext {
        let mut call_context = self.call_template.clone();
        if let Some(session_id) = transport_session(&context.extensions) {
            call_context.session_id = Some(SessionId::from(session_id));
        }
        // rmcp moves the request's `_meta` into the context.
        call_context.correlation_id = Some(traceparent::correlation_id(context));
        scope.apply(&mut call_context, &self.registry);
        call_context
    }

    /// The session id calls of a request (or notification) with these extensions run in: the
    /// streamable-HTTP `mcp-session-id` header, else the minted one.
    fn session_of<'a>(&'a self, extensions: &'a rmcp::model::Extensions) -> &'a str {
        transport_session(extensions).unwrap_or(self.minted_session_id.as_str())
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut instructions = String::from(self.server_info.opening_instructions());
        if self.offers_resources() {
            capabilities.resources = ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .build()
                .resources;
        }
        if self.offers_prompts() {
            let offered = ServerCapabilities::builder()
                .enable_prompts()
                .enable_completions()
                .build();
            capabilities.prompts = offered.prompts;
            capabilities.completions = offered.completions;
        }
        if self.peer.is_none() {
            tasks::advertise(&self.registry, &mut capabilities);
        }
        if self.navigation.is_some() && self.peer.is_none() {
            instructions.push_str("\n\n");
            instructions.push_str(navigation::INSTRUCTIONS);
        }
        if let Some(extra) = &self.instructions {
            instructions.push_str("\n\n");
            instructions.push_str(extra);
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                self.server_info.name(),
                self.server_info.version(),
            ))
            .with_instructions(instructions)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.peer.is_some() {
            return peer::tool_served(&self.registry, name)
                .and_then(|descriptor| self.catalog.tool(&descriptor));
        }
        if let Some(navigation) = &self.navigation {
            if let Some(tool) = navigation.tool(name) {
                return Some(tool);
            }
            if navigation.hides_plain_tools() {
                return None;
            }
        }
        self.registry
            .find_permitted(name, &self.identity.roles)
            .and_then(|descriptor| self.catalog.tool(&descriptor))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let cursor = request.and_then(|params| params.cursor);
        if self.peer.is_some() {
            return self.list_peer_tools(cursor.as_deref());
        }
        if let Some(navigation) = &self.navigation
            && navigation.hides_plain_tools()
        {
            // Any cursor is refused as for an empty list: there is only one page.
            return tools::page(&self.catalog, Vec::new(), cursor.as_deref())
                .map(|_| ListToolsResult::with_all_items(navigation.tools().to_vec()));
        }
        // With what this session revealed, if it opened a list of its own (2025 sessions).
        let session = self.session_of(&context.extensions);
        let mut page = tools::page(
            &self.catalog,
            self.registry
                .list_permitted_in(&self.identity.roles, session),
            cursor.as_deref(),
        )?;
        if let Some(navigation) = &self.navigation
            && cursor.is_none()
        {
            // On the first page, before the plain tools.
            page.tools.splice(0..0, navigation.tools().iter().cloned());
        }
        Ok(page)
    }

    /// The home page and every page without parameters (with navigation on), then the
    /// resources with a fixed URI that the caller's tools serve.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if self.peer.is_some() {
            return Ok(ListResourcesResult::default());
        }
        let mut listed = self
            .navigation
            .as_ref()
            .map(|navigation| navigation::resources::list(navigation.navigator()).resources)
            .unwrap_or_default();
        listed.extend(resources::list(&self.registry, &self.identity.roles));
        Ok(ListResourcesResult::with_all_items(listed))
    }

    /// A template for every page with parameters (with navigation on), then the templates of
    /// the resources the caller's tools serve.
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        if self.peer.is_some() {
            return Ok(ListResourceTemplatesResult::default());
        }
        let mut listed = self
            .navigation
            .as_ref()
            .map(|navigation| {
                navigation::resources::templates(navigation.navigator()).resource_templates
            })
            .unwrap_or_default();
        listed.extend(resources::templates(&self.registry, &self.identity.roles));
        Ok(ListResourceTemplatesResult::with_all_items(listed))
    }

    /// A resource or a page, for the caller; `-32601` when the server offers no resources.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if !self.offers_resources() {
            return Err(ErrorData::method_not_found::<ReadResourceRequestMethod>());
        }
        let scope = RequestScope::from_meta(&context.meta)?;
        let call_context = self.call_context(&context, &scope);
        self.read_any(&request.uri, &call_context)
            .await
            .map(Into::into)
    }

    /// Starts watching a resource the caller can read; refused as its read would be. A second
    /// subscription to the same URI replaces the first.
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let scope = RequestScope::from_meta(&context.meta)?;
        let call_context = self.call_context(&context, &scope);
        // The resource must exist for this caller; `watch_resource` reads it again for its
        // baseline, after `writes` is subscribed.
        self.read_any(&request.uri, &call_context).await?;
        let writes = self.registry.watch_writes();
        let watching = self.session.ended.child_token();
        self.resource_subscriptions()
            .insert(request.uri.clone(), watching.clone().drop_guard());
        // A fresh instance shares the registry, identity and pages but not this session's
        // state: a clone would keep the session alive, and with it this watch.
        let server = self.fresh_instance();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            let uri = request.uri;
            let notify = || {
                let peer = peer.clone();
                let uri = uri.clone();
                async move {
                    let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                    peer.notify_resource_updated(param).await.is_ok()
                }
            };
            server
                .watch_resource(
                    uri.clone(),
                    call_context,
                    writes,
                    watching.cancelled(),
                    notify,
                )
                .await;
        });
        Ok(())
    }

    /// Stops watching a resource; unsubscribing from a resource not subscribed to is a no-op.
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resource_subscriptions().remove(&request.uri);
        Ok(())
    }

    /// The prompts the caller's roles grant (`prompts.rs`).
    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        if self.peer.is_some() {
            return Ok(ListPromptsResult::default());
        }
        let cursor = request.and_then(|params| params.cursor);
        prompts::list(&self.registry, &self.identity.roles, cursor.as_deref())
    }

    /// A prompt rendered for the caller (`prompts.rs`).
    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompts_offered::<rmcp::model::GetPromptRequestMethod>()?;
        let scope = RequestScope::from_meta(&context.meta)?;
        let call_context = self.call_context(&context, &scope);
        prompts::get_asking(
            &self.registry,
            &self.state_key(),
            &self.identity,
            request,
            call_context,
            &context,
        )
        .await
    }

    /// Suggestions for a prompt's argument (`prompts.rs`).
    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.prompts_offered::<rmcp::model::CompleteRequestMethod>()?;
        let scope = RequestScope::from_meta(&context.meta)?;
        let call_context = self.call_context(&context, &scope);
        prompts::complete(&self.registry, &request, &call_context)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.clone();
        let answer = self.answer_call(request, context).await;
        if let Err(error) = &answer {
            // The client's mistake (an unknown tool, params that do not fit): the client gets
            // the JSON-RPC error; the log gets one line, not a warning.
            tracing::info!(tool = %name, code = error.code.0, "refused an MCP tools/call: {}", error.message);
        }
        answer
    }

    /// rmcp parses a method it knows but whose params do not fit (a `tools/call` without a
    /// `name`, a `tasks/get` whose `taskId` is a number) as a custom request, whose default
    /// answer is -32601 "method not found". This answers -32602 naming the method and what
    /// was wrong (`stdio::known_methods`), and -32601 for a method the server does not know.
    /// The streamable-HTTP edge hands such requests on to rmcp, so that they are answered here
    /// in the session, after its checks; the stdio edge answers them itself, as does the HTTP
    /// edge for those rmcp cannot read (params that are no object) or would not hand over
    /// (`initialize`).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        match known_methods::invalid_params(&request.method, request.params.as_ref()) {
            Some(message) => Err(ErrorData::invalid_params(message, None)),
            None => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("no method `{}` on this server", request.method),
                None,
            )),
        }
    }

    /// `tasks/get`: a task this identity started, working or with its result.
    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.catalog.tasks.get(&request.task_id, &self.identity)
    }

    /// `tasks/update`: answers to the questions of a task this identity started.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.catalog
            .tasks
            .update(&request.task_id, &self.identity, request.input_responses)
    }

    /// `tasks/cancel`: drops the task's call; a workflow's run is cancelled and compensates.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.catalog.tasks.cancel(&request.task_id, &self.identity)
    }

    /// `logging/setLevel`: from now on, this session's calls send their `tracing` events at
    /// this level and above as `notifications/message`.
    /// Protocol 2026-07-28 has no sessions and no such method (a request names its own level
    /// in `_meta`): there it is not found.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if crate::asking::asks_in_rounds(&context) {
            return Err(ErrorData::method_not_found::<
                rmcp::model::SetLevelRequestMethod,
            >());
        }
        self.session.log_level.set(request.level);
        Ok(())
    }

    /// A 2025 session started: open its own tool list in the registry (which the lazy
    /// servers' `mcp_connect` may grow), and watch the registry for this session's
    /// `tools/list_changed`.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let session: Arc<str> = Arc::from(self.session_of(&context.extensions));
        *self
            .session
            .open_session
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(self.registry.open_session(&session));
        let peer = context.peer;
        // Taken here, not in the task: a change made before the task first runs still counts.
        let baseline =
            list_changed::Baseline::now(&self.registry, &self.identity.roles, Some(&session));
        tokio::spawn(list_changed::watch_visible_tools(
            self.registry.clone(),
            self.identity.roles.clone(),
            Some(session),
            baseline,
            self.session.ended.clone().cancelled_owned(),
            move || {
                let peer = peer.clone();
                async move { peer.notify_tool_list_changed().await.is_ok() }
            },
        ));
    }

    /// 2026-07-28 has no sessions: a client subscribes to `tools/list_changed` instead.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.subscription_baselines().push_back(ListenBaseline {
            tools: list_changed::Baseline::now(&self.registry, &self.identity.roles, None),
            writes: self.registry.watch_writes(),
        });
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        // The oldest baseline of this session: taken before this subscription's
        // acknowledgement (or before an earlier one's, which can only add a notification).
        let baseline = self
            .subscription_baselines()
            .pop_front()
            .unwrap_or_else(|| ListenBaseline {
                tools: list_changed::Baseline::now(&self.registry, &self.identity.roles, None),
                writes: self.registry.watch_writes(),
            });
        let accepted = context.accepted().clone();
        let sink = context.sink().clone();
        // Boxed, so that this rare request does not make the future rmcp spawns for every
        // request (calls included) larger.
        let mut watches: Vec<futures::future::BoxFuture<'_, ()>> = Vec::new();
        if accepted.tools_list_changed == Some(true) {
            let sink = sink.clone();
            watches.push(Box::pin(list_changed::watch_visible_tools(
                self.registry.clone(),
                self.identity.roles.clone(),
                None,
                baseline.tools,
                context.cancelled(),
                move || {
                    let sink = sink.clone();
                    async move { sink.notify_tool_list_changed().await.is_ok() }
                },
            )));
        }
        let uris = accepted.resource_subscriptions.unwrap_or_default();
        if !uris.is_empty() {
            let request = context.request_context();
            let scope = RequestScope::from_meta(&request.meta)?;
            let call_context = self.call_context(request, &scope);
            for uri in uris {
                let sink = sink.clone();
                let notified = uri.clone();
                let notify = move || {
                    let sink = sink.clone();
                    let uri = notified.clone();
                    async move { sink.notify_resource_updated(uri).await.is_ok() }
                };
                watches.push(Box::pin(self.watch_resource(
                    uri,
                    call_context.clone(),
                    baseline.writes.clone(),
                    context.cancelled(),
                    notify,
                )));
            }
        }
        if watches.is_empty() {
            context.cancelled().await;
        } else {
            futures::future::join_all(watches).await;
        }
        Ok(())
    }
}
