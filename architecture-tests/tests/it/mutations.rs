//! Guards the idempotency keys of mutations, derived from each tool's declared category (no
//! list of "gated" or "mutating" tools exists to drift from the registry).
//!
//! Architecture Invariant: no caller runs an execute or restricted tool without an idempotency
//! key (given, or derived by the runtime; when the runtime requires a given key, a call without
//! one is refused before the tool runs). That an agent acting alone never runs one, and that a
//! key runs it once, the conformance kit checks on every linked tool (`kit.rs`).

use std::{
    borrow::Cow,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use architecture_tests::calls::{admin_human_confirmed, fresh_correlation_id};
use serde_json::{Value, json};
use switchboard::{
    AuditQuery, BoxFuture, Category, ErrorKind, RegistryConfig, RuntimeTool, RuntimeToolSpec,
    ToolContext, ToolDescriptor, ToolError, ToolOrigin, ToolRegistry, audit::ActionEvent,
};

/// The registered tools whose category lets them change state.
fn mutating_tools(registry: &ToolRegistry) -> Vec<(String, Category)> {
    registry
        .list()
        .iter()
        .filter(|tool| tool.category.mutates())
        .map(|tool| (tool.name.to_string(), tool.category))
        .collect()
}

/// A mutating run-time tool that counts its runs: the same call path as a linked tool, whose
/// params are easy to make valid.
struct Counter(Arc<AtomicU64>);

impl RuntimeTool for Counter {
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Ok(json!(self.0.fetch_add(1, Ordering::SeqCst) + 1)) })
    }
}

fn counter(name: &str, category: Category, runs: &Arc<AtomicU64>) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Owned(name.to_owned()),
            title: None,
            domain: Cow::Borrowed("counters"),
            category,
            permission: Cow::Borrowed("counters.count"),
            description: Cow::Borrowed("Counts."),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout: None,
            input_schema: Arc::new(json!({ "type": "object" })),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "architecture-tests".to_owned(),
            },
        },
        tool: Arc::new(Counter(Arc::clone(runs))),
        exposure: switchboard::Exposure::Listed,
    }
}

#[tokio::test]
async fn no_mutating_tool_runs_without_an_idempotency_key() -> anyhow::Result<()> {
    let config = RegistryConfig {
        require_idempotency_key: true,
        ..RegistryConfig::default()
    };
    let registry = ToolRegistry::builder().config(config).start().await?;
    // Every linked mutating tool, with every earlier check passed that params allow: never ok.
    for (tool, _) in mutating_tools(&registry) {
        let context = admin_human_confirmed(&fresh_correlation_id("keyless"));
        let result = registry.invoke(&tool, json!({}), &context).await;
        anyhow::ensure!(result.is_err(), "`{tool}` ran without a key: {result:?}");
    }
    // The same path with valid params, for each mutating category.
    for category in Category::ALL.into_iter().filter(|c| c.mutates()) {
        let runs = Arc::new(AtomicU64::new(0));
        let name = format!("counters_{category}");
        registry
            .register(vec![counter(&name, category, &runs)])
            .await?;
        let keyless = admin_human_confirmed(&fresh_correlation_id("keyless"));
        let error = registry
            .invoke(&name, json!({}), &keyless)
            .await
            .err()
            .ok_or_else(|| anyhow::anyhow!("`{name}` ran without a key"))?;
        anyhow::ensure!(
            error.kind() == ErrorKind::IdempotencyKeyRequired,
            "{error:?}"
        );
        anyhow::ensure!(runs.load(Ordering::SeqCst) == 0);

        for attempt in 0..2 {
            let mut keyed = admin_human_confirmed(&fresh_correlation_id("keyed"));
            keyed.idempotency_key = Some(format!("key-{category}").into());
            let answer = registry.invoke(&name, json!({}), &keyed).await?;
            anyhow::ensure!(
                answer == json!(1),
                "attempt {attempt} of `{name}`: {answer}"
            );
            let correlation = keyed.correlation_id.clone().map(|c| c.to_string());
            let records = registry
                .audit()
                .query(&AuditQuery::correlation(correlation.unwrap_or_default()))
                .await?;
            let event = records
                .first()
                .and_then(|record| record.action.as_ref())
                .map(|action| action.event);
            let expected = if attempt == 0 {
                ActionEvent::Executed
            } else {
                ActionEvent::Replayed
            };
            anyhow::ensure!(
                event == Some(expected),
                "`{name}` attempt {attempt}: {event:?}"
            );
        }
        anyhow::ensure!(
            runs.load(Ordering::SeqCst) == 1,
            "`{name}` ran twice for one key"
        );
    }
    registry.shutdown().await;
    Ok(())
}
