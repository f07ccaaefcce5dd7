//! Supervision and containment: what a caller sees when a tool panics, hangs, or finds its
//! domain busy or stopped, and that each of these stays inside one call or one domain.
//!
//! The misbehaving tools are registered at run time, so no sample domain needs a broken tool.
//! Nothing here waits for a fixed time to pass: timeouts are short and asserted by kind, and
//! effects the runtime applies asynchronously are polled for with a bound ([`eventually`]).

use std::{borrow::Cow, sync::Arc, time::Duration};

use serde_json::{Value, json};
use switchboard::{
    Category, ErrorKind, Initiator, InvokeError, RegistryConfig, ToolContext, ToolDescriptor,
    ToolError, ToolRegistry,
    registry::{DomainStatus, RuntimeTool, RuntimeToolSpec},
};
use switchboard_core::{BoxFuture, ToolOrigin};
use switchboard_integration_tests::{
    boot, boot_with, ctx, eventually, only_audit_record, recorrelated,
};
use tokio::sync::Notify;

/// Panics when asked to (`{"panic": true}`), succeeds otherwise.
struct Flaky;

impl RuntimeTool for Flaky {
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            if params["panic"] == true {
                panic!("flaky tool asked to panic");
            }
            Ok(json!({"ok": true}))
        })
    }
}

/// Never finishes.
struct Stuck;

impl RuntimeTool for Stuck {
    fn call<'a>(&'a self, _: &'a ToolContext, _: Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            std::future::pending::<()>().await;
            Ok(Value::Null)
        })
    }
}

/// Finishes once released.
struct Held(Arc<Notify>);

impl RuntimeTool for Held {
    fn call<'a>(&'a self, _: &'a ToolContext, _: Value) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            self.0.notified().await;
            Ok(json!({"released": true}))
        })
    }
}

/// A read tool `name` of domain `domain` running `tool`, with an optional timeout.
fn spec(
    name: &str,
    domain: &str,
    timeout: Option<Duration>,
    tool: Arc<dyn RuntimeTool>,
) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Owned(name.to_owned()),
            title: None,
            domain: Cow::Owned(domain.to_owned()),
            category: Category::Read,
            permission: Cow::Borrowed("ops.use"),
            description: Cow::Borrowed("A tool that misbehaves on purpose."),
            intents: Vec::new(),
            tags: Vec::new(),
            timeout,
            input_schema: Arc::new(json!({
                "type": "object",
                "properties": {"panic": {"type": "boolean"}},
                "additionalProperties": false
            })),
            output_schema: None,
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
            origin: ToolOrigin::Runtime {
                source: "supervision-test".to_owned(),
            },
        },
        tool,
        exposure: switchboard::Exposure::Listed,
    }
}

fn status(registry: &ToolRegistry, domain: &str) -> DomainStatus {
    registry
        .domains()
        .into_iter()
        .find(|status| status.name == domain)
        .unwrap_or_else(|| panic!("the `{domain}` domain exists"))
}

fn admin() -> switchboard::CallContext {
    ctx("acme", "alice", &["admin"], Initiator::Human)
}

