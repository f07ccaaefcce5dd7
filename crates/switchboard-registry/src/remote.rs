//! A whole call as bytes, sent to a domain's actor ([`DomainMsg::Call`]): the envelope it
//! travels in, the answer that comes back, the hook that says who the caller is, and both ends
//! of the exchange.
//!
//! This is how a cluster link (`ractor_cluster`) reaches a domain on another node: the one
//! actor message that can leave the process is a call of one of the domain's tools, as JSON
//! ([`RemoteCall`]), answered as JSON ([`RemoteAnswer`]). The actor does not run the call in its
//! mailbox: it spawns a task that serves it with [`ToolRegistry::serve_linked`], every check
//! included, and answers on the call's reply port.
//!
//! Who calls is never taken from the envelope. It carries the caller's identity statement,
//! signed by the sending node, and the registry serves the call only as the caller that its
//! [`RemoteCallVerifier`] (given to [`RegistryBuilder::statement_verifier`]) reads from that
//! statement. A registry built without one serves no such call: each is refused, naming the
//! missing verifier.

use std::sync::Arc;

use ractor::{ActorRef, MessagingErr, rpc::CallResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_core::{ActionId, ActionKey, BoxFuture, CallContext, IdempotencyKey, InvokeError};
use tracing::Instrument;

use crate::{
    domain::DomainMsg,
    link::LinkError,
    registry::{RegistryBuilder, WeakToolRegistry},
};

/// One whole call of a domain's tool, as the bytes of [`DomainMsg::Call`] carry it (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RemoteCall {
    /// The caller's identity statement, as the sending node signed it: the serving registry
    /// takes the caller, and a mutation's key and action id, from it alone
    /// ([`RemoteCallVerifier`]).
    pub statement: String,
    /// The tool.
    pub tool: String,
    /// The params, valid against the tool's input schema on the sending registry.
    pub params: Value,
    /// For a mutation holding its idempotency key on the sender: the key and the action id,
    /// as the sender claims them (the statement binds them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<RemoteAction>,
}

/// The key a mutation holds on the sending registry, and its action id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RemoteAction {
    /// The sender's idempotency key.
    pub key: IdempotencyKey,
    /// The id of the sender's action.
    pub action_id: ActionId,
}

impl RemoteAction {
    /// The action of a mutation holding `key` on the sender, as `action_id`.
    pub fn new(key: IdempotencyKey, action_id: ActionId) -> Self {
        Self { key, action_id }
    }
}

impl From<&ActionKey> for RemoteAction {
    fn from(action: &ActionKey) -> Self {
        Self::new(action.key.clone(), action.action_id.clone())
    }
}

impl RemoteCall {
    /// A call of `tool` with `params`, as the caller `statement` states (and as `action`, for
    /// a mutation holding its key on the sender).
    pub fn new(
        statement: impl Into<String>,
        tool: impl Into<String>,
        params: Value,
        action: Option<RemoteAction>,
    ) -> Self {
        Self {
            statement: statement.into(),
            tool: tool.into(),
            params,
            action,
        }
    }

    /// The call's bytes, as [`DomainMsg::Call`] carries them.
    pub fn to_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }

    /// The call from its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// The answer to a [`RemoteCall`], as the reply of [`DomainMsg::Call`] carries it (JSON): the
/// tool's output, or why there is none, sorted as a [`LinkError`] sorts it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RemoteAnswer {
    /// The output, or why there is none.
    pub result: Result<Value, RemoteError>,
}

/// Why a [`RemoteCall`] gave no output: a [`LinkError`] in a form that travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "outcome", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RemoteError {
    /// The serving node did not hand the call to its registry (the envelope did not decode,
    /// no verifier, a statement it refused, a tool of another domain): nothing ran. The
    /// sender answers it as [`LinkError::NotSent`].
    #[error("the serving node did not serve the call: {reason}")]
    NotServed {
        /// Why.
        reason: String,
    },
    /// The serving registry refused the call before running it ([`LinkError::Refused`]).
    #[error("the serving registry refused the call: {error}")]
    Refused {
        /// The refusal.
        #[serde(with = "error_record")]
        error: InvokeError,
    },
    /// The tool ran and failed ([`LinkError::Failed`]).
    #[error("the tool ran on the serving registry and failed: {error}")]
    Failed {
        /// The failure.
        #[serde(with = "error_record")]
        error: InvokeError,
    },
    /// The serving registry cannot say how the call ended ([`LinkError::InDoubt`]).
    #[error("the call's outcome is unknown: {reason}")]
    InDoubt {
        /// Why.
        reason: String,
    },
}

impl From<LinkError> for RemoteError {
    fn from(error: LinkError) -> Self {
        match error {
            LinkError::NotSent { reason } => RemoteError::NotServed { reason },
            LinkError::Refused(error) => RemoteError::Refused { error },
            LinkError::Failed(error) => RemoteError::Failed { error },
            LinkError::InDoubt { reason } => RemoteError::InDoubt { reason },
        }
    }
}

