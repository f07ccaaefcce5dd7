//! Asking for a tool whose task begins at its word (`#[tool(tasks = ..., asks_before_task)]`),
//! called on protocol 2026-07-28 by a client that does tasks: the questions asked before
//! `ctx.begin_task()` go in the call's `input_required` rounds ([`RoundAsker`]), and those asked
//! after it in the task's `inputRequests` ([`TaskAsker`]).
//!
//! `begin_task` asks the server, through a channel the `tools/call` handler listens on, to
//! create the task; the handler answers with the task's context, and from then on the round is
//! answered with the task and the tool runs on in it. A round whose questions are still open
//! has no task to begin: the tool gets [`AskError::InputRequired`] and the round ends with
//! the questions, as any round does.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::{model::ClientCapabilities, task_manager::TaskContext};
use switchboard_core::{
    BoxFuture,
    ask::{
        AskError, Capability, ClientHandler, ElicitReply, Elicitation, Keyed, Reply, Root,
        SampleRequest, Sampled,
    },
};
use tokio::sync::{OnceCell, oneshot};

use super::{RoundAsker, TaskAsker};

/// What the tool sends the `tools/call` handler when it begins its task: where to send the
/// task's context once the task exists.
pub(crate) type BeginTask = oneshot::Sender<TaskContext>;

/// Asks in rounds until the tool begins its task, and in the task afterwards.
pub(crate) struct RoundsThenTask {
    rounds: Arc<RoundAsker>,
    /// The capabilities the request declared: its task's questions need them too.
    capabilities: Option<ClientCapabilities>,
    /// The `tools/call` handler's end, until the task is asked for.
    begin: Mutex<Option<oneshot::Sender<BeginTask>>>,
    /// The task's asker, once the task began.
    task: OnceCell<TaskAsker>,
}

impl RoundsThenTask {
    /// The asker of a round whose questions `rounds` answers, for a client that declared
    /// `capabilities`; `begin` tells the `tools/call` handler that the tool begins its task.
    pub(crate) fn new(
        rounds: Arc<RoundAsker>,
        capabilities: Option<ClientCapabilities>,
        begin: oneshot::Sender<BeginTask>,
    ) -> Self {
        Self {
            rounds,
            capabilities,
            begin: Mutex::new(Some(begin)),
            task: OnceCell::new(),
        }
    }

    /// Sets the task's status message, once the task began; before, the message is dropped
    /// (the round's request gets no progress of the call).
    pub(crate) fn report_status(&self, message: &str) {
        if let Some(task) = self.task.get() {
            task.task().set_status_message(message);
        }
    }

    /// Where questions go now: to the task once it began, else to the round.
    fn current(&self) -> &dyn ClientHandler {
        match self.task.get() {
            Some(task) => task,
            None => &*self.rounds,
        }
    }

    /// Asks the `tools/call` handler for the task, and waits for its context.
    async fn task(&self) -> Result<TaskAsker, AskError> {
        let gone = || {
            AskError::Transport("the request that would answer with the task has ended".to_owned())
        };
        let begin = self
            .begin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(gone)?;
        let (sender, receiver) = oneshot::channel();
        begin.send(sender).map_err(|_| gone())?;
        let task = receiver.await.map_err(|_| gone())?;
        Ok(TaskAsker::new(task, self.capabilities.clone()))
    }
}

