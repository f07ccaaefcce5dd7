//! Tools asking the client from inside a task (the tasks extension, SEP-2663): a question
//! becomes an entry of the task's `inputRequests`, the task reports `input_required` while any
//! is unanswered, and the client's answer comes with `tasks/update`, which wakes the tool.
//!
//! The capabilities are those the client declared for the request that started the task; a
//! question needing one it did not declare is not put, and the tool gets
//! [`AskError::Unsupported`]. Questions asked together ([`ClientHandler::ask_all`]) are put at
//! once, so the client sees them side by side and may answer them one at a time. A cancelled
//! task drops its pending questions: the tool's wait ends with [`AskError::Transport`].

#![allow(deprecated)] // rmcp 3 marks the MCP sampling and roots types deprecated (SEP-2577).

use std::{
    collections::HashSet,
    sync::{Mutex, PoisonError},
};

use rmcp::{
    model::{ClientCapabilities, CreateMessageResult, ElicitResult, InputRequest, ListRootsResult},
    task_manager::TaskContext,
};
use serde_json::Value;
use switchboard_core::{
    BoxFuture,
    ask::{
        AskError, Capability, ClientHandler, ElicitReply, Elicitation, Keyed, Question, Reply,
        Root, SampleRequest, Sampled,
    },
};

use super::{mrtr::input_request, reply_of, sampled_of, supports};

/// Asks through a task's `inputRequests`.
pub(crate) struct TaskAsker {
    task: TaskContext,
    capabilities: Option<ClientCapabilities>,
    /// Every key put so far: a task's keys are unique over its life.
    used_keys: Mutex<HashSet<String>>,
}

impl TaskAsker {
    /// The asker of the task behind `task`, for a client that declared `capabilities`.
    pub(crate) fn new(task: TaskContext, capabilities: Option<ClientCapabilities>) -> Self {
        Self {
            task,
            capabilities,
            used_keys: Mutex::default(),
        }
    }

    /// The task it asks through.
    pub(crate) fn task(&self) -> &TaskContext {
        &self.task
    }

    /// `key`, or the first `key-<n>` not put yet.
    fn fresh_key(&self, key: &str) -> String {
        let mut used = self
            .used_keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut candidate = key.to_owned();
        let mut n = 2;
        while used.contains(&candidate) {
            candidate = format!("{key}-{n}");
            n += 1;
        }
        used.insert(candidate.clone());
        candidate
    }

    async fn ask(&self, keyed: &Keyed) -> Result<Reply, AskError> {
        let capability = keyed.question.capability();
        if !supports(self.capabilities.as_ref(), capability) {
            return Err(AskError::Unsupported { capability });
        }
        let request: InputRequest = input_request(&keyed.question)?;
        let key = self.fresh_key(&keyed.key);
        let answer = self
            .task
            .request_input(key.clone(), request)
            .await
            .map_err(|_| {
                AskError::Transport("the task was cancelled before the client answered".to_owned())
            })?;
        reply_to(&keyed.question, answer).ok_or_else(|| {
            AskError::BadAnswer(format!(
                "the answer under `{key}` does not answer its question"
            ))
        })
    }
}

/// The client's answer to `question`, read as the tool sees it.
fn reply_to(question: &Question, answer: Value) -> Option<Reply> {
    match question {
        Question::Elicit(_) => serde_json::from_value::<ElicitResult>(answer)
            .ok()
            .map(|result| Reply::Elicit(reply_of(result))),
        Question::Sample(_) => serde_json::from_value::<CreateMessageResult>(answer)
            .ok()
            .and_then(|result| sampled_of(result).ok())
            .map(Reply::Sample),
        Question::Roots => serde_json::from_value::<ListRootsResult>(answer)
            .ok()
            .map(|result| Reply::Roots {
                roots: result
                    .roots
                    .into_iter()
                    .map(|root| Root {
                        uri: root.uri,
                        name: root.name,
                    })
                    .collect(),
            }),
    }
}

impl ClientHandler for TaskAsker {
    fn can(&self, capability: Capability) -> bool {
        supports(self.capabilities.as_ref(), capability)
    }

    fn elicit<'a>(
        &'a self,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        Box::pin(async move {
            match self
                .ask(&Keyed::new("ask-1", Question::Elicit(request.clone())))
                .await?
            {
                Reply::Elicit(reply) => Ok(reply),
                other => Err(AskError::BadAnswer(format!("{other:?}"))),
            }
        })
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        Box::pin(async move {
            match self
                .ask(&Keyed::new("ask-1", Question::Sample(request.clone())))
                .await?
            {
                Reply::Sample(sampled) => Ok(sampled),
                other => Err(AskError::BadAnswer(format!("{other:?}"))),
            }
        })
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<Vec<Root>, AskError>> {
        Box::pin(async move {
            match self.ask(&Keyed::new("ask-1", Question::Roots)).await? {
                Reply::Roots { roots } => Ok(roots),
                other => Err(AskError::BadAnswer(format!("{other:?}"))),
            }
        })
    }

    fn ask_all<'a>(
        &'a self,
        questions: &'a [Keyed],
    ) -> BoxFuture<'a, Result<Vec<Reply>, AskError>> {
        Box::pin(async move {
            futures::future::try_join_all(questions.iter().map(|keyed| self.ask(keyed))).await
        })
    }
}
