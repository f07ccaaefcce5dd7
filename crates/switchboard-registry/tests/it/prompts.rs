//! Prompts served by a registry: listed by permission, rendered from the domain's state with
//! checked arguments, completed, and gone with an excluded domain. The `notes` domain and its
//! prompts are defined here, for these tests.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use switchboard_core::{
    CallContext, ContentBlock, NoInput, Prompt, PromptError, PromptMessage, PromptSpec,
    ToolContext, ToolError,
};
use switchboard_registry::{PermissionMatrix, ToolRegistry};

use crate::common::{admin_context, human_context, start_excluding, start_with_permissions};

/// The notes' topics.
#[derive(Debug, Clone)]
struct NotesState {
    topics: Vec<&'static str>,
}

fn seeded() -> NotesState {
    NotesState {
        topics: vec!["budget", "hiring", "holidays"],
    }
}

switchboard_core::domain! {
    /// Notes, to summarise.
    Notes { name: "notes", state: NotesState = seeded }
}

/// How a summary reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Tone {
    Formal,
    Friendly,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SummariseArgs {
    /// The topic to summarise.
    topic: String,
    /// How it reads (formal by default).
    tone: Option<Tone>,
    /// The last day to look at.
    until: Option<jiff::civil::Date>,
}

struct Summarise;

impl Prompt for Summarise {
    type Domain = Notes;
    type Args = SummariseArgs;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Notes,
        name: "summarise",
        title: "Summarise notes",
        description: "Asks for a summary of the notes on one topic.",
        permission: "notes.read",
    };

    async fn render(
        ctx: &ToolContext<NotesState>,
        args: SummariseArgs,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        if args.topic == "fail" {
            return Err(ToolError::new("no_notes", "there are no notes on `fail`"));
        }
        if args.topic == "panic" {
            panic!("a body that panics");
        }
        Ok(vec![
            PromptMessage::user_text(format!(
                "Summarise the {} notes on {} for {} at {} (of {} topics, until {:?}).",
                match args.tone {
                    Some(Tone::Friendly) => "friendly",
                    Some(Tone::Formal) | None => "formal",
                },
                args.topic,
                ctx.caller().user_id,
                ctx.caller().org_id,
                ctx.state().topics.len(),
                args.until,
            )),
            PromptMessage::assistant(ContentBlock::text("Here is the summary:")),
        ])
    }

    fn complete(ctx: &ToolContext<NotesState>, argument: &str, value: &str) -> Vec<String> {
        if argument != "topic" {
            return Vec::new();
        }
        ctx.state()
            .topics
            .iter()
            .filter(|topic| topic.starts_with(value))
            .map(|topic| (*topic).to_owned())
            .collect()
    }
}

switchboard_core::prompt!(Summarise);

struct Overview;

impl Prompt for Overview {
    type Domain = Notes;
    type Args = NoInput;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Notes,
        name: "overview",
        description: "Asks for an overview of every note.",
        permission: "notes.admin",
    };

    async fn render(
        _ctx: &ToolContext<NotesState>,
        _args: NoInput,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user_text("Give an overview.")])
    }
}

switchboard_core::prompt!(Overview);

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments are an object, not {other}"),
    }
}

async fn registry() -> ToolRegistry {
    let matrix = PermissionMatrix::from_toml(
        r#"
        [roles]
        admin = ["*"]
        reader = ["notes.read"]
        "#,
    )
    .expect("a valid matrix");
    start_with_permissions(matrix).await
}

fn reader() -> CallContext {
    human_context("prompt-reader", "reader")
}

fn names(registry: &ToolRegistry, context: &CallContext) -> Vec<String> {
    let roles = context.verify().expect("complete").roles;
    registry
        .prompts_permitted(&roles)
        .iter()
        .filter(|prompt| prompt.domain == "notes")
        .map(|prompt| prompt.name.clone())
        .collect()
}

#[tokio::test]
async fn a_caller_lists_the_prompts_its_roles_grant() {
    let registry = registry().await;
    assert_eq!(
        names(&registry, &admin_context("list")),
        ["notes_overview", "notes_summarise"]
    );
    assert_eq!(names(&registry, &reader()), ["notes_summarise"]);
    let summarise = registry
        .prompts()
        .into_iter()
        .find(|prompt| prompt.name == "notes_summarise")
        .expect("linked");
    let listed: Vec<_> = summarise
        .arguments
        .iter()
        .map(|argument| (argument.name.as_str(), argument.required))
        .collect();
    assert_eq!(listed, [("tone", false), ("topic", true), ("until", false)]);
    assert_eq!(summarise.title.as_deref(), Some("Summarise notes"));
}

