use switchboard_core::{NoInput, ToolContext, ToolError, tool};

/// Not a domain: `domain!` did not declare it.
pub struct Greet;

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Names the domain by its name rather than its type.
#[tool(domain = "greet", category = read, permission = "greet.hello", name = "greet_hi")]
async fn hi(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hi".to_owned())
}

fn main() {}
