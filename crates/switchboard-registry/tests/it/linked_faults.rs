//! What a front registry does with a linked mutation when its link fails: a call not sent is
//! `domain_unavailable` and frees the key; a call whose answer is lost after the remote ran is
//! in doubt, frees the front's key, and a retry gets the remote's stored result without
//! running the tool again; a refusal by the remote's gate frees the key as an in-process gate
//! refusal does; an answer that does not fit the tool's output schema is
//! `remote_answer_invalid` (in doubt for a mutation); and a typed call gets its typed output
//! back. An open link fails fast. A remote run longer than the front's timeout plus the link's margin is in doubt on the
//! front, never a timeout. The mutations are the `vault` domain's (`crate::vault`), served by a second
//! registry through a [`FaultyLink`].

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use switchboard_audit::ActionEvent;
use switchboard_core::{BoxFuture, CallContext, ErrorKind, IdempotencyKey, InvokeError};
use switchboard_registry::{
    DomainLink, IN_PROCESS, InProcessLink, LinkError, LinkHealth, LinkStatus, LinkedCall,
    RegistryConfig, ToolRegistry,
};

use crate::{
    common::{domain_status, only_record_of, records_of},
    vault::{AddInput, Tally, admin, tally},
};

/// What a [`FaultyLink`] does with the next calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Passes every call on.
    None,
    /// Sends nothing and answers `NotSent`.
    NotSent,
    /// Passes the call on, then drops the answer and answers `InDoubt`.
    LostAnswer,
    /// Passes the call on, then answers with output that fits no vault tool's schema.
    WrongAnswer,
    /// Reports its breaker open, and answers `NotSent` to a call made all the same.
    Open,
}

/// An [`InProcessLink`] whose calls fail as its [`Fault`] says.
pub(crate) struct FaultyLink {
    inner: InProcessLink,
    fault: Mutex<Fault>,
}

impl FaultyLink {
    /// A link to `back` that passes every call on until told otherwise.
    pub(crate) fn new(back: ToolRegistry) -> Self {
        Self {
            inner: InProcessLink::new(back),
            fault: Mutex::new(Fault::None),
        }
    }

    pub(crate) fn set(&self, fault: Fault) {
        *self.fault.lock().expect("the fault lock is never poisoned") = fault;
    }

    fn fault(&self) -> Fault {
        *self.fault.lock().expect("the fault lock is never poisoned")
    }
}

impl DomainLink for FaultyLink {
    fn kind(&self) -> &'static str {
        "faulty"
    }

    fn location(&self) -> String {
        "a faulty link to a registry in this process".to_owned()
    }

    fn health(&self) -> LinkHealth {
        match self.fault() {
            Fault::Open => LinkHealth::Open {
                reason: "the breaker is open after three lost calls".to_owned(),
            },
            _ => LinkHealth::Up,
        }
    }

    fn call<'a>(&'a self, call: LinkedCall<'a>) -> BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(async move {
            match self.fault() {
                Fault::None => self.inner.call(call).await,
                Fault::NotSent | Fault::Open => Err(LinkError::NotSent {
                    reason: "the connection was refused".to_owned(),
                }),
                Fault::LostAnswer => {
                    let _lost = self.inner.call(call).await;
                    Err(LinkError::InDoubt {
                        reason: "the connection closed before the answer".to_owned(),
                    })
                }
                Fault::WrongAnswer => {
                    let _replaced = self.inner.call(call).await;
                    Ok(json!({ "total": "five" }))
                }
            }
        })
    }
}

/// A front registry holding `vault` as a remote domain, the registry serving it, and the
/// link between them.
async fn linked_vault() -> (ToolRegistry, ToolRegistry, Arc<FaultyLink>) {
    let back = ToolRegistry::builder()
        .start()
        .await
        .expect("the back starts");
    let link = Arc::new(FaultyLink::new(back.clone()));
    let front = ToolRegistry::builder()
        .remote_domain("vault", Arc::clone(&link) as Arc<dyn DomainLink>)
        .start()
        .await
        .expect("the front starts");
    (front, back, link)
}

