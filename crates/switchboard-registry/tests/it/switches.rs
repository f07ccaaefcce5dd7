//! Tools switched at run time: disabling and enabling by tool name, domain and tag. A disabled
//! tool leaves every list and its calls are refused as unknown (and audited); enabling
//! restores it; concurrent switches all take effect.
//!
//! The `shop` and `lab` domains and their tools are defined here, for these tests.

use std::{borrow::Cow, sync::Arc};

use futures::future::join_all;
use serde_json::{Value, json};
use switchboard_audit::{Outcome, SWITCH_RECORD_TOOL, SwitchAction};
use switchboard_core::{
    BoxFuture, CallContext, Category, ErrorKind, InvokeError, NoInput, ToolContext, ToolDescriptor,
    ToolError, ToolOrigin, tool,
};
use switchboard_registry::{
    Exposure, RegistryConfig, RegistryError, RuntimeTool, RuntimeToolSpec, Selector, ToolRegistry,
};

use crate::common::{admin_context, invoke, names, only_record_of, records_of, start};

switchboard_core::domain! {
    /// A shop, for the switching tests.
    Shop { name: "shop" }
}

switchboard_core::domain! {
    /// A lab, for the switching tests.
    Lab { name: "lab" }
}

/// Lists what the shop sells.
#[tool(domain = Shop, category = read, permission = "shop.read", tags = ["catalog"])]
async fn browse(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("browsed".to_owned())
}

/// Shows what the shop will sell.
#[tool(domain = Shop, category = read, permission = "shop.read", tags = ["catalog", "beta"])]
async fn preview(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("previewed".to_owned())
}

/// Counts the shop's stock.
#[tool(domain = Shop, category = read, permission = "shop.read")]
async fn stock(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("counted".to_owned())
}

/// Probes a sample.
#[tool(domain = Lab, category = read, permission = "lab.read", tags = ["beta"])]
async fn probe(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("probed".to_owned())
}

/// Measures a sample.
#[tool(domain = Lab, category = read, permission = "lab.read")]
async fn measure(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("measured".to_owned())
}

const SWITCHED: [&str; 5] = [
    "lab_measure",
    "lab_probe",
    "shop_browse",
    "shop_preview",
    "shop_stock",
];

fn selector(text: &str) -> Selector {
    text.parse().expect("a valid selector")
}

/// Who switches, in the tests that do not look at who.
fn operator() -> CallContext {
    admin_context("switching")
}

/// The names of the listed tools among this file's.
fn listed(registry: &ToolRegistry) -> Vec<String> {
    names(&registry.list())
        .into_iter()
        .filter(|name| SWITCHED.contains(name))
        .map(str::to_owned)
        .collect()
}

/// Calls `tool`, which must be refused as unknown, and checks the refusal's audit record.
async fn assert_refused_as_unknown(registry: &ToolRegistry, tool: &str, correlation: &str) {
    let error = invoke(registry, tool, correlation)
        .await
        .expect_err("a disabled tool is not called");
    assert_eq!(error.kind(), ErrorKind::ToolNotFound, "{error}");
    let InvokeError::ToolNotFound { suggestions, .. } = &error else {
        unreachable!("the kind says so");
    };
    assert!(
        !suggestions.iter().any(|name| name == tool),
        "a disabled tool is not suggested: {suggestions:?}"
    );
    registry.audit().flush().await;
    let record = only_record_of(registry, correlation).await;
    assert_eq!(record.outcome, Outcome::Error(ErrorKind::ToolNotFound));
    assert_eq!(&*record.tool, tool);
}

