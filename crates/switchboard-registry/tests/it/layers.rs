//! Layers around calls: they run after the checks and the gate, in their order (every
//! domain's layers around one domain's own), see the caller, the tool, the input and how the
//! call ended, and may refuse it with their own kind or `rate_limited`; a refused mutation ran
//! nothing and claimed no idempotency key, and every refusal is audited once.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::json;
use switchboard_audit::Outcome;
use switchboard_core::{BoxFuture, ErrorKind, InvokeError};
use switchboard_registry::{CallLayer, Finished, LayerCall, ToolRegistry};

use crate::vault::{AddInput, Tally, admin, context, records_of, start, tally};

/// What the layers saw, in order.
type Journal = Arc<Mutex<Vec<String>>>;

/// Writes `<name> in <tool>` before the call and `<name> out <outcome>` after it.
struct Recorder {
    name: &'static str,
    journal: Journal,
}

impl CallLayer for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished> {
        Box::pin(async move {
            let seen = format!(
                "{} in {} by {}",
                self.name,
                call.tool().name,
                call.caller().user_id
            );
            self.journal.lock().expect("not poisoned").push(seen);
            let finished = call.run().await;
            let outcome = finished.kind().map_or("ok", ErrorKind::as_str);
            let seen = format!("{} out {outcome}", self.name);
            self.journal.lock().expect("not poisoned").push(seen);
            finished
        })
    }
}

fn recorder(name: &'static str, journal: &Journal) -> Recorder {
    Recorder {
        name,
        journal: Arc::clone(journal),
    }
}

fn journal(journal: &Journal) -> Vec<String> {
    journal.lock().expect("not poisoned").clone()
}

/// Refuses additions of more than 100, reading the input as the tool's type for a typed call
/// and as JSON for a JSON call; limits `carol` to no call at all.
struct Policy;

impl CallLayer for Policy {
    fn name(&self) -> &str {
        "policy"
    }

    fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished> {
        Box::pin(async move {
            if call.caller().user_id.as_str() == "carol" {
                return call.rate_limited("0 calls per 1 s per user", Duration::from_millis(1_500));
            }
            let typed = call
                .input()
                .downcast_ref::<AddInput>()
                .map(|input| input.amount);
            let json = call.params().and_then(|params| params["amount"].as_i64());
            if typed.or(json).is_some_and(|amount| amount > 100) {
                return call.refuse("too_much", "add at most 100 at a time");
            }
            call.run().await
        })
    }
}

#[tokio::test]
async fn layers_wrap_a_call_in_their_order_and_see_how_it_ended() {
    let seen = Journal::default();
    let registry = start(
        ToolRegistry::builder()
            .domain_layer("vault", recorder("vault-only", &seen))
            .layer(recorder("outer", &seen))
            .layer(recorder("inner", &seen))
            .domain_layer("shop", recorder("shop-only", &seen)),
    )
    .await;
    registry
        .invoke("vault_add", json!({ "amount": 2 }), &admin("ordered"))
        .await
        .expect("the addition runs");
    assert_eq!(
        journal(&seen),
        [
            "outer in vault_add by alice",
            "inner in vault_add by alice",
            "vault-only in vault_add by alice",
            "vault-only out ok",
            "inner out ok",
            "outer out ok",
        ]
    );

    // A gate's refusal comes before the layers: they never see the call.
    seen.lock().expect("not poisoned").clear();
    let refused = registry
        .invoke(
            "vault_guarded_add",
            json!({ "amount": 13 }),
            &admin("gated"),
        )
        .await
        .expect_err("the gate refuses 13");
    assert_eq!(refused.kind(), ErrorKind::GateRefused);
    assert!(journal(&seen).is_empty(), "{:?}", journal(&seen));

    // A check's refusal too.
    let unknown_caller = context(
        "bob",
        "viewer",
        switchboard_core::Initiator::Human,
        "denied",
    );
    let denied = registry
        .invoke("vault_add", json!({ "amount": 1 }), &unknown_caller.build())
        .await
        .expect_err("a viewer may not add");
    assert_eq!(denied.kind(), ErrorKind::PermissionDenied);
    assert!(journal(&seen).is_empty(), "{:?}", journal(&seen));
}

#[tokio::test]
async fn a_layer_refusal_runs_nothing_claims_no_key_and_is_audited_once() {
    let registry = start(ToolRegistry::builder().layer(Policy)).await;
    let keyed = |correlation: &str| {
        context(
            "alice",
            "admin",
            switchboard_core::Initiator::Human,
            correlation,
        )
        .idempotency_key("big-one")
        .build()
    };
    let refused = registry
        .invoke("vault_add", json!({ "amount": 500 }), &keyed("too-much"))
        .await
        .expect_err("the policy refuses 500");
    match &refused {
        InvokeError::LayerRefused {
            tool, layer, code, ..
        } => assert_eq!(
            (tool.as_str(), layer.as_str(), code.as_str()),
            ("vault_add", "policy", "too_much")
        ),
        other => panic!("expected layer_refused, got {other:?}"),
    }
    assert_eq!(tally(&registry).await, Tally { total: 0, runs: 0 });
    let records = records_of(&registry, "too-much").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].outcome, Outcome::Error(ErrorKind::LayerRefused));

    // The same key is free: a call the policy admits runs under it.
    let ran = registry
        .invoke("vault_add", json!({ "amount": 50 }), &keyed("fits"))
        .await
        .expect("50 is admitted");
    assert_eq!(ran, json!({ "total": 50, "runs": 1 }));

    // The typed face is refused alike, from the typed input.
    let typed = registry
        .call::<crate::vault::Add>(
            AddInput {
                amount: 101,
                delay_ms: 0,
            },
            &admin("typed"),
        )
        .await
        .expect_err("the policy reads the typed input");
    assert_eq!(typed.kind(), ErrorKind::LayerRefused);
    assert_eq!(tally(&registry).await, Tally { total: 50, runs: 1 });
}

#[tokio::test]
async fn a_rate_limited_call_says_when_to_retry() {
    let registry = start(ToolRegistry::builder().layer(Policy)).await;
    let limited = registry
        .invoke(
            "vault_peek",
            json!({}),
            &context(
                "carol",
                "admin",
                switchboard_core::Initiator::Human,
                "limited",
            )
            .build(),
        )
        .await
        .expect_err("carol is limited to nothing");
    assert_eq!(limited.kind(), ErrorKind::RateLimited);
    assert_eq!(limited.retry_after(), Some(Duration::from_millis(1_500)));
    let wire = serde_json::to_value(&limited).expect("serialises");
    assert_eq!(wire["retry_after_ms"], json!(1_500));
    assert_eq!(wire["limit"], json!("0 calls per 1 s per user"));
    let records = records_of(&registry, "limited").await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Error(ErrorKind::RateLimited));
}

#[tokio::test]
async fn an_outer_layer_sees_an_inner_layers_refusal() {
    let seen = Journal::default();
    let registry = start(
        ToolRegistry::builder()
            .layer(recorder("outer", &seen))
            .layer(Policy),
    )
    .await;
    registry
        .invoke("vault_add", json!({ "amount": 500 }), &admin("nested"))
        .await
        .expect_err("the policy refuses 500");
    assert_eq!(
        journal(&seen),
        ["outer in vault_add by alice", "outer out layer_refused"]
    );
}
