//! The conformance suite's hook that changes the tool list (`test_trigger_tool_change`, for
//! `server-stateless`'s list-changed checks), registered by `serve --conformance` only.
//!
//! Under `--conformance` only, [`PAUSE_AFTER_MUTATION`] also adds a layer that holds the
//! answer of each mutation after it ran, for the tests that crash a node between a write and
//! its answer (`tests/it/remote_domain.rs`).
//!
//! The tool-list hook lives here rather than in the conformance domain because it changes the registry itself,
//! which a domain's tool cannot reach: it is a run-time tool holding a weak handle on the
//! registry, and each call registers the run-time tool `test_toggled_tool` if it is absent and
//! removes it if present, so that clients listening for changes get `tools/list_changed`.

use std::{borrow::Cow, sync::Arc};

use anyhow::Context as _;
use serde_json::{Value, json};
use switchboard::{
    BoxFuture, Category, Exposure, RuntimeTool, RuntimeToolSpec, ToolContext, ToolDescriptor,
    ToolError, ToolOrigin, ToolRegistry, WeakToolRegistry,
};

/// The tool a call of the hook adds or removes.
const TOGGLED: &str = "test_toggled_tool";

/// Registers `test_trigger_tool_change` on `registry`.
pub(crate) async fn register(registry: &ToolRegistry) -> anyhow::Result<()> {
    let hook = spec(
        "test_trigger_tool_change",
        "Adds the tool `test_toggled_tool` if it is absent and removes it if present, so that \
         the tool list changes. For the MCP conformance scenario `server-stateless`.",
        Arc::new(TriggerToolChange {
            registry: registry.downgrade(),
        }),
    );
    registry
        .register(vec![hook])
        .await
        .context("cannot register the conformance suite's test_trigger_tool_change")
}

fn spec(
    name: &'static str,
    description: &'static str,
    tool: Arc<dyn RuntimeTool>,
) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed(switchboard_domain_conformance::DOMAIN),
            category: Category::Read,
            permission: Cow::Borrowed(switchboard_domain_conformance::PERMISSION),
            description: Cow::Borrowed(description),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(json!({"type": "object", "properties": {}})),
            output_schema: None,
            origin: ToolOrigin::Runtime {
                source: "serve --conformance".to_owned(),
            },
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
        },
        tool,
        exposure: Exposure::Listed,
    }
}

struct TriggerToolChange {
    registry: WeakToolRegistry,
}

impl RuntimeTool for TriggerToolChange {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let registry = self.registry.upgrade().ok_or_else(|| {
                ToolError::new("domain_unavailable", "the registry is shutting down")
            })?;
            let failed = |error: switchboard::RegistryError| {
                ToolError::new("failed", format!("could not change the tool list: {error}"))
            };
            let removed = registry
                .unregister(vec![TOGGLED.to_owned()])
                .await
                .map_err(failed)?;
            if removed == 0 {
                let toggled = spec(
                    TOGGLED,
                    "Answers `{}`; `test_trigger_tool_change` adds and removes it.",
                    Arc::new(Nothing),
                );
                registry.register(vec![toggled]).await.map_err(failed)?;
            }
            Ok(json!({"toolAdded": removed == 0}))
        })
    }
}

/// The toggled tool's body.
struct Nothing;

impl RuntimeTool for Nothing {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async { Ok(json!({})) })
    }
}

/// The variable that makes `serve --conformance` hold the answer of every mutation that ran
/// (e.g. `3s`), so that a test can kill the node after the tool wrote and before the caller
/// heard: the crash between a remote write and its answer. Read only under `--conformance`.
pub(crate) const PAUSE_AFTER_MUTATION: &str = "SWITCHBOARD_TEST_PAUSE_AFTER_MUTATION";

/// What the pause logs (at `warn`) once the mutation ran and its answer is held.
pub(crate) const PAUSING: &str = "holding the answer of a mutation that ran";

/// The layer [`PAUSE_AFTER_MUTATION`] asks for, if it is set; a value that is not an age is a
/// usage error.
pub(crate) fn pause_after_mutation() -> Result<Option<PauseAfterMutation>, crate::app::UsageError> {
    let Some(text) = std::env::var_os(PAUSE_AFTER_MUTATION) else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    crate::config_file::parse_age(&text)
        .map(|pause| Some(PauseAfterMutation { pause }))
        .map_err(|error| crate::app::UsageError::new(format!("{PAUSE_AFTER_MUTATION}: {error}")))
}

/// Holds the answer of each mutation that ran for `pause`, outside the tool and after its
/// write: a test-only layer of `serve --conformance`.
pub(crate) struct PauseAfterMutation {
    pause: std::time::Duration,
}

impl switchboard::registry::CallLayer for PauseAfterMutation {
    fn name(&self) -> &str {
        "test_pause_after_mutation"
    }

    fn call<'a>(
        &'a self,
        call: switchboard::registry::LayerCall<'a>,
    ) -> BoxFuture<'a, switchboard::registry::Finished> {
        Box::pin(async move {
            let mutates = call.tool().category.mutates();
            let tool = call.tool().name.to_string();
            let finished = call.run().await;
            if mutates {
                tracing::warn!(tool, pause = ?self.pause, "{PAUSING}");
                tokio::time::sleep(self.pause).await;
            }
            finished
        })
    }
}
