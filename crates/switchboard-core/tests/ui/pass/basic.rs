use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{Category, NoInput, TaskSupport, ToolContext, ToolError, ToolInput, tool};
use validator::Validate;

#[derive(Clone, Default)]
pub struct Greetings {
    pub greeted: u64,
}

switchboard_core::domain! {
    /// Says hello.
    pub Greet { name: "greet", state: Greetings = Greetings::default }
}

// Inputs need no `Clone`.
#[derive(Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
pub struct HelloInput {
    /// Who to greet.
    #[validate(length(min = 1, max = 64))]
    pub name: String,
}

#[derive(Clone, Serialize, JsonSchema)]
pub struct Greeting {
    /// The greeting.
    pub text: String,
}

/// Greets someone by name.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext<Greetings>, input: HelloInput) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        text: format!("hello, {}", input.name),
    })
}

/// Greets the calling user.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
pub async fn hello_me(ctx: &ToolContext<Greetings>, _input: NoInput) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        text: format!("hello, {}", ctx.caller().user_id),
    })
}

/// Counts a greeting.
///
/// Every call adds one.
#[tool(
    domain = Greet,
    category = execute,
    permission = "greet.count",
    name = "greet-count_v2",
    title = "Count a greeting",
    intents = ["count a greeting", "greet {name} and count"],
    timeout_ms = 250
)]
async fn count(ctx: &ToolContext<Greetings>, _input: HelloInput) -> Result<u64, ToolError> {
    ctx.write(|state: &mut Greetings| {
        state.greeted += 1;
        state.greeted
    })
    .await
}

switchboard_core::domain! {
    /// Echoes, keeping nothing.
    pub Echo { name: "echo" }
}

/// Says what it was told, in a domain without state.
#[tool(domain = Echo, category = read, permission = "echo.say")]
async fn say(_ctx: &ToolContext, input: HelloInput) -> Result<String, ToolError> {
    Ok(input.name)
}

/// Asks who to greet, then greets them in a task of its own.
#[tool(
    domain = Echo,
    category = read,
    permission = "echo.say",
    tasks = required,
    asks_before_task
)]
async fn greet_later(ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    #[derive(Deserialize, JsonSchema)]
    struct Name {
        name: String,
    }
    let name = ctx.elicit::<Name>("Who?").await?.accepted();
    ctx.begin_task().await?;
    Ok(name.map_or_else(String::new, |form| form.name))
}

/// Refuses to count a greeting for nobody; reads the state its tool's domain holds.
async fn somebody(ctx: &ToolContext<Greetings>, input: &HelloInput) -> Result<(), ToolError> {
    if input.name == "nobody" && ctx.state().greeted == 0 {
        return Err(ToolError::new("nobody", "nobody to greet"));
    }
    Ok(())
}

switchboard_core::tool_policy! {
    tool: Count,
    gate: somebody,
}

fn main() {
    let find = |name: &str| {
        switchboard_core::linked_tools()
            .find(|entry| entry.spec.name == name)
            .unwrap_or_else(|| panic!("`{name}` is not linked"))
    };

    let hello = find("greet_hello");
    assert_eq!(hello.spec.description, "Greets someone by name.");
    assert_eq!(hello.spec.category, Category::Read);
    assert_eq!(hello.spec.timeout, None);
    assert_eq!(<Hello as switchboard_core::Tool>::SPEC.name, "greet_hello");

    let hello_me = find("greet_hello_me");
    assert_eq!(hello_me.spec.permission, "greet.hello");

    let count = find("greet-count_v2");
    assert_eq!(
        count.spec.description,
        "Counts a greeting.\n\nEvery call adds one."
    );
    assert_eq!(count.spec.title, Some("Count a greeting"));
    assert_eq!(count.spec.category, Category::Execute);
    assert_eq!(
        count.spec.intents,
        ["count a greeting", "greet {name} and count"]
    );
    assert_eq!(count.spec.timeout, Some(Duration::from_millis(250)));
    let _: Count = Count;

    assert!(switchboard_core::linked_domains().any(|domain| domain.name == "greet"));
    assert_eq!(find("echo_say").spec.domain, "echo");
    assert!(!find("echo_say").spec.asks_before_task);
    let later = find("echo_greet_later");
    assert_eq!(later.spec.tasks, TaskSupport::Required);
    assert!(later.spec.asks_before_task);
    assert!(switchboard_core::linked_policies().any(|policy| policy.tool == "greet-count_v2"));
}
