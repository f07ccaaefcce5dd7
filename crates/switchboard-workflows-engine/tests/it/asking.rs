//! Steps whose tool asks its client something (`ctx.elicit`, `ctx.sample`): the run pauses with
//! the question stored, as it pauses for a decision; `Engine::answer` gives the answer, and the
//! step's tool runs again with it, its change made once. A declined form is an answer too; an
//! answer to a run that waits for none is refused; a run paused on one engine is answered and
//! finished by another sharing the store.

use std::sync::Arc;

use serde_json::json;
use switchboard_audit::Outcome;
use switchboard_core::ask::{
    AskOutcome, ElicitAction, ElicitReply, Elicitation, Question, Reply, SampleContent, SampleRole,
    Sampled,
};
use switchboard_registry::ToolRegistry;
use switchboard_workflows::{
    Definition, MemoryRunStore, NodeEvent, NodeState, RunId, RunState, WorkflowEvent,
};
use switchboard_workflows_engine::{Engine, EngineError};

use crate::probe::calls;
use crate::support::*;

fn confirm(name: &str) -> Arc<Definition> {
    definition(
        name,
        vec![
            tool(
                "confirm",
                "probe_confirm",
                object([("key", lit(json!(name)))]),
            ),
            tool("after", "probe_look", object([("key", lit(json!(name)))])),
        ],
    )
}

fn accept(content: serde_json::Value) -> Reply {
    Reply::Elicit(ElicitReply {
        action: ElicitAction::Accept,
        content: Some(content),
    })
}

fn declined() -> Reply {
    Reply::Elicit(ElicitReply {
        action: ElicitAction::Decline,
        content: None,
    })
}

async fn paused_run(name: &str, definition: &Arc<Definition>) -> (Engine, RunId) {
    let (_, engine, run) = paused_run_with_registry(name, definition).await;
    (engine, run)
}

async fn paused_run_with_registry(
    name: &str,
    definition: &Arc<Definition>,
) -> (ToolRegistry, Engine, RunId) {
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let engine = engine_with(&registry, &store, definition);
    let caller = human(name);
    let run = engine
        .start(Arc::clone(definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&engine, run, &caller).await;
    (registry, engine, run)
}

#[tokio::test]
async fn a_step_that_elicits_pauses_with_its_question_and_the_answer_finishes_it_once() {
    let name = "asking_accepted";
    let definition = confirm(name);
    let (registry, engine, run) = paused_run_with_registry(name, &definition).await;
    let caller = human(name);
    let steps = engine.steps(run, &caller).expect("readable");
    let asking = step(&steps, "confirm", 0);
    assert_eq!(
        asking.state,
        NodeState::WaitingInput {
            attempt: 1,
            keys: vec!["ask-1".to_owned()],
        }
    );
    let [question] = asking.questions.as_slice() else {
        panic!("one question: {:?}", asking.questions);
    };
    assert!(
        matches!(&question.question, Question::Elicit(Elicitation::Form { message, .. }) if message == "Go ahead?"),
        "{question:?}"
    );
    assert!(question.answer.is_none());
    let RunState::Paused { reason } = engine.run(run, &caller).expect("readable").state else {
        panic!("paused");
    };
    assert!(reason.contains("Go ahead?"), "{reason}");
    assert!(calls(name).is_empty(), "nothing changed before the answer");

    let answerer = context("bob", switchboard_core::Initiator::Human, "asking-bob");
    let answered = engine
        .answer(run, None, accept(json!({"go": true})), &answerer)
        .await
        .expect("the run waits for this answer");
    assert!(answered.resumed());
    assert_eq!(answered.key, "ask-1");

    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(run, &caller).expect("readable");
    let done = step(&steps, "confirm", 0);
    assert_eq!(done.state, NodeState::Completed);
    assert_eq!(done.output, Some(json!({"answer": "yes", "calls": 1})));
    let answer = done.questions[0].answer.as_ref().expect("stored");
    assert_eq!(answer.by, "bob");
    // The change was made once, by the round that had the answer; `after` made the second call.
    assert_eq!(calls(name).len(), 2);

    let events = events(&engine, run, &caller).await;
    let node_events: Vec<&NodeEvent> = events
        .iter()
        .filter_map(|record| match &record.event {
            WorkflowEvent::Node { path, event, .. } if path.as_str() == "confirm" => Some(event),
            _ => None,
        })
        .collect();
    assert_eq!(
        node_events,
        [
            &NodeEvent::Start,
            &NodeEvent::AwaitInput {
                keys: vec!["ask-1".to_owned()]
            },
            &NodeEvent::Answer {
                key: "ask-1".to_owned(),
                by: "bob".to_owned()
            },
            &NodeEvent::Start,
            &NodeEvent::Complete,
        ]
    );

    // Each round is one audited call: the first asked (pending), the second was answered.
    let records = audit(&registry, name).await;
    let confirms: Vec<_> = records
        .iter()
        .filter(|record| &*record.tool == "probe_confirm")
        .collect();
    assert_eq!(confirms.len(), 2, "{confirms:?}");
    assert_eq!(confirms[0].asks[0].outcome, AskOutcome::Pending);
    assert_eq!(confirms[1].asks[0].outcome, AskOutcome::Accepted);
    assert_eq!(confirms[1].outcome, Outcome::Ok);
}

#[tokio::test]
async fn a_declined_question_resumes_the_step_which_acts_on_the_refusal() {
    let name = "asking_declined";
    let definition = confirm(name);
    let (engine, run) = paused_run(name, &definition).await;
    let caller = human(name);
    engine
        .answer(run, Some("ask-1"), declined(), &caller)
        .await
        .expect("declining is an answer");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "confirm", 0).output,
        Some(json!({"answer": "declined"}))
    );
    assert_eq!(
        calls(name).len(),
        1,
        "only `after` ran: nothing was changed"
    );
}

