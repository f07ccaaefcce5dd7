//! Layers around calls: cross-cutting policy a service puts around the registry's calls (rate
//! limits, tracing, business hours, metrics of its own), for every domain or for one.
//!
//! The registry's checks (context, `org_id`, thread, scope, category, permission, input, gate)
//! are fixed and come first; a layer runs after them, so it sees a verified caller, a tool that
//! exists and input that is valid. Around a mutation, the layers run before its idempotency key
//! is claimed: a call a layer refuses claimed nothing and a retry is a new attempt.
//!
//! A layer is written in the style of tower's middleware and axum's `from_fn`: it gets the call
//! ([`LayerCall`]) and either refuses it ([`LayerCall::refuse`], [`LayerCall::rate_limited`]) or
//! passes it on ([`LayerCall::run`]), which runs the next layer, and after the last one the
//! tool. Either way it answers with the call's [`Finished`], which says how the call ended and
//! which only those two paths make: a layer can neither invent a success nor change a tool's
//! output (the output goes to the caller and to the audit record exactly as the tool returned
//! it), and once it ran the call it can no longer refuse it (`run` consumes the call).
//!
//! Layers for every domain wrap those of one domain; within each group the first added is the
//! outermost. A registry without layers takes none of this path: no allocation, no dynamic
//! call.

use std::{any::Any, collections::HashMap, sync::Arc, time::Duration};

use serde_json::Value;
use switchboard_core::{BoxFuture, Caller, ErrorKind, InvokeError, ToolDescriptor};

/// Policy around the registry's calls: rate limits, tracing, business hours.
///
/// A layer runs after every check of the registry and the tool's gate, and before a mutation's
/// idempotency key is claimed. It refuses the call ([`LayerCall::refuse`],
/// [`LayerCall::rate_limited`]) or passes it on ([`LayerCall::run`]) and answers with how it
/// [`Finished`]; it cannot change the tool's output. Layers around every call
/// ([`RegistryBuilder::layer`](crate::RegistryBuilder::layer)) wrap those of one domain
/// ([`RegistryBuilder::domain_layer`](crate::RegistryBuilder::domain_layer)); within each
/// group the first added is the outermost.
///
/// ```
/// use switchboard_core::BoxFuture;
/// use switchboard_registry::{CallLayer, Finished, LayerCall};
///
/// /// Refuses calls of the organisation `suspended`.
/// struct Suspended;
///
/// impl CallLayer for Suspended {
///     fn name(&self) -> &str {
///         "suspended"
///     }
///
///     fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished> {
///         Box::pin(async move {
///             if call.caller().org_id.as_str() == "suspended" {
///                 return call.refuse("org_suspended", "this organisation is suspended");
///             }
///             call.run().await
///         })
///     }
/// }
/// ```
pub trait CallLayer: Send + Sync + 'static {
    /// The layer's name, as its refusals ([`InvokeError::LayerRefused`]) and logs show it.
    fn name(&self) -> &str;

    /// Handles one call: refuses it, or runs it ([`LayerCall::run`]) and answers with how it
    /// finished.
    fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished>;
}

/// A call on its way through the layers, after the registry's checks passed.
pub struct LayerCall<'a> {
    /// The name of the layer this call is handed to (for its refusals).
    layer: &'a str,
    /// The layers after this one.
    rest: &'a [Arc<dyn CallLayer>],
    pending: Box<dyn Pending<'a> + 'a>,
}

impl std::fmt::Debug for LayerCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayerCall")
            .field("layer", &self.layer)
            .field("tool", &self.tool().name)
            .field("caller", self.caller())
            .field("layers_after", &self.rest.len())
            .finish_non_exhaustive()
    }
}

impl<'a> LayerCall<'a> {
    /// The verified caller.
    pub fn caller(&self) -> &Caller {
        self.pending.caller()
    }

    /// The tool called.
    pub fn tool(&self) -> &ToolDescriptor {
        self.pending.tool()
    }

    /// The params as JSON, for a call that came as JSON (agents, transports); `None` for a
    /// typed call from Rust, whose input [`input`](Self::input) holds.
    pub fn params(&self) -> Option<&Value> {
        self.pending.params()
    }

    /// The validated input, as a gate sees it: the tool's input type for a linked tool (typed
    /// or decoded from JSON), the JSON params for a run-time tool.
    pub fn input(&self) -> &(dyn Any + Send + Sync) {
        self.pending.input()
    }