impl ClientHandler for RoundsThenTask {
    fn elicit<'a>(
        &'a self,
        request: &'a Elicitation,
    ) -> BoxFuture<'a, Result<ElicitReply, AskError>> {
        self.current().elicit(request)
    }

    fn sample<'a>(
        &'a self,
        request: &'a SampleRequest,
    ) -> BoxFuture<'a, Result<Sampled, AskError>> {
        self.current().sample(request)
    }

    fn list_roots(&self) -> BoxFuture<'_, Result<Vec<Root>, AskError>> {
        self.current().list_roots()
    }

    fn ask_all<'a>(
        &'a self,
        questions: &'a [Keyed],
    ) -> BoxFuture<'a, Result<Vec<Reply>, AskError>> {
        self.current().ask_all(questions)
    }

    fn can(&self, capability: Capability) -> bool {
        self.current().can(capability)
    }

    fn awaits_input(&self) -> bool {
        self.task.get().is_none() && self.rounds.awaits_input()
    }

    fn begin_task(&self) -> BoxFuture<'_, Result<(), AskError>> {
        Box::pin(async move {
            if self.task.get().is_none() {
                let open = self.rounds.open_keys();
                if !open.is_empty() {
                    return Err(AskError::InputRequired { keys: open });
                }
            }
            self.task.get_or_try_init(|| self.task()).await?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rmcp::{
        model::TaskPayload,
        task_manager::{TaskManager, TaskOptions},
    };
    use serde_json::json;
    use switchboard_core::ask::{Elicitation, Question};

    use super::*;

    fn form() -> Keyed {
        Keyed::new(
            "user_name",
            Question::Elicit(Elicitation::Form {
                message: "Name?".to_owned(),
                requested_schema: json!({
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                }),
            }),
        )
    }

    fn eliciting_client() -> Option<ClientCapabilities> {
        Some(ClientCapabilities::builder().enable_elicitation().build())
    }

    #[tokio::test]
    async fn a_round_with_an_open_question_has_no_task_to_begin() {
        let rounds = Arc::new(RoundAsker::with_answers(
            BTreeMap::new(),
            eliciting_client(),
        ));
        let (begin, mut begun) = oneshot::channel();
        let asker = RoundsThenTask::new(rounds, eliciting_client(), begin);
        let error = asker
            .ask_all(&[form()])
            .await
            .expect_err("the question is open");
        assert!(matches!(error, AskError::InputRequired { .. }), "{error:?}");
        assert!(asker.awaits_input());
        match asker.begin_task().await {
            Err(AskError::InputRequired { keys }) => assert_eq!(keys, ["user_name"]),
            other => panic!("expected input_required, got {other:?}"),
        }
        assert!(
            begun.try_recv().is_err(),
            "the handler was not asked for a task"
        );
    }

    #[tokio::test]
    async fn questions_before_the_task_are_answered_from_the_round_and_after_it_go_to_the_task() {
        let answers = BTreeMap::from([(
            "user_name".to_owned(),
            json!({"action": "accept", "content": {"name": "Alice"}}),
        )]);
        let rounds = Arc::new(RoundAsker::with_answers(answers, eliciting_client()));
        let (begin, begun) = oneshot::channel::<BeginTask>();
        let asker = Arc::new(RoundsThenTask::new(rounds, eliciting_client(), begin));
        let replies = asker
            .ask_all(&[form()])
            .await
            .expect("answered by the round");
        assert!(
            matches!(&replies[0], Reply::Elicit(reply) if reply.content == Some(json!({"name": "Alice"})))
        );

        // The handler's side: create a task, hand its context over.
        let manager = TaskManager::new();
        let handler = tokio::spawn(async move {
            let reply = begun.await.expect("the tool begins its task");
            let task = manager.spawn(TaskOptions::new(), move |context| {
                let _ = reply.send(context);
                Box::pin(std::future::pending())
            });
            (manager, task.task_id)
        });
        asker.begin_task().await.expect("the task begins");
        asker
            .begin_task()
            .await
            .expect("beginning again changes nothing");
        let (manager, task_id) = handler.await.expect("the handler");
        assert!(!asker.awaits_input());

        let later = Arc::clone(&asker);
        let question = tokio::spawn(async move {
            later
                .ask_all(&[Keyed::new(
                    "confirm",
                    Question::Elicit(Elicitation::Form {
                        message: "Sure?".to_owned(),
                        requested_schema: json!({"type": "object", "properties": {}}),
                    }),
                )])
                .await
        });
        let pending = loop {
            if let TaskPayload::InputRequired { input_requests } =
                manager.get_task(&task_id).expect("the task").payload
            {
                break input_requests;
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(pending.keys().collect::<Vec<_>>(), ["confirm"]);
        manager
            .update_task(
                &task_id,
                [("confirm".to_owned(), json!({"action": "decline"}))],
            )
            .expect("answered");
        let replies = question.await.expect("the question").expect("answered");
        assert!(
            matches!(&replies[0], Reply::Elicit(reply) if reply.action == switchboard_core::ask::ElicitAction::Decline)
        );
    }
}