#[tokio::test]
async fn a_step_that_samples_is_answered_with_a_completion() {
    let name = "asking_sampled";
    let definition = definition(
        name,
        vec![tool(
            "summary",
            "probe_summarise",
            object([("key", lit(json!(name))), ("value", lit(json!("a week")))]),
        )],
    );
    let (engine, run) = paused_run(name, &definition).await;
    let caller = human(name);
    let refused = engine
        .answer(run, None, declined(), &caller)
        .await
        .expect_err("a completion is not declined like a form");
    assert!(
        matches!(&refused, EngineError::BadAnswer { key, .. } if key == "ask-1"),
        "{refused:?}"
    );
    let completion = Reply::Sample(Sampled {
        role: SampleRole::Assistant,
        content: SampleContent::text("Quiet."),
        model: "a person".to_owned(),
        stop_reason: None,
    });
    engine
        .answer(run, None, completion, &caller)
        .await
        .expect("answered");
    let outcome = wait(&engine, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let steps = engine.steps(run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "summary", 0).output,
        Some(json!({"summary": "Quiet.", "model": "a person"}))
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_or_to_a_run_not_waiting_is_refused() {
    let name = "asking_refused";
    let definition = confirm(name);
    let (engine, run) = paused_run(name, &definition).await;
    let caller = human(name);

    let wrong_key = engine
        .answer(run, Some("ask-9"), declined(), &caller)
        .await
        .expect_err("no such question");
    assert!(
        matches!(&wrong_key, EngineError::UnknownQuestion { pending, .. } if pending == &["confirm#0:ask-1".to_owned()]),
        "{wrong_key:?}"
    );
    let bad_form = engine
        .answer(run, None, accept(json!({"go": "yes"})), &caller)
        .await
        .expect_err("`go` is a boolean");
    assert!(
        matches!(&bad_form, EngineError::BadAnswer { reason, .. } if reason.contains("/go")),
        "{bad_form:?}"
    );
    let mut elsewhere = context("eve", switchboard_core::Initiator::Human, "asking-eve");
    elsewhere.org_id = Some("globex".into());
    assert!(matches!(
        engine.answer(run, None, declined(), &elsewhere).await,
        Err(EngineError::RunNotFound(_))
    ));
    let steps = engine.steps(run, &caller).expect("readable");
    assert!(
        step(&steps, "confirm", 0).questions[0].answer.is_none(),
        "a refused answer leaves nothing"
    );

    engine
        .answer(run, None, accept(json!({"go": false})), &caller)
        .await
        .expect("answered");
    assert_eq!(wait(&engine, run, &caller).await.state, RunState::Completed);
    let again = engine
        .answer(run, None, declined(), &caller)
        .await
        .expect_err("the run is over");
    assert!(
        matches!(
            again,
            EngineError::Finished {
                action: "answer",
                ..
            }
        ),
        "{again:?}"
    );

    // A run paused for something else (a proposal) takes no answer.
    let touching = definition_touching(name);
    let agent = agent(name);
    let proposing = engine
        .start(Arc::clone(&touching), json!({}), &agent)
        .await
        .expect("starts");
    paused(&engine, proposing, &agent).await;
    let not_waiting = engine
        .answer(proposing, None, declined(), &agent)
        .await
        .expect_err("it waits for a decision, not an answer");
    assert!(
        matches!(&not_waiting, EngineError::NotWaitingForInput { .. }),
        "{not_waiting:?}"
    );
    assert!(
        not_waiting
            .to_string()
            .contains("not waiting for an answer"),
        "{not_waiting}"
    );
}

#[tokio::test]
async fn a_cancelled_run_drops_its_question_and_refuses_a_later_answer() {
    let name = "asking_cancelled";
    let definition = confirm(name);
    let (engine, run) = paused_run(name, &definition).await;
    let caller = human(name);
    engine.cancel(run, &caller).await.expect("cancels");
    assert_eq!(wait(&engine, run, &caller).await.state, RunState::Cancelled);
    let steps = engine.steps(run, &caller).expect("readable");
    assert!(
        matches!(&step(&steps, "confirm", 0).state, NodeState::Failed { error } if error.contains("waited for an answer")),
        "{steps:?}"
    );
    assert!(matches!(
        engine.answer(run, None, declined(), &caller).await,
        Err(EngineError::Finished { .. })
    ));
    assert!(calls(name).is_empty());
}

#[tokio::test]
async fn a_run_paused_on_one_engine_is_answered_and_finished_on_another() {
    let name = "asking_elsewhere";
    let definition = confirm(name);
    let registry = registry().await;
    let store = Arc::new(MemoryRunStore::new());
    let first = engine_with(&registry, &store, &definition);
    let caller = human(name);
    let run = first
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&first, run, &caller).await;
    first.shutdown();

    let second = engine_with(&registry, &store, &definition);
    second
        .answer(run, None, accept(json!({"go": true})), &caller)
        .await
        .expect("the question is in the shared store");
    let outcome = wait(&second, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    assert_eq!(calls(name).len(), 2, "the change once, then `after`");
}

/// A workflow whose only step is a mutation, which an agent's run proposes.
fn definition_touching(name: &str) -> Arc<Definition> {
    definition(
        &format!("{name}_touch"),
        vec![tool(
            "touch",
            "probe_touch",
            object([("key", lit(json!(format!("{name}-touch"))))]),
        )],
    )
}

#[tokio::test]
async fn a_question_asked_on_one_postgres_node_is_answered_and_finished_on_another() {
    let name = "asking_postgres";
    let definition = confirm(name);
    let database = switchboard_test_postgres::test_database()
        .await
        .expect("a test database (run the tests through `cargo xtask test`)");
    let registry = registry().await;
    let node = |owner: &str| {
        let store: Arc<dyn switchboard_workflows::RunStore> = Arc::new(
            switchboard_workflows_postgres::PostgresRunStore::open(
                &switchboard_workflows_postgres::PostgresOptions::new(database.url()),
            )
            .expect("the workflows database opens"),
        );
        leasing_engine(
            &registry,
            store,
            &definition,
            owner,
            std::time::Duration::from_secs(60),
        )
    };
    let (node_a, node_b) = (node("node-a"), node("node-b"));
    let caller = human(name);
    let run = node_a
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&node_a, run, &caller).await;

    let steps = node_b.steps(run, &caller).expect("readable on node b");
    assert!(
        matches!(&step(&steps, "confirm", 0).questions[..], [asked] if asked.key == "ask-1"),
        "node b reads the question node a stored: {steps:?}"
    );
    node_b
        .answer(run, None, accept(json!({"go": true})), &caller)
        .await
        .expect("answered on node b");
    let outcome = wait(&node_b, run, &caller).await;
    assert_eq!(outcome.state, RunState::Completed);
    let steps = node_a.steps(run, &caller).expect("readable on node a");
    let done = step(&steps, "confirm", 0);
    assert_eq!(done.output, Some(json!({"answer": "yes", "calls": 1})));
    assert_eq!(
        done.questions[0]
            .answer
            .as_ref()
            .map(|answer| answer.by.as_str()),
        Some("alice")
    );
    assert_eq!(calls(name).len(), 2, "the change once, then `after`");
}

#[tokio::test]
async fn a_question_stored_in_sqlite_is_answered_after_the_process_that_asked_is_gone() {
    let name = "asking_sqlite";
    let definition = confirm(name);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("workflows.db");
    let registry = registry().await;
    let open = || {
        let store: Arc<dyn switchboard_workflows::RunStore> = Arc::new(
            switchboard_workflows_sqlite::SqliteRunStore::open(&path).expect("the file opens"),
        );
        leasing_engine(
            &registry,
            store,
            &definition,
            "one-process",
            std::time::Duration::from_secs(60),
        )
    };
    let caller = human(name);
    let asking = open();
    let run = asking
        .start(Arc::clone(&definition), json!({}), &caller)
        .await
        .expect("starts");
    paused(&asking, run, &caller).await;
    asking.shutdown();
    drop(asking);

    let answering = open();
    answering
        .answer(run, Some("confirm#0:ask-1"), declined(), &caller)
        .await
        .expect("the question is in the file");
    assert_eq!(
        wait(&answering, run, &caller).await.state,
        RunState::Completed
    );
    let steps = answering.steps(run, &caller).expect("readable");
    assert_eq!(
        step(&steps, "confirm", 0).output,
        Some(json!({"answer": "declined"}))
    );
}
