use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{ToolContext, ToolError, ToolInput, tool};
use validator::Validate;

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

#[derive(Clone, Serialize, Deserialize, Validate, ToolInput)]
pub struct HelloInput {
    pub name: String,
}

#[derive(Clone, Serialize, JsonSchema)]
pub struct Greeting {
    pub text: String,
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, input: HelloInput) -> Result<Greeting, ToolError> {
    Ok(Greeting {
        text: format!("hello, {}", input.name),
    })
}

fn main() {}
