use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::{ToolContext, ToolError, tool};
use validator::Validate;

switchboard_core::domain! {
    /// Greets people.
    pub Greet { name: "greet" }
}

#[derive(Clone, Serialize, Deserialize, JsonSchema, Validate)]
pub struct HelloInput {
    pub name: String,
}

/// Says hello.
#[tool(domain = Greet, category = read, permission = "greet.hello")]
async fn hello(_ctx: &ToolContext, input: HelloInput) -> Result<String, ToolError> {
    Ok(format!("hello, {}", input.name))
}

fn main() {}