impl From<RemoteError> for LinkError {
    fn from(error: RemoteError) -> Self {
        match error {
            RemoteError::NotServed { reason } => LinkError::NotSent {
                reason: format!("the serving node did not serve it: {reason}"),
            },
            RemoteError::Refused { error } => LinkError::Refused(error),
            RemoteError::Failed { error } => LinkError::Failed(error),
            RemoteError::InDoubt { reason } => LinkError::InDoubt { reason },
        }
    }
}

/// What the serving node answers when its own answer does not encode: in doubt.
const UNENCODABLE_ANSWER: &[u8] = br#"{"result":{"Err":{"outcome":"in_doubt","reason":"the serving node could not encode its answer"}}}"#;

impl RemoteAnswer {
    /// The answer `result`.
    pub fn new(result: Result<Value, RemoteError>) -> Self {
        Self { result }
    }

    /// The answer's bytes, as the reply of [`DomainMsg::Call`] carries them; an answer that
    /// does not encode is sent as in doubt.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_else(|error| {
            tracing::error!(%error, "a remote call's answer does not encode; answering in doubt");
            UNENCODABLE_ANSWER.to_vec()
        })
    }

    /// The answer from its bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The answer as the sender's link sorts it.
    pub fn into_result(self) -> Result<Value, LinkError> {
        self.result.map_err(LinkError::from)
    }
}

/// Reads the caller of a [`RemoteCall`] from its statement: the hook between a registry that
/// serves calls from other nodes and whatever signs and checks the statements.
///
/// The implementation checks everything the statement binds (its signature, who sent it, the
/// node and domain it is meant for, its time window, the tool, the params' digest, the
/// mutation's key and action id, that it was not seen before) and returns the caller it states.
/// Nothing in the envelope that the statement does not bind is trusted.
pub trait RemoteCallVerifier: Send + Sync + 'static {
    /// Verifies `call`, which arrived at the actor of `domain`, and returns who makes it.
    fn verify<'a>(
        &'a self,
        domain: &'a str,
        call: &'a RemoteCall,
    ) -> BoxFuture<'a, Result<VerifiedCaller, StatementRefused>>;
}

/// The caller a verified statement states: the call runs as it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VerifiedCaller {
    /// The context the call runs as (the serving registry checks it like any other).
    pub context: CallContext,
    /// For a mutation holding its key on the sender: the key and action id the call runs as.
    pub action: Option<ActionKey>,
}

impl VerifiedCaller {
    /// The caller `context` (and, for a mutation, `action`).
    pub fn new(context: CallContext, action: Option<ActionKey>) -> Self {
        Self { context, action }
    }
}

/// Why a statement was refused. The reason goes to this node's log only: the sender is told
/// that its statement was refused, not why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the caller's statement was refused: {reason}")]
pub struct StatementRefused {
    /// Why, for the log.
    pub reason: String,
}

impl StatementRefused {
    /// A refusal for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl RegistryBuilder {
    /// Serves the calls that other nodes send to this registry's domain actors
    /// ([`DomainMsg::Call`]) as the callers `verifier` reads from their statements. Without
    /// one, every such call is refused.
    pub fn statement_verifier(mut self, verifier: Arc<dyn RemoteCallVerifier>) -> Self {
        self.verifier = Some(verifier);
        self
    }
}

/// Serves the call `bytes` that arrived at the actor of `domain`, and answers its bytes: the
/// body of the task a domain actor spawns for [`DomainMsg::Call`].
pub(crate) async fn serve_call(
    registry: WeakToolRegistry,
    domain: Arc<str>,
    bytes: Vec<u8>,
) -> Vec<u8> {
    let span = tracing::info_span!("remote_call", %domain);
    let result = serve(&registry, &domain, &bytes).instrument(span).await;
    RemoteAnswer::new(result).to_bytes()
}

async fn serve(
    registry: &WeakToolRegistry,
    domain: &str,
    bytes: &[u8],
) -> Result<Value, RemoteError> {
    let not_served = |reason: String| RemoteError::NotServed { reason };
    let call = RemoteCall::from_bytes(bytes)
        .map_err(|error| not_served(format!("the call's envelope does not decode: {error}")))?;
    let registry = registry
        .upgrade()
        .ok_or_else(|| not_served("the serving registry has stopped".to_owned()))?;
    let verifier = registry.shared().verifier.clone().ok_or_else(|| {
        not_served(
            "this registry verifies no caller statements, so it serves no calls from other \
             nodes: build it with `RegistryBuilder::statement_verifier`"
                .to_owned(),
        )
    })?;
    let caller = verifier.verify(domain, &call).await.map_err(|refused| {
        tracing::warn!(tool = %call.tool, reason = %refused.reason, "a remote call's statement was refused");
        not_served("the caller's statement was refused".to_owned())
    })?;
    let tool_domain = registry
        .shared()
        .table
        .load()
        .get(&call.tool)
        .map(|tool| Arc::clone(&tool.domain.name));
    if let Some(tool_domain) = tool_domain
        && *tool_domain != *domain
    {
        return Err(not_served(format!(
            "`{}` is a tool of domain `{tool_domain}`, not of `{domain}`: send it to that \
             domain's actor",
            call.tool
        )));
    }
    registry
        .serve_linked(
            &call.tool,
            call.params,
            &caller.context,
            caller.action.as_ref(),
        )
        .await
        .map_err(|error| RemoteError::from(LinkError::from_served(error)))
}

