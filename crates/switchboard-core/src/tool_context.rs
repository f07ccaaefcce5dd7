//! What a tool body runs with: the verified caller, its own category, and its domain's state.
//!
//! [`ToolContext<S>`] is typed by the domain's state `S`, so `ctx.state()` is a
//! `&S` with no downcast, and a tool or gate that expects another state does not compile.
//! The runtime, which holds tools of every domain in one table, builds an untyped
//! [`CallScope`] per call; a tool's generated code turns it into the context its function
//! takes.
//!
//! Only `execute` and `restricted` tools get to write: [`ToolContext::write`] refuses the
//! others, so a `read` or `propose` tool cannot change state even by mistake.
//!
//! A mutating call also carries its [`ActionKey`]: the idempotency key the registry claimed for
//! it and the action id it gave it. Most tools never look at it. A tool whose own database
//! also holds the idempotency keys uses it to commit its change and the key's first result in
//! one transaction, so no crash can leave one without the other.

use std::{any::type_name, fmt, sync::Arc};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::{
    ask::{
        self, Answer, AskError, Capability, ElicitReply, Elicitation, Keyed, Reply, Root,
        SampleRequest, Sampled,
    },
    category::Category,
    context::Caller,
    domain::{DomainCell, ErasedCell, StateRef},
    error::ToolError,
    ids::{ActionId, IdempotencyKey, OrgId},
};

/// The action a mutating call runs as, once the registry holds its idempotency key: the
/// organisation and key the key is claimed under, and the id the call's action was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionKey {
    /// The organisation the key belongs to (keys are per organisation).
    pub org_id: OrgId,
    /// The caller's idempotency key, or the one the registry derived.
    pub key: IdempotencyKey,
    /// The action's id, as its audit records and every replay name it.
    pub action_id: ActionId,
}

/// What a tool body sees: the verified caller, its own category, and the state of its domain
/// (`S`, `()` for a domain without state).
pub struct ToolContext<S = ()> {
    caller: Caller,
    tool: Arc<str>,
    category: Category,
    domain: Arc<DomainCell<S>>,
    action: Option<ActionKey>,
}