#[tokio::test]
async fn a_tool_disabled_by_name_is_gone_until_enabled() {
    let registry = start(RegistryConfig::default()).await;
    let mut changes = registry.watch_changes();

    let changed = registry
        .disable(selector("tool:shop_preview"), &operator())
        .await
        .expect("the tool exists");
    assert_eq!(changed, ["shop_preview"]);
    assert!(changes.has_changed().expect("the registry runs"));
    changes.mark_unchanged();
    assert_eq!(
        listed(&registry),
        ["lab_measure", "lab_probe", "shop_browse", "shop_stock"]
    );
    assert!(registry.find("shop_preview").is_none());
    assert!(registry.exposure("shop_preview").is_none());
    assert_eq!(
        names(&registry.list_by_domain("shop")),
        ["shop_browse", "shop_stock"]
    );
    assert_eq!(names(&registry.disabled()), ["shop_preview"]);
    assert_refused_as_unknown(&registry, "shop_preview", "switch-name-1").await;

    let changed = registry
        .enable(selector("tool:shop_preview"), &operator())
        .await
        .expect("the tool exists");
    assert_eq!(changed, ["shop_preview"]);
    assert!(changes.has_changed().expect("the registry runs"));
    assert_eq!(listed(&registry), SWITCHED);
    assert!(registry.disabled().is_empty());
    assert_eq!(
        invoke(&registry, "shop_preview", "switch-name-2").await,
        Ok(json!("previewed"))
    );
}

#[tokio::test]
async fn a_domain_switch_reaches_every_tool_of_the_domain_only() {
    let registry = start(RegistryConfig::default()).await;
    let changed = registry
        .disable(selector("domain:shop"), &operator())
        .await
        .expect("the domain has tools");
    assert_eq!(changed, ["shop_browse", "shop_preview", "shop_stock"]);
    assert_eq!(listed(&registry), ["lab_measure", "lab_probe"]);
    assert!(registry.list_by_domain("shop").is_empty());
    for (index, tool) in ["shop_browse", "shop_preview", "shop_stock"]
        .into_iter()
        .enumerate()
    {
        assert_refused_as_unknown(&registry, tool, &format!("switch-domain-{index}")).await;
    }
    assert_eq!(
        invoke(&registry, "lab_probe", "switch-domain-lab").await,
        Ok(json!("probed"))
    );

    let changed = registry
        .enable(selector("domain:shop"), &operator())
        .await
        .expect("the domain has tools");
    assert_eq!(changed, ["shop_browse", "shop_preview", "shop_stock"]);
    assert_eq!(listed(&registry), SWITCHED);
}

#[tokio::test]
async fn a_tag_switch_crosses_domains() {
    let registry = start(RegistryConfig::default()).await;
    let changed = registry
        .disable(selector("tag:beta"), &operator())
        .await
        .expect("tools carry the tag");
    assert_eq!(changed, ["lab_probe", "shop_preview"]);
    assert_eq!(
        listed(&registry),
        ["lab_measure", "shop_browse", "shop_stock"]
    );
    assert_refused_as_unknown(&registry, "lab_probe", "switch-tag-1").await;

    let changed = registry
        .enable(selector("tag:beta"), &operator())
        .await
        .expect("tools carry the tag");
    assert_eq!(changed, ["lab_probe", "shop_preview"]);
    assert_eq!(listed(&registry), SWITCHED);
}

#[tokio::test]
async fn the_last_switch_naming_a_tool_decides() {
    let registry = start(RegistryConfig::default()).await;
    registry
        .disable(selector("tag:catalog"), &operator())
        .await
        .expect("tools carry the tag");
    let changed = registry
        .enable(selector("tool:shop_browse"), &operator())
        .await
        .expect("the tool exists");
    assert_eq!(changed, ["shop_browse"]);
    assert_eq!(names(&registry.disabled()), ["shop_preview"]);

    // Disabling what is already disabled changes nothing, and is no error.
    let changed = registry
        .disable(selector("tool:shop_preview"), &operator())
        .await
        .expect("the tool exists");
    assert!(changed.is_empty(), "{changed:?}");

    // The domain switch comes last, so it decides for every tool of the domain.
    let changed = registry
        .disable(selector("domain:shop"), &operator())
        .await
        .expect("the domain has tools");
    assert_eq!(changed, ["shop_browse", "shop_stock"]);
    let changed = registry
        .enable(selector("domain:shop"), &operator())
        .await
        .expect("the domain has tools");
    assert_eq!(changed, ["shop_browse", "shop_preview", "shop_stock"]);
}