#[tokio::test]
async fn a_panicking_tool_is_contained_and_its_domain_keeps_serving() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .register(vec![spec("ops_flaky", "ops", None, Arc::new(Flaky))])
        .await
        .expect("registers");
    let first = admin();

    let error = registry
        .invoke("ops_flaky", json!({"panic": true}), &first)
        .await
        .expect_err("the tool panics");

    assert_eq!(
        error,
        InvokeError::ToolPanicked {
            tool: "ops_flaky".to_owned(),
            message: "flaky tool asked to panic".to_owned(),
        }
    );
    assert_eq!(
        only_audit_record(registry, &first).await.outcome.as_str(),
        "tool_panicked"
    );
    let second = recorrelated(first);
    let ok = registry
        .invoke("ops_flaky", json!({"panic": false}), &second)
        .await
        .expect("the same tool serves the next call");
    assert_eq!(ok, json!({"ok": true}));
    let ops = status(registry, "ops");
    assert!(ops.running);
    assert_eq!(ops.panics, 1);
    assert_eq!(
        ops.restarts, 0,
        "a tool panic does not take its domain down"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_tool_past_its_timeout_is_stopped_and_audited() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    let timeout = Duration::from_millis(50);
    registry
        .register(vec![spec(
            "ops_stuck",
            "ops",
            Some(timeout),
            Arc::new(Stuck),
        )])
        .await
        .expect("registers");
    let context = admin();

    let error = registry
        .invoke("ops_stuck", json!({}), &context)
        .await
        .expect_err("the tool never finishes");

    assert_eq!(
        error,
        InvokeError::Timeout {
            tool: "ops_stuck".to_owned(),
            after: timeout,
        }
    );
    assert_eq!(
        only_audit_record(registry, &context).await.outcome.as_str(),
        "timeout"
    );
    assert_eq!(
        status(registry, "ops").in_flight,
        0,
        "the stopped call released its permit"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_full_bulkhead_makes_callers_wait_within_their_timeout() {
    let mut config = RegistryConfig::default();
    config.domain_concurrency.insert("ops".to_owned(), 1);
    let runtime = boot_with(ToolRegistry::builder().config(config)).await;
    let registry = &runtime.registry;
    let release = Arc::new(Notify::new());
    registry
        .register(vec![
            spec(
                "ops_held",
                "ops",
                None,
                Arc::new(Held(Arc::clone(&release))),
            ),
            spec(
                "ops_quick",
                "ops",
                Some(Duration::from_millis(50)),
                Arc::new(Flaky),
            ),
        ])
        .await
        .expect("registers");

    // The held call and the rest of the test run concurrently in this one task.
    let holder_context = admin();
    let holder = registry.invoke("ops_held", json!({}), &holder_context);
    let waiting = admin();
    let meanwhile = async {
        assert!(
            eventually(|| async { status(registry, "ops").in_flight == 1 }).await,
            "the held call took the domain's only permit"
        );
        let error = registry
            .invoke("ops_quick", json!({}), &waiting)
            .await
            .expect_err("no permit frees up within the timeout");
        release.notify_one();
        error
    };
    let (held, error) = tokio::join!(holder, meanwhile);

    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(
        only_audit_record(registry, &waiting).await.outcome.as_str(),
        "timeout"
    );
    assert_eq!(
        held.expect("the held call finishes once released"),
        json!({"released": true})
    );
    registry
        .invoke("ops_quick", json!({}), &admin())
        .await
        .expect("with the permit back, the quick tool runs");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_stopped_domain_fails_fast_and_the_others_keep_serving() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .domain_actor("roster")
        .expect("the roster domain runs")
        .stop(Some("stopped by the test".to_owned()));

    assert!(
        eventually(|| async { !status(registry, "roster").running }).await,
        "the roster domain is reported stopped"
    );
    let context = ctx("acme", "sam", &["staff"], Initiator::Agent);
    let error = registry
        .invoke(
            "roster_list_shifts",
            json!({"from": "2026-11-23", "to": "2026-11-29"}),
            &context,
        )
        .await
        .expect_err("the roster domain is down");
    assert!(
        matches!(&error, InvokeError::DomainUnavailable { domain, .. } if domain == "roster"),
        "{error:?}"
    );
    assert_eq!(
        only_audit_record(registry, &context).await.outcome.as_str(),
        "domain_unavailable"
    );
    let other = recorrelated(context);
    registry
        .invoke("core_get_current_user", json!({}), &other)
        .await
        .expect("the core domain keeps serving");
    assert_eq!(
        status(registry, "roster").restarts,
        0,
        "a domain stopped on purpose stays stopped"
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_killed_domain_is_reported_down_and_fails_fast() {
    let runtime = boot().await;
    let registry = &runtime.registry;
    registry
        .domain_actor("roster")
        .expect("the roster domain runs")
        .kill();

    // A kill skips the actor's `post_stop`; the registry still learns of it through supervision.
    assert!(
        eventually(|| async { !status(registry, "roster").running }).await,
        "a killed roster domain is still reported running"
    );
    let manager = ctx("acme", "mark", &["manager"], Initiator::Human);
    let error = registry
        .invoke(
            "roster_assign_shift",
            json!({"shift_id": "acme-2026-11-28-am", "user_id": "mark"}),
            &manager,
        )
        .await
        .expect_err("the roster domain is down");
    assert_eq!(error.kind(), ErrorKind::DomainUnavailable, "{error:?}");
    runtime.shutdown().await;
}

#[tokio::test]
async fn after_shutdown_calls_fail_with_domain_unavailable() {
    let runtime = boot().await;
    runtime.shutdown().await;
    let context = admin();

    let error = runtime
        .registry
        .invoke("core_get_current_user", json!({}), &context)
        .await
        .expect_err("the runtime is stopped");

    assert_eq!(error.kind(), ErrorKind::DomainUnavailable);
    assert_eq!(
        only_audit_record(&runtime.registry, &context)
            .await
            .outcome
            .as_str(),
        "domain_unavailable"
    );
    assert!(
        runtime
            .registry
            .domains()
            .iter()
            .all(|domain| !domain.running)
    );
}
