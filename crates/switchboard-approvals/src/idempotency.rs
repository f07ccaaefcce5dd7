//! The idempotency contract: one entry per `(org, key)`, claimed by the first caller, waited on
//! by racers, completed with the first result, and replayed to every retry until it expires.
//!
//! The registry derives or takes the key, computes the [`Fingerprint`] (tool and the params'
//! canonical digest) and asks the store to [`claim`](IdempotencyStore::claim) it:
//! [`Claim::Run`] means this caller runs the tool and must then
//! [`complete`](IdempotencyStore::complete) or [`release`](IdempotencyStore::release) the key;
//! [`Claim::Done`] carries the first result; [`Claim::Running`] is a [`Waiter`] that resolves
//! when the first caller finishes; [`Claim::Conflict`] is the same key with another tool or
//! other params. A store must make `claim` atomic per key: two racers never both get `Run`.

use std::{any::Any, fmt, future::Future, sync::Arc};

use jiff::Timestamp;
use serde_json::Value;
use switchboard_core::Digest;
use switchboard_core::{ActionId, BoxFuture, IdempotencyKey, InvokeError, OrgId};

/// A fresh action id, `act-<uuid>`, with a UUIDv7 (time-ordered, unique across processes).
pub fn new_action_id() -> ActionId {
    ActionId::new(format!("act-{}", uuid::Uuid::now_v7()))
}

/// Keys are per organisation: the same key in two organisations names two actions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyScope {
    /// The tenant.
    pub org_id: OrgId,
    /// The caller's (or the derived) key.
    pub key: IdempotencyKey,
}

impl IdempotencyScope {
    /// Makes a scope.
    pub fn new(org_id: OrgId, key: IdempotencyKey) -> Self {
        Self { org_id, key }
    }
}

/// What a key was first used for; a later use with another fingerprint is a conflict.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// The tool.
    pub tool: Arc<str>,
    /// Digest of the params' canonical JSON.
    pub params: Digest,
}

impl Fingerprint {
    /// Makes a fingerprint.
    pub fn new(tool: impl Into<Arc<str>>, params: Digest) -> Self {
        Self {
            tool: tool.into(),
            params,
        }
    }
}

/// A typed result kept next to its JSON, so a typed caller's retry gets its output type back
/// without deserializing (outputs need not be `Deserialize`). In-process only: a persistent
/// store keeps the JSON and leaves this out.
pub type TypedOutput = Arc<dyn Any + Send + Sync>;

/// The first result of an action, as every retry gets it back.
#[derive(Clone)]
pub struct StoredOutcome {
    /// The action the first run was given.
    pub action_id: ActionId,
    /// What it returned.
    pub result: Result<Value, InvokeError>,
    /// The same output, typed, when a typed call produced it.
    pub typed: Option<TypedOutput>,
}

impl StoredOutcome {
    /// A successful JSON result.
    pub fn ok(action_id: ActionId, output: Value) -> Self {
        Self {
            action_id,
            result: Ok(output),
            typed: None,
        }
    }
}

impl fmt::Debug for StoredOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredOutcome")
            .field("action_id", &self.action_id)
            .field("result", &self.result)
            .field("typed", &self.typed.is_some())
            .finish()
    }
}

/// Resolves when the caller that claimed a key finishes: `Some` with its outcome, or `None`
/// when it released the key (nothing ran: claim again).
pub struct Waiter(BoxFuture<'static, Option<Arc<StoredOutcome>>>);

impl Waiter {
    /// Wraps whatever future the store waits with.
    pub fn new(future: impl Future<Output = Option<Arc<StoredOutcome>>> + Send + 'static) -> Self {
        Self(Box::pin(future))
    }

    /// Waits for the first caller.
    pub async fn wait(self) -> Option<Arc<StoredOutcome>> {
        self.0.await
    }
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Waiter")
    }
}

/// The answer to a claim.
#[derive(Debug)]
pub enum Claim {
    /// The key is new (or expired): run the tool, then complete or release the key.
    Run,
    /// The key's action already finished: return this, do not run.
    Done(Arc<StoredOutcome>),
    /// Another caller is running the action: wait for it.
    Running(Waiter),
    /// The key was used for another tool or other params.
    Conflict,
}

/// Where keys and first results are kept.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `scope` for an action with `fingerprint`, atomically per key.
    fn claim(&self, scope: &IdempotencyScope, fingerprint: &Fingerprint, now: Timestamp) -> Claim;

    /// Stores the first result of a claimed key and wakes its waiters. Kept until the
    /// store's retention runs out (counted from the claim or from this call: the store says).
    fn complete(&self, scope: &IdempotencyScope, outcome: Arc<StoredOutcome>);

    /// Gives a claimed key up without a result (nothing ran); a waiter then claims it anew.
    fn release(&self, scope: &IdempotencyScope);

    /// Removes results older than the retention; returns how many.
    fn sweep(&self, now: Timestamp) -> usize;

    /// How many keys are held (in flight and done).
    fn len(&self) -> usize;

    /// Whether no key is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_ids_are_unique_uuids() {
        let first = new_action_id();
        let second = new_action_id();
        assert_ne!(first, second);
        for id in [&first, &second] {
            let uuid = id.as_str().strip_prefix("act-").expect("act-<uuid>");
            assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{id}");
        }
    }
}
