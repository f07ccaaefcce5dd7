//! Run-time prompts given to a registry's builder: listed beside the linked ones to the callers
//! their permission grants, rendered from the caller and checked string arguments, completed,
//! and refused at start when their name is taken.

use serde_json::{Map, Value, json};
use switchboard_core::{
    BoxFuture, Caller, PromptArgument, PromptDescriptor, PromptError, PromptMessage, ToolError,
};
use switchboard_registry::{PermissionMatrix, RegistryError, RuntimePrompt, ToolRegistry};

use crate::common::{admin_context, human_context};

/// Asks for a greeting of `name`, signed by the caller.
struct Greet;

impl RuntimePrompt for Greet {
    fn render<'a>(
        &'a self,
        caller: &'a Caller,
        arguments: &'a Map<String, Value>,
    ) -> BoxFuture<'a, Result<Vec<PromptMessage>, ToolError>> {
        Box::pin(async move {
            let name = arguments.get("name").and_then(Value::as_str).unwrap_or("");
            if name == "fail" {
                return Err(ToolError::new("no_greeting", "no greeting for `fail`"));
            }
            Ok(vec![PromptMessage::user_text(format!(
                "greet {name} from {}",
                caller.user_id.as_str()
            ))])
        })
    }

    fn complete(&self, _caller: &Caller, argument: &str, value: &str) -> Vec<String> {
        ["ann", "bob"]
            .into_iter()
            .filter(|known| argument == "name" && known.starts_with(value))
            .map(str::to_owned)
            .collect()
    }
}

fn descriptor(name: &str) -> PromptDescriptor {
    PromptDescriptor {
        name: name.to_owned(),
        title: None,
        description: "Asks for a greeting.".to_owned(),
        domain: "greetings".to_owned(),
        permission: "greetings.read".to_owned(),
        arguments: vec![PromptArgument {
            name: "name".to_owned(),
            description: Some("Whom to greet.".to_owned()),
            required: true,
            values: Vec::new(),
        }],
    }
}

fn matrix() -> PermissionMatrix {
    PermissionMatrix::from_toml(
        r#"
        [roles]
        admin = ["*"]
        greeter = ["greetings.read"]
        stranger = ["nothing.read"]
        "#,
    )
    .expect("a valid matrix")
}

async fn registry() -> ToolRegistry {
    ToolRegistry::builder()
        .permissions(matrix())
        .prompt(descriptor("rt_greet"), Greet)
        .start()
        .await
        .expect("a valid run-time prompt")
}

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments are an object, not {other}"),
    }
}

fn listed(registry: &ToolRegistry, role: &str) -> bool {
    let roles = human_context("rt", role).verify().expect("complete").roles;
    registry
        .prompts_permitted(&roles)
        .iter()
        .any(|prompt| prompt.name == "rt_greet")
}

#[tokio::test]
async fn a_runtime_prompt_is_listed_to_the_callers_its_permission_grants() {
    let registry = registry().await;
    assert!(listed(&registry, "greeter"));
    assert!(!listed(&registry, "stranger"));
    assert!(
        registry
            .prompts()
            .iter()
            .any(|prompt| prompt.name == "rt_greet")
    );
}

#[tokio::test]
async fn a_runtime_prompt_renders_from_the_caller_and_its_checked_arguments() {
    let registry = registry().await;
    let greeter = human_context("rt", "greeter");
    let rendered = registry
        .render_prompt("rt_greet", &arguments(json!({"name": "ann"})), &greeter)
        .await
        .expect("renders");
    assert_eq!(
        rendered.description.as_deref(),
        Some("Asks for a greeting.")
    );
    let user = greeter.verify().expect("complete").user_id;
    assert_eq!(
        rendered.messages,
        [PromptMessage::user_text(format!(
            "greet ann from {}",
            user.as_str()
        ))]
    );
    let refused = |args: Value, role: &'static str| {
        let registry = registry.clone();
        async move {
            registry
                .render_prompt("rt_greet", &arguments(args), &human_context("rt", role))
                .await
                .expect_err("refused")
        }
    };
    assert!(matches!(
        refused(json!({"name": "ann"}), "stranger").await,
        PromptError::PermissionDenied { .. }
    ));
    assert!(matches!(
        refused(json!({}), "greeter").await,
        PromptError::MissingArgument { .. }
    ));
    assert!(matches!(
        refused(json!({"name": "ann", "extra": "x"}), "greeter").await,
        PromptError::InvalidArgument { .. }
    ));
    assert!(matches!(
        refused(json!({"name": 3}), "greeter").await,
        PromptError::InvalidArgument { .. }
    ));
    assert!(matches!(
        refused(json!({"name": "fail"}), "greeter").await,
        PromptError::RenderFailed { .. }
    ));
    let completed = registry
        .complete_prompt_argument("rt_greet", "name", "a", &admin_context("rt"))
        .expect("completes");
    assert_eq!(completed, ["ann"]);
}

#[tokio::test]
async fn a_taken_or_invalid_runtime_prompt_name_stops_the_start() {
    let twice = ToolRegistry::builder()
        .permissions(matrix())
        .prompt(descriptor("rt_greet"), Greet)
        .prompt(descriptor("rt_greet"), Greet)
        .start()
        .await
        .expect_err("a duplicate name");
    assert!(
        matches!(twice, RegistryError::DuplicatePrompt { .. }),
        "{twice}"
    );
    let invalid = ToolRegistry::builder()
        .prompt(descriptor("rt greet"), Greet)
        .start()
        .await
        .expect_err("an invalid name");
    assert!(
        matches!(invalid, RegistryError::InvalidPrompt { .. }),
        "{invalid}"
    );
}