/// The admin's context with this correlation id and idempotency key.
pub(crate) fn keyed(correlation: &str, key: &str) -> CallContext {
    let mut context = admin(correlation);
    context.idempotency_key = Some(IdempotencyKey::new(key));
    context
}

pub(crate) fn add(amount: i64) -> Value {
    json!({ "amount": amount })
}

#[tokio::test]
async fn a_call_not_sent_is_domain_unavailable_and_leaves_the_key_free() {
    let (front, back, link) = linked_vault().await;
    link.set(Fault::NotSent);

    let error = front
        .invoke("vault_add", add(5), &keyed("not-sent", "add-5"))
        .await
        .expect_err("nothing was sent");
    link.set(Fault::None);
    let retried = front
        .invoke("vault_add", add(5), &keyed("sent", "add-5"))
        .await
        .expect("the retry under the same key runs");

    assert_eq!(error.kind(), ErrorKind::DomainUnavailable);
    assert!(records_of(&back, "not-sent").await.is_empty());
    assert_eq!(retried, json!({ "total": 5, "runs": 1 }));
    assert_eq!(tally(&back).await, Tally { total: 5, runs: 1 });
}

#[tokio::test]
async fn an_answer_lost_after_the_remote_ran_is_in_doubt_and_a_retry_gets_the_remote_result() {
    let (front, back, link) = linked_vault().await;
    link.set(Fault::LostAnswer);

    let error = front
        .invoke("vault_add", add(5), &keyed("lost", "add-5"))
        .await
        .expect_err("the answer was lost");
    link.set(Fault::None);
    let retried = front
        .invoke("vault_add", add(5), &keyed("retry", "add-5"))
        .await
        .expect("the retry reaches the back, which replays its result");

    assert!(
        matches!(&error, InvokeError::ToolFailed { error, .. }
            if error.is_in_doubt() && error.code() == "remote_outcome_unknown"),
        "{error:?}"
    );
    assert_eq!(retried, json!({ "total": 5, "runs": 1 }));
    assert_eq!(
        tally(&back).await,
        Tally { total: 5, runs: 1 },
        "the tool ran once"
    );
    let first_run = only_record_of(&back, "lost").await;
    let replay = only_record_of(&back, "retry").await;
    assert_eq!(
        replay.action.as_ref().map(|action| action.event),
        Some(ActionEvent::Replayed)
    );
    assert_eq!(
        replay.action.map(|action| action.id),
        first_run.action.map(|action| action.id)
    );
}

#[tokio::test]
async fn a_remote_gate_refusal_is_gate_refused_and_leaves_the_key_free() {
    let (front, back, _link) = linked_vault().await;

    let error = front
        .invoke("vault_guarded_add", add(13), &keyed("unlucky", "guarded"))
        .await
        .expect_err("the back's gate refuses 13");
    let other = front
        .invoke("vault_guarded_add", add(12), &keyed("lucky", "guarded"))
        .await
        .expect("the key is free: other params under it are no conflict");

    assert_eq!(error.kind(), ErrorKind::GateRefused);
    assert_eq!(
        only_record_of(&front, "unlucky").await.outcome,
        only_record_of(&back, "unlucky").await.outcome
    );
    assert_eq!(other, json!({ "total": 12, "runs": 1 }));
}