impl<S: Clone + Send + Sync + 'static> ToolContext<S> {
    /// Made by the runtime after every check has passed; tests of tool bodies make one over a
    /// [`DomainCell::standalone`].
    pub fn new(
        caller: Caller,
        tool: impl Into<Arc<str>>,
        category: Category,
        domain: Arc<DomainCell<S>>,
    ) -> Self {
        Self {
            caller,
            tool: tool.into(),
            category,
            domain,
            action: None,
        }
    }

    /// The same context, running as `action` (what the registry does for a mutating call
    /// that holds its idempotency key).
    #[must_use]
    pub fn with_action(mut self, action: Option<ActionKey>) -> Self {
        self.action = action;
        self
    }

    /// The action this call runs as: `Some` for an `execute` or `restricted` call that holds
    /// its idempotency key, `None` for reads, proposals and gates. A tool whose database also
    /// keeps the idempotency keys completes this key in the transaction of its change.
    pub fn action(&self) -> Option<&ActionKey> {
        self.action.as_ref()
    }

    /// The verified caller: org, user, session, correlation id, roles, initiator.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The tool being run.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Its category.
    pub fn category(&self) -> Category {
        self.category
    }

    /// Reports progress to whoever started the call: `done` out of `total` (if known), with an
    /// optional message. MCP clients that asked for progress get `notifications/progress`;
    /// when nobody listens this does nothing and costs nothing, so report freely. `done`
    /// should increase with every report.
    ///
    /// ```
    /// # use switchboard_core::ToolContext;
    /// # fn work(ctx: &ToolContext, items: &[&str]) {
    /// let total = items.len() as f64;
    /// for (index, item) in items.iter().enumerate() {
    ///     // ... handle `item` ...
    ///     ctx.progress(index as f64 + 1.0, Some(total), None);
    /// }
    /// # }
    /// ```
    pub fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        self.caller.progress.report(done, total, message);
    }

    /// Whether anyone receives [`ToolContext::progress`] reports: check it before building an
    /// expensive message.
    pub fn reports_progress(&self) -> bool {
        self.caller.progress.is_active()
    }

    /// Asks the person at the client to fill in the form `T` (a struct of strings, numbers,
    /// booleans and enums: see [`form_schema`](crate::ask::form_schema)), and reads the answer
    /// as a `T`. The person may decline or dismiss it: that is an [`Answer`], not an error.
    ///
    /// Fails with a tool error the caller sees when nobody can be asked (an MCP client without
    /// the `elicitation` capability, an in-process call with no handler), when `T` is no form,
    /// or when no answer comes in time; `?` passes it on.
    ///
    /// ```
    /// # use switchboard_core::{ToolContext, ToolError, ask::Answer};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// Tick to swap the shifts.
    ///     swap: bool,
    /// }
    /// # async fn body(ctx: &ToolContext) -> Result<bool, ToolError> {
    /// let swap = match ctx.elicit::<Confirm>("Swap Tuesday's shifts?").await? {
    ///     Answer::Accepted(form) => form.swap,
    ///     Answer::Declined | Answer::Cancelled => false,
    /// };
    /// # Ok(swap) }
    /// ```
    pub async fn elicit<T: JsonSchema + DeserializeOwned>(
        &self,
        message: &str,
    ) -> Result<Answer<T>, AskError> {
        ask::elicit_typed(&self.caller.client, message).await
    }

    /// Asks the person at the client with a form or page of one's own making: for a schema
    /// no Rust type describes, or a URL-mode question (for anything sensitive: the page is
    /// opened in the browser, and what the person types there never passes through the
    /// client).
    pub async fn elicit_raw(&self, request: &Elicitation) -> Result<ElicitReply, AskError> {
        self.caller.client.elicit(request).await
    }

    /// Asks the client's model for a completion: a tool that needs a model uses the one the
    /// client already has, with no key of its own. Fails like [`elicit`](Self::elicit) when
    /// nobody can be asked, or when the client (or its user) refuses.
    pub async fn sample(&self, request: &SampleRequest) -> Result<Sampled, AskError> {
        self.caller.client.sample(request).await
    }

    /// Asks several questions the tool needs answered together (a form, a completion, the
    /// client's roots), each under a key of the tool's choosing, and answers them in order.
    /// An MCP client on protocol 2026-07-28 gets them all in one `input_required` result; on
    /// the 2025 revisions they are asked one after another while the call waits.
    pub async fn ask_all(&self, questions: &[Keyed]) -> Result<Vec<Reply>, AskError> {
        self.caller.client.ask_all(questions).await
    }

    /// Whether the client can answer questions that need `capability`: a tool that can do
    /// without a question asks only what the client can answer.
    pub fn client_can(&self, capability: Capability) -> bool {
        self.caller.client.can(capability)
    }

    /// Asks the client for its roots (the folders or places it works in).
    pub async fn list_roots(&self) -> Result<Vec<Root>, AskError> {
        self.caller.client.list_roots().await
    }

    /// Ends the questions asked before the tool's task, and begins the task: for a tool
    /// declared `#[tool(tasks = ..., asks_before_task)]`. An MCP client that does tasks (on
    /// protocol 2026-07-28) answers the questions asked before this in `input_required`
    /// rounds, as for any tool, and gets the task with the round that reaches this; the tool
    /// goes on in the task, and its later questions go to the task's `inputRequests`. Where
    /// no task is to begin here (an in-process call, protocol 2025-11-25, where a task begins
    /// with the call, a client without the tasks extension, a workflow step), it returns at
    /// once.
    ///
    /// Fails with [`AskError::InputRequired`] while a question asked before it is unanswered:
    /// pass it on with `?`, so the round ends with the question.
    ///
    /// ```
    /// # use switchboard_core::{ToolContext, ToolError, ask::Answer};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Name {
    ///     name: String,
    /// }
    /// # async fn body(ctx: &ToolContext) -> Result<String, ToolError> {
    /// let name = ctx.elicit::<Name>("Who is it for?").await?.accepted();
    /// ctx.begin_task().await?; // the client gets its task here
    /// // ... the long work, in the task ...
    /// # Ok(name.map_or_else(String::new, |form| form.name)) }
    /// ```
    pub async fn begin_task(&self) -> Result<(), AskError> {
        self.caller.client.begin_task().await
    }

    /// A snapshot of the domain's state. Never waits for writes.
    pub fn state(&self) -> StateRef<S> {
        self.domain.read()
    }

    /// Changes the domain's state through its actor, one write at a time, and returns what
    /// `update` returned. Only `execute` and `restricted` tools may.
    pub async fn write<R: Send + 'static>(
        &self,
        update: impl FnOnce(&mut S) -> R + Send + 'static,
    ) -> Result<R, ToolError> {
        self.may_write()?;
        self.domain.write(update).await
    }

    /// Refuses (`write_not_allowed`) unless this is an `execute` or `restricted` tool: what
    /// [`write`](Self::write) checks, for a domain whose state is a handle on a database and
    /// whose tools write through it.
    pub fn may_write(&self) -> Result<(), ToolError> {
        if self.category.mutates() {
            return Ok(());
        }
        Err(ToolError::new(
            "write_not_allowed",
            format!(
                "`{}` is a {} tool and may not change state; only execute and restricted tools write",
                self.tool, self.category
            ),
        ))
    }
}

impl<S> Clone for ToolContext<S> {
    fn clone(&self) -> Self {
        Self {
            caller: self.caller.clone(),
            tool: Arc::clone(&self.tool),
            category: self.category,
            domain: Arc::clone(&self.domain),
            action: self.action.clone(),
        }
    }
}

impl<S> fmt::Debug for ToolContext<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("caller", &self.caller)
            .field("tool", &self.tool)
            .field("category", &self.category)
            .field("domain", &self.domain.name)
            .field("action", &self.action)
            .finish()
    }
}