/// Sends `call` whole to a domain's actor (in this process, or on another node through a
/// cluster link) and sorts its answer, waiting for it until `deadline`.
///
/// A call that cannot be put in the actor's mailbox was not sent; one sent and not answered by
/// the deadline, or whose answer does not decode, is in doubt.
pub async fn call_domain_actor(
    actor: &ActorRef<DomainMsg>,
    call: &RemoteCall,
    deadline: tokio::time::Instant,
) -> Result<Value, LinkError> {
    let bytes = call.to_bytes().map_err(|error| LinkError::NotSent {
        reason: format!("the call does not encode: {error}"),
    })?;
    let patience = deadline.saturating_duration_since(tokio::time::Instant::now());
    let answered = actor
        .call(|reply| DomainMsg::Call(bytes, reply), Some(patience))
        .await;
    let in_doubt = |reason: String| LinkError::InDoubt { reason };
    let bytes = match answered {
        Ok(CallResult::Success(bytes)) => bytes,
        Ok(CallResult::Timeout) => {
            return Err(in_doubt(
                "the domain's actor did not answer by the deadline".to_owned(),
            ));
        }
        Ok(CallResult::SenderError) => {
            return Err(in_doubt(
                "the domain's actor dropped the call without answering".to_owned(),
            ));
        }
        Err(MessagingErr::SendErr(_) | MessagingErr::ChannelClosed) => {
            return Err(LinkError::NotSent {
                reason: "the domain's actor is not running".to_owned(),
            });
        }
        Err(error) => {
            return Err(LinkError::NotSent {
                reason: format!("the call could not be sent to the domain's actor: {error}"),
            });
        }
    };
    RemoteAnswer::from_bytes(&bytes)
        .map_err(|error| in_doubt(format!("the answer does not decode: {error}")))?
        .into_result()
}

/// An [`InvokeError`] in a [`RemoteError`] travels as its full record
/// ([`InvokeError::to_record`]), so that the sender rebuilds the very same error.
mod error_record {
    use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error};
    use serde_json::Value;
    use switchboard_core::InvokeError;

    pub(super) fn serialize<S: Serializer>(
        error: &InvokeError,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        error.to_record().serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<InvokeError, D::Error> {
        let record = Value::deserialize(deserializer)?;
        InvokeError::from_record(&record).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_does_not_encode_is_sent_in_doubt() {
        let answer = RemoteAnswer::from_bytes(UNENCODABLE_ANSWER).expect("it decodes");

        assert!(
            matches!(answer.into_result(), Err(LinkError::InDoubt { reason }) if reason.contains("encode")),
        );
    }

    #[test]
    fn every_answer_reads_back_as_it_was_written() {
        let timeout = InvokeError::Timeout {
            tool: "relay_stamp".to_owned(),
            after: std::time::Duration::from_millis(1500),
        };
        let answers = [
            Ok(serde_json::json!({"served_by": "the back"})),
            Err(RemoteError::NotServed {
                reason: "no verifier".to_owned(),
            }),
            Err(RemoteError::Refused {
                error: InvokeError::ToolNotFound {
                    name: "relay_nothing".to_owned(),
                    suggestions: vec!["relay_stamp".to_owned()],
                },
            }),
            Err(RemoteError::Failed { error: timeout }),
            Err(RemoteError::InDoubt {
                reason: "lost".to_owned(),
            }),
        ];
        for result in answers {
            let answer = RemoteAnswer::new(result);

            let read = RemoteAnswer::from_bytes(&answer.to_bytes()).expect("it decodes");

            assert_eq!(read, answer);
        }
    }

    #[test]
    fn a_call_reads_back_as_it_was_written() {
        let call = RemoteCall::new(
            "statement",
            "relay_stamp",
            serde_json::json!({"week": 3}),
            Some(RemoteAction::new(
                IdempotencyKey::new("stamp-1"),
                ActionId::new("act-1"),
            )),
        );

        let read = RemoteCall::from_bytes(&call.to_bytes().expect("it encodes")).expect("decodes");

        assert_eq!(read, call);
    }
}