#[tokio::test]
async fn a_typed_call_of_a_linked_tool_gets_its_typed_output_back() {
    let (front, back, _link) = linked_vault().await;

    let typed = front
        .call::<crate::vault::Add>(
            AddInput {
                amount: 5,
                delay_ms: 0,
            },
            &keyed("typed", "typed-5"),
        )
        .await
        .expect("the typed call runs on the back");

    assert_eq!(typed, Tally { total: 5, runs: 1 });
    assert_eq!(tally(&back).await, Tally { total: 5, runs: 1 });
    assert_eq!(
        only_record_of(&front, "typed").await.output_hash,
        only_record_of(&back, "typed").await.output_hash
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_output_schema_is_remote_answer_invalid() {
    let (front, back, link) = linked_vault().await;
    link.set(Fault::WrongAnswer);

    let read = front
        .invoke("vault_peek", json!({}), &admin("wrong-read"))
        .await
        .expect_err("the answer does not fit");
    let mutation = front
        .invoke("vault_add", add(5), &keyed("wrong-add", "add-5"))
        .await
        .expect_err("the answer does not fit");
    link.set(Fault::None);
    let retried = front
        .invoke("vault_add", add(5), &keyed("retry", "add-5"))
        .await
        .expect("the key was freed: the retry reaches the back, which replays its result");

    assert!(
        matches!(&read, InvokeError::ToolFailed { error, .. }
            if !error.is_in_doubt() && error.code() == "remote_answer_invalid"),
        "{read:?}"
    );
    assert!(
        matches!(&mutation, InvokeError::ToolFailed { error, .. }
            if error.is_in_doubt() && error.code() == "remote_answer_invalid"),
        "{mutation:?}"
    );
    assert_eq!(retried, json!({ "total": 5, "runs": 1 }));
    assert_eq!(tally(&back).await, Tally { total: 5, runs: 1 });
}

#[tokio::test]
async fn a_linked_domain_reports_its_link_and_runs_no_actor() {
    let (front, back, _link) = linked_vault().await;

    let on_front = domain_status(&front, "vault");
    let on_back = domain_status(&back, "vault");

    assert_eq!(on_front.placement, "faulty");
    assert_eq!(
        on_front.link,
        Some(LinkStatus {
            location: "a faulty link to a registry in this process".to_owned(),
            health: LinkHealth::Up,
        })
    );
    assert!(on_front.running);
    assert!(front.domain_actor("vault").is_none());
    assert_eq!(on_back.placement, IN_PROCESS);
    assert_eq!(on_back.link, None);
    assert!(back.domain_actor("vault").is_some());
}

#[tokio::test]
async fn a_remote_run_longer_than_the_fronts_timeout_and_margin_is_in_doubt_not_a_timeout() {
    let back = ToolRegistry::builder()
        .start()
        .await
        .expect("the back starts");
    let front = ToolRegistry::builder()
        .config(RegistryConfig {
            default_timeout: Duration::from_millis(50),
            ..RegistryConfig::default()
        })
        .remote_domain("vault", Arc::new(InProcessLink::new(back.clone())))
        .start()
        .await
        .expect("the front starts");
    let slow = json!({ "amount": 5, "delay_ms": 2_500 });

    let error = front
        .invoke("vault_add", slow.clone(), &keyed("slow", "slow-5"))
        .await
        .expect_err("the front stops waiting after its timeout and the link margin");
    let mut retried = None;
    for attempt in 0..100 {
        match front
            .invoke(
                "vault_add",
                slow.clone(),
                &keyed(&format!("again-{attempt}"), "slow-5"),
            )
            .await
        {
            Ok(output) => {
                retried = Some(output);
                break;
            }
            // The back still runs the first call: the retry is in doubt again.
            Err(InvokeError::ToolFailed { error, .. }) if error.is_in_doubt() => {}
            Err(other) => panic!("the retry is answered or in doubt, not {other:?}"),
        }
    }

    assert!(
        matches!(&error, InvokeError::ToolFailed { error, .. }
            if error.is_in_doubt() && error.code() == "remote_outcome_unknown"),
        "{error:?}"
    );
    assert_eq!(retried, Some(json!({ "total": 5, "runs": 1 })));
    assert_eq!(
        tally(&back).await,
        Tally { total: 5, runs: 1 },
        "the tool ran once"
    );
}

#[tokio::test]
async fn an_open_link_fails_fast_with_domain_unavailable_and_its_reason() {
    let (front, back, link) = linked_vault().await;
    link.set(Fault::Open);

    let error = front
        .invoke("vault_peek", json!({}), &admin("open"))
        .await
        .expect_err("the breaker is open");

    assert!(
        matches!(&error, InvokeError::DomainUnavailable { reason, .. }
            if reason == "the breaker is open after three lost calls"),
        "{error:?}"
    );
    assert!(!domain_status(&front, "vault").running);
    assert!(records_of(&back, "open").await.is_empty());
}
