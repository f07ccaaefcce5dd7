// `asks_before_task` is a flag: it takes no value, is given once, and only on a tool that runs as
// a task (only a task can begin at `ctx.begin_task()`).
use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello", asks_before_task)]
async fn without_tasks(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    tasks = forbidden,
    asks_before_task
)]
async fn tasks_forbidden(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    tasks = required,
    asks_before_task = true
)]
async fn flag_with_a_value(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    tasks = required,
    asks_before_task,
    asks_before_task
)]
async fn flag_twice(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello", tasks)]
async fn key_without_a_value(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