    /// Passes the call on: to the next layer, or after the last one to the tool. Answers with
    /// how the call finished.
    pub async fn run(self) -> Finished {
        match self.rest.split_first() {
            None => Finished {
                result: self.pending.run().await,
            },
            Some((next, rest)) => {
                let call = LayerCall {
                    layer: next.name(),
                    rest,
                    pending: self.pending,
                };
                next.call(call).await
            }
        }
    }

    /// Refuses the call with this layer's own stable snake_case `code` and a `reason` the
    /// caller can act on: the caller gets [`InvokeError::LayerRefused`], and the call's audit
    /// record says `layer_refused`.
    pub fn refuse(self, code: impl Into<String>, reason: impl Into<String>) -> Finished {
        let error = InvokeError::LayerRefused {
            tool: self.tool().name.to_string(),
            layer: self.layer.to_owned(),
            code: code.into(),
            reason: reason.into(),
        };
        Finished { result: Err(error) }
    }

    /// Refuses the call because `limit` (as configured: `60 calls per 60 s per user`) is used
    /// up, for `retry_after`: the caller gets [`InvokeError::RateLimited`].
    pub fn rate_limited(self, limit: impl Into<String>, retry_after: Duration) -> Finished {
        let retry_after_ms = u64::try_from(retry_after.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let error = InvokeError::RateLimited {
            tool: self.tool().name.to_string(),
            limit: limit.into(),
            retry_after_ms,
        };
        Finished { result: Err(error) }
    }
}

/// How a call that went through the layers finished: the tool's run (success, or the error
/// it ended with), or a layer's refusal. Made only by [`LayerCall::run`] and the refusals.
#[derive(Debug)]
#[must_use = "a layer answers with the call's Finished"]
pub struct Finished {
    result: Result<(), InvokeError>,
}

impl Finished {
    /// Whether the call succeeded (a stored proposal counts as a success).
    pub fn is_ok(&self) -> bool {
        self.result.is_ok()
    }

    /// The error the call ended with, if it failed or was refused.
    pub fn error(&self) -> Option<&InvokeError> {
        self.result.as_ref().err()
    }

    /// The stable kind of the error the call ended with, if any.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.error().map(InvokeError::kind)
    }

    pub(crate) fn into_result(self) -> Result<(), InvokeError> {
        self.result
    }
}

/// The rest of a call, erased: what the layers may look at, and the run of the tool (whose
/// output stays with the registry).
pub(crate) trait Pending<'a>: Send {
    fn caller(&self) -> &Caller;
    fn tool(&self) -> &ToolDescriptor;
    fn params(&self) -> Option<&Value>;
    fn input(&self) -> &(dyn Any + Send + Sync);
    fn run(self: Box<Self>) -> BoxFuture<'a, Result<(), InvokeError>>;
}

/// The layers of a registry: those around every call, and for each domain that has its own,
/// the whole chain of its calls.
#[derive(Default)]
pub(crate) struct Layers {
    every: Arc<[Arc<dyn CallLayer>]>,
    by_domain: HashMap<Arc<str>, Arc<[Arc<dyn CallLayer>]>>,
}

impl Layers {
    /// The chains from what the builder collected: `every` around all calls, `by_domain`
    /// inside them for each domain's calls.
    pub(crate) fn new(
        every: Vec<Arc<dyn CallLayer>>,
        by_domain: Vec<(String, Arc<dyn CallLayer>)>,
    ) -> Self {
        let mut chains: HashMap<Arc<str>, Vec<Arc<dyn CallLayer>>> = HashMap::new();
        for (domain, layer) in by_domain {
            chains
                .entry(Arc::from(domain))
                .or_insert_with(|| every.clone())
                .push(layer);
        }
        Self {
            every: every.into(),
            by_domain: chains
                .into_iter()
                .map(|(domain, chain)| (domain, chain.into()))
                .collect(),
        }
    }

    /// The layers around a call of a tool of `domain`, outermost first.
    pub(crate) fn around(&self, domain: &str) -> &[Arc<dyn CallLayer>] {
        self.by_domain.get(domain).unwrap_or(&self.every)
    }

    /// Runs `pending` through `chain` (not empty).
    pub(crate) async fn run<'a>(
        chain: &'a [Arc<dyn CallLayer>],
        pending: Box<dyn Pending<'a> + 'a>,
    ) -> Result<(), InvokeError> {
        let call = LayerCall {
            layer: "",
            rest: chain,
            pending,
        };
        call.run().await.into_result()
    }
}