#[tokio::test]
async fn a_selector_matching_nothing_is_refused_with_look_alikes() {
    let registry = start(RegistryConfig::default()).await;
    for (text, expected) in [
        (
            "tag:bta",
            "no tool matches `tag:bta`; did you mean `tag:beta`?",
        ),
        (
            "domain:shops",
            "no tool matches `domain:shops`; did you mean `domain:shop`?",
        ),
        (
            "tool:nothing_like_it",
            "no tool matches `tool:nothing_like_it`",
        ),
    ] {
        let error = registry
            .disable(selector(text), &operator())
            .await
            .expect_err("nothing matches");
        assert!(
            matches!(error, RegistryError::NoToolSelected { .. }),
            "{error:?}"
        );
        assert_eq!(error.to_string(), expected);
    }
    // A disabled tool is still a tool to switch: it can be named to enable it.
    registry
        .disable(selector("tool:lab_probe"), &operator())
        .await
        .expect("the tool exists");
    let error = registry
        .enable(selector("tool:lab_prob"), &operator())
        .await
        .expect_err("nothing matches");
    assert_eq!(
        error.to_string(),
        "no tool matches `tool:lab_prob`; did you mean `tool:lab_probe`?"
    );
    assert_eq!(
        listed(&registry),
        ["lab_measure", "shop_browse", "shop_preview", "shop_stock"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_switches_all_take_effect() {
    let registry = start(RegistryConfig::default()).await;
    for round in 0..20 {
        let disables = SWITCHED.map(|name| {
            let registry = registry.clone();
            tokio::spawn(async move {
                registry
                    .disable(selector(&format!("tool:{name}")), &operator())
                    .await
            })
        });
        let mut changed: Vec<String> = Vec::new();
        for outcome in join_all(disables).await {
            changed.extend(outcome.expect("no panic").expect("every tool exists"));
        }
        changed.sort();
        assert_eq!(changed, SWITCHED, "round {round}: each tool changed once");
        assert!(listed(&registry).is_empty(), "round {round}");

        let enables = SWITCHED.map(|name| {
            let registry = registry.clone();
            tokio::spawn(async move {
                registry
                    .enable(selector(&format!("tool:{name}")), &operator())
                    .await
            })
        });
        for outcome in join_all(enables).await {
            assert_eq!(
                outcome.expect("no panic").expect("every tool exists").len(),
                1
            );
        }
        assert_eq!(listed(&registry), SWITCHED, "round {round}");
    }
}

/// A run-time tool that answers `{}`.
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

fn runtime_tool(
    name: &'static str,
    domain: &'static str,
    tags: &[&'static str],
) -> RuntimeToolSpec {
    RuntimeToolSpec {
        descriptor: ToolDescriptor {
            name: Cow::Borrowed(name),
            title: None,
            domain: Cow::Borrowed(domain),
            category: Category::Read,
            permission: Cow::Borrowed("ext.read"),
            description: Cow::Borrowed("Does nothing."),
            intents: Vec::new(),
            tags: tags.iter().map(|tag| Cow::Borrowed(*tag)).collect(),
            timeout: None,
            input_schema: Arc::new(json!({"type": "object"})),
            output_schema: None,
            origin: ToolOrigin::Runtime {
                source: "test".to_owned(),
            },
            tasks: switchboard_core::TaskSupport::Forbidden,
            asks_before_task: false,
        },
        tool: Arc::new(Nothing),
        exposure: Exposure::Listed,
    }
}

#[tokio::test]
async fn a_switch_holds_for_tools_registered_later() {
    let registry = start(RegistryConfig::default()).await;
    registry
        .register(vec![runtime_tool("ext_first", "ext", &[])])
        .await
        .expect("a valid tool");
    registry
        .disable(selector("domain:ext"), &operator())
        .await
        .expect("the domain has a tool");
    registry
        .unregister(vec!["ext_first".to_owned()])
        .await
        .expect("the registry runs");
    registry
        .register(vec![
            runtime_tool("ext_first", "ext", &[]),
            runtime_tool("ext_second", "ext", &["beta"]),
        ])
        .await
        .expect("valid tools");
    assert!(registry.list_by_domain("ext").is_empty());
    assert_eq!(names(&registry.disabled()), ["ext_first", "ext_second"]);

    // A tag switch reaches a run-time tool's tags too.
    registry
        .enable(selector("domain:ext"), &operator())
        .await
        .expect("the domain has tools");
    let changed = registry
        .disable(selector("tag:beta"), &operator())
        .await
        .expect("tools carry the tag");
    assert_eq!(changed, ["ext_second", "lab_probe", "shop_preview"]);
}

#[tokio::test]
async fn a_run_time_tool_with_an_invalid_tag_is_refused() {
    let registry = start(RegistryConfig::default()).await;
    let error = registry
        .register(vec![runtime_tool("ext_tagged", "ext", &["Beta"])])
        .await
        .expect_err("an invalid tag");
    assert_eq!(
        error.to_string(),
        "`ext_tagged` carries the tag `Beta`, which is not a valid tag: use 1 to 64 characters \
         from a-z 0-9 _ -"
    );
}

#[tokio::test]
async fn each_switch_leaves_one_audit_record_saying_who_switched_what() {
    let registry = start(RegistryConfig::default()).await;
    let bob = CallContext::builder()
        .org("acme")
        .user("bob")
        .session("session-9")
        .correlation("switch-audit")
        .role("admin")
        .initiator(switchboard_core::Initiator::Human)
        .build();
    registry
        .disable(selector("tag:beta"), &bob)
        .await
        .expect("the tag has tools");
    registry
        .disable(selector("tag:beta"), &bob)
        .await
        .expect("a second switch changes nothing but is made");
    registry
        .enable(selector("tool:lab_probe"), &bob)
        .await
        .expect("the tool exists");
    registry
        .disable(selector("tag:gamma"), &bob)
        .await
        .expect_err("no tool has the tag");
    registry.audit().flush().await;

    let mut records = records_of(&registry, "switch-audit").await;
    records.reverse();
    let switches: Vec<(SwitchAction, &str, Vec<&str>, Outcome)> = records
        .iter()
        .map(|record| {
            assert_eq!(&*record.tool, SWITCH_RECORD_TOOL);
            assert_eq!(record.org_id.as_ref().map(|org| org.as_str()), Some("acme"));
            assert_eq!(
                record.user_id.as_ref().map(|user| user.as_str()),
                Some("bob")
            );
            assert_eq!(record.initiator, switchboard_core::Initiator::Human);
            assert!(record.input_hash.is_some(), "{record:?}");
            let switch = record.switch.as_ref().expect("a switch's record says what");
            (
                switch.action,
                switch.selector.as_str(),
                switch.changed.iter().map(String::as_str).collect(),
                record.outcome,
            )
        })
        .collect();
    assert_eq!(
        switches,
        [
            (
                SwitchAction::Disable,
                "tag:beta",
                vec!["lab_probe", "shop_preview"],
                Outcome::Ok
            ),
            (SwitchAction::Disable, "tag:beta", vec![], Outcome::Ok),
            (
                SwitchAction::Enable,
                "tool:lab_probe",
                vec!["lab_probe"],
                Outcome::Ok
            ),
            (
                SwitchAction::Disable,
                "tag:gamma",
                vec![],
                Outcome::Error(ErrorKind::ToolNotFound)
            ),
        ]
    );
    // A call's record has no switch.
    invoke(&registry, "shop_browse", "switch-audit-call")
        .await
        .expect("enabled");
    registry.audit().flush().await;
    assert_eq!(
        only_record_of(&registry, "switch-audit-call").await.switch,
        None
    );
}
