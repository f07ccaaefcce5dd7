// Every mistake in `#[tool(...)]`'s arguments is reported at the key or value that is wrong, each
// tool on its own.
use switchboard_core::{NoInput, ToolContext, ToolError, tool};

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    intents = ["say hello", "greet {name"]
)]
async fn bad_intent(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    category = execute
)]
async fn duplicate_key(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    name = "has spaces!"
)]
async fn invalid_name(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(category = read, permission = "greet.hello")]
async fn missing_domain(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read)]
async fn missing_permission(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, categroy = read, permission = "greet.hello")]
async fn unknown_attribute_key(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = write, permission = "greet.hello")]
async fn unknown_category(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
