// A tag that is not a short lowercase word, a tag given twice, and `tags` that is not an array
// are each reported at the offending value.
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
    tags = ["beta", "Early Access"]
)]
async fn invalid_tag(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(
    domain = Greet,
    category = read,
    permission = "greet.hello",
    tags = ["beta", "beta"]
)]
async fn duplicate_tag(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello", tags = "beta")]
async fn tags_not_an_array(_ctx: &ToolContext, _input: NoInput) -> Result<String, ToolError> {
    Ok("hello".to_owned())
}

fn main() {}