/// A call's context before its domain's state type is known: what the runtime builds for
/// every call, and a tool's generated code turns into its [`ToolContext`].
#[derive(Clone)]
pub struct CallScope {
    caller: Caller,
    tool: Arc<str>,
    category: Category,
    domain: ErasedCell,
    action: Option<ActionKey>,
}

impl CallScope {
    /// The scope of a call of `tool` (whose category is `category`) by `caller`, in the domain
    /// whose cell is `domain`.
    pub fn new(caller: Caller, tool: Arc<str>, category: Category, domain: ErasedCell) -> Self {
        Self {
            caller,
            tool,
            category,
            domain,
            action: None,
        }
    }

    /// The same scope, running as `action` (see [`ToolContext::action`]).
    #[must_use]
    pub fn with_action(mut self, action: Option<ActionKey>) -> Self {
        self.action = action;
        self
    }

    /// The context of a tool whose domain's state is `S`.
    ///
    /// Fails only if the domain's cell holds another state type, which the registry rules
    /// out: a tool's domain is the type that declared it, and two domains never share a name.
    pub fn into_context<S: Clone + Send + Sync + 'static>(
        self,
    ) -> Result<ToolContext<S>, ToolError> {
        let domain = self.domain.downcast::<DomainCell<S>>().map_err(|_| {
            ToolError::new(
                "domain_state_mismatch",
                format!(
                    "`{}` expects its domain's state to be a `{}`, and it is not",
                    self.tool,
                    type_name::<S>()
                ),
            )
        })?;
        Ok(
            ToolContext::new(self.caller, self.tool, self.category, domain)
                .with_action(self.action),
        )
    }
}

impl fmt::Debug for CallScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallScope")
            .field("tool", &self.tool)
            .field("category", &self.category)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CallContext;

    fn caller() -> Caller {
        CallContext::builder()
            .org("acme")
            .user("u")
            .session("s")
            .correlation("c")
            .build()
            .verify()
            .expect("complete context")
    }

    fn context(category: Category, state: u64) -> ToolContext<u64> {
        ToolContext::new(
            caller(),
            "test_tool",
            category,
            DomainCell::standalone("counter", state),
        )
    }

    #[test]
    fn standalone_cells_apply_writes_and_publish_snapshots() {
        let ctx = context(Category::Execute, 0);
        let before = ctx.state();
        let written = futures::executor::block_on(ctx.write(|n: &mut u64| {
            *n += 1;
            *n
        }));
        assert_eq!(written, Ok(1));
        assert_eq!(*before, 0, "a snapshot never changes under its reader");
        assert_eq!(*ctx.state(), 1);
    }

    #[test]
    fn many_snapshots_held_at_once_outlive_writes_and_move_between_threads() {
        // More snapshots than arc_swap keeps cheap slots for on one thread, each then written
        // over: every one still reads what it read, here or on another thread.
        let ctx = context(Category::Execute, 0);
        let mut held = Vec::new();
        for expected in 0..20_u64 {
            held.push((expected, ctx.state()));
            let written = futures::executor::block_on(ctx.write(|n: &mut u64| {
                *n += 1;
                *n
            }));
            assert_eq!(written, Ok(expected + 1));
        }
        std::thread::spawn(move || {
            for (expected, snapshot) in held {
                assert_eq!(*snapshot, expected);
            }
        })
        .join()
        .expect("the snapshots read on another thread");
        assert_eq!(*ctx.state(), 20);
    }

    #[test]
    fn read_and_propose_tools_cannot_write() {
        for category in [Category::Read, Category::Propose] {
            let ctx = context(category, 0);
            let refused = futures::executor::block_on(ctx.write(|n: &mut u64| *n += 1));
            assert_eq!(
                refused.map_err(|e| e.code().to_owned()),
                Err("write_not_allowed".to_owned())
            );
            assert_eq!(*ctx.state(), 0);
        }
    }

    #[test]
    fn a_panicking_write_leaves_the_state_unchanged() {
        let ctx = context(Category::Execute, 7);
        let outcome =
            futures::executor::block_on(ctx.write(|_: &mut u64| -> u64 { panic!("boom") }));
        assert_eq!(
            outcome.map_err(|e| e.code().to_owned()),
            Err("write_panicked".to_owned())
        );
        assert_eq!(*ctx.state(), 7);
    }

    #[test]
    fn a_scope_becomes_the_context_of_its_domains_state_type_only() {
        let cell: ErasedCell = DomainCell::standalone("counter", 3_u64);
        let scope = CallScope::new(caller(), "test_tool".into(), Category::Read, cell);
        let ctx = scope
            .clone()
            .into_context::<u64>()
            .expect("the cell holds a u64");
        assert_eq!(*ctx.state(), 3);
        let error = scope
            .into_context::<String>()
            .expect_err("the cell does not hold a String");
        assert_eq!(error.code(), "domain_state_mismatch");
    }
}