#[tokio::test]
async fn a_prompt_renders_from_the_state_the_arguments_and_the_caller() {
    let registry = registry().await;
    let rendered = registry
        .render_prompt(
            "notes_summarise",
            &arguments(json!({"topic": "hiring", "tone": "friendly", "until": "2026-12-01"})),
            &reader(),
        )
        .await
        .expect("renders");
    assert_eq!(
        rendered.description.as_deref(),
        Some("Asks for a summary of the notes on one topic.")
    );
    assert_eq!(
        rendered.messages,
        [
            PromptMessage::user_text(
                "Summarise the friendly notes on hiring for alice at acme (of 3 topics, until Some(2026-12-01))."
            ),
            PromptMessage::assistant_text("Here is the summary:"),
        ]
    );
}

async fn refusal(name: &str, args: Value, context: &CallContext) -> PromptError {
    registry()
        .await
        .render_prompt(name, &arguments(args), context)
        .await
        .expect_err("refused")
}

#[tokio::test]
async fn each_check_refuses_with_its_own_error() {
    let unknown = refusal("notes_summarize", json!({}), &reader()).await;
    assert!(
        matches!(&unknown, PromptError::NotFound { name, similar }
            if name == "notes_summarize" && similar.first().map(String::as_str) == Some("notes_summarise")),
        "{unknown:?}"
    );
    let incomplete = CallContext::builder().org("acme").role("reader").build();
    let missing_context = refusal("notes_summarise", json!({"topic": "x"}), &incomplete).await;
    assert_eq!(missing_context.kind(), "missing_context");
    let denied = refusal("notes_overview", json!({}), &reader()).await;
    assert!(
        matches!(&denied, PromptError::PermissionDenied { permission, .. } if permission == "notes.admin"),
        "{denied:?}"
    );
    let missing = refusal("notes_summarise", json!({"tone": "formal"}), &reader()).await;
    assert_eq!(
        missing,
        PromptError::MissingArgument {
            prompt: "notes_summarise".to_owned(),
            argument: "topic".to_owned(),
        }
    );
    let unknown_argument = refusal(
        "notes_summarise",
        json!({"topic": "x", "colour": "red"}),
        &reader(),
    )
    .await;
    assert!(
        matches!(&unknown_argument, PromptError::InvalidArgument { argument, reason, .. }
            if argument == "colour" && reason.contains("`tone`, `topic`, `until`")),
        "{unknown_argument}"
    );
    let smuggled = refusal(
        "notes_summarise",
        json!({"topic": "x", "org_id": "globex"}),
        &reader(),
    )
    .await;
    assert!(
        matches!(&smuggled, PromptError::InvalidArgument { argument, reason, .. }
            if argument == "org_id" && reason.contains("call context")),
        "{smuggled}"
    );
    for (args, argument) in [
        (json!({"topic": "x", "tone": "rude"}), "tone"),
        (json!({"topic": "x", "until": "next week"}), "until"),
        (json!({"topic": 3}), "topic"),
    ] {
        let invalid = refusal("notes_summarise", args.clone(), &reader()).await;
        assert!(
            matches!(&invalid, PromptError::InvalidArgument { argument: named, .. } if named == argument),
            "{args}: {invalid}"
        );
    }
    let failed = refusal("notes_summarise", json!({"topic": "fail"}), &reader()).await;
    assert!(
        matches!(&failed, PromptError::RenderFailed { error, .. } if error.code() == "no_notes"),
        "{failed}"
    );
    let panicked = refusal("notes_summarise", json!({"topic": "panic"}), &reader()).await;
    assert!(
        matches!(&panicked, PromptError::RenderFailed { error, .. }
            if error.code() == "render_panicked" && error.message().contains("a body that panics")),
        "{panicked}"
    );
}

#[tokio::test]
async fn arguments_complete_from_the_enum_or_the_prompts_completer() {
    let registry = registry().await;
    let complete = |argument: &str, value: &str| {
        registry.complete_prompt_argument("notes_summarise", argument, value, &reader())
    };
    assert_eq!(complete("tone", "FR"), Ok(vec!["friendly".to_owned()]));
    assert_eq!(
        complete("tone", ""),
        Ok(vec!["formal".to_owned(), "friendly".to_owned()])
    );
    assert_eq!(
        complete("topic", "h"),
        Ok(vec!["hiring".to_owned(), "holidays".to_owned()])
    );
    assert_eq!(complete("until", "2026"), Ok(Vec::new()));
    assert_eq!(
        complete("colour", "r").map_err(|error| error.kind()),
        Err("invalid_argument")
    );
    assert_eq!(
        registry
            .complete_prompt_argument("notes_overview", "x", "", &reader())
            .map_err(|error| error.kind()),
        Err("permission_denied")
    );
}

#[tokio::test]
async fn an_excluded_domain_takes_its_prompts_with_it() {
    let registry = start_excluding("notes")
        .await
        .expect("the rest starts without it");
    assert!(
        registry
            .prompts()
            .iter()
            .all(|prompt| prompt.domain != "notes"),
        "{:?}",
        registry.prompts()
    );
    let gone = registry
        .render_prompt("notes_summarise", &Map::new(), &admin_context("gone"))
        .await
        .expect_err("not served");
    assert_eq!(gone.kind(), "prompt_not_found");
}
